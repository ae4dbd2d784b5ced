package prim

import (
	"strings"
	"testing"

	"github.com/warpkv/warpkv/gpu"
)

// TestHotWordKeepsEveryStep runs every hot-word measurement on every
// engine: each step's increment of the value must be seen by the next
// (the value ends at the step count: no turn taken out of order, no lock
// held twice, no add lost), with no step, one, and many a thread.
func TestHotWordKeepsEveryStep(t *testing.T) {
	for _, e := range testEngines(t) {
		for _, k := range []HotWord{PingPong, Lock, Atomics} {
			for _, per := range []int{0, 1, 1000} {
				steps, err := e.HotWord(k, per)
				if err != nil {
					t.Fatalf("%s engine, %s, %d a thread: %v", e.Name(), k, per, err)
				}
				if want := int64(e.HotWordThreads(k)) * int64(per); steps != want {
					t.Errorf("%s engine, %s, %d a thread: %d steps, want %d", e.Name(), k, per, steps, want)
				}
			}
		}
	}
}

// TestHotWordRejectsBadArguments: a negative step count, an unknown
// measurement and (on the GPU) a state too short are refused with errors
// that name them.
func TestHotWordRejectsBadArguments(t *testing.T) {
	for _, e := range testEngines(t) {
		if _, err := e.HotWord(Lock, -1); err == nil || !strings.Contains(err.Error(), "-1 steps") {
			t.Errorf("%s engine: -1 steps: %v", e.Name(), err)
		}
		if _, err := e.HotWord(HotWord(9), 1); err == nil || !strings.Contains(err.Error(), "unknown hot-word measurement 9") {
			t.Errorf("%s engine: measurement 9: %v", e.Name(), err)
		}
		if e.Backend() != gpu.BackendGPU {
			continue
		}
		st, err := gpu.Alloc[uint64](e.Device(), HandoffWords-1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.DevHotWord(PingPong, st, 1, 0); err == nil || !strings.Contains(err.Error(), "state of 3 words") {
			t.Errorf("short state: %v", err)
		}
		st.Free()
	}
}
