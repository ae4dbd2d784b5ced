package server

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warpkv/warpkv/kv"
)

// casTracker remembers the CAS a cache last reported for each key, so that
// cas ops can name a cache's own values.
type casTracker map[string]uint64

func (c casTracker) note(op *kv.Op) {
	switch op.Result.Status {
	case kv.Hit, kv.Stored, kv.Counted, kv.Touched:
		c[string(op.Key)] = op.Result.CAS
	}
}

// TestEngineMatchesModel runs random batches of every operation on a small
// key pool through the engine and the reference model, with the clock
// moving (expiring items) and occasional flushes, and requires the same
// results, CAS values aside.
func TestEngineMatchesModel(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			clk := newFakeClock()
			eng := newTestEngine(t, ec, Options{Clock: clk.clock(), MemoryLimit: 64 << 20})
			model := kv.NewModel(clk.clock())
			seed := rand.Uint64()
			r := rand.New(rand.NewPCG(seed, 1))
			casEng, casModel := casTracker{}, casTracker{}
			for round := range 300 {
				n := 1 + r.IntN(24)
				ops := make([]kv.Op, n)
				for i := range ops {
					ops[i] = randomOp(r, 40, 300, func(string) uint64 { return 0 })
					if r.IntN(200) == 0 {
						ops[i] = kv.Op{Kind: kv.Flush}
					}
				}
				got := make([]kv.Op, n)
				want := make([]kv.Op, n)
				for i := range ops {
					got[i], want[i] = ops[i], ops[i]
					if ops[i].HasCAS {
						got[i].CompareCAS += casEng[string(ops[i].Key)]
						want[i].CompareCAS += casModel[string(ops[i].Key)]
					}
				}
				do(t, eng, got...)
				do(t, model, want...)
				for i := range ops {
					g, w := &got[i].Result, &want[i].Result
					if g.Status != w.Status || !bytes.Equal(g.Value, w.Value) || g.Flags != w.Flags ||
						g.Number != w.Number || g.Exptime != w.Exptime {
						t.Fatalf("seed %d round %d op %d (%s %q): engine %+v, model %+v", seed, round, i,
							ops[i].Kind, ops[i].Key, summary(g), summary(w))
					}
					casEng.note(&got[i])
					casModel.note(&want[i])
				}
				if r.IntN(10) == 0 {
					clk.advance(int64(r.IntN(1500)))
				}
			}
		})
	}
}

func summary(r *kv.Result) string {
	v := r.Value
	if len(v) > 16 {
		v = v[:16]
	}
	return fmt.Sprintf("{%s value %q (%d B) flags %d number %d exptime %d err %v}", r.Status, v, len(r.Value), r.Flags, r.Number, r.Exptime, r.Err)
}

// TestEngineReadYourWrites has many goroutines each write its own keys and
// read them back at once: every read sees the write before it.
func TestEngineReadYourWrites(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{})
			var wg sync.WaitGroup
			for g := range 8 {
				wg.Go(func() {
					for i := range 200 {
						key := fmt.Appendf(nil, "g%d:k%d", g, i%17)
						val := fmt.Appendf(nil, "value %d of %d", i, g)
						ops := do(t, eng, kv.Op{Kind: kv.Set, Key: key, Value: val}, kv.Op{Kind: kv.Get, Key: key})
						if ops[0].Result.Status != kv.Stored || ops[1].Result.Status != kv.Hit || !bytes.Equal(ops[1].Result.Value, val) {
							t.Errorf("goroutine %d write %d: set %s, get %s %q, want %q", g, i,
								ops[0].Result.Status, ops[1].Result.Status, ops[1].Result.Value, val)
							return
						}
					}
				})
			}
			wg.Wait()
		})
	}
}

