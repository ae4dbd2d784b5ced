package stm

import (
	"errors"
	"strings"
	"sync"
	"testing"
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

func TestLogTooSmallAbortsAsLogFull(t *testing.T) {
	s := newTestStore(t, StoreOptions{Items: 8, Config: Config{LogSize: 2}})
	attempts := 0
	err := s.Atomically(func(tx *Tx) error {
		attempts++
		tx.Write(7, tx.Read(7)+1)
		if attempts == 1 { // three unrelated commits push the log past our snapshot
			for i := 0; i < 3; i++ {
				s.Atomically(func(u *Tx) error { u.Write(i, 1); return nil })
			}
		}
		return nil
	})
	if err != nil || attempts != 2 || s.Stats().Aborts[LogFull] != 1 {
		t.Fatalf("err %v, %d attempts, stats %+v: want one log-full abort", err, attempts, s.Stats())
	}
}
