package bench

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// Default sizes of the prim suite, in elements (Options.Size overrides
// both).
const (
	primGPUSize = 1 << 27 // device-resident inputs: a 2^27-pair sort is 1.5 GiB of u64/u32 pairs
	primCPUSize = 1 << 24
	primSeed    = 0x9E1B_5EED

	keccakBytesPerItem = 32  // messages = size / keccakBytesPerItem
	keccakMaxLen       = 200 // message lengths are uniform in [1, keccakMaxLen]
	runMaxLen          = 7   // run lengths of RLE and reduce-by-key inputs: uniform in [1, runMaxLen]
	segmentMaxLen      = 63  // segment lengths of segmented max: uniform in [0, segmentMaxLen]
)

// RunPrim times every primitive of package prim on the CPU engine and, when
// the device option resolves to a GPU (auto with a usable GPU, gpu, gpu:N),
// on the GPU engine. Options.Size is the number of elements (default 2^24
// on the CPU, 2^27 on the GPU; Keccak hashes Size/32 messages).
//
// Bytes of a row are the operation's minimal memory traffic: every input
// read once and every output written once. GPU rows time the device-level
// functions (Dev*) with events on the engine's stream, inputs already on
// the device, and divide by the measured device copy bandwidth
// (MeasureLimits); sorts restore their unsorted input before each run,
// outside the timed region, and are also timed end to end from Go slices,
// transfers included, against the pinned transfer bandwidth. CPU sorts
// compare with the Go standard library on one thread, other CPU rows with
// the CPU memory copy bandwidth. A failing operation is noted in the report
// and the suite goes on; the returned error then counts the failures.
// Cost at the default sizes: a few minutes (three on one H100 with 16 CPU
// cores, mostly the CPU sorts and their peers) and several GiB of host and
// device memory.
func RunPrim(o Options) (*Report, error) {
	return runPrim(o, defaultLimitsConfig())
}

// runPrim is RunPrim with the sizes of the GPU limits measurement given.
func runPrim(o Options, limCfg limitsConfig) (*Report, error) {
	rep := NewReport("prim", o.reps())
	p := NewProgress(o.Progress)
	c, err := gpu.Choose(o.Device)
	if err != nil {
		return nil, fmt.Errorf("bench prim: %w", err)
	}
	if c.Device != nil {
		defer c.Device.Close()
	}
	runs := []*primRun{}
	cpuRun := &primRun{e: prim.NewCPU(0), n: pick(o.Size, primCPUSize), warmup: DefaultWarmup, reps: o.reps(), peers: true}
	rep.Engines = append(rep.Engines, fmt.Sprintf("cpu engine: %d workers", cpuRun.e.Workers()))
	copyBytes := min(cpuCopyBytes, max(1<<20, 16*int64(cpuRun.n))) // small suites need no full-size reference
	p.Printf("cpu: memory copy over %s", IEC(copyBytes))
	cpuCopy, err := MeasureCPUCopy(copyBytes, cpuRun.e.Workers(), DefaultWarmup, o.reps())
	if err != nil {
		return nil, fmt.Errorf("bench prim: %w", err)
	}
	rep.add(cpuCopy...)
	cpuRun.refName, cpuRun.refGBps = "cpu copy", cpuCopy[1].GBps
	runs = append(runs, cpuRun)

	if c.Backend == gpu.BackendGPU {
		rep.Engines = append(rep.Engines, c.Reason)
		limCfg.reps = o.reps()
		lim, err := measureLimits(c.Device, p, limCfg)
		if err != nil {
			return nil, fmt.Errorf("bench prim: limits of %s: %w", c.Device, err)
		}
		rep.add(lim.Results...)
		rep.Notes = append(rep.Notes, lim.Notes...)
		e, err := prim.NewGPU(c.Device)
		if err != nil {
			return nil, fmt.Errorf("bench prim: %w", err)
		}
		defer e.Close()
		t, err := NewGPUTimer(c.Device, e.Stream())
		if err != nil {
			return nil, err
		}
		defer t.Close()
		runs = append(runs, &primRun{
			e: e, n: pick(o.Size, primGPUSize), warmup: DefaultWarmup, reps: o.reps(), timer: t,
			refName: "gpu copy", refGBps: lim.CopyGBps,
			pcieName: "pinned H2D+D2H", pcieGBps: 2 / (1/lim.H2DGBps + 1/lim.D2HGBps),
		})
	} else {
		rep.Notes = append(rep.Notes, "no GPU rows: "+c.Reason)
	}

	var failed []string
	for _, pc := range primCases() {
		for _, x := range runs {
			p.Printf("%s: %s (size %s)", x.e.Name(), pc.op, SI(float64(x.n)))
			res, err := pc.run(x, pc.op)
			runtime.GC() // give the inputs back before the next case
			if err != nil {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %s failed: %v", x.e.Name(), pc.op, err))
				failed = append(failed, x.e.Name()+": "+pc.op)
				continue
			}
			rep.add(res...)
		}
	}
	rep.Finish()
	if len(failed) > 0 {
		return rep, fmt.Errorf("bench prim: %d operations failed (%s); see the notes", len(failed), strings.Join(failed, ", "))
	}
	return rep, nil
}