// TestEngineConcurrentIncr has goroutines increment one counter at once:
// no increment is lost.
func TestEngineConcurrentIncr(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{})
			key := []byte("counter")
			do(t, eng, kv.Op{Kind: kv.Set, Key: key, Value: []byte("0")})
			const goroutines, each = 8, 100
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					for range each {
						if op := do(t, eng, kv.Op{Kind: kv.Incr, Key: key, Delta: 1})[0]; op.Result.Status != kv.Counted {
							t.Errorf("incr: %s", op.Result.Status)
							return
						}
					}
				})
			}
			wg.Wait()
			op := do(t, eng, kv.Op{Kind: kv.Get, Key: key})[0]
			if want := fmt.Sprint(goroutines * each); string(op.Result.Value) != want {
				t.Fatalf("counter = %q, want %q", op.Result.Value, want)
			}
		})
	}
}

// TestEngineExpiryAndFlush checks relative, negative and absolute expiry
// and flush_all now and delayed.
func TestEngineExpiryAndFlush(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			clk := newFakeClock()
			eng := newTestEngine(t, ec, Options{Clock: clk.clock()})
			status := func(key string) kv.Status { return do(t, eng, kv.Op{Kind: kv.Get, Key: []byte(key)})[0].Result.Status }
			set := func(key string, exptime int64) {
				if s := do(t, eng, kv.Op{Kind: kv.Set, Key: []byte(key), Value: []byte("v"), Exptime: exptime})[0].Result.Status; s != kv.Stored {
					t.Fatalf("set %s: %s", key, s)
				}
			}
			set("ten", 10)
			set("negative", -1)
			set("absolute-past", clk.now()-kv.MaxRelativeExpiry) // > 30 days, so absolute, and past
			set("absolute-future", clk.now()+100)
			set("forever", 0)
			for _, c := range []struct {
				key  string
				want kv.Status
			}{{"ten", kv.Hit}, {"negative", kv.Miss}, {"absolute-past", kv.Miss}, {"absolute-future", kv.Hit}, {"forever", kv.Hit}} {
				if got := status(c.key); got != c.want {
					t.Errorf("at 0 s: get %s = %s, want %s", c.key, got, c.want)
				}
			}
			clk.advance(10)
			if got := status("ten"); got != kv.Miss {
				t.Errorf("after 10 s: get ten = %s, want miss", got)
			}
			do(t, eng, kv.Op{Kind: kv.Flush, Exptime: 5})
			if got := status("forever"); got != kv.Hit {
				t.Errorf("flush in 5 s: get forever at once = %s, want hit", got)
			}
			clk.advance(6)
			if got := status("forever"); got != kv.Miss {
				t.Errorf("6 s after delayed flush: get forever = %s, want miss", got)
			}
			set("after", 0)
			do(t, eng, kv.Op{Kind: kv.Flush})
			if got := status("after"); got != kv.Miss {
				t.Errorf("after flush_all: get = %s, want miss", got)
			}
			set("after", 0)
			if got := status("after"); got != kv.Hit {
				t.Errorf("set after flush_all: get = %s, want hit", got)
			}
		})
	}
}

