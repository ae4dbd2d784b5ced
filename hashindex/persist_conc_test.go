package hashindex

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestPersistentSearchConcurrent runs, on a GPU, searches on every slot at
// once, each slot's caller in its own goroutine, while another goroutine
// inserts and deletes other keys: every search of the stable keys
// (inserted before, never deleted) must find each at its location, every
// search of absent keys must find none, whatever the updates do around
// them (a search never runs while an update moves cells), and the
// counters must add up. Some rounds pause past the idle exit, so that
// batches meet the kernel exiting and launched again.
func TestPersistentSearchConcurrent(t *testing.T) {
	d := gputest.Device(t)
	ix, err := Open(Options{Buckets: 1 << 12, GPU: d})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	const slots, capacity, rounds = 6, 700, 300
	ps, err := ix.NewPersistentSearch(slots, capacity)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 3))
	stable := make([]uint64, 5000)
	locs := make([]uint32, len(stable))
	want := make(map[uint64]uint32, len(stable))
	for i := range stable {
		stable[i] = r.Uint64() | 1 // odd: the churned keys are even
		locs[i] = uint32(i + 1)
		want[stable[i]] = locs[i]
	}
	if _, err := ix.Insert(stable, locs, nil); err != nil {
		t.Fatal(err)
	}
	start := ix.Stats()
	stop := make(chan struct{})
	var churn sync.WaitGroup
	churn.Go(func() {
		cr := rand.New(rand.NewPCG(seed, 4))
		loc := uint32(1 << 20)
		for {
			select {
			case <-stop:
				return
			default:
			}
			ins := make([]uint64, 1+cr.IntN(300))
			il := make([]uint32, len(ins))
			for i := range ins {
				ins[i] = cr.Uint64() &^ 1
				il[i] = loc
				loc++
			}
			if _, err := ix.Insert(ins, il, nil); err != nil {
				t.Error(err)
				return
			}
			if err := ix.Delete(ins, il, make([]bool, len(ins))); err != nil {
				t.Error(err)
				return
			}
		}
	})
	var searches sync.WaitGroup
	jobs := make([]uint64, slots)
	for slot := range slots {
		searches.Go(func() {
			sr := rand.New(rand.NewPCG(seed, uint64(10+slot)))
			for round := range rounds {
				if slot == 0 && round%100 == 99 {
					time.Sleep(3 * IdleExit)
				}
				n := 1 + sr.IntN(capacity)
				hs := ps.Hashes(slot)[:n]
				for i := range hs {
					if sr.IntN(4) == 0 {
						hs[i] = sr.Uint64() | 1<<63 | 1 // absent, odd: never inserted (but by a chance of 2^-62)
					} else {
						hs[i] = stable[sr.IntN(len(stable))]
					}
				}
				if err := ps.Search(slot, n); err != nil {
					t.Errorf("slot %d, round %d: %v", slot, round, err)
					return
				}
				for i, got := range ps.Out(slot)[:n] {
					w, ok := want[hs[i]]
					if !ok {
						w = NotFound
					}
					if got != w {
						t.Errorf("slot %d, round %d, %d jobs: job %d (hash %#x): got %#x, want %#x", slot, round, n, i, hs[i], got, w)
						return
					}
				}
				jobs[slot] += uint64(n)
			}
		})
	}
	searches.Wait()
	close(stop)
	churn.Wait()
	var total uint64
	for _, n := range jobs {
		total += n
	}
	st := ps.Stats()
	t.Logf("%+v", st)
	if st.Resident != slots*rounds || st.Broken != "" {
		t.Errorf("stats %+v: want %d resident batches, nothing broken", st, slots*rounds)
	}
	if got := ix.Stats().Searches - start.Searches; got != total {
		t.Errorf("index counted %d searches, want %d", got, total)
	}
}