func pick(size, def int) int {
	if size > 0 {
		return size
	}
	return def
}

// primRun is one engine's side of the prim suite.
type primRun struct {
	e            *prim.Engine
	n            int
	warmup, reps int
	timer        *GPUTimer // GPU engine only
	peers        bool      // CPU engine: also time Go standard library peers
	refName      string    // bandwidth reference of the ratio
	refGBps      float64
	pcieName     string // GPU: reference of the end-to-end sort rows
	pcieGBps     float64
}

func (x *primRun) gpu() bool { return x.timer != nil }

// timeDevice times device work queued by run on the engine's stream.
func (x *primRun) timeDevice(prepare, run func() error) (float64, error) {
	return x.timer.Time(x.warmup, x.reps, prepare, run)
}

// timeHost times host-level calls by wall clock.
func (x *primRun) timeHost(prepare, run func() error) (float64, error) {
	return TimeCPU(x.warmup, x.reps, prepare, run)
}

// peerReps is the most timed repetitions of a standard library peer, which
// runs without a warm-up: it is slow and has nothing to warm up.
const peerReps = 3

// timePeer times a standard library peer by wall clock.
func (x *primRun) timePeer(prepare, run func() error) (float64, error) {
	return TimeCPU(0, min(x.reps, peerReps), prepare, run)
}

// result builds a row of this engine with the ratio to its bandwidth
// reference.
func (x *primRun) result(op string, items, bytes int64, sec float64) Result {
	return NewResult(op, x.e.Name(), items, bytes, sec).VsBandwidth(x.refName, x.refGBps)
}

// deviceRow times run (after prepare, each repetition) on the device and
// returns its one row.
func (x *primRun) deviceRow(op string, items, bytes int64, prepare, run func() error) ([]Result, error) {
	sec, err := x.timeDevice(prepare, run)
	if err != nil {
		return nil, err
	}
	return []Result{x.result(op, items, bytes, sec)}, nil
}

// hostRow times run (after prepare, each repetition) by wall clock and
// returns its one row.
func (x *primRun) hostRow(op string, items, bytes int64, prepare, run func() error) ([]Result, error) {
	sec, err := x.timeHost(prepare, run)
	if err != nil {
		return nil, err
	}
	return []Result{x.result(op, items, bytes, sec)}, nil
}

// devCountRow is deviceRow for an operation that leaves the number of
// items it wrote in count[0] (select, run-length encode, reduce by key):
// it checks that number against want after the timed runs; what names it
// in the error ("selected", "runs").
func (x *primRun) devCountRow(op string, items, bytes int64, count *gpu.Buffer[uint32], want int, what string, run func() error) ([]Result, error) {
	rows, err := x.deviceRow(op, items, bytes, nil, run)
	if err != nil {
		return nil, err
	}
	got, err := count.Download()
	if err != nil {
		return nil, err
	}
	if int(got[0]) != want {
		return nil, fmt.Errorf("%s: %s %d of %d, want %d", op, what, got[0], items, want)
	}
	return rows, nil
}

