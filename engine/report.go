package engine

import (
	"fmt"
	"sync"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

// Reporter is what every engine facade says about itself.
type Reporter interface {
	// Backend is the backend the engine runs on.
	Backend() gpu.Backend
	// Reason is a sentence saying which backend was chosen and why.
	Reason() string
	// LastBatch is the time breakdown of the most recent batch.
	LastBatch() Timings
	// Close frees the engine's memory, and its device if it opened it.
	Close() error
}

// Timings is the time breakdown of one batch. On a GPU engine the phases
// are device time between CUDA events on the engine's stream; on a CPU
// engine host time, with Upload and Download zero. Phases that overlap are
// counted once, in the phase the engine documents; Total is the whole call
// as its caller saw it, so Total can exceed the sum of the phases (host
// work, launch gaps) or fall below it (overlap).
type Timings struct {
	Op       string        // the batch's operation, e.g. "insert", "get"
	Items    int           // operations (keys, transactions) in the batch
	Upload   time.Duration // host to device copies, staging included
	Sort     time.Duration // sorting, grouping and deduplicating the batch
	Work     time.Duration // the engine's own phases
	Download time.Duration // device to host copies
	Total    time.Duration // the whole call
}

// String formats the breakdown on one line, e.g.
// "insert 1000000 items: total 1.2ms (upload 300µs, sort 200µs, work 600µs, download 100µs)".
func (t Timings) String() string {
	return fmt.Sprintf("%s %d items: total %v (upload %v, sort %v, work %v, download %v)",
		t.Op, t.Items, t.Total, t.Upload, t.Sort, t.Work, t.Download)
}

// Rate is items per second over Total (0 when Total is 0).
func (t Timings) Rate() float64 {
	if t.Total <= 0 {
		return 0
	}
	return float64(t.Items) / t.Total.Seconds()
}

// Last holds the Timings of the most recent batch for engines whose calls
// may run concurrently (lookups beside lookups). The zero value is ready.
type Last struct {
	mu sync.Mutex
	t  Timings
}

// Set records t. Cost: O(1).
func (l *Last) Set(t Timings) {
	l.mu.Lock()
	l.t = t
	l.mu.Unlock()
}

// Get returns the recorded Timings. Cost: O(1).
func (l *Last) Get() Timings {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.t
}
