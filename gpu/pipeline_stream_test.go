package gpu

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestStreamRingOrder streams spans through rings of Go memory with host
// markers: every span reaches fn in order with its own bytes, after its
// chunk's wait, while up to the ring's chunks less one later spans are
// queued; a chunk is read again only after fn is done with its last
// span; direct spans are read at their turn; fn's error stops the stream.
func TestStreamRingOrder(t *testing.T) {
	for _, c := range []struct {
		chunks, n int
		direct    []int
	}{{1, 4, nil}, {2, 5, nil}, {3, 7, nil}, {2, 6, []int{0, 3}}, {3, 5, []int{1, 2, 3}}} {
		name := fmt.Sprintf("chunks=%d n=%d direct=%v", c.chunks, c.n, c.direct)
		var log []string
		p := hostRing(c.chunks, 8, &log)
		read := func(k int, pin []byte) ([]byte, error) {
			if pin == nil {
				log = append(log, fmt.Sprintf("direct %d", k))
				return []byte{byte(k)}, nil
			}
			log = append(log, fmt.Sprintf("queue %d", k))
			pin[0] = byte(k) // the DMA's bytes
			return pin[:1], nil
		}
		err := streamRing(p, nil, c.n, func(k int) bool { return slices.Contains(c.direct, k) }, read, func(k int, b []byte) error {
			log = append(log, fmt.Sprintf("fn %d", k))
			if len(b) != 1 || b[0] != byte(k) {
				return fmt.Errorf("span %d got %v", k, b)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Every fn k comes after queue/direct k and after the wait that
		// followed span k's queue; a chunk is queued again only after fn
		// of the span it held.
		pos := func(s string) int { return slices.Index(log, s) }
		last := -1
		for k := range c.n {
			at := pos(fmt.Sprintf("fn %d", k))
			if at < 0 || at < last {
				t.Fatalf("%s: fn %d out of order in %v", name, k, log)
			}
			last = at
			if slices.Contains(c.direct, k) {
				if d := pos(fmt.Sprintf("direct %d", k)); d < 0 || d > at {
					t.Fatalf("%s: span %d read directly after its fn: %v", name, k, log)
				}
				continue
			}
			q := pos(fmt.Sprintf("queue %d", k))
			if q < 0 || q > at {
				t.Fatalf("%s: span %d queued after its fn: %v", name, k, log)
			}
			if !slices.ContainsFunc(log[q:at], func(s string) bool { return strings.HasPrefix(s, "wait ") }) {
				t.Fatalf("%s: fn %d ran without a wait after its queue: %v", name, k, log)
			}
		}
		// No more than chunks spans in flight: between queue k and fn k at
		// most chunks-1 other queues.
		for k := range c.n {
			if slices.Contains(c.direct, k) {
				continue
			}
			q, f := pos(fmt.Sprintf("queue %d", k)), pos(fmt.Sprintf("fn %d", k))
			others := 0
			for _, s := range log[q+1 : f] {
				if strings.HasPrefix(s, "queue ") {
					others++
				}
			}
			if others > c.chunks-1 {
				t.Fatalf("%s: %d spans queued while span %d was in flight: %v", name, others, k, log)
			}
		}
	}
	var log []string
	p := hostRing(2, 8, &log)
	stop := errors.New("stop")
	calls := 0
	err := streamRing(p, nil, 5, func(int) bool { return false }, func(k int, pin []byte) ([]byte, error) { return pin[:1], nil }, func(k int, b []byte) error {
		calls++
		if k == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 3 {
		t.Fatalf("fn's error at span 2: got %v after %d calls", err, calls)
	}
}