// hostCountRow is hostRow for an operation that returns the number of
// items it wrote, checked against want after the timed runs.
func (x *primRun) hostCountRow(op string, items, bytes int64, want int, what string, run func() (int, error)) ([]Result, error) {
	var got int
	rows, err := x.hostRow(op, items, bytes, nil, func() error {
		var err error
		got, err = run()
		return err
	})
	if err != nil {
		return nil, err
	}
	if got != want {
		return nil, fmt.Errorf("%s: %s %d of %d, want %d", op, what, got, items, want)
	}
	return rows, nil
}

// primCase is one row group of the suite: an operation measured on one
// engine, returning its rows.
type primCase struct {
	op  string
	run func(x *primRun, op string) ([]Result, error)
}

// primCases lists the measured operations in table order.
func primCases() []primCase {
	return []primCase{
		{"sort keys u32", sortKeysCase[uint32]},
		{"sort keys u64", sortKeysCase[uint64]},
		{"sort pairs u32/u32", sortPairsCase[uint32, uint32]},
		{"sort pairs u64/u32", sortPairsCase[uint64, uint32]},
		{"sort pairs u64/u64", sortPairsCase[uint64, uint64]},
		{"scan exclusive u32", scanCase[uint32](false)},
		{"scan exclusive u64", scanCase[uint64](false)},
		{"scan inclusive u32", scanCase[uint32](true)},
		{"select u32, 50% kept", selectCase[uint32]},
		{"select u64, 50% kept", selectCase[uint64]},
		{"run-length encode u32, runs 1-7", rleCase[uint32]},
		{"run-length encode u64, runs 1-7", rleCase[uint64]},
		{"reduce by key u32/u32, runs 1-7", reduceCase[uint32, uint32]},
		{"reduce by key u64/u64, runs 1-7", reduceCase[uint64, uint64]},
		{"merge u32/u32, two halves", mergeCase[uint32, uint32]},
		{"merge u64/u32, two halves", mergeCase[uint64, uint32]},
		{"segmented max u32, segments 0-63", segmaxCase[uint32]},
		{"segmented max u64, segments 0-63", segmaxCase[uint64]},
		{"keccak-256, messages 1-200 B", keccakCase(1, keccakMaxLen)},
		{"keccak-256, 64 B messages", keccakCase(64, 64)},
	}
}

var errNotSorted = errors.New("output not sorted")

func sortKeysCase[K prim.Key](x *primRun, op string) ([]Result, error) {
	n := x.n
	keys := randomWords[K](n, primSeed)
	bytes := 2 * int64(n) * sizeOf[K]()
	work := make([]K, n)
	restore := func() error { copy(work, keys); return nil }
	if x.gpu() {
		bufs := gpu.NewBuffers(x.e.Device())
		defer bufs.Free()
		orig := gpu.UploadIn(bufs, keys)
		dev := gpu.AllocIn[K](bufs, n)
		if err := bufs.Err(); err != nil {
			return nil, err
		}
		sec, err := x.timeDevice(func() error { return dev.CopyFrom(x.e.Stream(), 0, orig, 0, n) },
			func() error { return prim.DevSortKeys(x.e, dev, n) })
		if err != nil {
			return nil, err
		}
		kernel := x.result(op, int64(n), bytes, sec)
		bufs.Free()
		sec, err = x.timeHost(restore, func() error { return prim.SortKeys(x.e, work) })
		if err != nil {
			return nil, err
		}
		if !slices.IsSorted(work) {
			return nil, errNotSorted
		}
		host := NewResult(op+", host incl. transfers", "gpu", int64(n), bytes, sec).VsBandwidth(x.pcieName, x.pcieGBps)
		return []Result{kernel, host}, nil
	}
	sec, err := x.timeHost(restore, func() error { return prim.SortKeys(x.e, work) })
	if err != nil {
		return nil, err
	}
	if !slices.IsSorted(work) {
		return nil, errNotSorted
	}
	res := x.result(op, int64(n), bytes, sec)
	if !x.peers {
		return []Result{res}, nil
	}
	sec, err = x.timePeer(restore, func() error { slices.Sort(work); return nil })
	if err != nil {
		return nil, err
	}
	peer := NewResult("slices.Sort "+typeName[K](), "go, 1 thread", int64(n), bytes, sec)
	return []Result{res.VsPeer("slices.Sort", peer), peer}, nil
}

