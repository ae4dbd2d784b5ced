package gpu

import (
	"fmt"
	"strings"
	"testing"
)

// TestRunPlanKeepsEveryChunksOrder checks the host order of Run's steps
// without a GPU: each chunk's In before its Work and Out, those before
// its Done, Dones in chunk order and exactly once, the host never more
// than lag chunks behind, and In-first batches queue every In before
// Check and Check before any Work.
func TestRunPlanKeepsEveryChunksOrder(t *testing.T) {
	for _, c := range []struct {
		chunks, lag int
		inFirst     bool
	}{{1, 2, false}, {1, 2, true}, {2, 2, false}, {5, 2, false}, {5, 1, false}, {7, 3, true}, {3, 0, false}} {
		name := fmt.Sprintf("chunks=%d lag=%d inFirst=%v", c.chunks, c.lag, c.inFirst)
		plan := runPlan(c.chunks, c.lag, c.inFirst)
		at := map[runOp]int{}
		for i, o := range plan {
			if _, dup := at[o]; dup {
				t.Fatalf("%s: step %v twice in %v", name, o, plan)
			}
			at[o] = i
		}
		check, hasCheck := at[runOp{opCheck, -1}]
		if hasCheck != c.inFirst {
			t.Fatalf("%s: Check in the plan: %v", name, hasCheck)
		}
		queued := -1
		for i, o := range plan {
			if o.kind == opRest {
				queued = o.chunk
			}
			if o.kind == opDone && c.chunks > 1 && !c.inFirst && queued < c.chunks-1 && queued-o.chunk < c.lag {
				t.Fatalf("%s: chunk %d done at step %d with only chunk %d queued", name, o.chunk, i, queued)
			}
		}
		for k := range c.chunks {
			in, okIn := at[runOp{opIn, k}]
			rest, okRest := at[runOp{opRest, k}]
			done, okDone := at[runOp{opDone, k}]
			if !okIn || !okRest || !okDone || in > rest || rest > done {
				t.Fatalf("%s: chunk %d out of order (in %d, rest %d, done %d) in %v", name, k, in, rest, done, plan)
			}
			if k > 0 && at[runOp{opDone, k - 1}] > done {
				t.Fatalf("%s: chunk %d done before chunk %d", name, k, k-1)
			}
			if c.inFirst && (in > check || rest < check) {
				t.Fatalf("%s: chunk %d's In or rest on the wrong side of Check", name, k)
			}
			if !c.inFirst && c.chunks > 1 {
				// The host waits for chunk k no later than once chunk
				// k+lag is queued.
				if k+c.lag < c.chunks && done > at[runOp{opRest, k + c.lag}]+1 {
					t.Fatalf("%s: chunk %d done late: %v", name, k, plan)
				}
			}
		}
	}
}

func TestPoolTakeOfAnUnreservedBufferPanics(t *testing.T) {
	p := NewPool(nil, nil)
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "sort keys") {
			t.Fatalf("Take of an unreserved buffer: recovered %v", r)
		}
	}()
	Take[uint64](p, "sort keys", 10)
}

func TestPoolHeadroom(t *testing.T) {
	p := NewPool(nil, nil)
	if got := p.grownSize(800); got != 900 {
		t.Fatalf("default growth of 800 bytes: %d, want 900", got)
	}
	p.SetHeadroom(func(b int) int { return b + b/4 + 1<<16 })
	if got := p.grownSize(800); got != 800+200+1<<16 {
		t.Fatalf("custom growth of 800 bytes: %d", got)
	}
	p.SetHeadroom(func(int) int { return 1 })
	if got := p.grownSize(800); got != 800 {
		t.Fatalf("growth below the need: %d, want the need", got)
	}
	if n := NeedOf[uint32]("x", 10); n.Bytes != 40 || n.Name != "x" {
		t.Fatalf("NeedOf: %+v", n)
	}
}

func TestViewHostReinterpretsPinnedBytes(t *testing.T) {
	b := make([]byte, 16)
	v := viewHost[uint32](b, 4)
	v[1] = 0x04030201
	if b[4] != 1 || b[7] != 4 {
		t.Fatalf("bytes %v after writing element 1", b)
	}
	if viewHost[uint64](b, 0) != nil {
		t.Fatal("an empty view is not nil")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a view past the bytes did not panic")
		}
	}()
	viewHost[uint64](b, 3)
}

// TestPipelineGrain checks the elements a goroutine of a pipeline's host
// copy takes: the configured Grain, else the copy's share of each worker
// but never under 64 KiB, so that small copies run inline, and never over
// 512 KiB, so that no copy takes memmove's non-temporal path (1 MiB).
func TestPipelineGrain(t *testing.T) {
	for _, c := range []struct {
		grain, workers, n, size, want int
	}{
		{0, 16, 1 << 20, 8, 1 << 16},    // 8 MiB of uint64 on 16 workers: 512 KiB each
		{0, 16, 1000, 8, 8192},          // 8000 bytes: one goroutine (64 KiB of uint64)
		{0, 16, 1 << 20, 1, 1 << 16},    // 1 MiB of bytes: 64 KiB each
		{0, 4, 100 << 20, 1, 512 << 10}, // 100 MiB on 4 workers: 512 KiB at a time
		{0, 16, 16 << 20, 1, 512 << 10}, // a 16 MiB chunk on 16 workers: 512 KiB, not 1 MiB
		{0, 16, 2 << 20, 8, 1 << 16},    // 16 MiB of uint64: 512 KiB at a time
		{0, 16, 1 << 20, 16, 1 << 15},   // 16 MiB of 16-byte elements
		{0, 16, 1 << 16, 3, 21846},      // a size that does not divide 64 KiB rounds up
		{100, 16, 1 << 20, 8, 100},      // configured
	} {
		p := NewPipeline(nil, PipelineConfig{Grain: c.grain, Workers: c.workers})
		if got := p.grain(c.n, c.size); got != c.want {
			t.Errorf("grain %d, %d workers: %d elements of %d bytes: %d at a time, want %d", c.grain, c.workers, c.n, c.size, got, c.want)
		}
	}
}