// TestEngineEvictionAndDisplacement fills a small memory and a tiny index
// far past capacity: every write succeeds (evicting or displacing older
// items), every read returns the key's own latest value or a miss, drops
// and evictions are counted, and when quiet the index holds exactly the
// linked items (nothing orphaned).
func TestEngineEvictionAndDisplacement(t *testing.T) {
	for _, ec := range testEngines {
		for _, tc := range []struct {
			name    string
			opts    Options
			keys    int
			valueSz int
		}{
			{"eviction", Options{MemoryLimit: 4 << 20}, 20000, 500},
			{"displacement", Options{MemoryLimit: 64 << 20, IndexBuckets: 64}, 3000, 20},
		} {
			t.Run(ec.name+"/"+tc.name, func(t *testing.T) {
				eng := newTestEngine(t, ec, tc.opts)
				latest := map[string][]byte{}
				r := rand.New(rand.NewPCG(7, 7))
				for i := 0; i < tc.keys; i += 64 {
					var ops []kv.Op
					for k := i; k < min(i+64, tc.keys); k++ {
						key := fmt.Sprintf("k%d", k)
						val := bytes.Repeat([]byte{byte(r.Uint32())}, tc.valueSz)
						ops = append(ops, kv.Op{Kind: kv.Set, Key: []byte(key), Value: val})
					}
					for _, op := range do(t, eng, ops...) {
						switch op.Result.Status {
						case kv.Stored:
							latest[string(op.Key)] = op.Value
						case kv.NoMemory: // displaced out of the index at once
						default:
							t.Fatalf("set %s: %s", op.Key, op.Result.Status)
						}
					}
				}
				// Let the index apply every write first: until then a write
				// is read from the pending table, whatever displacement
				// does to it afterwards.
				if !eng.quiesce() {
					t.Fatal("engine not quiet after the writes")
				}
				hits := 0
				for i := 0; i < tc.keys; i += 64 {
					var ops []kv.Op
					for k := i; k < min(i+64, tc.keys); k++ {
						ops = append(ops, kv.Op{Kind: kv.Get, Key: fmt.Appendf(nil, "k%d", k)})
					}
					for _, op := range do(t, eng, ops...) {
						if op.Result.Status == kv.Hit {
							hits++
							if !bytes.Equal(op.Result.Value, latest[string(op.Key)]) {
								t.Fatalf("get %s: a value that is not the key's latest", op.Key)
							}
						}
					}
				}
				if hits == 0 || hits == tc.keys {
					t.Errorf("%d of %d keys hit: want some evicted or displaced and some kept", hits, tc.keys)
				}
				linked, indexed := eng.itemCounts()
				if linked != indexed {
					t.Errorf("%d linked items but %d index entries", linked, indexed)
				}
				t.Logf("%d of %d keys kept; %d linked items", hits, tc.keys, linked)
			})
		}
	}
}

// TestEngineSetsAndCASWritersLinearize runs one goroutine that sets a key
// to "s<i>;" and reads it back, against goroutines that append "x" to it
// with gets and cas. A cas that compared against the item before a set
// (whose insert was queued but not applied) would overwrite that set, and
// the setter would read back an older "s<j>;": every read after set i must
// start with "s<i>;".
func TestEngineSetsAndCASWritersLinearize(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			// A batch interval, so that searches run between update
			// batches and a queued set can still be pending.
			eng := newTestEngine(t, ec, Options{Interval: 200 * time.Microsecond})
			key := []byte("contended")
			done := make(chan struct{})
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for {
						select {
						case <-done:
							return
						default:
						}
						g := do(t, eng, kv.Op{Kind: kv.Get, Key: key})[0]
						if g.Result.Status != kv.Hit {
							continue
						}
						v := append(append([]byte{}, g.Result.Value...), 'x')
						do(t, eng, kv.Op{Kind: kv.Set, Key: key, Value: v, HasCAS: true, CompareCAS: g.Result.CAS})
					}
				})
			}
			for i := range 1000 {
				want := fmt.Appendf(nil, "s%d;", i)
				ops := do(t, eng, kv.Op{Kind: kv.Set, Key: key, Value: want})
				got := do(t, eng, kv.Op{Kind: kv.Get, Key: key})[0]
				if ops[0].Result.Status != kv.Stored || !bytes.HasPrefix(got.Result.Value, want) {
					close(done)
					wg.Wait()
					t.Fatalf("set %d: %s, then read %q: want prefix %q", i, ops[0].Result.Status, got.Result.Value, want)
				}
			}
			close(done)
			wg.Wait()
		})
	}
}