// kv is a key-value pair for the standard library peer of the pair sorts.
type kv[K prim.Key, V prim.Word] struct {
	k K
	v V
}

func sortPairsCase[K prim.Key, V prim.Word](x *primRun, op string) ([]Result, error) {
	n := x.n
	keys := randomWords[K](n, primSeed)
	vals := randomWords[V](n, primSeed+1)
	bytes := 2 * int64(n) * (sizeOf[K]() + sizeOf[V]())
	wk, wv := make([]K, n), make([]V, n)
	restore := func() error { copy(wk, keys); copy(wv, vals); return nil }
	if x.gpu() {
		bufs := gpu.NewBuffers(x.e.Device())
		defer bufs.Free()
		ok := gpu.UploadIn(bufs, keys)
		ov := gpu.UploadIn(bufs, vals)
		dk := gpu.AllocIn[K](bufs, n)
		dv := gpu.AllocIn[V](bufs, n)
		if err := bufs.Err(); err != nil {
			return nil, err
		}
		s := x.e.Stream()
		sec, err := x.timeDevice(func() error {
			if err := dk.CopyFrom(s, 0, ok, 0, n); err != nil {
				return err
			}
			return dv.CopyFrom(s, 0, ov, 0, n)
		}, func() error { return prim.DevSortPairs(x.e, dk, dv, n) })
		if err != nil {
			return nil, err
		}
		kernel := x.result(op, int64(n), bytes, sec)
		bufs.Free()
		sec, err = x.timeHost(restore, func() error { return prim.SortPairs(x.e, wk, wv) })
		if err != nil {
			return nil, err
		}
		if !slices.IsSorted(wk) {
			return nil, errNotSorted
		}
		host := NewResult(op+", host incl. transfers", "gpu", int64(n), bytes, sec).VsBandwidth(x.pcieName, x.pcieGBps)
		return []Result{kernel, host}, nil
	}
	sec, err := x.timeHost(restore, func() error { return prim.SortPairs(x.e, wk, wv) })
	if err != nil {
		return nil, err
	}
	if !slices.IsSorted(wk) {
		return nil, errNotSorted
	}
	res := x.result(op, int64(n), bytes, sec)
	if !x.peers {
		return []Result{res}, nil
	}
	pairs := make([]kv[K, V], n)
	sec, err = x.timePeer(func() error {
		for i := range pairs {
			pairs[i] = kv[K, V]{keys[i], vals[i]}
		}
		return nil
	}, func() error {
		slices.SortStableFunc(pairs, func(a, b kv[K, V]) int {
			switch {
			case a.k < b.k:
				return -1
			case a.k > b.k:
				return 1
			}
			return 0
		})
		return nil
	})
	if err != nil {
		return nil, err
	}
	peer := NewResult(fmt.Sprintf("slices.SortStableFunc %s/%s pairs", typeName[K](), typeName[V]()), "go, 1 thread",
		int64(n), bytes, sec)
	return []Result{res.VsPeer("slices.SortStableFunc", peer), peer}, nil
}

