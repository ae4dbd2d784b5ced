package stm

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTestStore(t *testing.T, o StoreOptions) *Store {
	t.Helper()
	s, err := NewStore(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAtomicallyReadsItsWritesAndCommits(t *testing.T) {
	s := newTestStore(t, StoreOptions{Items: 4, Init: func(i int) uint64 { return uint64(10 * i) }, Record: true})
	err := s.Atomically(func(tx *Tx) error {
		if v := tx.Read(1); v != 10 {
			t.Errorf("read 1 = %d, want 10", v)
		}
		tx.Write(1, 11)
		if v := tx.Read(1); v != 11 {
			t.Errorf("read after write = %d, want 11", v)
		}
		tx.Add(2, 5)
		tx.WriteInt(3, -1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := []uint64{s.Load(0), s.Load(1), s.Load(2), s.Load(3)}; got[1] != 11 || got[2] != 25 || int64(got[3]) != -1 {
		t.Fatalf("store %v after the transaction", got)
	}
	if s.Clock() != 1 {
		t.Fatalf("clock %d after one update, want 1", s.Clock())
	}
	st := s.Stats()
	if st.Commits != 1 || st.ReadOnlyCommits != 0 || st.TotalAborts() != 0 {
		t.Fatalf("stats %+v", st)
	}
	h := s.History()
	if len(h) != 1 || h[0].TS != 1 || len(h[0].Reads) != 2 || len(h[0].Writes) != 3 {
		t.Fatalf("history %+v: want one commit at 1 reading items 1 and 2 from the store, writing 3 items", h)
	}
}

func TestFailedClosuresLeaveNothingBehind(t *testing.T) {
	s := newTestStore(t, StoreOptions{Items: 2})
	boom := errors.New("boom")
	if err := s.Atomically(func(tx *Tx) error { tx.Write(0, 7); return boom }); err != boom {
		t.Fatalf("error %v, want boom", err)
	}
	func() {
		defer func() {
			if r := recover(); r != "oops" {
				t.Fatalf("recovered %v, want the closure's panic", r)
			}
		}()
		s.Atomically(func(tx *Tx) error { tx.Write(1, 9); panic("oops") })
	}()
	if s.Load(0) != 0 || s.Load(1) != 0 || s.Clock() != 0 {
		t.Fatalf("failed closures changed the store: %d %d clock %d", s.Load(0), s.Load(1), s.Clock())
	}
	if err := s.Atomically(func(tx *Tx) error { tx.Write(1, 3); return nil }); err != nil || s.Load(1) != 3 {
		t.Fatalf("store unusable after failures: %v, item 1 = %d", err, s.Load(1))
	}
}

func TestMisuseNamesTheProblem(t *testing.T) {
	s := newTestStore(t, StoreOptions{Items: 2})
	for _, tc := range []struct {
		name string
		fn   func()
		want string
	}{
		{"write in read-only", func() { s.ReadOnly(func(tx *Tx) error { tx.Write(0, 1); return nil }) }, "read-only"},
		{"item out of range", func() { s.Atomically(func(tx *Tx) error { tx.Read(2); return nil }) }, "item 2 outside"},
		{"negative item", func() { s.Load(-1) }, "item -1 outside"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tc.want) {
					t.Fatalf("panic %v, want one containing %q", r, tc.want)
				}
			}()
			tc.fn()
		})
	}
	for _, o := range []StoreOptions{{Items: 0}, {Items: 4, Config: Config{Servers: MaxServers + 1}}, {Items: 4, Config: Config{Versions: -1}}} {
		if _, err := NewStore(o); err == nil {
			t.Errorf("NewStore(%+v) accepted", o)
		}
	}
}

// TestMoreServersThanItems: a store uses at most one server per item and
// no server without items, and works.
func TestMoreServersThanItems(t *testing.T) {
	for _, tc := range []struct{ items, servers, want int }{{2, 4, 2}, {1, 3, 1}, {5, 4, 3}, {8, 4, 4}, {1000, 3, 3}} {
		s := newTestStore(t, StoreOptions{Items: tc.items, Config: Config{Servers: tc.servers}})
		if got := s.Config().Servers; got != tc.want {
			t.Errorf("%d servers for %d items: store uses %d, want %d", tc.servers, tc.items, got, tc.want)
		}
		if err := s.Atomically(func(tx *Tx) error { tx.Write(tc.items-1, tx.Read(0)+1); return nil }); err != nil {
			t.Fatal(err)
		}
		if got := s.Load(tc.items - 1); got != 1 {
			t.Errorf("%d items: item %d = %d after one increment", tc.items, tc.items-1, got)
		}
	}
}

// TestReadOnlySeesItsSnapshot: a read-only transaction keeps reading the
// state of its start while updates commit, until the ring loses it.
func TestReadOnlySeesItsSnapshot(t *testing.T) {
	s := newTestStore(t, StoreOptions{Items: 1, Config: Config{Versions: 3}})
	attempts := 0
	err := s.ReadOnly(func(tx *Tx) error {
		attempts++
		first := tx.Read(0)
		if attempts == 1 {
			for i := 0; i < 2; i++ { // two newer versions: the snapshot's is still kept
				if err := s.Atomically(func(u *Tx) error { u.Add(0, 1); return nil }); err != nil {
					return err
				}
			}
			if again := tx.Read(0); again != first {
				t.Errorf("snapshot read %d then %d", first, again)
			}
			for i := 0; i < 2; i++ { // now it is gone: the next read aborts the attempt
				s.Atomically(func(u *Tx) error { u.Add(0, 1); return nil })
			}
			tx.Read(0)
			t.Error("read of an evicted version returned")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 2 || s.Stats().Aborts[SnapshotTooOld] != 1 {
		t.Fatalf("%d attempts, stats %+v: want one snapshot-too-old abort, then a commit", attempts, s.Stats())
	}
}

// TestConflictsAreDetected drives a conflict of each kind by hand.
func TestConflictsAreDetected(t *testing.T) {
	for _, tc := range []struct {
		name  string
		body  func(tx *Tx) // the attempt that must abort once
		cause Cause
	}{
		{"read-write", func(tx *Tx) { tx.Write(1, tx.Read(0)+1) }, ReadWrite},
		{"write-write (blind writes)", func(tx *Tx) { tx.Write(0, 5) }, WriteWrite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestStore(t, StoreOptions{Items: 2})
			attempts := 0
			err := s.Atomically(func(tx *Tx) error {
				attempts++
				tc.body(tx)
				if attempts == 1 { // a concurrent commit to item 0 after our snapshot
					var wg sync.WaitGroup
					wg.Add(1)
					go func() {
						defer wg.Done()
						s.Atomically(func(u *Tx) error { u.Write(0, 100); return nil })
					}()
					wg.Wait()
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if st := s.Stats(); attempts != 2 || st.Aborts[tc.cause] != 1 || st.Commits != 2 {
				t.Fatalf("%d attempts, stats %+v: want one %s abort then a commit", attempts, st, tc.cause)
			}
		})
	}
}

// TestCPUCommitsKeepNoLog: the CPU store validates against per-item
// versions, so commits of other items never abort a transaction, however
// small the (GPU engine's) log is configured.
func TestCPUCommitsKeepNoLog(t *testing.T) {
	s := newTestStore(t, StoreOptions{Items: 8, Config: Config{LogSize: 2, LogWrites: 1}})
	attempts := 0
	err := s.Atomically(func(tx *Tx) error {
		attempts++
		tx.Write(7, tx.Read(7)+1)
		if attempts == 1 { // unrelated commits of several items after our snapshot
			for i := 0; i < 3; i++ {
				s.Atomically(func(u *Tx) error { u.Write(i, 1); u.Write(i+3, 1); return nil })
			}
		}
		return nil
	})
	if err != nil || attempts != 1 || s.Stats().TotalAborts() != 0 || s.Load(7) != 1 {
		t.Fatalf("err %v, %d attempts, stats %+v, item 7 = %d: want one attempt that commits", err, attempts, s.Stats(), s.Load(7))
	}
}

// TestDisjointCommitsDoNotWait: while a commit holds its item (stalled
// between taking its timestamp and writing back), commits of other items
// go through, a commit of the held item aborts instead of waiting, a read
// of the held item waits for the write-back, and a read at a snapshot
// before the stalled commit then finds the version it replaced.
func TestDisjointCommitsDoNotWait(t *testing.T) {
	s := newTestStore(t, StoreOptions{Items: 4, Init: func(i int) uint64 { return uint64(i) }})
	s.items[0].word.Store(locked) // a commit of item 0, stalled
	stalled := s.clock.Add(1)
	done := make(chan error, 1)
	go func() {
		done <- s.Atomically(func(tx *Tx) error { tx.Write(1, tx.Read(1)+tx.Read(2)); return nil })
	}()
	if err := <-done; err != nil || s.Load(1) != 3 {
		t.Fatalf("disjoint commit: %v, item 1 = %d, want 3", err, s.Load(1))
	}
	old := s.txPool.Get().(*Tx)
	old.begin(false)
	old.snap = stalled - 1
	old.witems, old.wvals = []uint32{0}, []uint64{9}
	if ok, cause := s.commit(old); ok || cause != WriteWrite {
		t.Fatalf("commit of the held item: %v %v, want a write-write abort", ok, cause)
	}
	got := make(chan uint64, 1)
	go func() { got <- s.Load(0) }()
	select {
	case v := <-got:
		t.Fatalf("read of the held item returned %d before the write-back", v)
	case <-time.After(20 * time.Millisecond):
	}
	s.install(0, stalled, 42, 0, old.log, old.logNo, old.log.reserve(1)+1)
	if v := <-got; v != 42 {
		t.Fatalf("read after the write-back: %d, want 42", v)
	}
	if v, ok := s.readAt(0, stalled-1); !ok || v != 0 {
		t.Fatalf("read at the snapshot before the stalled commit: %d %v, want 0", v, ok)
	}
}

// TestCommitsDoNotAllocate: once a store's pooled transactions have grown,
// update and read-only commits allocate nothing.
func TestCommitsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on sync.Pool use")
	}
	s := newTestStore(t, StoreOptions{Items: 1000, Init: func(int) uint64 { return 100 }})
	var from, to int
	transfer := func(tx *Tx) error {
		tx.Write(from, tx.Read(from)-1)
		tx.Write(to, tx.Read(to)+1)
		return nil
	}
	var sum uint64
	total := func(tx *Tx) error {
		sum = 0
		for i := 0; i < 100; i++ {
			sum += tx.Read(i)
		}
		return nil
	}
	n := 0
	allocs := testing.AllocsPerRun(2000, func() {
		n++
		from, to = n*7%1000, n*13%1000
		if from == to {
			to = (to + 1) % 1000
		}
		if err := s.Atomically(transfer); err != nil {
			t.Fatal(err)
		}
		if err := s.ReadOnly(total); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per transfer and total, want 0", allocs)
	}
}

// TestStoreBytes: a store costs 24 bytes an item and version logs bounded
// per stripe, whatever K, and nothing for the GPU engine's commit logs.
func TestStoreBytes(t *testing.T) {
	stripes := uint64(stripesFor(runtime.GOMAXPROCS(0)))
	logs := stripes * maxLogRecords * 24
	if got := StoreBytes(2_000_000, Config{Versions: 1024}); got != 48_000_000+logs {
		t.Errorf("2M items, 1024 versions: %d bytes, want %d", got, 48_000_000+logs)
	}
	if got, want := StoreBytes(1000, Config{Versions: 1, LogSize: 1 << 24, Servers: 64}), uint64(24_000); got != want {
		t.Errorf("1000 items, 1 version: %d bytes, want %d", got, want)
	}
	if a, b := StoreBytes(1000, Config{}), StoreBytes(1000, Config{Versions: DefaultCPUVersions}); a != b {
		t.Errorf("Versions 0: %d bytes, %d at the default", a, b)
	}
}
