package server

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warpkv/warpkv/hashindex"
	"github.com/warpkv/warpkv/kv"
)

// keysInStripe returns n distinct keys whose hashes share one key stripe
// (and so one pending-table stripe).
func keysInStripe(n int, prefix string) [][]byte {
	var out [][]byte
	want := -1
	for i := 0; len(out) < n; i++ {
		k := fmt.Appendf(nil, "%s%d", prefix, i)
		s := stripeOf(hashindex.Hash(k))
		if want < 0 {
			want = s
		}
		if s == want {
			out = append(out, k)
		}
	}
	return out
}

// checkQuiet waits for the engine to apply every queued update and checks
// that nothing is left over: no pending entry, no held item, and as many
// linked items as index entries.
func checkQuiet(t *testing.T, e *Engine) {
	t.Helper()
	if !e.quiesce() {
		var state bytes.Buffer
		for i, sh := range e.shards {
			ns, _ := sh.q.queued()
			free := sh.role.TryLock()
			if free {
				sh.role.Unlock()
			}
			sh.mu.Lock()
			fmt.Fprintf(&state, "shard %d: %d searches queued, %d update jobs queued since %v, applying %v, %d unlinks pending, %d awaiting, %d to unlink, role free %v, stats %+v\n",
				i, ns, sh.upd.jobs(), time.Since(sh.updSince), sh.applying, len(sh.pending), sh.awaitN.Load(), sh.toUnlink.Load(), free, sh.stats)
			sh.mu.Unlock()
		}
		buf := make([]byte, 1<<20)
		t.Fatalf("engine not quiet after 2 s: %d items held, %d pending entries\n%s\n%s", e.inflightItems.Load(), e.pend.size(),
			state.String(), buf[:runtime.Stack(buf, true)])
	}
	linked, indexed := e.itemCounts()
	if linked != indexed {
		t.Fatalf("%d linked items but %d index entries", linked, indexed)
	}
}

// TestWritesDoNotWaitForTheIndex runs with a batch interval far longer
// than the test: sets, deletes and the gets that read them back return at
// once (from the pending table), and once the updates are applied the
// index holds exactly the items.
func TestWritesDoNotWaitForTheIndex(t *testing.T) {
	const interval = 300 * time.Millisecond
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{Interval: interval})
			// One search first, so that the next search batch is an
			// interval away.
			do(t, eng, kv.Op{Kind: kv.Get, Key: []byte("warm")})
			start := time.Now()
			// Pending entries seen right after a set returned: the index
			// applies its update 0.1-1 ms later (the load policy's update
			// interval, by the scheduler or a later Do), so the table may
			// be empty again by the end of the loop, not after each set.
			sawPending := 0
			for i := range 50 {
				key := fmt.Appendf(nil, "k%d", i)
				val := fmt.Appendf(nil, "v%d", i)
				ops := do(t, eng, kv.Op{Kind: kv.Set, Key: key, Value: val}, kv.Op{Kind: kv.Get, Key: key})
				if eng.pend.size() > 0 {
					sawPending++
				}
				if ops[0].Result.Status != kv.Stored || !bytes.Equal(ops[1].Result.Value, val) {
					t.Fatalf("set/get %s: %s, %s %q", key, ops[0].Result.Status, ops[1].Result.Status, ops[1].Result.Value)
				}
				if i%5 == 0 {
					ops = do(t, eng, kv.Op{Kind: kv.Delete, Key: key}, kv.Op{Kind: kv.Get, Key: key})
					if ops[0].Result.Status != kv.Deleted || ops[1].Result.Status != kv.Miss {
						t.Fatalf("delete/get %s: %s, %s", key, ops[0].Result.Status, ops[1].Result.Status)
					}
				}
			}
			if d := time.Since(start); d > interval/2 {
				t.Errorf("50 sets, 10 deletes and their gets took %v with a batch interval of %v: writes waited for the index", d, interval)
			}
			if sawPending == 0 {
				t.Errorf("no pending entries right after any of 50 sets")
			}
			checkQuiet(t, eng)
			if _, indexed := eng.itemCounts(); indexed != 40 {
				t.Errorf("%d index entries, want 40", indexed)
			}
		})
	}
}

// TestPendingTableFull writes, in one batch, three times as many keys of
// one pending stripe as it holds: the run waits for the scheduler to apply
// its earlier updates (no deadlock), every write is stored and readable,
// and nothing is left over.
func TestPendingTableFull(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{Interval: 2 * time.Millisecond})
			keys := keysInStripe(3*pendingSlots, "full")
			var ops []kv.Op
			for i, k := range keys {
				ops = append(ops, kv.Op{Kind: kv.Set, Key: k, Value: []byte(strconv.Itoa(i))})
			}
			for _, op := range do(t, eng, ops...) {
				if op.Result.Status != kv.Stored {
					t.Fatalf("set %s: %s", op.Key, op.Result.Status)
				}
			}
			if eng.counts.pendingFull.Load() == 0 {
				t.Errorf("no write waited for room in the pending table")
			}
			ops = ops[:0]
			for _, k := range keys {
				ops = append(ops, kv.Op{Kind: kv.Get, Key: k})
			}
			for i, op := range do(t, eng, ops...) {
				if string(op.Result.Value) != strconv.Itoa(i) {
					t.Fatalf("get %s = %s %q, want %d", op.Key, op.Result.Status, op.Result.Value, i)
				}
			}
			checkQuiet(t, eng)
		})
	}
}

