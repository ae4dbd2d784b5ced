package server

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warpkv/warpkv/hashindex"
	"github.com/warpkv/warpkv/kv"
)

// TestInlineSearchIsDefaultOnCPU checks which engines search inline.
func TestInlineSearchIsDefaultOnCPU(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{})
			want := eng.Backend() == "cpu" && ec.cpu != CPUSearchBatched
			if eng.InlineSearch() != want {
				t.Fatalf("InlineSearch() = %v, want %v", eng.InlineSearch(), want)
			}
			do(t, eng, kv.Op{Kind: kv.Set, Key: []byte("a"), Value: []byte("1")})
			checkQuiet(t, eng)
			do(t, eng, kv.Op{Kind: kv.Get, Key: []byte("a")}, kv.Op{Kind: kv.Get, Key: []byte("b")})
			inline := eng.inlineJobs()
			s, _, _ := eng.indexTotals()
			if want && (inline != 2 || s.searchJobs != 0) || !want && inline != 0 {
				t.Errorf("%d inline search jobs, %d batched", inline, s.searchJobs)
			}
		})
	}
	if _, err := New(Options{Device: "cpu", CPUSearch: "sideways"}); err == nil {
		t.Errorf("New accepted CPUSearch %q", "sideways")
	}
}

// TestSearchReadsPendingFirst overwrites and deletes a key that the index
// holds while the updates wait a long batch interval: the reads that
// follow must come from the pending table (the index still has the old
// item), on every engine, inline or batched.
func TestSearchReadsPendingFirst(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{Interval: 300 * time.Millisecond})
			key := []byte("k")
			do(t, eng, kv.Op{Kind: kv.Set, Key: key, Value: []byte("old")})
			checkQuiet(t, eng)
			ops := do(t, eng, kv.Op{Kind: kv.Set, Key: key, Value: []byte("new")})
			ops = append(ops, do(t, eng, kv.Op{Kind: kv.Get, Key: key})...)
			ops = append(ops, do(t, eng, kv.Op{Kind: kv.Delete, Key: key})...)
			ops = append(ops, do(t, eng, kv.Op{Kind: kv.Get, Key: key}, kv.Op{Kind: kv.Incr, Key: key, Delta: 1})...)
			if eng.pend.size() == 0 {
				t.Fatalf("the writes were applied already: the test did not read the pending table")
			}
			if got := ops[1].Result; got.Status != kv.Hit || string(got.Value) != "new" {
				t.Errorf("get after the overwrite: %s %q, want the new value", got.Status, got.Value)
			}
			if ops[2].Result.Status != kv.Deleted || ops[3].Result.Status != kv.Miss || ops[4].Result.Status != kv.NotFound {
				t.Errorf("after the delete: delete %s, get %s, incr %s; want deleted, miss, not found",
					ops[2].Result.Status, ops[3].Result.Status, ops[4].Result.Status)
			}
			checkQuiet(t, eng)
		})
	}
}

// TestSearchDelaysUnlink holds a search's result, as a Do does until it
// has acquired the items it located, while the key is overwritten: the
// old item must stay linked until the search is released (its reader
// still reads it), and be unlinked soon after.
func TestSearchDelaysUnlink(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{})
			key := []byte("held")
			h := hashindex.Hash(key)
			do(t, eng, kv.Op{Kind: kv.Set, Key: key, Value: []byte("v1")})
			checkQuiet(t, eng)
			sc := new(scratch)
			out := make([]uint32, 1)
			if err := eng.search(sc, []uint64{h}, out); err != nil {
				t.Fatal(err)
			}
			loc := out[0]
			if !holds(eng, loc, key, "v1") {
				t.Fatalf("the search found %d, which does not hold the item", loc)
			}
			do(t, eng, kv.Op{Kind: kv.Set, Key: key, Value: []byte("v2")})
			waitApplied(t, eng)
			time.Sleep(20 * time.Millisecond) // time for a scheduler that would unlink early
			if !holds(eng, loc, key, "v1") {
				t.Fatalf("the overwritten item was unlinked while a search that located it was held")
			}
			if eng.quiesce() {
				t.Fatalf("the engine reports quiet with an unlink waiting for a held search")
			}
			eng.release(sc)
			checkQuiet(t, eng)
			if holds(eng, loc, key, "v1") {
				t.Fatalf("the overwritten item is still linked after the search was released")
			}
			if got := do(t, eng, kv.Op{Kind: kv.Get, Key: key})[0].Result; string(got.Value) != "v2" {
				t.Fatalf("get = %s %q, want v2", got.Status, got.Value)
			}
		})
	}
}

