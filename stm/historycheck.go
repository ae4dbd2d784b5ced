package stm

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/warpkv/warpkv/internal/par"
)

// The checks of a recorded history do not replay it serially: each read
// is checked on its own against the committed writes of its item, which
// a writeIndex holds in timestamp order, so the records are checked on
// all cores. Of several violations, the one a serial replay would meet
// first is reported.

// checkGrain is how many records one worker of a check takes at a time.
const checkGrain = 1 << 12

// itemWrite is one committed write of an item: its transaction's
// timestamp and the value written.
type itemWrite struct{ ts, value uint64 }

// writeIndex holds every committed update transaction's writes by item:
// item i's are w[start[i]:start[i+1]], in timestamp order, writes of one
// timestamp in the history's order.
type writeIndex struct {
	initial []uint64
	start   []int
	w       []itemWrite
}

// newWriteIndex indexes the writes of h's committed update transactions
// over a store of len(initial) items, and returns the update
// transactions' timestamps and records in h's order. It fails on a write
// outside the store, naming the one with the lowest timestamp. The
// records are read once, on all cores, each part keeping its updates'
// writes in a compact list; then those lists are placed by item. Cost:
// O(N + R + W log W) for R records and W writes (O(N + R + W) when each
// item's writes are already in timestamp order, as the engines record
// them).
func newWriteIndex(initial []uint64, h []Record) (*writeIndex, []stamp, error) {
	type write struct {
		item      uint32
		ts, value uint64
	}
	type part struct {
		writes []write
		stamps []stamp
		bad    int // the part's write outside the store of lowest timestamp (-1: none)
	}
	n := len(initial)
	nparts := par.Parts(len(h), checkGrain, 0)
	parts := make([]part, nparts)
	par.Ranges(len(h), nparts, func(p, lo, hi int) {
		pt := part{bad: -1}
		for i := lo; i < hi; i++ {
			r := &h[i]
			if r.Aborted || r.ReadOnly {
				continue
			}
			pt.stamps = append(pt.stamps, stamp{r.TS, i})
			for _, a := range r.Writes {
				if int(a.Item) >= n {
					if pt.bad < 0 || r.TS < h[pt.bad].TS {
						pt.bad = i
					}
					continue
				}
				pt.writes = append(pt.writes, write{a.Item, r.TS, a.Value})
			}
		}
		parts[p] = pt
	})
	bad := -1
	for _, pt := range parts {
		if pt.bad >= 0 && (bad < 0 || h[pt.bad].TS < h[bad].TS) {
			bad = pt.bad
		}
	}
	if bad >= 0 {
		r := &h[bad]
		for _, a := range r.Writes {
			if int(a.Item) >= n {
				return nil, nil, fmt.Errorf("transaction %d wrote item %d outside %d items", r.TS, a.Item, n)
			}
		}
	}
	x := &writeIndex{initial: initial, start: make([]int, n+1)}
	var stamps []stamp
	for _, pt := range parts {
		for _, w := range pt.writes {
			x.start[w.item+1]++
		}
		stamps = append(stamps, pt.stamps...)
	}
	for i := 1; i <= n; i++ {
		x.start[i] += x.start[i-1]
	}
	x.w = make([]itemWrite, x.start[n])
	next := slices.Clone(x.start[:n])
	for _, pt := range parts {
		for _, w := range pt.writes {
			x.w[next[w.item]] = itemWrite{w.ts, w.value}
			next[w.item]++
		}
	}
	par.For(n, 1<<14, 0, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			ws := x.w[x.start[i]:x.start[i+1]]
			if !slices.IsSortedFunc(ws, byTS) {
				slices.SortStableFunc(ws, byTS)
			}
		}
	})
	return x, stamps, nil
}

// stamp is an update transaction's timestamp and record.
type stamp struct {
	ts  uint64
	rec int
}

func byTS(a, b itemWrite) int { return cmp.Compare(a.ts, b.ts) }

