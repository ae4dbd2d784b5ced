package hashindex

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestPersistCompiles compiles persist.cu (with hashindex.cu included) for
// Hopper: NVRTC, no GPU.
func TestPersistCompiles(t *testing.T) {
	gputest.NVRTC(t)
	cubin, err := persistProgram().CompileCUBIN("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	if len(cubin) == 0 {
		t.Fatal("empty cubin")
	}
}

// TestPersistentSearchNeedsGPU: the CPU engine has no persistent search.
func TestPersistentSearchNeedsGPU(t *testing.T) {
	ix, err := Open(Options{Buckets: 1 << 10, Device: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if _, err := ix.NewPersistentSearch(2, 16); err != ErrNeedsGPU {
		t.Errorf("NewPersistentSearch on the CPU engine: %v, want ErrNeedsGPU", err)
	}
}

// TestPersistentSearchMatchesSearch runs, on a GPU, rounds of random
// inserts and deletes through the index, each followed by persistent
// searches of random batches (resident and launched sizes, every slot,
// half present keys) that must equal Search's results on the same index:
// the resident kernel sees every update applied before it was rung. Some
// rounds sleep past the idle exit, so the kernel is launched again.
func TestPersistentSearchMatchesSearch(t *testing.T) {
	d := gputest.Device(t)
	ix, err := Open(Options{Buckets: 1 << 14, GPU: d})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	const slots, capacity = 3, 3 * MaxResident
	ps, err := ix.NewPersistentSearch(slots, capacity)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close() // before the index's Close (deferred first, runs last)
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 9))
	var keys []uint64
	loc := uint32(1)
	want := make([]uint32, capacity)
	for round := range 60 {
		// Updates: inserts of new and old keys, deletes of some.
		ins := make([]uint64, 1+r.IntN(2000))
		locs := make([]uint32, len(ins))
		for i := range ins {
			if len(keys) > 0 && r.IntN(4) == 0 {
				ins[i] = keys[r.IntN(len(keys))]
			} else {
				ins[i] = r.Uint64()
				keys = append(keys, ins[i])
			}
			locs[i] = loc
			loc++
		}
		if _, err := ix.Insert(ins, locs, nil); err != nil {
			t.Fatal(err)
		}
		if round%3 == 2 {
			del := slices.Clone(ins[:len(ins)/4])
			if err := ix.Delete(del, locs[:len(del)], make([]bool, len(del))); err != nil {
				t.Fatal(err)
			}
		}
		if round%10 == 9 {
			time.Sleep(3 * IdleExit)
		}
		slot := round % slots
		n := 1 + r.IntN(600)
		if round%7 == 6 {
			n = MaxResident + 1 + r.IntN(capacity-MaxResident) // launched
		}
		hs := ps.Hashes(slot)[:n]
		for i := range hs {
			if r.IntN(2) == 0 {
				hs[i] = keys[r.IntN(len(keys))]
			} else {
				hs[i] = r.Uint64()
			}
		}
		if err := ix.Search(hs, want[:n]); err != nil {
			t.Fatal(err)
		}
		if err := ps.Search(slot, n); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if got := ps.Out(slot)[:n]; !slices.Equal(got, want[:n]) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("round %d, slot %d, %d jobs: job %d (hash %#x): persistent %#x, Search %#x", round, slot, n, i, hs[i], got[i], want[i])
				}
			}
		}
	}
	st := ps.Stats()
	t.Logf("%+v", st)
	if st.Resident == 0 || st.Launched == 0 || st.Launches < 2 || st.Broken != "" {
		t.Errorf("stats %+v: want resident and launched batches, a launch after an idle exit, nothing broken", st)
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ps.Search(0, 1); err == nil {
		t.Error("Search after Close: no error")
	}
}

// newPersistBenchIndex returns a GPU index of benchBuckets buckets holding
// 2^20 keys (returned), closed at the benchmark's cleanup.
func newPersistBenchIndex(b *testing.B) (*Index, []uint64) {
	ix, err := Open(Options{Buckets: benchBuckets, GPU: gputest.Device(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	keys, locs := benchKeys(1<<20, 5)
	if _, err := ix.Insert(keys, locs, nil); err != nil {
		b.Fatal(err)
	}
	return ix, keys
}

// BenchmarkPersistentSearch times one resident search call (a doorbell and
// the wait for its answer) of n jobs, half of them hits, on a table of
// benchBuckets buckets holding 2^20 keys: the fixed cost a GPU shard's
// search batch pays (the server's batches of one request per connection
// are a few to a few hundred jobs). ns/op is the latency of a call.
func BenchmarkPersistentSearch(b *testing.B) {
	ix, keys := newPersistBenchIndex(b)
	ps, err := ix.NewPersistentSearch(1, MaxResident)
	if err != nil {
		b.Fatal(err)
	}
	defer ps.Close()
	for _, c := range []struct {
		n    int
		busy bool
	}{{1, false}, {16, false}, {128, false}, {1024, false}, {16, true}} {
		n := c.n
		name := fmt.Sprintf("jobs=%d", n)
		if c.busy {
			name += "/busy"
		}
		b.Run(name, func(b *testing.B) {
			if c.busy {
				// Every other processor runs goroutines that compute and
				// yield, as a server's event loops do.
				stop := make(chan struct{})
				var wg sync.WaitGroup
				for range 2 * runtime.GOMAXPROCS(0) {
					wg.Go(func() {
						x := uint64(1)
						for {
							select {
							case <-stop:
								return
							default:
							}
							for range 20000 {
								x = x*6364136223846793005 + 1
							}
							runtime.Gosched()
						}
					})
				}
				defer func() { close(stop); wg.Wait() }()
			}
			r := rand.New(rand.NewPCG(uint64(n), 7))
			hs := ps.Hashes(0)[:n]
			for i := range hs {
				if i%2 == 0 {
					hs[i] = keys[r.IntN(len(keys))]
				} else {
					hs[i] = r.Uint64()
				}
			}
			for b.Loop() {
				if err := ps.Search(0, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