// TestUnlinksUnderSteadyReads overwrites keys while goroutines read
// without pause, so that some search is always in flight: dropped
// locations must still be unlinked while the reads go on (inline readers
// are counted by epochs, not waited for to reach zero).
func TestUnlinksUnderSteadyReads(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{})
			keys := make([][]byte, 64)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "steady%d", i)
				do(t, eng, kv.Op{Kind: kv.Set, Key: keys[i], Value: []byte("0")})
			}
			checkQuiet(t, eng)
			var stop atomic.Bool
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := g; !stop.Load(); i++ {
						ops := []kv.Op{{Kind: kv.Get, Key: keys[i%len(keys)]}, {Kind: kv.Get, Key: keys[(i*7)%len(keys)]}}
						if err := eng.Do(&kv.Batch{Ops: ops}); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			defer func() { stop.Store(true); wg.Wait() }()
			for round := 1; round <= 5; round++ {
				for _, k := range keys {
					do(t, eng, kv.Op{Kind: kv.Set, Key: k, Value: fmt.Appendf(nil, "%d", round)})
				}
				waitApplied(t, eng)
				deadline := time.Now().Add(2 * time.Second)
				for unlinksLeft(eng) {
					if time.Now().After(deadline) {
						t.Fatalf("round %d: dropped locations not unlinked after 2 s of steady reads", round)
					}
					time.Sleep(time.Millisecond)
				}
			}
			for _, k := range keys {
				if got := do(t, eng, kv.Op{Kind: kv.Get, Key: k})[0].Result; string(got.Value) != "5" {
					t.Fatalf("get %s = %s %q, want 5", k, got.Status, got.Value)
				}
			}
		})
	}
}

// holds reports whether loc holds the linked item of key with value v.
func holds(e *Engine, loc uint32, key []byte, v string) bool {
	r, ok := e.store.Acquire(loc)
	if !ok {
		return false
	}
	defer r.Release()
	return bytes.Equal(r.Key(), key) && string(r.Value()) == v
}

// waitApplied waits until every queued update is applied and completed.
func waitApplied(t *testing.T, e *Engine) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); e.inflightItems.Load() != 0 || e.pend.size() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("updates not applied after 2 s")
		}
	}
}

// unlinksLeft reports whether a shard has dropped locations not yet
// unlinked.
func unlinksLeft(e *Engine) bool {
	for _, sh := range e.shards {
		if sh.toUnlink.Load() != 0 {
			return true
		}
	}
	return false
}

// enter is shard.searchInline's entry without a shard.
func (r *inlineReaders) enter() int {
	for {
		slot, ok := r.tryEnter()
		if ok {
			return slot
		}
		r.n[slot].c.Add(-1)
	}
}

// TestInlineReadersEpochs steps the epoch counters: a list waits for the
// readers in flight when it was taken, not for those that entered later,
// so steady readers cannot hold unlinks back.
func TestInlineReadersEpochs(t *testing.T) {
	var r inlineReaders
	a := r.enter()
	e, busy := r.snapshot()
	if !busy || e != 0 {
		t.Fatalf("snapshot = %d, %v with a reader in flight", e, busy)
	}
	if r.passed(e) {
		t.Fatalf("passed with the list's reader in flight")
	}
	b := r.enter() // after the epoch moved: not one the list waits for
	if r.epoch.Load() != 1 || b == a {
		t.Fatalf("epoch %d, counters %d and %d: the epoch did not move", r.epoch.Load(), a, b)
	}
	if r.passed(e) {
		t.Fatalf("passed with the list's reader in flight")
	}
	r.n[a].c.Add(-1)
	if !r.passed(e) {
		t.Fatalf("not passed with only a later reader in flight")
	}
	// A list taken now waits for b; the epoch moves on only once the
	// readers of the epoch before (none left) are gone.
	e2, _ := r.snapshot()
	if r.passed(e2) {
		t.Fatalf("passed with the second list's reader in flight")
	}
	c := r.enter()
	if c != a || r.epoch.Load() != 2 {
		t.Fatalf("epoch %d, counter %d", r.epoch.Load(), c)
	}
	r.n[b].c.Add(-1)
	if !r.passed(e2) {
		t.Fatalf("not passed with only a later reader in flight")
	}
	// A list taken while the readers of the epoch before still hold the
	// other counter cannot move the epoch until they are gone.
	e3, _ := r.snapshot() // 2, c in flight in counter 0
	r.epoch.Store(3)      // as if moved for another list
	d := r.enter()        // counter 1, epoch 3
	e4, _ := r.snapshot()
	if e3 != 2 || e4 != 3 || d == c {
		t.Fatalf("epochs %d, %d", e3, e4)
	}
	r.n[d].c.Add(-1)
	if r.passed(e4) {
		t.Fatalf("epoch moved to 4 while a reader of 2 holds its counter")
	}
	r.n[c].c.Add(-1)
	if !r.passed(e3) || !r.passed(e4) {
		t.Fatalf("not passed once every reader is gone")
	}
}
