package art

import "unsafe"

// pendingAnswers are the answer slices a call from Go slices returns to its
// caller (Get's values and found flags, Update's found flags), allocated
// on a goroutine of their own while the call sizes and packs its first
// chunks. The allocation is not cheap (9 MB for 1Mi lookups: 0.53 ms on
// the development VM with a 400 MB live heap, and as much again in page
// faults at the first writes, which the parallel copies out take: 0.5-2.2
// ms a call at 100M keys on an H200 host; touching the pages here instead
// is an option, pointTuning.touchAnswers), and the point pipeline needs
// the slices only when it copies out its first chunk's answers.
type pendingAnswers struct {
	done    chan struct{}
	withOut bool     // values too (a lookup's)
	out     []uint64 // nil without values
	found   []bool
}

// allocAnswers starts allocating n found flags and, when withOut, n
// values; with huge it advises the kernel to back them with huge pages
// (adviseHuge); with touch it also writes a zero into every 4 KiB page
// of them, so that the page faults of memory fresh from the OS are taken
// there, beside the call, not by the copies out. Cost: one goroutine; the
// allocations (and the page faults, with touch) run on it.
func allocAnswers(n int, withOut, touch, huge bool) *pendingAnswers {
	a := &pendingAnswers{done: make(chan struct{}), withOut: withOut}
	go func() {
		defer close(a.done)
		if withOut {
			a.out = make([]uint64, n)
		}
		a.found = make([]bool, n)
		if huge {
			adviseHuge(a.out)
			adviseHuge(a.found)
		}
		if touch {
			touchPages(a.out)
			touchPages(a.found)
		}
	}()
	return a
}

// touchPages writes the zero value into one element of s every 4 KiB
// (s must hold zero values: they are unchanged). Cost: a page fault per
// page not yet mapped.
func touchPages[T any](s []T) {
	var z T
	step := max(1, 4096/int(unsafe.Sizeof(z)))
	for i := 0; i < len(s); i += step {
		s[i] = z
	}
}

// wait returns the slices once they are allocated (at once after the
// first wait).
func (a *pendingAnswers) wait() ([]uint64, []bool) {
	<-a.done
	return a.out, a.found
}
