package bench

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/warpkv/warpkv/internal/workload"
	"github.com/warpkv/warpkv/mpt"
)

// The rows MPTGPURows returns beyond MPTEngineRows' six, for the GPU
// engine with its host copy of the values (mpt.Options.HostValues): end to
// end (the build, which also copies the values to the host), lookup
// (Lookup: value ids back, values aliasing the host copy) and lookup into
// (LookupInto: value ids back, values copied from the host copy).
const (
	MPTHostEndToEndRow   = 6
	MPTHostLookupRow     = 7
	MPTHostLookupIntoRow = 8
)

// MPTRowPeer returns the index, among MPTEngineRows' rows, of the row
// that MPTGPURows' row i is compared with: the same operation, without
// the host copy.
func MPTRowPeer(i int) int {
	switch i {
	case MPTHostEndToEndRow:
		return 2
	case MPTHostLookupRow:
		return MPTLookupRow
	case MPTHostLookupIntoRow:
		return MPTLookupIntoRow
	}
	return i
}

// mptGPUBuilds builds a fresh GPU trie from keys and values warmup+reps
// times (opts' engine, device and host copy) and returns the median
// update (the Update call minus its PhaseHC share), hash (PhaseHC) and end
// to end seconds, the phase breakdown of the median end-to-end run, and
// the last trie (open: the caller closes it). Every run's root is checked
// against want.
func mptGPUBuilds(opts mpt.Options, keys, values [][]byte, want [32]byte, warmup, reps int) (u, h, e2e float64, med mpt.BatchStats, tr *mpt.Trie, err error) {
	var us, hs, ts []float64
	var times []mpt.BatchStats
	for i := range warmup + reps {
		if tr != nil {
			if err := tr.Close(); err != nil {
				return 0, 0, 0, med, nil, err
			}
		}
		runtime.GC()
		if tr, err = mpt.Open(opts); err != nil {
			return 0, 0, 0, med, nil, err
		}
		t0 := time.Now()
		if err := tr.Update(keys, values); err != nil {
			return 0, 0, 0, med, tr, err
		}
		root, err := tr.Hash()
		if err != nil {
			return 0, 0, 0, med, tr, err
		}
		total := time.Since(t0).Seconds()
		if root != want {
			return 0, 0, 0, med, tr, fmt.Errorf("gpu root %x, cpu root %x", root, want)
		}
		tm := tr.Stats()
		if i >= warmup {
			hs = append(hs, tm.Hash.Seconds())
			us = append(us, total-tm.Hash.Seconds())
			ts = append(ts, total)
			times = append(times, tm)
		}
	}
	return Median(us), Median(hs), Median(ts), times[medianIndex(ts)], tr, nil
}

// MPTGPURows measures the GPU MPT engine (mpt.Open with mpt.EngineGPU on
// device) on case c with its input keys and values (statistics st): a
// fresh trie per run, all pairs in one Update (which on the GPU engine
// stages, uploads, sorts, runs PhaseNU and PhaseHC and reads the root
// back), then the root; rows engine "gpu" in MPTEngineRows' order: update
// (the Update call minus its PhaseHC share), hash (PhaseHC), end to end
// (Update and root, transfers included), lookup, proof and lookup into
// (batch Lookup, ProveBatch and LookupInto into one reused buffer, of
// c.Probes() present keys, transfers included), then the rows of the
// same engine with its host copy of the values (MPTHostEndToEndRow and
// after). It also returns a note with the phase breakdown of the median
// end-to-end run. Medians of reps runs after warmup untimed ones; every
// run's root is checked against want.
func MPTGPURows(c MPTCase, device string, keys, values [][]byte, st workload.Stats, want [32]byte, warmup, reps int) (rows []Result, note string, err error) {
	u, h, e2e, med, tr, err := mptGPUBuilds(mpt.Options{Engine: mpt.EngineGPU, Device: device}, keys, values, want, warmup, reps)
	defer func() { // the trie of the latest build, whichever
		if tr != nil {
			err = errors.Join(err, tr.Close())
		}
	}()
	if err != nil {
		return nil, "", err
	}
	res := MPTBuildRows(c, "gpu", st.KeyBytes, st.ValueBytes, u, h, e2e)
	probe := keys[:c.Probes()]
	lookup, err := mptLookupTime(tr, probe, warmup, reps)
	if err != nil {
		return nil, "", err
	}
	proof, err := TimeCPU(warmup, reps, nil, func() error {
		_, err := tr.ProveBatch(probe)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	into, err := MPTLookupIntoTime(tr, probe, warmup, reps)
	if err != nil {
		return nil, "", err
	}
	res = append(res,
		NewResult(c.Op("lookup"), "gpu", int64(len(probe)), 0, lookup),
		NewResult(c.Op("proof"), "gpu", int64(len(probe)), 0, proof),
		NewResult(c.Op("lookup into"), "gpu", int64(len(probe)), 0, into))
	note = fmt.Sprintf("gpu %s (%s): stage %v, upload %v, sort %v, PhaseNU %v (%d expansion rounds, %d short nodes expanded), PhaseHC %v (%d dirty nodes), total %v",
		c.Op(""), tr.Reason(), med.Stage.Round(time.Microsecond), med.Upload.Round(time.Microsecond), med.Sort.Round(time.Microsecond),
		med.Update.Round(time.Microsecond), med.Rounds, med.Expanded, med.Hash.Round(time.Microsecond), med.Dirty, med.Total.Round(time.Microsecond))
	err, tr = tr.Close(), nil
	if err != nil {
		return nil, "", err
	}
	_, _, e2e, med, tr, err = mptGPUBuilds(mpt.Options{Engine: mpt.EngineGPU, Device: device, HostValues: true}, keys, values, want, warmup, reps)
	if err != nil {
		return nil, "", err
	}
	if lookup, err = mptLookupTime(tr, probe, warmup, reps); err != nil {
		return nil, "", err
	}
	if into, err = MPTLookupIntoTime(tr, probe, warmup, reps); err != nil {
		return nil, "", err
	}
	res = append(res,
		NewResult(c.Op("end to end, host values"), "gpu", int64(c.Size), st.KeyBytes+st.ValueBytes, e2e),
		NewResult(c.Op("lookup, host values"), "gpu", int64(len(probe)), 0, lookup),
		NewResult(c.Op("lookup into, host values"), "gpu", int64(len(probe)), 0, into))
	note += fmt.Sprintf("; with host values: stage %v, total %v", med.Stage.Round(time.Microsecond), med.Total.Round(time.Microsecond))
	return res, note, nil
}

// mptLookupTime times Lookup of probe (all present keys) on tr.
func mptLookupTime(tr *mpt.Trie, probe [][]byte, warmup, reps int) (float64, error) {
	return TimeCPU(warmup, reps, nil, func() error {
		_, found, err := tr.Lookup(probe)
		if err != nil {
			return err
		}
		for i, ok := range found {
			if !ok {
				return fmt.Errorf("key %x not found", probe[i])
			}
		}
		return nil
	})
}

// medianIndex returns the index of the median element of xs (the lower
// one for an even length).
func medianIndex(xs []float64) int {
	best, bestRank := 0, -1
	for i, x := range xs {
		rank := 0
		for _, y := range xs {
			if y < x {
				rank++
			}
		}
		if rank <= (len(xs)-1)/2 && rank > bestRank {
			best, bestRank = i, rank
		}
	}
	return best
}
