package art

import (
	"errors"
	"runtime"

	"github.com/warpkv/warpkv/gpu"
)

// runBeside runs the chunks of a point call from Go memory as
// gpu.Pipeline.Run does without InFirst (chunk c's In on g.in once it is
// packed, its Work on g.s after its In, its Out on g.out after its Work,
// chunk c-lag and earlier done once c is queued), but with the driver
// calls that queue a chunk (about a dozen: transfers, event records and
// waits, kernel launches) on a goroutine of their own, so that the host
// packs chunk c+1 while chunk c is being queued. On the H200 host these
// calls took 60-140 µs a chunk, all on the packing goroutine's path
// (BenchmarkGPUPointSteps, 2026-11-29); without the Gosched after each
// chunk the queueing goroutine waited for the packing goroutine to block
// before it ran (0.3 ms for the first chunk). st.Pack and st.Done run on the
// calling goroutine, in order; st.In, st.Work and st.Out on the queueing
// goroutine, in chunk order. The events ev (3 a chunk) are the chunks'
// transfers in, kernels and transfers out done. On an error the streams
// are synchronized before it returns, so that the memory the steps used
// is idle again. Cost: Run's, plus one goroutine and two channel
// operations a chunk.
func (g *gpuEngine) runBeside(chunks, lag int, st gpu.Steps, ev []*gpu.Event) (err error) {
	todo := make(chan int, chunks)
	queued := make(chan error, chunks) // one per chunk, in order: nil once it is queued
	go func() {
		defer close(queued)
		var failed error
		for c := range todo {
			if failed == nil {
				failed = g.queueChunk(c, st, ev[3*c:3*c+3])
			}
			queued <- failed
		}
	}()
	closed := false
	stop := func() {
		if !closed {
			close(todo)
			closed = true
		}
	}
	defer func() {
		stop()
		for range queued { // the goroutine is done with the streams
		}
		if err != nil {
			err = errors.Join(err, g.in.Synchronize(), g.s.Synchronize(), g.out.Synchronize())
		}
	}()
	done := 0
	consume := func() error {
		if err := <-queued; err != nil {
			return err
		}
		if err := ev[3*done+2].Synchronize(); err != nil {
			return err
		}
		if err := st.Done(done); err != nil {
			return err
		}
		done++
		return nil
	}
	for c := range chunks {
		if err := st.Pack(c); err != nil {
			return err
		}
		todo <- c
		// Let the queueing goroutine start on this thread at once: the
		// pool's workers, spinning between fan-outs, yield to the global
		// run queue and take from it first, so they would not steal it
		// from here; this goroutine resumes when one of them yields.
		runtime.Gosched()
		for done <= c-lag {
			if err := consume(); err != nil {
				return err
			}
		}
	}
	stop()
	for done < chunks {
		if err := consume(); err != nil {
			return err
		}
	}
	return nil
}

// queueChunk queues chunk c of runBeside: its In on g.in, then its Work on
// g.s once ev[0] (its transfers in) is reached, then its Out on g.out once
// ev[1] (its kernels) is, and records ev[2] after the Out.
func (g *gpuEngine) queueChunk(c int, st gpu.Steps, ev []*gpu.Event) error {
	if err := st.In(g.in, c); err != nil {
		return err
	}
	if err := ev[0].Record(g.in); err != nil {
		return err
	}
	if err := g.s.Wait(ev[0]); err != nil {
		return err
	}
	if err := st.Work(g.s, c); err != nil {
		return err
	}
	if err := ev[1].Record(g.s); err != nil {
		return err
	}
	if err := g.out.Wait(ev[1]); err != nil {
		return err
	}
	if err := st.Out(g.out, c); err != nil {
		return err
	}
	return ev[2].Record(g.out)
}