// at returns item's value after every committed write with a timestamp
// at or below ts (the store's initial value if none). Cost: O(log W_item).
func (x *writeIndex) at(item uint32, ts uint64) uint64 {
	lo, hi := x.start[item], x.start[item+1]
	first := lo
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x.w[m].ts <= ts {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == first {
		return x.initial[item]
	}
	return x.w[lo-1].value
}

// before returns item's value before the writes of timestamp ts: after
// every committed write with a lower timestamp.
func (x *writeIndex) before(item uint32, ts uint64) uint64 {
	if ts == 0 {
		return x.initial[item]
	}
	return x.at(item, ts-1)
}

// violation is one failed check of a record, and where a serial replay
// in the check's order would meet it.
type violation struct {
	ts    uint64 // the order's timestamp
	later bool   // read-only after update transactions of that timestamp (CheckHistory)
	rec   int    // the record
	err   error
}

func (v *violation) before(o *violation) bool {
	if v.ts != o.ts {
		return v.ts < o.ts
	}
	if v.later != o.later {
		return !v.later
	}
	return v.rec < o.rec
}

// firstViolation runs check on every record of h on all cores and returns
// the violation a serial replay meets first, or nil.
func firstViolation(h []Record, check func(i int, r *Record) *violation) *violation {
	var mu sync.Mutex
	var first *violation
	par.For(len(h), checkGrain, 0, func(lo, hi int) {
		var mine *violation
		for i := lo; i < hi; i++ {
			if v := check(i, &h[i]); v != nil && (mine == nil || v.before(mine)) {
				mine = v
			}
		}
		if mine != nil {
			mu.Lock()
			if first == nil || mine.before(first) {
				first = mine
			}
			mu.Unlock()
		}
	})
	return first
}

// CheckHistory checks that the committed transactions of h, run serially
// in timestamp order from initial, are serializable in that order: no two
// update transactions share a timestamp, every update transaction's reads
// equal the state just before it, every read-only transaction's reads
// equal the state after all commits with a timestamp up to its snapshot
// (its TS), and the state at the end equals final (when final is not nil).
// Update transactions come before read-only ones of the same timestamp; of
// several violations it reports the one that order meets first. Each read
// is checked against its item's committed writes on its own, on all
// cores. Cost: O(N + R + A log(W/N)) for R records of A reads and W
// writes, plus a sort of the update transactions' timestamps.
func CheckHistory(initial []uint64, h []Record, final []uint64) error {
	x, upd, err := newWriteIndex(initial, h)
	if err != nil {
		return fmt.Errorf("stm history: %w", err)
	}
	if !slices.IsSortedFunc(upd, func(a, b stamp) int { return cmp.Compare(a.ts, b.ts) }) {
		slices.SortStableFunc(upd, func(a, b stamp) int { return cmp.Compare(a.ts, b.ts) })
	}
	var dup *violation
	for k := 1; k < len(upd); k++ {
		if upd[k].ts == upd[k-1].ts {
			dup = &violation{ts: upd[k].ts, rec: upd[k].rec,
				err: fmt.Errorf("stm history: two update transactions have timestamp %d", upd[k].ts)}
			break
		}
	}
	n := len(initial)
	v := firstViolation(h, func(i int, r *Record) *violation {
		if r.Aborted {
			return nil
		}
		for _, a := range r.Reads {
			if int(a.Item) >= n {
				return &violation{ts: r.TS, later: r.ReadOnly, rec: i,
					err: fmt.Errorf("stm history: transaction %d read item %d outside %d items", r.TS, a.Item, n)}
			}
			var want uint64
			what := "update transaction"
			if r.ReadOnly {
				want, what = x.at(a.Item, r.TS), "read-only transaction at snapshot"
			} else {
				want = x.before(a.Item, r.TS)
			}
			if a.Value != want {
				return &violation{ts: r.TS, later: r.ReadOnly, rec: i,
					err: fmt.Errorf("stm history: %s %d read item %d = %d, serial replay has %d", what, r.TS, a.Item, a.Value, want)}
			}
		}
		return nil
	})
	// A serial replay stops at the second transaction of a duplicated
	// timestamp, before its reads, or at an earlier violation.
	if dup != nil && (v == nil || !v.before(dup)) {
		v = dup
	}
	if v != nil {
		return v.err
	}
	if final != nil {
		if len(final) != n {
			return fmt.Errorf("stm history: final store has %d items, replay %d", len(final), n)
		}
		for i := range n {
			want := initial[i]
			if s, e := x.start[i], x.start[i+1]; e > s {
				want = x.w[e-1].value
			}
			if final[i] != want {
				return fmt.Errorf("stm history: final item %d = %d, serial replay gives %d", i, final[i], want)
			}
		}
	}
	return nil
}

// CheckOpacity checks that every attempt of h, committed or aborted, read
// values consistent with the one snapshot it started from: each read
// equals the item's value after all committed update transactions with a
// timestamp up to the attempt's snapshot. Of several violations it
// reports the one with the lowest snapshot. Cost: like CheckHistory's,
// on all cores.
func CheckOpacity(initial []uint64, h []Record) error {
	x, _, err := newWriteIndex(initial, h)
	if err != nil {
		return fmt.Errorf("stm opacity: %w", err)
	}
	n := len(initial)
	v := firstViolation(h, func(i int, r *Record) *violation {
		for _, a := range r.Reads {
			if int(a.Item) < n && x.at(a.Item, r.Snapshot) == a.Value {
				continue
			}
			status := "committed"
			if r.Aborted {
				status = "aborted (" + r.Cause.String() + ")"
			}
			want := "outside the store"
			if int(a.Item) < n {
				want = strconv.FormatUint(x.at(a.Item, r.Snapshot), 10)
			}
			return &violation{ts: r.Snapshot, rec: i,
				err: fmt.Errorf("stm opacity: %s attempt with snapshot %d read item %d = %d, the snapshot has %s",
					status, r.Snapshot, a.Item, a.Value, want)}
		}
		return nil
	})
	if v != nil {
		return v.err
	}
	return nil
}