func scanCase[T prim.Word](inclusive bool) func(*primRun, string) ([]Result, error) {
	return func(x *primRun, op string) ([]Result, error) {
		n := x.n
		in := randomWords[T](n, primSeed)
		bytes := 2 * int64(n) * sizeOf[T]()
		if x.gpu() {
			bufs := gpu.NewBuffers(x.e.Device())
			defer bufs.Free()
			din := gpu.UploadIn(bufs, in)
			dout := gpu.AllocIn[T](bufs, n)
			if err := bufs.Err(); err != nil {
				return nil, err
			}
			return x.deviceRow(op, int64(n), bytes, nil, func() error {
				if inclusive {
					return prim.DevScanInclusive(x.e, din, dout, n)
				}
				return prim.DevScanExclusive(x.e, din, dout, n)
			})
		}
		out := make([]T, n)
		return x.hostRow(op, int64(n), bytes, nil, func() error {
			if inclusive {
				return prim.ScanInclusive(x.e, in, out)
			}
			return prim.ScanExclusive(x.e, in, out)
		})
	}
}

func selectCase[T prim.Word](x *primRun, op string) ([]Result, error) {
	n := x.n
	in := randomWords[T](n, primSeed)
	flags, kept := randomFlags(n, primSeed+1)
	bytes := int64(n)*(sizeOf[T]()+1) + int64(kept)*sizeOf[T]()
	if x.gpu() {
		bufs := gpu.NewBuffers(x.e.Device())
		defer bufs.Free()
		din := gpu.UploadIn(bufs, in)
		dflags := gpu.UploadIn(bufs, flags)
		dout := gpu.AllocIn[T](bufs, n)
		count := gpu.AllocIn[uint32](bufs, 1)
		if err := bufs.Err(); err != nil {
			return nil, err
		}
		return x.devCountRow(op, int64(n), bytes, count, kept, "selected", func() error {
			return prim.DevSelect(x.e, din, dflags, dout, n, count)
		})
	}
	out := make([]T, n)
	return x.hostCountRow(op, int64(n), bytes, kept, "selected", func() (int, error) { return prim.Select(x.e, in, flags, out) })
}

func rleCase[K prim.Key](x *primRun, op string) ([]Result, error) {
	n := x.n
	keys, runs := randomRuns[K](n, primSeed)
	bytes := int64(n)*sizeOf[K]() + int64(runs)*(sizeOf[K]()+4)
	if x.gpu() {
		bufs := gpu.NewBuffers(x.e.Device())
		defer bufs.Free()
		dkeys := gpu.UploadIn(bufs, keys)
		uniq := gpu.AllocIn[K](bufs, n)
		counts := gpu.AllocIn[uint32](bufs, n)
		druns := gpu.AllocIn[uint32](bufs, 1)
		if err := bufs.Err(); err != nil {
			return nil, err
		}
		return x.devCountRow(op, int64(n), bytes, druns, runs, "runs", func() error {
			return prim.DevRunLengthEncode(x.e, dkeys, uniq, counts, n, druns)
		})
	}
	uniq, counts := make([]K, n), make([]uint32, n)
	return x.hostCountRow(op, int64(n), bytes, runs, "runs", func() (int, error) { return prim.RunLengthEncode(x.e, keys, uniq, counts) })
}

func reduceCase[K prim.Key, V prim.Word](x *primRun, op string) ([]Result, error) {
	n := x.n
	keys, runs := randomRuns[K](n, primSeed)
	vals := randomWords[V](n, primSeed+1)
	pair := sizeOf[K]() + sizeOf[V]()
	bytes := int64(n)*pair + int64(runs)*pair
	if x.gpu() {
		bufs := gpu.NewBuffers(x.e.Device())
		defer bufs.Free()
		dkeys := gpu.UploadIn(bufs, keys)
		dvals := gpu.UploadIn(bufs, vals)
		uniq := gpu.AllocIn[K](bufs, n)
		sums := gpu.AllocIn[V](bufs, n)
		druns := gpu.AllocIn[uint32](bufs, 1)
		if err := bufs.Err(); err != nil {
			return nil, err
		}
		return x.devCountRow(op, int64(n), bytes, druns, runs, "runs", func() error {
			return prim.DevReduceByKey(x.e, dkeys, dvals, uniq, sums, n, druns)
		})
	}
	uniq, sums := make([]K, n), make([]V, n)
	return x.hostCountRow(op, int64(n), bytes, runs, "runs", func() (int, error) { return prim.ReduceByKey(x.e, keys, vals, uniq, sums) })
}

