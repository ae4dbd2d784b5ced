package kv

import (
	"bytes"
	"testing"
)

func TestParseCounter(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"42", 42, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 0, false},
		{"  7", 7, true},
		{"9 ", 9, true},
		{"12 abc", 12, true},
		{"+5", 5, true},
		{"-0", 0, true},
		{"-1", 0, false},
		{"", 0, false},
		{"   ", 0, false},
		{"abc", 0, false},
		{"12abc", 0, false},
		{"7\x00junk", 7, true},
		{"1.5", 0, false},
	} {
		got, ok := ParseCounter([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseCounter(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestExpiryAt(t *testing.T) {
	const now = 1_700_000_000
	for _, tc := range []struct {
		raw, want int64
	}{
		{0, 0},
		{-1, Expired},
		{10, now + 10},
		{MaxRelativeExpiry, now + MaxRelativeExpiry},
		{MaxRelativeExpiry + 1, Expired}, // absolute, long past
		{now - 5, Expired},
		{now + 5000, now + 5000},
	} {
		if got := ExpiryAt(tc.raw, now); got != tc.want {
			t.Errorf("ExpiryAt(%d) = %d, want %d", tc.raw, got, tc.want)
		}
	}
	if Alive(Expired, now) || !Alive(0, now) || !Alive(now+1, now) || Alive(now, now) {
		t.Error("Alive disagrees with memcached's rule exptime == 0 || exptime > now")
	}
	if TTL(0, now) != -1 || TTL(now+9, now) != 9 || TTL(now-3, now) != 0 {
		t.Error("TTL: want -1 for never, seconds left otherwise, never negative")
	}
}

func TestFlushState(t *testing.T) {
	const now = 1_700_000_000
	var f FlushState
	if !f.Valid(1, now, now) {
		t.Fatal("zero FlushState flushed an item")
	}
	f.Flush(0, now, 10) // items with CAS < 10 are gone
	if f.Valid(9, now, now) || !f.Valid(10, now, now) {
		t.Error("flush now: want CAS 9 flushed, CAS 10 kept")
	}
	f = FlushState{}
	// As memcached: oldest_live = now+delay-1, so at now+4 the items last
	// stored up to now+4 are gone.
	f.Flush(5, now, 10)
	if !f.Valid(1, now, now+3) {
		t.Error("delayed flush took effect early")
	}
	if f.Valid(1, now, now+4) || !f.Valid(1, now+5, now+5) {
		t.Error("delayed flush: want items stored before the flush time gone, later ones kept")
	}
}

// TestFlushSpendsCAS: the flushes memcached 1.6.18 records by CAS (and so
// spends a CAS unique on, measured on it: the next write's CAS was one
// higher after each) are those that take effect within the second.
func TestFlushSpendsCAS(t *testing.T) {
	const now = 1_700_000_000
	for _, tc := range []struct {
		delay  int64
		spends bool
	}{
		{0, true}, {-1, true}, {1, true}, // flush_all, flush_all -1, flush_all 1
		{2, false}, {100, false}, {MaxRelativeExpiry, false}, // delayed
		{now - 100, true}, {now, true}, // an absolute time already past
		{now + 100, false}, // an absolute time ahead
	} {
		if got := FlushSpendsCAS(tc.delay, now); got != tc.spends {
			t.Errorf("FlushSpendsCAS(%d, now) = %v, want %v", tc.delay, got, tc.spends)
		}
	}
}

// TestApply runs each rule of Apply on an absent and a present item.
func TestApply(t *testing.T) {
	const now = 1_700_000_000
	present := &Item{Value: []byte("10"), Flags: 7, Exptime: now + 100, CAS: 5}
	text := &Item{Value: []byte("abc"), Flags: 1, CAS: 6}
	for _, tc := range []struct {
		name   string
		op     Op
		cur    *Item
		status Status
		write  string // value written, "" when no write
		remove bool
		number uint64
	}{
		{"get miss", Op{Kind: Get}, nil, Miss, "", false, 0},
		{"get hit", Op{Kind: Get}, present, Hit, "", false, 0},
		{"set absent", Op{Kind: Set, Value: []byte("x")}, nil, Stored, "x", false, 0},
		{"set present", Op{Kind: Set, Value: []byte("x")}, present, Stored, "x", false, 0},
		{"set too large removes", Op{Kind: Set, TooLarge: true}, present, TooLarge, "", true, 0},
		{"add too large keeps", Op{Kind: Add, TooLarge: true}, present, TooLarge, "", false, 0},
		{"add present", Op{Kind: Add, Value: []byte("x")}, present, NotStored, "", false, 0},
		{"add absent", Op{Kind: Add, Value: []byte("x")}, nil, Stored, "x", false, 0},
		{"replace absent", Op{Kind: Replace, Value: []byte("x")}, nil, NotStored, "", false, 0},
		{"replace present", Op{Kind: Replace, Value: []byte("x")}, present, Stored, "x", false, 0},
		{"append", Op{Kind: Append, Value: []byte("x")}, present, Stored, "10x", false, 0},
		{"prepend", Op{Kind: Prepend, Value: []byte("x")}, present, Stored, "x10", false, 0},
		{"append absent", Op{Kind: Append, Value: []byte("x")}, nil, NotStored, "", false, 0},
		{"cas absent", Op{Kind: Set, HasCAS: true, CompareCAS: 5}, nil, NotFound, "", false, 0},
		{"cas match", Op{Kind: Set, HasCAS: true, CompareCAS: 5, Value: []byte("y")}, present, Stored, "y", false, 0},
		{"cas mismatch", Op{Kind: Set, HasCAS: true, CompareCAS: 4}, present, Exists, "", false, 0},
		{"delete absent", Op{Kind: Delete}, nil, NotFound, "", false, 0},
		{"delete", Op{Kind: Delete}, present, Deleted, "", true, 0},
		{"delete cas mismatch", Op{Kind: Delete, HasCAS: true, CompareCAS: 1}, present, Exists, "", false, 0},
		{"incr", Op{Kind: Incr, Delta: 5}, present, Counted, "15", false, 15},
		{"incr wraps", Op{Kind: Incr, Delta: 1<<64 - 1}, present, Counted, "9 ", false, 9},
		{"decr pads", Op{Kind: Decr, Delta: 1}, present, Counted, "9 ", false, 9},
		{"decr floors", Op{Kind: Decr, Delta: 100}, present, Counted, "0 ", false, 0},
		{"incr non-numeric", Op{Kind: Incr, Delta: 1}, text, NonNumeric, "", false, 0},
		{"incr empty before cas", Op{Kind: Incr, Delta: 1, HasCAS: true, CompareCAS: 99}, &Item{CAS: 1}, NonNumeric, "", false, 0},
		{"incr absent", Op{Kind: Incr, Delta: 1}, nil, NotFound, "", false, 0},
		{"incr vivify", Op{Kind: Incr, Delta: 1, Vivify: true, Initial: 3}, nil, Counted, "3", false, 3},
		{"touch absent", Op{Kind: Touch}, nil, NotFound, "", false, 0},
		{"touch", Op{Kind: Touch, Exptime: 9}, present, Touched, "", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := tc.op
			e := Apply(&op, tc.cur, now, nil)
			if op.Result.Status != tc.status {
				t.Fatalf("status %s, want %s", op.Result.Status, tc.status)
			}
			got := string(append(append([]byte{}, e.Parts[0]...), e.Parts[1]...))
			if e.Write != (tc.write != "") || got != tc.write {
				t.Errorf("write %v %q, want %q", e.Write, got, tc.write)
			}
			if e.Remove != tc.remove {
				t.Errorf("remove %v, want %v", e.Remove, tc.remove)
			}
			if op.Result.Number != tc.number {
				t.Errorf("number %d, want %d", op.Result.Number, tc.number)
			}
			if e.Write && tc.cur != nil && (op.Kind == Append || op.Kind == Incr || op.Kind == Decr) && (e.Flags != tc.cur.Flags || e.Exptime != tc.cur.Exptime) {
				t.Errorf("%s changed flags or expiry", op.Kind)
			}
		})
	}
}

// TestModelBatchValues checks that hits' values stay valid while later
// hits of the same batch grow its buffer.
func TestModelBatchValues(t *testing.T) {
	m := NewModel(nil)
	big := bytes.Repeat([]byte("v"), 10000)
	b := &Batch{}
	b.Add(Op{Kind: Set, Key: []byte("a"), Value: []byte("small")})
	b.Add(Op{Kind: Set, Key: []byte("b"), Value: big})
	b.Add(Op{Kind: Get, Key: []byte("a")})
	b.Add(Op{Kind: Get, Key: []byte("b")})
	if err := m.Do(b); err != nil {
		t.Fatal(err)
	}
	if string(b.Ops[2].Result.Value) != "small" || !bytes.Equal(b.Ops[3].Result.Value, big) {
		t.Fatal("hit values corrupted by a later hit")
	}
}

// TestModelJoinedItemLimit checks that the model refuses, as memcached
// does (NOT_STORED, the old item kept), an append or prepend whose joined
// item is over the item size limit, and stores one that fits exactly.
func TestModelJoinedItemLimit(t *testing.T) {
	const limit = 4096
	key := []byte("k3")
	// value bytes at which a joined item (flags 7: counted) fills the limit
	fits := int(limit - ItemTotal(len(key), 7, 0))
	for _, tc := range []struct {
		name   string
		kind   Kind
		joined int
		want   Status
	}{
		{"append that fits exactly", Append, fits, Stored},
		{"append one byte over", Append, fits + 1, NotStored},
		{"prepend that fits exactly", Prepend, fits, Stored},
		{"prepend one byte over", Prepend, fits + 1, NotStored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewModel(nil)
			m.SetItemSizeMax(limit)
			old := bytes.Repeat([]byte("o"), 1000)
			b := &Batch{}
			b.Add(Op{Kind: Set, Key: key, Flags: 7, Value: old})
			b.Add(Op{Kind: tc.kind, Key: key, Value: bytes.Repeat([]byte("n"), tc.joined-len(old))})
			b.Add(Op{Kind: Get, Key: key})
			if err := m.Do(b); err != nil {
				t.Fatal(err)
			}
			if got := b.Ops[1].Result.Status; got != tc.want {
				t.Fatalf("%v of %d joined bytes: status %v, want %v", tc.kind, tc.joined, got, tc.want)
			}
			wantLen := tc.joined
			if tc.want != Stored {
				wantLen = len(old)
			}
			if got := len(b.Ops[2].Result.Value); got != wantLen {
				t.Fatalf("value after %v: %d bytes, want %d", tc.kind, got, wantLen)
			}
		})
	}
}
