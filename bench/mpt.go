package bench

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/workload"
	"github.com/warpkv/warpkv/mpt"
)

// Sizes and inputs of the mpt suite.
const (
	MPTMinSize     = 10_000    // smallest trie
	MPTDefaultSize = 1_000_000 // largest trie by default
	MPTSeed        = 0x6d70_7453_6565_64
	MPTProbes      = 100_000 // most keys looked up or proved per measurement
	// MPTValueBudget caps the value bytes of one trie: a data set is
	// skipped at sizes whose values exceed it (Wiki-like at 1 M pairs
	// would hold 10.9 GB), with a note.
	MPTValueBudget = 4 << 30
)

// MPTCase is one data set at one size: the unit of the mpt suite, shared
// with compat's go-ethereum benchmark (compat/cmd/mptbench) so that both
// measure the same pairs.
type MPTCase struct {
	Dataset workload.Dataset
	Size    int
}

// MPTSizes returns the trie sizes up to max (0: MPTDefaultSize): 10 K
// times powers of ten, then max itself when it is not one of them; only
// max when it is below 10 K.
func MPTSizes(max int) []int {
	max = pick(max, MPTDefaultSize)
	var out []int
	for n := MPTMinSize; n <= max; n *= 10 {
		out = append(out, n)
	}
	if len(out) == 0 || out[len(out)-1] != max {
		out = append(out, max)
	}
	return out
}

// MPTCases returns the cases up to size max (see MPTSizes), data set by
// data set, and notes for the cases skipped because their values exceed
// MPTValueBudget.
func MPTCases(max int) (cases []MPTCase, notes []string) { return MPTCasesBudget(max, MPTValueBudget) }

// MPTCasesBudget is MPTCases with another value budget in bytes.
func MPTCasesBudget(max int, budget int64) (cases []MPTCase, notes []string) {
	for _, d := range workload.Datasets() {
		for _, n := range MPTSizes(max) {
			if int64(n)*int64(d.MeanValueBytes()) > budget {
				notes = append(notes, fmt.Sprintf("%s at %s pairs skipped: its values (%s) exceed the suite's %s budget",
					d, SI(float64(n)), IEC(int64(n)*int64(d.MeanValueBytes())), IEC(budget)))
				continue
			}
			cases = append(cases, MPTCase{d, n})
		}
	}
	return cases, notes
}

// Input returns the case's pairs: mpt.Generate with MPTSeed.
func (c MPTCase) Input() (keys, values [][]byte, err error) {
	return workload.Generate(c.Dataset, c.Size, MPTSeed)
}

// Op names a measured operation of the case, e.g. "ycsb 100k update".
func (c MPTCase) Op(what string) string {
	return fmt.Sprintf("%s %s %s", c.Dataset, SI(float64(c.Size)), what)
}

// Probes returns the number of keys looked up or proved: the first
// min(Size, MPTProbes) keys of the input.
func (c MPTCase) Probes() int { return min(c.Size, MPTProbes) }

// MPTBuildTimes measures building a trie from scratch warmup+reps times:
// build applies the pairs and returns a function that computes the root.
// free, when not nil, frees the previous run's trie before every run after
// the first, untimed and before the collection that precedes the run (the
// last run's trie stays the caller's). It returns the median seconds of
// the update (build), of the root computation, and of both together (each
// median taken separately).
func MPTBuildTimes(warmup, reps int, build func() (hash func(), err error), free func() error) (update, hash, total float64, err error) {
	var us, hs, ts []float64
	for i := range warmup + reps {
		if i > 0 && free != nil {
			if err := free(); err != nil {
				return 0, 0, 0, err
			}
		}
		runtime.GC() // the previous trie's garbage is not this run's cost
		t0 := time.Now()
		h, err := build()
		if err != nil {
			return 0, 0, 0, err
		}
		t1 := time.Now()
		h()
		t2 := time.Now()
		if i >= warmup {
			us, hs, ts = append(us, t1.Sub(t0).Seconds()), append(hs, t2.Sub(t1).Seconds()), append(ts, t2.Sub(t0).Seconds())
		}
	}
	return Median(us), Median(hs), Median(ts), nil
}

