package enginetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// EnvSeed names the variable that fixes the seed of every case (decimal).
const EnvSeed = "WARPKV_TEST_SEED"

// Subject is one implementation under test, or the model.
type Subject[B, O any] interface {
	// Apply runs one batch and returns what it answered.
	Apply(b B) (O, error)
	// Check verifies the implementation's invariants after a batch (nil
	// when it has none to check).
	Check() error
	// Close frees the implementation.
	Close() error
}

// Target opens one implementation. Open gets the shared device when GPU is
// set, nil otherwise.
type Target[B, O any] struct {
	Name string
	GPU  bool
	Open func(tb testing.TB, dev *gpu.Device) (Subject[B, O], error)
}

// Case is one random batch sequence: Batches batches drawn by Gen, which
// sees the model as it stands before the batch (to pick present keys).
// A case with NeedsGPU runs only when a GPU target could be opened: for
// sequences too large to be worth running on the CPU engine alone.
type Case[B any, M any] struct {
	Name     string
	Batches  int
	Gen      func(r *rand.Rand, step int, model M) B
	NeedsGPU bool
}

// Suite is what Run needs besides the cases.
type Suite[B, O any, M Subject[B, O]] struct {
	// NewModel returns an empty reference model.
	NewModel func() M
	// Targets are the implementations; each case runs all of them.
	Targets []Target[B, O]
	// Compare returns a description of how got differs from want, or ""
	// when they agree. Nil means reflect.DeepEqual.
	Compare func(want, got O) string
	// Agree, when not nil, is called after every batch with the subjects
	// of all targets in Targets' order (nil for one left out), for checks
	// across implementations (for example equal memory layouts).
	Agree func(subjects []Subject[B, O]) error
	// After, when not nil, is called after every batch with the model and
	// each subject, for checks that need the whole state (a full scan).
	After func(model M, s Subject[B, O]) error
}

// Seed returns the seed for a case: WARPKV_TEST_SEED when set, else a fresh
// one from the clock.
func Seed() uint64 {
	if v := os.Getenv(EnvSeed); v != "" {
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			return n
		}
	}
	return uint64(time.Now().UnixNano())
}

// Run runs every case as a subtest: it opens each target, applies the same
// batches to the model and to every subject and fails at the first batch
// whose output, error or invariants disagree, naming the case, the seed, the
// batch and the target.
func Run[B, O any, M Subject[B, O]](t *testing.T, s Suite[B, O, M], cases ...Case[B, M]) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			seed := Seed()
			t.Logf("seed %d (%s=%d replays it)", seed, EnvSeed, seed)
			runCase(t, s, c, seed)
		})
	}
}

func runCase[B, O any, M Subject[B, O]](t testing.TB, s Suite[B, O, M], c Case[B, M], seed uint64) {
	subjects := make([]Subject[B, O], len(s.Targets))
	gpuOpen := false
	for i, tg := range s.Targets {
		var dev *gpu.Device
		if tg.GPU {
			d, err := gputest.Open()
			if err != nil {
				if gputest.Required() {
					t.Fatalf("target %s: GPU required (%s=1) but unusable: %v", tg.Name, gputest.EnvRequireGPU, err)
				}
				t.Logf("target %s left out: no usable GPU: %v", tg.Name, err)
				continue
			}
			dev = d
		}
		sub, err := tg.Open(t, dev)
		if err != nil {
			t.Fatalf("target %s: open: %v", tg.Name, err)
		}
		subjects[i] = sub
		gpuOpen = gpuOpen || tg.GPU
		t.Cleanup(func() {
			if err := sub.Close(); err != nil {
				t.Errorf("target %s: close: %v", tg.Name, err)
			}
		})
	}
	if c.NeedsGPU && !gpuOpen {
		t.Logf("case %s left out: it runs only beside a GPU target", c.Name)
		return
	}
	model := s.NewModel()
	defer model.Close()
	r := rand.New(rand.NewPCG(seed, uint64(len(c.Name))))
	for step := range c.Batches {
		b := c.Gen(r, step, model)
		want, wantErr := model.Apply(b)
		for i, sub := range subjects {
			if sub == nil {
				continue
			}
			where := fmt.Sprintf("case %s, seed %d, batch %d, target %s", c.Name, seed, step, s.Targets[i].Name)
			got, err := sub.Apply(b)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("%s: error %v, model's %v", where, err, wantErr)
			}
			if wantErr == nil {
				if d := compare(s.Compare, want, got); d != "" {
					t.Fatalf("%s: output differs from the model's: %s", where, d)
				}
			}
			if err := sub.Check(); err != nil {
				t.Fatalf("%s: invariants: %v", where, err)
			}
			if s.After != nil {
				if err := s.After(model, sub); err != nil {
					t.Fatalf("%s: %v", where, err)
				}
			}
		}
		if s.Agree != nil {
			if err := s.Agree(subjects); err != nil {
				t.Fatalf("case %s, seed %d, batch %d: targets disagree: %v", c.Name, seed, step, err)
			}
		}
	}
}

func compare[O any](f func(want, got O) string, want, got O) string {
	if f != nil {
		return f(want, got)
	}
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("want %v, got %v", truncate(want), truncate(got))
}

func truncate(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}
