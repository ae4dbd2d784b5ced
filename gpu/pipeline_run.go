package gpu

import "errors"

// Steps are the parts of one chunk of a batch that Pipeline.Run schedules.
// Every step but In, Work and Out may be nil.
type Steps struct {
	// Pack prepares chunk c's inputs on the host (into pinned memory)
	// before its In is queued.
	Pack func(c int) error
	// In queues chunk c's transfers to the device on s.
	In func(s *Stream, c int) error
	// InFirst queues every chunk's In before any Work: for inputs that
	// are already in pinned memory (no Pack), so that all of them are on
	// their way at once.
	InFirst bool
	// Check, when set, runs on the host once every chunk's In is queued
	// (it implies InFirst) and before any Work: an error aborts the batch
	// before it changed anything on the device.
	Check func() error
	// Work queues chunk c's kernels on s, after its In.
	Work func(s *Stream, c int) error
	// Out queues chunk c's transfers back to the host on s, after its
	// Work.
	Out func(s *Stream, c int) error
	// Done consumes chunk c's outputs on the host once its Out has
	// completed; chunks are done in order.
	Done func(c int) error
}

// Events of one chunk of Run: its transfers in done, its kernels done, its
// transfers out done.
const (
	runIn = iota
	runWorked
	runOut
	runEvents
)

// Run runs a batch of chunks chunks. With one chunk every step is queued on
// work, then work is synchronized and the chunk is done. With more, chunk
// c's In is queued on in, its Work on work once its In has finished, its
// Out on out once its Work has; each stream runs the chunks in order, so a
// chunk's transfers overlap its neighbours' kernels. The host packs and
// queues chunk c while the chunks before are on the device and does chunk
// c-lag (and earlier ones) once c is queued; with InFirst or Check it queues
// every chunk's In first, runs Check, then queues the rest. On an error Run waits
// for the three streams before returning, so that the memory the steps
// used is idle again. Cost: the steps', three events per chunk (created
// once and reused) and one wait per chunk.
func (p *Pipeline) Run(work, in, out *Stream, chunks, lag int, st Steps) (err error) {
	if chunks <= 0 {
		return nil
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, in.Synchronize(), work.Synchronize(), out.Synchronize())
		}
	}()
	piped := chunks > 1
	if !piped {
		in, out = work, work
	}
	var ev []*Event
	if piped {
		if ev, err = p.runEvents(chunks); err != nil {
			return err
		}
	}
	queueIn := func(c int) error {
		if st.Pack != nil {
			if err := st.Pack(c); err != nil {
				return err
			}
		}
		if err := st.In(in, c); err != nil {
			return err
		}
		if piped {
			return ev[runEvents*c+runIn].Record(in)
		}
		return nil
	}
	queueRest := func(c int) error {
		if piped {
			if err := work.Wait(ev[runEvents*c+runIn]); err != nil {
				return err
			}
		}
		if err := st.Work(work, c); err != nil {
			return err
		}
		if piped {
			if err := ev[runEvents*c+runWorked].Record(work); err != nil {
				return err
			}
			if err := out.Wait(ev[runEvents*c+runWorked]); err != nil {
				return err
			}
		}
		if err := st.Out(out, c); err != nil {
			return err
		}
		if piped {
			return ev[runEvents*c+runOut].Record(out)
		}
		return nil
	}
	consume := func(c int) error {
		if piped {
			if err := ev[runEvents*c+runOut].Synchronize(); err != nil {
				return err
			}
		} else if err := work.Synchronize(); err != nil {
			return err
		}
		if st.Done != nil {
			return st.Done(c)
		}
		return nil
	}
	for _, o := range runPlan(chunks, lag, st.InFirst || st.Check != nil) {
		switch o.kind {
		case opIn:
			err = queueIn(o.chunk)
		case opCheck:
			if st.Check != nil {
				err = st.Check()
			}
		case opRest:
			err = queueRest(o.chunk)
		case opDone:
			err = consume(o.chunk)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// runOp is one host step of Run: queue a chunk's In, run Check, queue a
// chunk's Work and Out, or wait for and consume a chunk.
type runOp struct{ kind, chunk int }

const (
	opIn = iota
	opCheck
	opRest
	opDone
)

// runPlan returns the order of Run's host steps for a batch of chunks:
// with inFirst every In, Check, every rest, every Done; otherwise per
// chunk its In and its rest, then the Done of every chunk at least lag
// behind it (with one chunk, Done after everything), and the remaining
// Dones at the end. Cost: O(chunks).
func runPlan(chunks, lag int, inFirst bool) []runOp {
	plan := make([]runOp, 0, 3*chunks+1)
	done := 0
	if inFirst {
		for c := range chunks {
			plan = append(plan, runOp{opIn, c})
		}
		plan = append(plan, runOp{opCheck, -1})
		for c := range chunks {
			plan = append(plan, runOp{opRest, c})
		}
	} else {
		for c := range chunks {
			plan = append(plan, runOp{opIn, c}, runOp{opRest, c})
			for chunks > 1 && done <= c-lag {
				plan = append(plan, runOp{opDone, done})
				done++
			}
		}
	}
	for ; done < chunks; done++ {
		plan = append(plan, runOp{opDone, done})
	}
	return plan
}

// runEvents returns runEvents*chunks events, creating more when needed.
func (p *Pipeline) runEvents(chunks int) ([]*Event, error) {
	for len(p.events) < runEvents*chunks {
		e, err := p.d.NewEvent()
		if err != nil {
			return nil, err
		}
		p.events = append(p.events, e)
	}
	return p.events[:runEvents*chunks], nil
}