// MPTBuildRows returns the update, hash and end-to-end rows of one engine
// on case c from MPTBuildTimes' medians; keyBytes and valueBytes are the
// input's, counted as the bytes of the update and end-to-end rows.
func MPTBuildRows(c MPTCase, engine string, keyBytes, valueBytes int64, update, hash, total float64) []Result {
	return []Result{
		NewResult(c.Op("update"), engine, int64(c.Size), keyBytes+valueBytes, update),
		NewResult(c.Op("hash"), engine, int64(c.Size), 0, hash),
		NewResult(c.Op("end to end"), engine, int64(c.Size), keyBytes+valueBytes, total),
	}
}

// RunMPT measures the Merkle Patricia Trie's CPU engines (package mpt) on
// the paper's three data sets (mpt.Generate: YCSB-like, ETHT-like,
// Wiki-like) at sizes from 10 K pairs up to Options.Size (default 1 M;
// see MPTCases for the cases skipped for memory). For each engine
// (sequential; parallel on GOMAXPROCS goroutines) it times building a
// trie from scratch: Update of all pairs in one batch, then Hash (medians
// of the update, of the hash, and of both, end to end), then batch lookups
// (Lookup, and LookupInto into one reused buffer) and batch proofs
// (ProveBatch) of up to MPTProbes present keys on the built trie. Parallel rows carry their ratio to the sequential
// engine. Where Options.Device resolves to a GPU (a gpu option, or auto
// with a usable GPU) it adds the GPU engine's rows (MPTGPURows, also
// with the engine's host copy of the values), each with its ratio to the
// parallel engine's row of the same operation, and its phase breakdowns as
// notes. go-ethereum's rows on the same pairs come from
// compat/cmd/mptbench.
func RunMPT(o Options) (*Report, error) {
	rep := NewReport("mpt", o.reps())
	useGPU := false
	if o.Device != "cpu" {
		c, err := gpu.Choose(o.Device)
		if err != nil {
			return nil, fmt.Errorf("bench mpt: %w", err)
		}
		if c.Backend == gpu.BackendGPU {
			useGPU = true
			rep.Engines = append(rep.Engines, "gpu: mpt.EngineGPU, "+c.Reason)
			c.Device.Close()
		} else {
			rep.Notes = append(rep.Notes, "no GPU rows: "+c.Reason)
		}
	}
	p := NewProgress(o.Progress)
	workers := runtime.GOMAXPROCS(0)
	rep.Engines = append(rep.Engines,
		"cpu sequential: mpt.EngineSequential, one goroutine",
		fmt.Sprintf("cpu parallel: mpt.EngineParallel, %d workers (GOMAXPROCS)", workers))
	rep.Notes = append(rep.Notes,
		"go-ethereum's trie and StackTrie on the same pairs: cd compat && go run ./cmd/mptbench (same table)",
		fmt.Sprintf("update, hash, end to end: a fresh trie, all pairs in one batch; lookup, proof: up to %s present keys", SI(MPTProbes)))
	cases, notes := MPTCases(o.Size)
	rep.Notes = append(rep.Notes, notes...)
	lastStats := map[workload.Dataset]string{}
	for _, c := range cases {
		keys, values, err := c.Input()
		if err != nil {
			return nil, fmt.Errorf("bench mpt: %w", err)
		}
		st := workload.DatasetStats(keys, values, slices.SortedFunc(slices.Values(keys), bytes.Compare))
		lastStats[c.Dataset] = fmt.Sprintf("%s: %v", c.Dataset, st)
		var seq, par []Result
		for _, eng := range mpt.Engines() {
			name := "cpu " + string(eng)
			p.Printf("%s: %s", name, c.Op("pairs"))
			res, err := MPTEngineRows(c, eng, keys, values, st, DefaultWarmup, o.reps())
			if err != nil {
				rep.Finish()
				return rep, fmt.Errorf("bench mpt: %s on %s: %w", name, c.Op(""), err)
			}
			if eng == mpt.EngineSequential {
				seq = res
			} else {
				for i := range res {
					res[i] = res[i].VsPeer("sequential", seq[i])
				}
			}
			rep.add(res...)
			if eng == mpt.EngineParallel {
				par = res
			}
		}
		if useGPU {
			p.Printf("gpu: %s", c.Op("pairs"))
			ref, err := mpt.Open(mpt.Options{Engine: mpt.EngineParallel})
			if err != nil {
				return nil, err
			}
			root, err := mptRoot(ref, keys, values)
			if err != nil {
				return nil, err
			}
			res, note, err := MPTGPURows(c, o.Device, keys, values, st, root, DefaultWarmup, o.reps())
			if err != nil {
				rep.Finish()
				return rep, fmt.Errorf("bench mpt: gpu on %s: %w", c.Op(""), err)
			}
			for i := range res {
				res[i] = res[i].VsPeer("parallel", par[MPTRowPeer(i)])
			}
			rep.add(res...)
			rep.Notes = append(rep.Notes, note)
		}
		runtime.GC()
	}
	for _, d := range workload.Datasets() {
		if s, ok := lastStats[d]; ok {
			rep.Notes = append(rep.Notes, "data set "+s)
		}
	}
	rep.Finish()
	return rep, nil
}

