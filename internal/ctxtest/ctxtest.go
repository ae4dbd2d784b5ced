// Package ctxtest holds a context for the tests of the ...Context calls:
// one that is done after a given number of looks, so that a test can stop
// a call between two given chunks without timing; and Stops, the check
// the ordered indexes' tests run with it.
package ctxtest

import (
	"context"
	"sync/atomic"
	"time"
)

// Countdown is a context that reports itself done (context.Canceled) from
// its n+1st call of Err on; Done returns a channel that is closed then, so
// that callers see a context that can be cancelled.
type Countdown struct {
	left atomic.Int64
	done chan struct{}
	once atomic.Bool
}

// After returns a Countdown whose first n calls of Err return nil.
func After(n int) *Countdown {
	c := &Countdown{done: make(chan struct{})}
	c.left.Store(int64(n))
	return c
}

// Deadline reports no deadline.
func (c *Countdown) Deadline() (time.Time, bool) { return time.Time{}, false }

// Done returns the channel closed when the countdown ends.
func (c *Countdown) Done() <-chan struct{} { return c.done }

// Err counts one look and returns context.Canceled once the countdown has
// ended.
func (c *Countdown) Err() error {
	if c.left.Add(-1) >= 0 {
		return nil
	}
	if c.once.CompareAndSwap(false, true) {
		close(c.done)
	}
	return context.Canceled
}

// Value returns nil: the context carries no values.
func (c *Countdown) Value(any) any { return nil }

var _ context.Context = (*Countdown)(nil)
