package hashindex

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warpkv/warpkv/engine"
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
	jobs, hits := make([]uint64, slots), make([]uint64, slots)
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
					if ok {
						hits[slot]++
					}
				}
				jobs[slot] += uint64(n)
			}
		})
	}
	searches.Wait()
	close(stop)
	churn.Wait()
	var total, found uint64
	for slot := range slots {
		total += jobs[slot]
		found += hits[slot]
	}
	st := ps.Stats()
	t.Logf("%+v", st)
	if st.Resident != slots*rounds || st.Broken != "" {
		t.Errorf("stats %+v: want %d resident batches, nothing broken", st, slots*rounds)
	}
	end := ix.Stats()
	if got := end.Searches - start.Searches; got != total {
		t.Errorf("index counted %d searches, want %d", got, total)
	}
	// Only searches count hits (the churn's updates do not).
	if got := end.Hits - start.Hits; got != found {
		t.Errorf("index counted %d hits, want %d", got, found)
	}
}

// TestPersistentSearchCloseDuringSearches closes a persistent search while
// callers search every slot in a loop: Close waits for the searches in
// progress (it takes the index's write lock, which they hold shared: were
// it not to, a search would read the answers' memory Close frees), every
// search fails as closed from then on, and the index still searches
// afterwards. The callers touch no slot memory once they start, since
// after Close there is none.
func TestPersistentSearchCloseDuringSearches(t *testing.T) {
	d := gputest.Device(t)
	ix, err := Open(Options{Buckets: 1 << 12, GPU: d})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	const slots, capacity = 4, MaxResident + 100 // the last slot's batches are launched
	ps, err := ix.NewPersistentSearch(slots, capacity)
	if err != nil {
		t.Fatal(err)
	}
	keys, locs := benchKeys(2000, 9)
	if _, err := ix.Insert(keys, locs, nil); err != nil {
		t.Fatal(err)
	}
	for slot := range slots {
		for i := range ps.Hashes(slot) {
			ps.Hashes(slot)[i] = keys[(slot+i)%len(keys)]
		}
	}
	var served atomic.Uint64
	var wg sync.WaitGroup
	for slot := range slots {
		n := 1 + 97*slot
		if slot == slots-1 {
			n = capacity
		}
		wg.Go(func() {
			for {
				if err := ps.Search(slot, n); err != nil {
					if !errors.Is(err, ErrSearchClosed) {
						t.Errorf("slot %d: %v, want ErrSearchClosed", slot, err)
					}
					return
				}
				served.Add(1)
			}
		})
	}
	stopped := make(chan struct{}) // every searcher returned
	go func() {
		wg.Wait()
		close(stopped)
	}()
	// Wait for 400 searches, not past the searchers' failure or a minute.
	for deadline := time.Now().Add(time.Minute); served.Load() < 400; time.Sleep(100 * time.Microsecond) {
		select {
		case <-stopped:
			t.Fatalf("every searcher stopped after %d searches", served.Load())
		default:
		}
		if time.Now().After(deadline) {
			ps.Close()
			<-stopped
			t.Fatalf("%d searches in a minute, want 400", served.Load())
		}
	}
	if err := ps.Close(); err != nil {
		t.Fatal(err)
	}
	<-stopped
	if err := ps.Search(0, 1); !errors.Is(err, ErrSearchClosed) || !errors.Is(err, engine.ErrClosed) {
		t.Errorf("search after Close: %v, want ErrSearchClosed and engine.ErrClosed", err)
	}
	if err := ps.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	out := make([]uint32, len(keys))
	if err := ix.Search(keys, out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out, locs) {
		t.Error("the index's search after the persistent search's Close differs from the locations inserted")
	}
}

// TestPersistentSearchClosedErrors checks the errors of use after Close:
// a search after the persistent search's Close matches ErrSearchClosed
// and engine.ErrClosed; one after the index's Close matches
// engine.ErrClosed only (the index, not the search, is closed); and
// ErrSearchClosed itself matches engine.ErrClosed, while an error
// wrapping engine.ErrClosed does not match ErrSearchClosed.
func TestPersistentSearchClosedErrors(t *testing.T) {
	if !errors.Is(ErrSearchClosed, engine.ErrClosed) || errors.Is(fmt.Errorf("x: %w", engine.ErrClosed), ErrSearchClosed) {
		t.Fatal("ErrSearchClosed must match engine.ErrClosed, and only that way")
	}
	d := gputest.Device(t)
	for _, closeIndex := range []bool{false, true} {
		ix, err := Open(Options{Buckets: 1 << 10, GPU: d})
		if err != nil {
			t.Fatal(err)
		}
		ps, err := ix.NewPersistentSearch(1, 8)
		if err != nil {
			t.Fatal(err)
		}
		if err := ps.Search(0, 8); err != nil {
			t.Fatal(err)
		}
		closeFirst := ps.Close
		if closeIndex {
			closeFirst = ix.Close
		}
		if err := closeFirst(); err != nil {
			t.Fatal(err)
		}
		err = ps.Search(0, 8)
		if !errors.Is(err, engine.ErrClosed) || errors.Is(err, ErrSearchClosed) != !closeIndex {
			t.Errorf("index closed %v: search: %v: want engine.ErrClosed, ErrSearchClosed %v", closeIndex, err, !closeIndex)
		}
		if err := errors.Join(ps.Close(), ix.Close()); err != nil {
			t.Fatal(err)
		}
	}
}