// MPTEngineRows measures one of our engines on case c with its input
// keys and values (whose statistics are st): update, hash, end to end,
// lookup, proof and lookup-into rows, in that order, engine "cpu <engine>", medians of
// reps runs after warmup untimed ones.
func MPTEngineRows(c MPTCase, eng mpt.Engine, keys, values [][]byte, st workload.Stats, warmup, reps int) (rows []Result, err error) {
	name := "cpu " + string(eng)
	var tr *mpt.Trie // the latest run's trie, closed by free or at return
	defer func() {
		if tr != nil {
			err = errors.Join(err, tr.Close())
		}
	}()
	free := func() error {
		err := tr.Close()
		tr = nil
		return err
	}
	u, h, e2e, err := MPTBuildTimes(warmup, reps, func() (func(), error) {
		var err error
		if tr, err = mpt.Open(mpt.Options{Engine: eng}); err != nil {
			return nil, err
		}
		if err := tr.Update(keys, values); err != nil {
			return nil, err
		}
		return func() { tr.Hash() }, nil // the CPU engines' Hash cannot fail
	}, free)
	if err != nil {
		return nil, err
	}
	res := MPTBuildRows(c, name, st.KeyBytes, st.ValueBytes, u, h, e2e)
	probe := keys[:c.Probes()]
	lookup, err := mptLookupTime(tr, probe, warmup, reps)
	if err != nil {
		return nil, err
	}
	proof, err := TimeCPU(warmup, reps, nil, func() error {
		_, err := tr.ProveBatch(probe)
		return err
	})
	if err != nil {
		return nil, err
	}
	into, err := MPTLookupIntoTime(tr, probe, warmup, reps)
	if err != nil {
		return nil, err
	}
	return append(res,
		NewResult(c.Op("lookup"), name, int64(len(probe)), 0, lookup),
		NewResult(c.Op("proof"), name, int64(len(probe)), 0, proof),
		NewResult(c.Op("lookup into"), name, int64(len(probe)), 0, into)), nil
}

// MPTLookupRow and MPTLookupIntoRow are the indices of the lookup rows
// among the rows MPTEngineRows and MPTGPURows return (update, hash, end
// to end, lookup, proof, lookup into): "lookup" is Lookup (values alias
// the trie on the CPU engines, are copied into fresh memory on the GPU
// engine), "lookup into" is LookupInto (values copied into one reused
// buffer), which go-ethereum's lookup row is also the peer of.
const (
	MPTLookupRow     = 3
	MPTLookupIntoRow = 5
)

// MPTLookupIntoTime times LookupInto of probe (all present keys) on tr,
// the same Values reused by every run (as a caller reusing its buffer
// would): medians of reps runs after warmup untimed ones, which also grow
// the buffer.
func MPTLookupIntoTime(tr *mpt.Trie, probe [][]byte, warmup, reps int) (float64, error) {
	var out mpt.Values
	return TimeCPU(warmup, reps, nil, func() error {
		if err := tr.LookupInto(probe, &out); err != nil {
			return err
		}
		for i := range probe {
			if _, ok := out.Get(i); !ok {
				return fmt.Errorf("key %x not found", probe[i])
			}
		}
		return nil
	})
}

// mptRoot applies the pairs to the reference trie ref, returns its root
// hash and closes ref, whatever fails.
func mptRoot(ref *mpt.Trie, keys, values [][]byte) (root [32]byte, err error) {
	defer func() { err = errors.Join(err, ref.Close()) }()
	if err := ref.Update(keys, values); err != nil {
		return root, err
	}
	return ref.Hash()
}
