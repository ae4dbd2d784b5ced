package stm

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/prim"
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
// over a store of len(initial) items, and, when withStamps, returns the
// update transactions' timestamps and records in timestamp order (records
// of one timestamp in h's order). It fails on a write outside the store,
// naming the one with the lowest timestamp. Every step runs on all cores: a pass
// counts each part's updates and writes, a second lays them out (writes
// in h's order, each with its item as a sort key), and a stable radix
// sort (prim.SortPairs) orders the writes by item and the timestamps;
// each item's writes are then in h's order, and sorted by timestamp
// where h did not have them so. Cost: O(N + R + W) for R records and W
// writes, plus O(W_item log W_item) for an item whose writes h holds out
// of timestamp order (the engines record them nearly in order).
func newWriteIndex(initial []uint64, h []Record, withStamps bool) (*writeIndex, []stamp, error) {
	type part struct {
		updates, writes int // counts, then where the part's first goes
		bad             int // the part's write outside the store of lowest timestamp (-1: none)
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
			pt.updates++
			for _, a := range r.Writes {
				if int(a.Item) < n {
					pt.writes++
				} else if pt.bad < 0 || r.TS < h[pt.bad].TS {
					pt.bad = i
				}
			}
		}
		parts[p] = pt
	})
	bad, updates, writes := -1, 0, 0
	for p := range parts {
		pt := &parts[p]
		if pt.bad >= 0 && (bad < 0 || h[pt.bad].TS < h[bad].TS) {
			bad = pt.bad
		}
		pt.updates, updates = updates, updates+pt.updates
		pt.writes, writes = writes, writes+pt.writes
	}
	if bad >= 0 {
		r := &h[bad]
		for _, a := range r.Writes {
			if int(a.Item) >= n {
				return nil, nil, fmt.Errorf("transaction %d wrote item %d outside %d items", r.TS, a.Item, n)
			}
		}
	}
	items := make([]uint32, writes) // sort keys: each write's item
	order := make([]uint64, writes) // sorted with them: each write's place in laid
	laid := make([]itemWrite, writes)
	var stampTS, stampRec []uint64
	if withStamps {
		stampTS, stampRec = make([]uint64, updates), make([]uint64, updates)
	}
	par.Ranges(len(h), nparts, func(p, lo, hi int) {
		u, w := parts[p].updates, parts[p].writes
		for i := lo; i < hi; i++ {
			r := &h[i]
			if r.Aborted || r.ReadOnly {
				continue
			}
			if withStamps {
				stampTS[u], stampRec[u] = r.TS, uint64(i)
				u++
			}
			for _, a := range r.Writes {
				if int(a.Item) < n {
					items[w], order[w], laid[w] = a.Item, uint64(w), itemWrite{r.TS, a.Value}
					w++
				}
			}
		}
	})
	cpu := prim.NewCPU(0)
	// Both sorts are stable and the CPU engine does not fail: the lengths
	// are equal.
	if err := errors.Join(prim.SortPairs(cpu, items, order), prim.SortPairs(cpu, stampTS, stampRec)); err != nil {
		panic(err)
	}
	x := &writeIndex{initial: initial, start: make([]int, n+1), w: make([]itemWrite, writes)}
	par.For(writes, checkGrain, 0, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			x.w[j] = laid[order[j]]
			// start[k] is the first write of an item at or above k: the
			// items from the previous write's (exclusive) to this one's
			// start here.
			from := 0
			if j > 0 {
				from = int(items[j-1]) + 1
			}
			for k := from; k <= int(items[j]); k++ {
				x.start[k] = j
			}
		}
	})
	last := 0 // items after the last write's start (and end) at writes
	if writes > 0 {
		last = int(items[writes-1]) + 1
	}
	for k := last; k <= n; k++ {
		x.start[k] = writes
	}
	par.For(n, 1<<14, 0, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			ws := x.w[x.start[i]:x.start[i+1]]
			if !slices.IsSortedFunc(ws, byTS) {
				slices.SortStableFunc(ws, byTS)
			}
		}
	})
	if !withStamps {
		return x, nil, nil
	}
	stamps := make([]stamp, updates)
	par.For(updates, checkGrain, 0, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			stamps[j] = stamp{stampTS[j], int(stampRec[j])}
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

// firstViolations runs check on every record of h, on all cores, and
// returns the k violations a serial replay meets first, one for each of
// check's k outputs (nil where none). check(i, r, v) sets v[j] to record
// i's violation of check j, or nil; v comes zeroed.
func firstViolations(h []Record, k int, check func(i int, r *Record, v []*violation)) []*violation {
	var mu sync.Mutex
	first := make([]*violation, k)
	par.For(len(h), checkGrain, 0, func(lo, hi int) {
		mine := make([]*violation, k)
		v := make([]*violation, k)
		for i := lo; i < hi; i++ {
			clear(v)
			check(i, &h[i], v)
			for j, v := range v {
				if v != nil && (mine[j] == nil || v.before(mine[j])) {
					mine[j] = v
				}
			}
		}
		mu.Lock()
		for j, v := range mine {
			if v != nil && (first[j] == nil || v.before(first[j])) {
				first[j] = v
			}
		}
		mu.Unlock()
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
	serial, _ := checkHistory(initial, h, final, false)
	return serial
}

// CheckOpacity checks that every attempt of h, committed or aborted, read
// values consistent with the one snapshot it started from: each read
// equals the item's value after all committed update transactions with a
// timestamp up to the attempt's snapshot. Of several violations it
// reports the one with the lowest snapshot. Cost: like CheckHistory's,
// on all cores.
func CheckOpacity(initial []uint64, h []Record) error {
	x, _, err := newWriteIndex(initial, h, false)
	if err != nil {
		return fmt.Errorf("stm opacity: %w", err)
	}
	if v := firstViolations(h, 1, func(i int, r *Record, v []*violation) { v[0] = x.opacityViolation(i, r) })[0]; v != nil {
		return v.err
	}
	return nil
}

// CheckHistoryAndOpacity returns what CheckHistory(initial, h, final) and
// CheckOpacity(initial, h) return, from one write index and one pass over
// h's reads: less work than the two calls, whose write indexes are the
// same. Cost: CheckHistory's.
func CheckHistoryAndOpacity(initial []uint64, h []Record, final []uint64) (serial, opacity error) {
	return checkHistory(initial, h, final, true)
}

// checkHistory is CheckHistory, with CheckOpacity's check in the same
// pass when opacity is set.
func checkHistory(initial []uint64, h []Record, final []uint64, opacity bool) (serialErr, opacityErr error) {
	x, upd, err := newWriteIndex(initial, h, true)
	if err != nil {
		if opacity {
			opacityErr = fmt.Errorf("stm opacity: %w", err)
		}
		return fmt.Errorf("stm history: %w", err), opacityErr
	}
	var v *violation
	if opacity {
		vs := firstViolations(h, 2, x.bothViolations)
		v = vs[0]
		if vs[1] != nil {
			opacityErr = vs[1].err
		}
	} else {
		v = firstViolations(h, 1, func(i int, r *Record, v []*violation) { v[0] = x.serialViolation(i, r) })[0]
	}
	for k := 1; k < len(upd); k++ {
		if upd[k].ts == upd[k-1].ts {
			dup := &violation{ts: upd[k].ts, rec: upd[k].rec,
				err: fmt.Errorf("stm history: two update transactions have timestamp %d", upd[k].ts)}
			// A serial replay stops at the second transaction of a
			// duplicated timestamp, before its reads, or at an earlier
			// violation.
			if v == nil || !v.before(dup) {
				v = dup
			}
			break
		}
	}
	if v != nil {
		return v.err, opacityErr
	}
	return x.checkFinal(final), opacityErr
}

// serialViolation checks record i's reads against a serial replay in
// timestamp order (CheckHistory's check).
func (x *writeIndex) serialViolation(i int, r *Record) *violation {
	if r.Aborted {
		return nil
	}
	n := len(x.initial)
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
}

// bothViolations sets v[0] to record i's serialViolation and v[1] to its
// opacityViolation, looking each read's value up once where the two
// checks ask for the same timestamp (a read-only transaction's snapshot
// is its TS; an update transaction's is usually TS-1).
func (x *writeIndex) bothViolations(i int, r *Record, v []*violation) {
	serTS := r.TS // the serial check's reads see the writes up to serTS
	if !r.ReadOnly {
		if r.TS == 0 {
			v[0], v[1] = x.serialViolation(i, r), x.opacityViolation(i, r)
			return
		}
		serTS = r.TS - 1
	}
	if r.Aborted || serTS != r.Snapshot {
		v[0], v[1] = x.serialViolation(i, r), x.opacityViolation(i, r)
		return
	}
	n := len(x.initial)
	for _, a := range r.Reads {
		if int(a.Item) >= n || x.at(a.Item, serTS) != a.Value {
			// The first bad read is both checks' first: each reports it
			// in its own words.
			v[0], v[1] = x.serialViolation(i, r), x.opacityViolation(i, r)
			return
		}
	}
}

// opacityViolation checks record i's reads against its snapshot
// (CheckOpacity's check).
func (x *writeIndex) opacityViolation(i int, r *Record) *violation {
	n := len(x.initial)
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
}

// checkFinal checks the state after every committed write against final
// (nothing when final is nil).
func (x *writeIndex) checkFinal(final []uint64) error {
	if final == nil {
		return nil
	}
	n := len(x.initial)
	if len(final) != n {
		return fmt.Errorf("stm history: final store has %d items, replay %d", len(final), n)
	}
	for i := range n {
		want := x.initial[i]
		if s, e := x.start[i], x.start[i+1]; e > s {
			want = x.w[e-1].value
		}
		if final[i] != want {
			return fmt.Errorf("stm history: final item %d = %d, serial replay gives %d", i, final[i], want)
		}
	}
	return nil
}
