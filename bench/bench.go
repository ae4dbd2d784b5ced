package bench

import (
	"fmt"
	"io"
	"runtime"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// Options configure a benchmark suite run.
type Options struct {
	Device   string    // device option: auto, cpu, gpu, gpu:N ("": WARPKV_DEVICE, else auto)
	Size     int       // problem size, the suite's unit; 0: the suite's default
	Reps     int       // timed repetitions behind each median; 0: DefaultReps
	Progress io.Writer // progress lines (typically os.Stderr); nil: none
	// Engines lists the engines a suite runs, comma-separated ("cpu",
	// "gpu"); "": every engine the device option allows. The suites of
	// EngineSuites (art, btree) honour it (--engines gpu: the GPU rows
	// alone, for large sizes; an error without a usable GPU).
	Engines string
}

func (o Options) reps() int {
	if o.Reps > 0 {
		return o.Reps
	}
	return DefaultReps
}

// Suite is a named benchmark.
type Suite struct {
	Name    string
	Summary string // one line for help output
	Run     func(Options) (*Report, error)
}

// Suites returns the benchmark suites, in the order help lists them.
func Suites() []Suite {
	return []Suite{
		{"limits", "memory limits: device copy bandwidth, random gather rate, pinned transfers (CPU engine: memory copy bandwidth, also with non-temporal stores as the pinned pipelines copy); one hot word passed between threads, under a lock, and added to atomically (both engines); --size: copy bytes (smaller also scales the hot-word steps down)", RunLimits},
		{"prim", "every primitive on the CPU engine and, when usable or requested, the GPU engine; --size: elements", RunPrim},
		{"index", "Mega-KV hash index: search, insert, delete against batch size on the CPU and GPU engines; --size: largest batch", RunIndex},
		{"mpt", "Merkle Patricia Trie CPU engines on YCSB-, ETHT- and Wiki-like data: update, hash, end to end, lookups, proofs; --size: largest trie (pairs)", RunMPT},
		{"btree", "CUBPT B+ tree on the CPU and GPU engines: bulk build, uniform and skewed batch insert, delete, lookups, ranges; --size: largest tree (keys)", RunBTree},
		{"stm", "CSMV transactional memory on the CPU and GPU engines: Bank (6k and 1M accounts, read-only shares, transfer sizes), MemcachedGPU (4-256 ways), servers and log sizes; --size: large bank (accounts)", RunSTM},
		{"art", "CuART adaptive radix tree on the CPU and GPU engines: build, lookups (hits, misses, batch sizes, long keys), updates, inserts, deletes, ranges, prefix scans on 8/16/32-byte and text keys; --size: largest tree (keys)", RunART},
	}
}

// Lookup returns the suite with the given name.
func Lookup(name string) (Suite, bool) {
	for _, s := range Suites() {
		if s.Name == name {
			return s, true
		}
	}
	return Suite{}, false
}

// RunLimits measures the memory limits of the chosen device (see
// MeasureLimits); Options.Size, if set, is the copy size in bytes. When the
// option resolves to the CPU engine (requested, or auto without a usable
// GPU) it measures the CPU memory copy bandwidth instead and says why.
// On either engine it then times the hot-word measurements
// (prim.HotWord), whose step counts a smaller Size scales down in
// proportion, and notes each one's time a step.
func RunLimits(o Options) (*Report, error) {
	rep := NewReport("limits", o.reps())
	p := NewProgress(o.Progress)
	c, err := gpu.Choose(o.Device)
	if err != nil {
		return nil, fmt.Errorf("bench limits: %w", err)
	}
	rep.Engines = append(rep.Engines, c.Reason)
	if c.Backend == gpu.BackendCPU {
		size := int64(cpuCopyBytes)
		if o.Size > 0 {
			size = int64(o.Size)
		}
		p.Printf("cpu: memory copy over %s", IEC(size))
		res, err := MeasureCPUCopy(size, runtime.GOMAXPROCS(0), DefaultWarmup, o.reps())
		if err != nil {
			return nil, fmt.Errorf("bench limits: %w", err)
		}
		rep.add(res...)
		hot, notes, err := measureHotWords(prim.NewCPU(0), nil, p, DefaultWarmup, o.reps(), min(1, float64(size)/cpuCopyBytes))
		if err != nil {
			return nil, fmt.Errorf("bench limits: %w", err)
		}
		rep.add(hot...)
		rep.Notes = append(rep.Notes, notes...)
		rep.Finish()
		return rep, nil
	}
	defer c.Device.Close()
	cfg := defaultLimitsConfig()
	cfg.reps = o.reps()
	if o.Size > 0 {
		cfg.copyBytes = int64(o.Size)
	}
	lim, err := measureLimits(c.Device, p, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench limits on %s: %w", c.Device, err)
	}
	rep.add(lim.Results...)
	rep.Notes = append(rep.Notes, lim.Notes...)
	hot, notes, err := measureGPUHotWords(c.Device, p, cfg.reps, min(1, float64(cfg.copyBytes)/limitsCopyBytes))
	if err != nil {
		return nil, fmt.Errorf("bench limits on %s: %w", c.Device, err)
	}
	rep.add(hot...)
	rep.Notes = append(rep.Notes, notes...)
	rep.Finish()
	return rep, nil
}
