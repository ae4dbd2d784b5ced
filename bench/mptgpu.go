package bench

import (
	"fmt"
	"runtime"
	"time"

	"warpkv/mpt"
)

// MPTGPURows measures the GPU MPT engine (mpt.Open with mpt.EngineGPU on
// device) on case c with its input keys and values (statistics st): a
// fresh trie per run, all pairs in one Update (which on the GPU engine
// stages, uploads, sorts, runs PhaseNU and PhaseHC and reads the root
// back), then Hash; rows engine "gpu": update (the Update call minus its
// PhaseHC share), hash (PhaseHC), end to end (Update and Hash, transfers
// included), lookup, proof and lookup into (batch Lookup, ProveBatch and
// LookupInto into one reused buffer, of c.Probes() present keys,
// transfers included). It also returns a note with the
// phase breakdown of the median end-to-end run. Medians of reps runs
// after warmup untimed ones; every run's root is checked against want.
func MPTGPURows(c MPTCase, device string, keys, values [][]byte, st mpt.Stats, want [32]byte, warmup, reps int) ([]Result, string, error) {
	var us, hs, ts []float64
	var times []mpt.GPUTimes
	var tr *mpt.Trie
	defer func() {
		if tr != nil {
			tr.Close()
		}
	}()
	for i := range warmup + reps {
		if tr != nil {
			if err := tr.Close(); err != nil {
				return nil, "", err
			}
		}
		runtime.GC()
		var err error
		if tr, err = mpt.Open(mpt.Options{Engine: mpt.EngineGPU, Device: device}); err != nil {
			return nil, "", err
		}
		t0 := time.Now()
		if err := tr.Update(keys, values); err != nil {
			return nil, "", err
		}
		root := tr.Hash()
		total := time.Since(t0).Seconds()
		if root != want {
			return nil, "", fmt.Errorf("gpu root %x, cpu root %x", root, want)
		}
		tm := tr.GPUTimes()
		if i >= warmup {
			hs = append(hs, tm.Hash.Seconds())
			us = append(us, total-tm.Hash.Seconds())
			ts = append(ts, total)
			times = append(times, tm)
		}
	}
	res := MPTBuildRows(c, "gpu", st.KeyBytes, st.ValueBytes, Median(us), Median(hs), Median(ts))
	probe := keys[:c.Probes()]
	lookup, err := TimeCPU(warmup, reps, nil, func() error {
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
	med := times[medianIndex(ts)]
	note := fmt.Sprintf("gpu %s (%s): stage %v, upload %v, sort %v, PhaseNU %v (%d expansion rounds, %d short nodes expanded), PhaseHC %v (%d dirty nodes), total %v",
		c.Op(""), tr.Reason(), med.Stage.Round(time.Microsecond), med.Upload.Round(time.Microsecond), med.Sort.Round(time.Microsecond),
		med.Update.Round(time.Microsecond), med.Rounds, med.Expanded, med.Hash.Round(time.Microsecond), med.Dirty, med.Total.Round(time.Microsecond))
	return res, note, nil
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