// TestDeleteOfPendingInsert deletes keys whose inserts are still queued
// (in the same batch and in the next one): the deletes must be applied
// after the inserts, so the index ends without the keys and no item is
// left linked.
func TestDeleteOfPendingInsert(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{Interval: 5 * time.Millisecond})
			for i := range 20 {
				key := fmt.Appendf(nil, "p%d", i)
				var ops []kv.Op
				if i%2 == 0 {
					ops = do(t, eng, kv.Op{Kind: kv.Set, Key: key, Value: []byte("x")}, kv.Op{Kind: kv.Delete, Key: key})
				} else {
					ops = append(do(t, eng, kv.Op{Kind: kv.Set, Key: key, Value: []byte("x")}),
						do(t, eng, kv.Op{Kind: kv.Delete, Key: key})...)
				}
				if ops[0].Result.Status != kv.Stored || ops[1].Result.Status != kv.Deleted {
					t.Fatalf("set, delete %s: %s, %s", key, ops[0].Result.Status, ops[1].Result.Status)
				}
				if i%4 == 3 {
					if st := do(t, eng, kv.Op{Kind: kv.Add, Key: key, Value: []byte("y")})[0].Result.Status; st != kv.Stored {
						t.Fatalf("add %s after delete: %s", key, st)
					}
				}
			}
			checkQuiet(t, eng)
			for i := range 20 {
				key := fmt.Appendf(nil, "p%d", i)
				want := kv.Miss
				if i%4 == 3 {
					want = kv.Hit
				}
				if st := do(t, eng, kv.Op{Kind: kv.Get, Key: key})[0].Result.Status; st != want {
					t.Errorf("get %s = %s, want %s", key, st, want)
				}
			}
			if _, indexed := eng.itemCounts(); indexed != 5 {
				t.Errorf("%d index entries, want 5", indexed)
			}
		})
	}
}

// TestCASAndIncrAtomicUnderContention has goroutines increment one
// counter and extend one value by gets and cas, while another goroutine
// keeps setting other keys of the same stripes (so that updates are
// applied during their searches and the writes retry): no increment and no
// successful cas is lost.
func TestCASAndIncrAtomicUnderContention(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{Interval: 200 * time.Microsecond})
			keys := keysInStripe(40, "hot")
			counter, casKey, others := keys[0], keys[1], keys[2:]
			do(t, eng, kv.Op{Kind: kv.Set, Key: counter, Value: []byte("0")}, kv.Op{Kind: kv.Set, Key: casKey, Value: nil})
			stop := make(chan struct{})
			var noise sync.WaitGroup
			noise.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					do(t, eng, kv.Op{Kind: kv.Set, Key: others[i%len(others)], Value: []byte("n")})
				}
			})
			const goroutines, each = 6, 60
			var casWins atomic.Int64
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for range each {
						if op := do(t, eng, kv.Op{Kind: kv.Incr, Key: counter, Delta: 1})[0]; op.Result.Status != kv.Counted {
							t.Errorf("incr: %s", op.Result.Status)
							return
						}
						cur := do(t, eng, kv.Op{Kind: kv.Get, Key: casKey})[0]
						if cur.Result.Status != kv.Hit {
							t.Errorf("get %s: %s", casKey, cur.Result.Status)
							return
						}
						v := append(append([]byte{}, cur.Result.Value...), byte('a'+g))
						op := do(t, eng, kv.Op{Kind: kv.Set, Key: casKey, Value: v, HasCAS: true, CompareCAS: cur.Result.CAS})[0]
						switch op.Result.Status {
						case kv.Stored:
							casWins.Add(1)
						case kv.Exists:
						default:
							t.Errorf("cas: %s", op.Result.Status)
							return
						}
					}
				})
			}
			wg.Wait()
			close(stop)
			noise.Wait()
			got := do(t, eng, kv.Op{Kind: kv.Get, Key: counter}, kv.Op{Kind: kv.Get, Key: casKey})
			if want := strconv.Itoa(goroutines * each); string(got[0].Result.Value) != want {
				t.Errorf("counter = %q, want %s", got[0].Result.Value, want)
			}
			if n := int64(len(got[1].Result.Value)); n != casWins.Load() {
				t.Errorf("value has %d bytes after %d successful cas", n, casWins.Load())
			}
			t.Logf("%d cas won; %d write searches retried, %d searched under the lock", casWins.Load(),
				eng.counts.optimisticRetries.Load(), eng.counts.lockedSearches.Load())
			checkQuiet(t, eng)
		})
	}
}