// TestGPUSearchMode checks, on a GPU, that the GPU engine searches through
// the persistent kernel by default (and its searches are served by it) and
// through staged calls when asked.
func TestGPUSearchMode(t *testing.T) {
	for _, ec := range testEngines {
		if ec.device == "cpu" {
			continue
		}
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{})
			for i := range 50 {
				key := fmt.Appendf(nil, "m%d", i)
				do(t, eng, kv.Op{Kind: kv.Set, Key: key, Value: key})
			}
			eng.quiesce()
			for i := range 50 {
				key := fmt.Appendf(nil, "m%d", i)
				if op := do(t, eng, kv.Op{Kind: kv.Get, Key: key})[0]; string(op.Result.Value) != string(key) {
					t.Fatalf("get %s: %s %q", key, op.Result.Status, op.Result.Value)
				}
			}
			want := GPUSearchPersistent
			if ec.search == GPUSearchStaged {
				want = GPUSearchStaged
			}
			if got := eng.gpuSearch(); got != want {
				t.Fatalf("GPU search %q, want %q", got, want)
			}
			if want == GPUSearchPersistent {
				st := eng.persist[0].Stats()
				if st.Resident == 0 || st.Broken != "" {
					t.Errorf("persistent search stats %+v: want resident batches, nothing broken", st)
				}
			}
		})
	}
}

// TestSearchLaunchModes: the engine takes every mode of SearchLaunchModes
// (the CPU engine's batched searches, which every mode launches) and
// reports it, "" is the first, and an unknown mode is refused with a
// message naming them all.
func TestSearchLaunchModes(t *testing.T) {
	for _, name := range append(SearchLaunchNames(), "") {
		e, err := New(Options{Device: "cpu", MemoryLimit: 4 << 20, CPUSearch: CPUSearchBatched, SearchLaunch: name})
		if err != nil {
			t.Fatalf("search launch %q: %v", name, err)
		}
		want := name
		if want == "" {
			want = SearchLaunchCallers
		}
		if got := e.searchLaunch(); got != want {
			t.Errorf("search launch %q: the engine reports %q, want %q", name, got, want)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
	}
	_, err := New(Options{Device: "cpu", MemoryLimit: 4 << 20, SearchLaunch: "bogus"})
	if err == nil {
		t.Fatal(`search launch "bogus": no error`)
	}
	for _, name := range SearchLaunchNames() {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("search launch \"bogus\": %v does not name %s", err, name)
		}
	}
}

// TestShardLaunchAndBuffers checks, on every test engine, what a shard
// derives from its search-launch mode and what it allocates: callers
// launch unless the scheduler does or searches run inline, they search at
// the same time only under the concurrent mode, and a shard has
// concurrentBatches batch buffers only where they are the slots of a
// persistent search with concurrent callers (staged calls run one at a
// time), searchBatches otherwise.
func TestShardLaunchAndBuffers(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			eng := newTestEngine(t, ec, Options{MemoryLimit: 4 << 20})
			launch := ec.launch
			if launch == "" {
				launch = SearchLaunchCallers
			}
			inline := ec.device == "cpu" && ec.cpu != CPUSearchBatched
			wantCallers := launch != SearchLaunchScheduler && !inline
			wantConcurrent := wantCallers && launch == SearchLaunchConcurrent
			wantBuffers := searchBatches
			if wantConcurrent && len(eng.persist) > 0 {
				wantBuffers = concurrentBatches
			}
			for i, s := range eng.shards {
				if s.callers != wantCallers || s.concurrent != wantConcurrent {
					t.Errorf("shard %d: callers %v, concurrent %v; want %v, %v", i, s.callers, s.concurrent, wantCallers, wantConcurrent)
				}
				if got := len(s.q.batches); got != wantBuffers {
					t.Errorf("shard %d: %d search batch buffers, want %d", i, got, wantBuffers)
				}
			}
			if len(eng.persist) > 0 && eng.persist[0].Slots() != wantBuffers {
				t.Errorf("persistent search of %d slots, want %d", eng.persist[0].Slots(), wantBuffers)
			}
		})
	}
}
