package prim

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/warpkv/warpkv/gpu"
)

// Hot-word measurements: how fast one word of memory passes between
// threads. Any protocol in which each step must see the step before it
// (the commits of one hot item of a transactional memory, a lock's
// holders, a shared counter) runs no faster than these. handoff.cu holds
// the GPU kernels (launched by handoff_gpu.go), this file the CPU twin;
// both check the same invariant: the value incremented under the word
// ends at the number of steps.

// HotWord is one hot-word measurement.
type HotWord int

const (
	// PingPong: two threads (of two blocks, which the GPU places on SMs
	// as it will, or two goroutines) take turns on
	// a counter; each turn reads a value, writes it back plus one and
	// passes the turn with a release store that the other side acquires.
	// A step is one handoff.
	PingPong HotWord = iota
	// Lock: many threads (lane 0 of every warp on the GPU) take a spin
	// lock (compare-and-swap), increment the value under it and release
	// it. A step is one acquisition. The lock is not fair: one thread
	// may take it several times in a row, so a step can cost less than
	// a handoff between threads (the best case of a lock per item).
	Lock
	// Atomics: many threads (lane 0 of every warp on the GPU) fetch-and-
	// add the value. A step is one add; its time is the inverse of the
	// rate, not one add's latency.
	Atomics
)

// String names the measurement.
func (k HotWord) String() string {
	switch k {
	case PingPong:
		return "ping-pong"
	case Lock:
		return "lock"
	case Atomics:
		return "atomics"
	}
	return fmt.Sprintf("HotWord(%d)", int(k))
}

// HandoffWords is the length of the state a GPU hot-word measurement works
// on (handoff.cu): the word passed, the value incremented under it, the
// failure flag and a sink.
const HandoffWords = 4

// handoffPoll is how many failed polls a waiter makes between checks of
// its timeout (a power of two): each check reads the global timer and the
// failure flag, which would slow every poll.
const handoffPoll = 64

// HotWord runs measurement k on the engine's backend, per steps for each
// of its threads (per turns on each side for PingPong), and returns the
// steps taken; it fails when the value left is not the step count, or
// when a GPU waiter timed out. The CPU engine runs CPUHotWord with its
// workers, the GPU engine DevHotWord on state it allocates and frees.
// Cost: the steps.
func (e *Engine) HotWord(k HotWord, per int) (int64, error) {
	if e.Backend() == gpu.BackendGPU {
		return e.hotWordOnDevice(k, per)
	}
	return CPUHotWord(k, e.workers, per)
}

// HotWordThreads returns how many threads of the engine take part in
// measurement k: HotWordWorkers on the GPU engine, cpuHotWordWorkers with
// the engine's workers on the CPU engine. Cost: O(1).
func (e *Engine) HotWordThreads(k HotWord) int {
	if e.Backend() == gpu.BackendGPU {
		return HotWordWorkers(e.dev, k)
	}
	return cpuHotWordWorkers(k, e.workers)
}

// cpuHotWordWorkers returns the goroutines CPUHotWord runs for k with
// workers asked for: 2 for PingPong, else workers (<= 0: GOMAXPROCS).
func cpuHotWordWorkers(k HotWord, workers int) int {
	switch {
	case k == PingPong:
		return 2
	case workers <= 0:
		return runtime.GOMAXPROCS(0)
	}
	return workers
}

// CPUHotWord runs measurement k on the CPU and returns the steps it took:
// PingPong does per turns on each of 2 goroutines, Lock and Atomics per
// steps on each of workers goroutines (<= 0: GOMAXPROCS). It fails,
// naming both, when the value left is not the step count. A waiter yields
// its processor every 1024 polls, so a run finishes with fewer processors
// than goroutines too (slowly). The goroutines are not locked to OS
// threads: on the 2-core development VM a handoff took 2.7 us with
// runtime.LockOSThread and the yields, 0.24 us without the lock. Cost:
// the steps; no allocation beyond the goroutines.
func CPUHotWord(k HotWord, workers, per int) (steps int64, err error) {
	if per < 0 {
		return 0, fmt.Errorf("prim: %s of %d steps a worker", k, per)
	}
	workers = cpuHotWordWorkers(k, workers)
	var word, value atomic.Uint64
	var plain uint64 // the value Lock increments without atomics, under the lock
	var wg sync.WaitGroup
	switch k {
	case PingPong:
		for side := range uint64(2) {
			wg.Go(func() {
				for turn := range uint64(per) {
					want := 2*turn + side
					for polls := 1; word.Load() != want; polls++ {
						if polls%1024 == 0 {
							runtime.Gosched()
						}
					}
					value.Store(value.Load() + 1) // only the turn's holder writes
					word.Store(want + 1)
				}
			})
		}
	case Lock:
		for range workers {
			wg.Go(func() {
				for range per {
					for polls := 1; !word.CompareAndSwap(0, 1); polls++ {
						if polls%1024 == 0 {
							runtime.Gosched()
						}
					}
					plain++
					word.Store(0)
				}
			})
		}
	case Atomics:
		for range workers {
			wg.Go(func() {
				for range per {
					value.Add(1)
				}
			})
		}
	default:
		return 0, fmt.Errorf("prim: unknown hot-word measurement %d", int(k))
	}
	wg.Wait()
	steps = int64(workers) * int64(per)
	got := value.Load()
	if k == Lock {
		got = plain
	}
	if got != uint64(steps) {
		return steps, fmt.Errorf("prim: cpu %s: value %d after %d steps", k, got, steps)
	}
	return steps, nil
}