// TestHotKeyReadYourWrites has goroutines write one hot key each in turn
// (a value naming the writer and a sequence number) and read it back with
// a long batch interval, so that reads come from the pending table while
// the index lags: each goroutine reads its own write or a later one, never
// an earlier value of its own.
func TestHotKeyReadYourWrites(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{Interval: time.Millisecond})
			hot := []byte("hot")
			const goroutines, each = 6, 150
			var wg sync.WaitGroup
			for g := range goroutines {
				wg.Go(func() {
					for i := range each {
						val := fmt.Appendf(nil, "%d:%d", g, i)
						ops := do(t, eng, kv.Op{Kind: kv.Set, Key: hot, Value: val}, kv.Op{Kind: kv.Get, Key: hot})
						if ops[0].Result.Status != kv.Stored || ops[1].Result.Status != kv.Hit {
							t.Errorf("set/get: %s, %s", ops[0].Result.Status, ops[1].Result.Status)
							return
						}
						var wg2, wi int
						if _, err := fmt.Sscanf(string(ops[1].Result.Value), "%d:%d", &wg2, &wi); err != nil {
							t.Errorf("read %q: %v", ops[1].Result.Value, err)
							return
						}
						if wg2 == g && wi != i {
							t.Errorf("goroutine %d wrote %d, read back its own older write %d", g, i, wi)
							return
						}
					}
				})
			}
			wg.Wait()
			checkQuiet(t, eng)
		})
	}
}

// TestRandomWorkloadLeavesNothingBehind runs random batches of every
// operation from several goroutines with a batch interval long enough for
// many writes to be pending at once, then checks that every queued update
// completed, the pending table emptied and the store holds exactly the
// indexed items.
func TestRandomWorkloadLeavesNothingBehind(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{Interval: 500 * time.Microsecond, MemoryLimit: 8 << 20, IndexBuckets: 256})
			seed := rand.Uint64()
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					r := rand.New(rand.NewPCG(seed, uint64(g)))
					for range 150 {
						ops := make([]kv.Op, 1+r.IntN(16))
						for i := range ops {
							ops[i] = randomOp(r, 3000, 200, func(string) uint64 { return 0 })
						}
						do(t, eng, ops...)
					}
				})
			}
			wg.Wait()
			t.Logf("seed %d", seed)
			checkQuiet(t, eng)
		})
	}
}

// TestContentionMakesProgress has many goroutines run random reads,
// writes and read-modify-writes on a few keys of one stripe: every batch
// must complete (no goroutine waits on a key lock or a search while it
// keeps a search batch from being reused).
func TestContentionMakesProgress(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{Interval: 100 * time.Microsecond})
			keys := keysInStripe(8, "c")
			done := make(chan struct{})
			go func() {
				contend(t, eng, keys, 300, 3)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				buf := make([]byte, 1<<20)
				t.Fatalf("no progress after 20 s:\n%s", buf[:runtime.Stack(buf, true)])
			}
			checkQuiet(t, eng)
		})
	}
}

// TestContentionQuietsWithSlowSearches runs TestContentionMakesProgress's
// load on the batched CPU engines with every search call taking as long
// as a GPU's (20 and 200 µs), callers launching and the scheduler alone:
// the engine must be quiet soon after the load.
func TestContentionQuietsWithSlowSearches(t *testing.T) {
	for _, ec := range testEngines {
		if ec.device != "cpu" || ec.cpu != CPUSearchBatched {
			continue
		}
		for _, d := range []time.Duration{20 * time.Microsecond, 200 * time.Microsecond} {
			t.Run(fmt.Sprintf("%s/%v", ec.name, d), func(t *testing.T) {
				eng := newTestEngine(t, ec, Options{Interval: 100 * time.Microsecond, searchDelay: d})
				contend(t, eng, keysInStripe(8, "q"), 100, 5)
				checkQuiet(t, eng)
			})
		}
	}
}

// contend has 32 goroutines each run n batches on eng of a random incr,
// set, delete, append or get of one of keys and a get of another (seeded
// by seed), and returns when all are done.
func contend(t *testing.T, eng *Engine, keys [][]byte, n int, seed uint64) {
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), seed))
			for range n {
				k := keys[r.IntN(len(keys))]
				var op kv.Op
				switch r.IntN(5) {
				case 0:
					op = kv.Op{Kind: kv.Incr, Key: k, Delta: 1, Vivify: true}
				case 1:
					op = kv.Op{Kind: kv.Set, Key: k, Value: []byte("1")}
				case 2:
					op = kv.Op{Kind: kv.Delete, Key: k}
				case 3:
					op = kv.Op{Kind: kv.Append, Key: k, Value: []byte("0")}
				default:
					op = kv.Op{Kind: kv.Get, Key: k}
				}
				do(t, eng, op, kv.Op{Kind: kv.Get, Key: keys[r.IntN(len(keys))]})
			}
		})
	}
	wg.Wait()
}
