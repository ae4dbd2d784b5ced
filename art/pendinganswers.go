package art

// pendingAnswers are the answer slices a call from Go slices returns to its
// caller (Get's values and found flags, Update's found flags), allocated
// on a goroutine of their own while the call sizes and packs its first
// chunks. The allocation is not cheap (9 MB for 1Mi lookups: 0.53 ms on
// the development VM with a 400 MB live heap, and as much again in page
// faults at the first writes, which the parallel copies out take), and the
// point pipeline needs the slices only when it copies out its first
// chunk's answers.
type pendingAnswers struct {
	done    chan struct{}
	withOut bool     // values too (a lookup's)
	out     []uint64 // nil without values
	found   []bool
}

// allocAnswers starts allocating n found flags and, when withOut, n
// values. Cost: one goroutine; the allocations run on it.
func allocAnswers(n int, withOut bool) *pendingAnswers {
	a := &pendingAnswers{done: make(chan struct{}), withOut: withOut}
	go func() {
		defer close(a.done)
		if withOut {
			a.out = make([]uint64, n)
		}
		a.found = make([]bool, n)
	}()
	return a
}

// wait returns the slices once they are allocated (at once after the
// first wait).
func (a *pendingAnswers) wait() ([]uint64, []bool) {
	<-a.done
	return a.out, a.found
}
