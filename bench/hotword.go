package bench

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// The limits suite's hot-word rows (prim.HotWord): how fast one word of
// memory passes between threads, the bound of any protocol whose steps
// must each see the one before (the commits of one hot item, a lock's
// holders, a shared counter). Reported on the GPU and on the CPU alike,
// so the two can be compared on one host.

// hotWordKinds are the measurements, in the order reported.
var hotWordKinds = [...]prim.HotWord{prim.PingPong, prim.Lock, prim.Atomics}

// hotWordPer returns the steps a thread of measurement k takes in one
// timed run on the GPU or the CPU engine, scaled by scale (at least 1):
// about 0.1 s a run where a handoff costs a microsecond on the GPU and
// 0.1-0.2 microseconds on a CPU.
func hotWordPer(k prim.HotWord, onGPU bool, scale float64) int {
	var per int
	switch {
	case k == prim.PingPong && onGPU:
		per = 50_000
	case k == prim.PingPong:
		per = 500_000
	case k == prim.Lock && onGPU:
		per = 200
	case k == prim.Lock:
		per = 50_000
	case onGPU: // atomics, one lane a warp
		per = 1_000
	default:
		per = 1_000_000
	}
	return max(1, int(float64(per)*scale))
}

// hotWordOp names measurement k's row for workers threads.
func hotWordOp(k prim.HotWord, onGPU bool, workers int) string {
	where, who := "2 threads", fmt.Sprintf("%d threads", workers)
	if onGPU {
		where, who = "2 blocks", fmt.Sprintf("%d warps (one lane each)", workers)
	}
	switch k {
	case prim.PingPong:
		return fmt.Sprintf("hot word passed between %s with its value (release/acquire), per handoff", where)
	case prim.Lock:
		return fmt.Sprintf("hot word under a spin lock, %s, per acquisition", who)
	}
	return fmt.Sprintf("atomic add on one word, %s, per add", who)
}

// measureHotWords times every hot-word measurement on engine e (on the GPU
// with t's events, on the CPU with the wall clock), warmup runs and then
// the median of reps, checks each one's final state, and returns a row
// each and a note giving each row's time per step. Cost: a few tenths of
// a second a run at scale 1.
func measureHotWords(e *prim.Engine, t *GPUTimer, p *Progress, warmup, reps int, scale float64) ([]Result, []string, error) {
	onGPU := e.Backend() == gpu.BackendGPU
	var st *gpu.Buffer[uint64]
	if onGPU {
		var err error
		if st, err = gpu.Alloc[uint64](e.Device(), prim.HandoffWords); err != nil {
			return nil, nil, fmt.Errorf("bench: hot-word state: %w", err)
		}
		defer st.Free()
	}
	var out []Result
	var notes []string
	for _, k := range hotWordKinds {
		per := hotWordPer(k, onGPU, scale)
		var steps int64
		var sec float64
		var err error
		workers := e.HotWordThreads(k)
		if onGPU {
			p.Printf("gpu: hot word, %s, %d threads", k, workers)
			// Each run zeroes the state: check each one before the next
			// (its end event has been waited for), and the last after.
			ran := false
			check := func() error {
				if !ran {
					return nil
				}
				return prim.CheckHotWord(k, st, steps)
			}
			sec, err = t.Time(warmup, reps, check, func() (err error) {
				steps, err = e.DevHotWord(k, st, per, 0)
				ran = true
				return err
			})
			if err == nil {
				err = check()
			}
		} else {
			p.Printf("cpu: hot word, %s, %d threads", k, workers)
			sec, err = TimeCPU(warmup, reps, nil, func() (err error) {
				steps, err = prim.CPUHotWord(k, e.Workers(), per)
				return err
			})
		}
		if err != nil {
			return nil, nil, fmt.Errorf("bench: hot word, %s: %w", k, err)
		}
		r := NewResult(hotWordOp(k, onGPU, workers), e.Name(), steps, 0, sec)
		out = append(out, r)
		if r.OpsPerSec > 0 {
			notes = append(notes, fmt.Sprintf("%s: %.0f ns a step (%s)", e.Name(), 1e9/r.OpsPerSec, r.Op))
		}
	}
	return out, notes, nil
}

// measureGPUHotWords is measureHotWords on a GPU engine of its own on d.
func measureGPUHotWords(d *gpu.Device, p *Progress, reps int, scale float64) ([]Result, []string, error) {
	e, err := prim.NewGPU(d)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: hot-word engine: %w", err)
	}
	defer e.Close()
	t, err := NewGPUTimer(d, e.Stream())
	if err != nil {
		return nil, nil, err
	}
	defer t.Close()
	return measureHotWords(e, t, p, DefaultWarmup, reps, scale)
}