func mergeCase[K prim.Key, V prim.Word](x *primRun, op string) ([]Result, error) {
	n := x.n
	na := n / 2
	nb := n - na
	ak, bk := sortedWords[K](na, primSeed), sortedWords[K](nb, primSeed+1)
	av, bv := randomWords[V](na, primSeed+2), randomWords[V](nb, primSeed+3)
	bytes := 2 * int64(n) * (sizeOf[K]() + sizeOf[V]())
	if x.gpu() {
		bufs := gpu.NewBuffers(x.e.Device())
		defer bufs.Free()
		dak := gpu.UploadIn(bufs, ak)
		dav := gpu.UploadIn(bufs, av)
		dbk := gpu.UploadIn(bufs, bk)
		dbv := gpu.UploadIn(bufs, bv)
		outK := gpu.AllocIn[K](bufs, n)
		outV := gpu.AllocIn[V](bufs, n)
		if err := bufs.Err(); err != nil {
			return nil, err
		}
		return x.deviceRow(op, int64(n), bytes, nil, func() error { return prim.DevMerge(x.e, dak, dav, na, dbk, dbv, nb, outK, outV) })
	}
	outK, outV := make([]K, n), make([]V, n)
	sec, err := x.timeHost(nil, func() error { return prim.Merge(x.e, ak, av, bk, bv, outK, outV) })
	if err != nil {
		return nil, err
	}
	if !slices.IsSorted(outK) {
		return nil, errNotSorted
	}
	return []Result{x.result(op, int64(n), bytes, sec)}, nil
}

func segmaxCase[T prim.Word](x *primRun, op string) ([]Result, error) {
	n := x.n
	vals := randomWords[T](n, primSeed)
	offsets := randomSegments(n, primSeed+1)
	nseg := len(offsets) - 1
	bytes := int64(n)*sizeOf[T]() + int64(len(offsets))*4 + int64(nseg)*sizeOf[T]()
	if x.gpu() {
		bufs := gpu.NewBuffers(x.e.Device())
		defer bufs.Free()
		dvals := gpu.UploadIn(bufs, vals)
		doff := gpu.UploadIn(bufs, offsets)
		out := gpu.AllocIn[T](bufs, nseg)
		if err := bufs.Err(); err != nil {
			return nil, err
		}
		return x.deviceRow(op, int64(n), bytes, nil, func() error { return prim.DevSegmentedMax(x.e, dvals, doff, nseg, out) })
	}
	out := make([]T, nseg)
	return x.hostRow(op, int64(n), bytes, nil, func() error { return prim.SegmentedMax(x.e, vals, offsets, out) })
}

// keccakCase hashes messages with lengths uniform in [minLen, maxLen].
func keccakCase(minLen, maxLen int) func(*primRun, string) ([]Result, error) {
	return func(x *primRun, op string) ([]Result, error) { return keccakRun(x, op, minLen, maxLen) }
}

func keccakRun(x *primRun, op string, minLen, maxLen int) ([]Result, error) {
	n := max(1, x.n/keccakBytesPerItem)
	data, offsets := randomMessages(n, primSeed, minLen, maxLen)
	bytes := int64(len(data)) + int64(len(offsets))*4 + int64(n)*32
	if x.gpu() {
		bufs := gpu.NewBuffers(x.e.Device())
		defer bufs.Free()
		ddata := gpu.UploadIn(bufs, data)
		doff := gpu.UploadIn(bufs, offsets)
		out := gpu.AllocIn[[32]byte](bufs, n)
		if err := bufs.Err(); err != nil {
			return nil, err
		}
		return x.deviceRow(op, int64(n), bytes, nil, func() error { return prim.DevKeccak256(x.e, ddata, doff, n, out, maxLen) })
	}
	out := make([][32]byte, n)
	return x.hostRow(op, int64(n), bytes, nil, func() error { return prim.Keccak256(x.e, data, offsets, out) })
}
