package enginetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/warpkv/warpkv/gpu"
)

// sumBatch adds its values to a running total; the output is the total.
type sumBatch []int

type summer struct {
	total int
	bug   int // added to the total at the third batch (0: none)
	step  int
}

func (s *summer) Apply(b sumBatch) (int, error) {
	if len(b) == 0 {
		return 0, errors.New("empty batch")
	}
	for _, v := range b {
		s.total += v
	}
	s.step++
	if s.step == 3 {
		s.total += s.bug
	}
	return s.total, nil
}
func (s *summer) Check() error { return nil }
func (s *summer) Close() error { return nil }

func target(name string, bug int) Target[sumBatch, int] {
	return Target[sumBatch, int]{Name: name, Open: func(testing.TB, *gpu.Device) (Subject[sumBatch, int], error) {
		return &summer{bug: bug}, nil
	}}
}

func gen(r *rand.Rand, _ int, _ *summer) sumBatch {
	b := make(sumBatch, r.IntN(5))
	for i := range b {
		b[i] = 1 + r.IntN(100)
	}
	return b
}

func suite(targets ...Target[sumBatch, int]) Suite[sumBatch, int, *summer] {
	return Suite[sumBatch, int, *summer]{NewModel: func() *summer { return &summer{} }, Targets: targets}
}

func TestRunAgreeingTargetsPass(t *testing.T) {
	Run(t, suite(target("a", 0), target("b", 0)), Case[sumBatch, *summer]{Name: "sums", Batches: 50, Gen: gen})
}

// recorder is a testing.TB whose Fatalf records the message and ends the
// goroutine, so that a planted failure can be observed without failing
// this test.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	fatal    string
	cleanups []func()
}

func (r *recorder) Helper()                   {}
func (r *recorder) Logf(string, ...any)       {}
func (r *recorder) Errorf(f string, a ...any) { r.Fatalf(f, a...) }
func (r *recorder) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Fatalf(f string, a ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(f, a...)
	r.mu.Unlock()
	runtime.Goexit()
}

// runRecorded runs one case on a recorder and returns its fatal message.
func runRecorded(s Suite[sumBatch, int, *summer], c Case[sumBatch, *summer]) string {
	rec := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runCase(rec, s, c, 1)
	}()
	<-done
	return rec.fatal
}

func TestRunReportsTheFirstDisagreement(t *testing.T) {
	msg := runRecorded(suite(target("good", 0), target("bad", 7)), Case[sumBatch, *summer]{Name: "planted", Batches: 20, Gen: gen})
	if msg == "" {
		t.Fatal("a target whose output differs at batch 2 passed")
	}
	for _, want := range []string{"batch 2", "target bad", "seed 1", "case planted"} {
		if !strings.Contains(msg, want) {
			t.Errorf("failure %q does not name %q", msg, want)
		}
	}
}

func TestRunReportsAnErrorOnlyOneSideGives(t *testing.T) {
	empty := func(_ *rand.Rand, step int, _ *summer) sumBatch {
		if step == 4 {
			return nil
		}
		return sumBatch{1}
	}
	lenient := Target[sumBatch, int]{Name: "lenient", Open: func(testing.TB, *gpu.Device) (Subject[sumBatch, int], error) {
		return lenientSummer{&summer{}}, nil
	}}
	msg := runRecorded(suite(lenient), Case[sumBatch, *summer]{Name: "errors", Batches: 10, Gen: empty})
	if !strings.Contains(msg, "batch 4") || !strings.Contains(msg, "error") {
		t.Fatalf("failure %q: want the batch where only the model failed", msg)
	}
}

// lenientSummer accepts the empty batch the model rejects.
type lenientSummer struct{ *summer }

func (l lenientSummer) Apply(b sumBatch) (int, error) {
	if len(b) == 0 {
		return l.total, nil
	}
	return l.summer.Apply(b)
}

func TestRunLeavesOutGPUCasesWithoutAGPUTarget(t *testing.T) {
	ran := false
	c := Case[sumBatch, *summer]{Name: "big", Batches: 3, NeedsGPU: true, Gen: func(r *rand.Rand, step int, m *summer) sumBatch {
		ran = true
		return gen(r, step, m)
	}}
	if msg := runRecorded(suite(target("cpu", 0)), c); msg != "" || ran {
		t.Fatalf("a GPU-only case ran with CPU targets only (failure %q, generated %v)", msg, ran)
	}
	c.NeedsGPU = false
	if runRecorded(suite(target("cpu", 0)), c); !ran {
		t.Fatal("the same case without NeedsGPU did not run")
	}
}
