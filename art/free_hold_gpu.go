package art

import (
	"sync"
	"time"
)

// freeHoldMax bounds how long held frees wait for the next batch's keys.
const freeHoldMax = 50 * time.Millisecond

// freeHold holds the frees a batch retired (freeBeside) until the next
// structural batch has queued its keys' upload, or waitFrees, or
// freeHoldMax has passed: a cuMemFree of GBs beside an insert's key
// packing slowed the packing (its driver calls or its host memory), so
// the frees wait for the device's part of the next call instead. The
// zero value holds nothing (off).
type freeHold struct {
	on    bool
	mu    sync.Mutex
	gates []chan struct{}
}

// gate returns a gate for frees about to start, closed by open; nil when
// the hold is off. Cost: O(1).
func (h *freeHold) gate() chan struct{} {
	if !h.on {
		return nil
	}
	c := make(chan struct{})
	h.mu.Lock()
	h.gates = append(h.gates, c)
	h.mu.Unlock()
	return c
}

// open lets every held free run. Cost: O(held).
func (h *freeHold) open() {
	h.mu.Lock()
	for _, c := range h.gates {
		close(c)
	}
	clear(h.gates)
	h.gates = h.gates[:0]
	h.mu.Unlock()
}

// waitGate waits until c is closed or freeHoldMax has passed; nothing for
// a nil gate.
func waitGate(c chan struct{}) {
	if c == nil {
		return
	}
	t := time.NewTimer(freeHoldMax)
	defer t.Stop()
	select {
	case <-c:
	case <-t.C:
	}
}
