package prim

import (
	"fmt"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

// Launch configuration of the hot-word kernels (handoff.cu).
const (
	handoffLockWarpsPerSM   = 4   // Lock: warps a block, one block per SM
	handoffAtomicsBlock     = 256 // Atomics: threads a block
	handoffAtomicsBlocksPer = 4   // Atomics: blocks per SM
)

// hotWordLaunch returns measurement k's kernel and launch shape on a
// device of sms SMs, and how many of its threads work: 2 for PingPong
// (thread 0 of each of 2 blocks); lane 0 of each warp of one block of
// handoffLockWarpsPerSM warps an SM for Lock, and of
// handoffAtomicsBlocksPer blocks of handoffAtomicsBlock threads an SM for
// Atomics. ok is false for an unknown k.
func hotWordLaunch(sms int, k HotWord) (name string, grid, block, workers int, ok bool) {
	switch k {
	case PingPong:
		return "handoff_pingpong", 2, 32, 2, true
	case Lock:
		grid, block = sms, 32*handoffLockWarpsPerSM
		return "handoff_lock", grid, block, grid * block / 32, true
	case Atomics:
		grid, block = sms*handoffAtomicsBlocksPer, handoffAtomicsBlock
		return "handoff_atomics", grid, block, grid * block / 32, true
	}
	return "", 0, 0, 0, false
}

// HotWordWorkers returns how many threads of device d take part in
// measurement k (hotWordLaunch); 0 for an unknown k. Cost: O(1).
func HotWordWorkers(d *gpu.Device, k HotWord) int {
	_, _, _, workers, _ := hotWordLaunch(d.Properties().SMs, k)
	return workers
}

// DevHotWord zeroes the state st (HandoffWords words) and runs
// measurement k on the engine's stream, per steps for each of
// HotWordWorkers(k) threads (per turns on each side for PingPong), and
// returns the steps queued. A waiter that waits longer than timeout (0:
// 10 s) for its turn sets the state's failure flag, and every waiter then
// stops: CheckHotWord reports it. Cost: one memset and one launch of the
// steps.
func (e *Engine) DevHotWord(k HotWord, st *gpu.Buffer[uint64], per int, timeout time.Duration) (int64, error) {
	if st.Len() < HandoffWords {
		return 0, fmt.Errorf("prim: hot-word state of %d words: want %d", st.Len(), HandoffWords)
	}
	if per < 0 || int64(per) > int64(^uint32(0)) {
		return 0, fmt.Errorf("prim: %s of %d steps a thread: want 0 to %d", k, per, ^uint32(0))
	}
	if timeout <= 0 {
		timeout = hotWordTimeout
	}
	name, grid, block, workers, ok := hotWordLaunch(e.dev.Properties().SMs, k)
	if !ok {
		return 0, fmt.Errorf("prim: unknown hot-word measurement %d", int(k))
	}
	args := []any{st, uint32(per), uint64(timeout.Nanoseconds())}
	if k == Atomics {
		args = args[:2] // no waiting, no timeout
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	f, err := e.kernel("handoff.cu", name)
	if err != nil {
		return 0, fmt.Errorf("prim: %s: %w", k, err)
	}
	if err := st.FillBytes(e.stream, 0); err != nil {
		return 0, fmt.Errorf("prim: %s: zeroing the state: %w", k, err)
	}
	if err := f.Launch(e.stream, gpu.D1(grid), gpu.D1(block), 0, args...); err != nil {
		return 0, fmt.Errorf("prim: %s: %w", k, err)
	}
	return int64(workers) * int64(per), nil
}

// hotWordTimeout is how long a GPU waiter waits for its turn before it
// fails the run, unless the caller sets another.
const hotWordTimeout = 10 * time.Second

// CheckHotWord reads the state of a finished DevHotWord run of k that
// queued steps (synchronize first) and returns an error when a waiter
// timed out or the value is not steps (a lost or repeated step). Cost: one
// small download.
func CheckHotWord(k HotWord, st *gpu.Buffer[uint64], steps int64) error {
	got, err := st.Download()
	if err != nil {
		return fmt.Errorf("prim: %s: reading the state: %w", k, err)
	}
	if got[2] != 0 {
		return fmt.Errorf("prim: gpu %s: a thread waited past its timeout for its turn", k)
	}
	if got[1] != uint64(steps) {
		return fmt.Errorf("prim: gpu %s: value %d after %d steps", k, got[1], steps)
	}
	return nil
}

// hotWordOnDevice is HotWord on the GPU engine: DevHotWord on a state of
// its own, synchronized and checked.
func (e *Engine) hotWordOnDevice(k HotWord, per int) (steps int64, err error) {
	st, err := gpu.Alloc[uint64](e.dev, HandoffWords)
	if err != nil {
		return 0, fmt.Errorf("prim: %s: state: %w", k, err)
	}
	defer func() {
		if serr := e.Synchronize(); err == nil && serr != nil {
			err = fmt.Errorf("prim: %s: %w", k, serr)
		}
		st.Free()
	}()
	if steps, err = e.DevHotWord(k, st, per, 0); err != nil {
		return 0, err
	}
	if err = e.Synchronize(); err != nil {
		return 0, fmt.Errorf("prim: %s: %w", k, err)
	}
	return steps, CheckHotWord(k, st, steps)
}
