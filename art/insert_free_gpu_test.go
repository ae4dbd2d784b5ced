package art

import (
	"errors"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPUFreeBeside inserts batches of new keys, some of which grow pools
// (ahead and in their rounds), into two GPU trees on one device, one freeing the
// retired buffers beside the next call (freeBeside, the default) and one
// before the call returns, and a CPU tree. After every batch: the call
// handed its retired buffers off (none left on the engine), once the
// frees are done (waitFrees) the device holds exactly the bytes the tree
// that frees in the call holds after the same batches (the frees ran,
// nothing was freed twice), and the layouts equal the CPU engine's word
// for word.
func TestGPUFreeBeside(t *testing.T) {
	dev := gputest.Device(t)
	var trees [2]*Tree
	var engs [2]*gpuEngine
	for i := range trees {
		tr, err := Open(Options{GPU: dev})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		trees[i], engs[i] = tr, tr.eng.(*gpuEngine)
	}
	engs[1].freeBeside = false
	if !engs[0].freeBeside {
		t.Fatal("freeBeside is off in a new engine, want on by default")
	}
	ct, _ := Open(Options{Device: "cpu"})
	tk, tv := randomKeys(0, 100000)
	for _, tr := range []*Tree{trees[0], trees[1], ct} {
		if err := tr.BuildKeys(tk, tv); err != nil {
			t.Fatal(err)
		}
	}
	engs[0].waitFrees() // the build's, if any, before the first count
	grown, from := 0, 100000
	for i := 0; i < 8; i++ {
		ik, iv := randomKeys(from-1000, 30000) // 1000 present
		from += 29000
		caps := poolCaps(engs[0].t)
		var live [2]int64
		for j, tr := range trees {
			_, before := dev.Live()
			if err := tr.InsertKeys(ik, iv); err != nil {
				t.Fatalf("batch %d, tree %d: %v", i, j, err)
			}
			if n := len(engs[j].retired); n != 0 {
				t.Fatalf("batch %d, tree %d: %d retired buffers left after the call", i, j, n)
			}
			engs[j].waitFrees()
			if err := engs[j].besideErr(); err != nil {
				t.Fatalf("batch %d, tree %d: frees: %v", i, j, err)
			}
			_, after := dev.Live()
			live[j] = after - before
		}
		if poolCaps(engs[0].t) != caps {
			grown++ // a pool grew: its old buffers were retired
		}
		if live[0] != live[1] {
			t.Fatalf("batch %d: the device's bytes grew by %d freeing beside, %d freeing in the call", i, live[0], live[1])
		}
		if err := ct.InsertKeys(ik, iv); err != nil {
			t.Fatal(err)
		}
		if err := layoutsOf(ct, trees[:]...); err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
	}
	if grown < 2 {
		t.Fatalf("%d batches grew pools, want at least 2", grown)
	}
}

// poolCaps is the capacity of each of t's pools.
func poolCaps(t *devTree) (caps [numKinds + 1]uint64) {
	for k := range t.pools {
		caps[k] = t.pools[k].cap
	}
	return caps
}

// TestGPUInsertRetry checks an insert that runs out of memory while frees
// beside an earlier batch still run: it waits for them and runs again
// (here every growth fails until then: beforeRetry lifts failGrowth),
// with the CPU engine's layout after it; with no frees pending the same
// failure comes back and the tree is unchanged. The batches' keys have
// one length and go up in two parts, so the engine checks them beside
// its work (check_later_gpu.go): the first try starts that check before
// its growth fails, and the retry uses it (g.later is still set when the
// retry begins); then a bad batch, whose ends say one length, fails on
// the retry with the error the facade's check gives and changes nothing.
func TestGPUInsertRetry(t *testing.T) {
	gt, ct, g := gpuAndCPU(t)
	g.bu.partsMin = 2
	tk, tv := randomKeys(0, 20000)
	for _, tr := range []*Tree{gt, ct} {
		if err := tr.BuildKeys(tk, tv); err != nil {
			t.Fatal(err)
		}
	}
	g.waitFrees()
	// More new records than any pool's headroom: a pool grown in place
	// holds at least a granule of the device's VMM (2 MiB, 65536 leaves of
	// 16-byte keys).
	ik, iv := randomKeys(20000, 150000)
	if !g.checkLater(ik) {
		t.Fatal("the engine would check the batch before the call, not beside its work")
	}
	g.failGrowth = true
	if err := gt.InsertKeys(ik, iv); !errors.Is(err, gpu.ErrOutOfMemory) {
		t.Fatalf("no frees pending: got %v, want an out-of-memory error", err)
	}
	if gt.Len() != 20000 {
		t.Fatalf("%d keys after the failed insert, want 20000", gt.Len())
	}
	// insertPending inserts kb with frees pending (a goroutine of
	// freeRetired's kind that ends later) and every growth failing until
	// the retry, and reports the error and whether the retry found the
	// first try's deferred check.
	insertPending := func(kb Keys, vals []uint64) (reused bool, err error) {
		g.failGrowth = true
		g.freeing.Add(1)
		g.pending.Add(1)
		go func() {
			time.Sleep(200 * time.Millisecond)
			g.pending.Add(-1)
			g.freeing.Done()
		}()
		retried := false
		g.beforeRetry = func() { retried, reused, g.failGrowth = true, g.later != nil, false }
		defer func() { g.beforeRetry, g.failGrowth = nil, false }()
		err = gt.InsertKeys(kb, vals)
		if !retried {
			t.Fatal("the insert did not run again after the frees")
		}
		return reused, err
	}
	if reused, err := insertPending(ik, iv); err != nil || !reused {
		t.Fatalf("frees pending: %v (check reused %v)", err, reused)
	}
	// A bad batch: a key's end before its start, the ends kept; more keys
	// than the pools grown for ik hold, so that the first try fails.
	bad, bv := randomKeys(170000, 600000)
	bad.Offs[1001] = bad.Offs[1000] - 3
	want := bad.firstBad("insert")
	before, err := gt.eng.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if reused, err := insertPending(bad, bv); err == nil || err.Error() != want.Error() || !reused {
		t.Fatalf("bad batch, frees pending: got %v (check reused %v), want %v", err, reused, want)
	}
	after, err := gt.eng.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := equalStores(before, after); err != nil || gt.Len() != 170000 {
		t.Fatalf("the bad batch changed the tree (%d keys): %v", gt.Len(), err)
	}
	if err := ct.InsertKeys(ik, iv); err != nil {
		t.Fatal(err)
	}
	wantStore, _ := ct.eng.snapshot()
	if err := equalStores(wantStore, before); err != nil {
		t.Fatalf("layouts differ (cpu, gpu): %v", err)
	}
}
