package stm

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// randomValidHistory runs n transactions serially on a store of items
// items and records them the way the engines do: update transactions
// with consecutive timestamps that read the state before them, read-only
// ones and aborted attempts that read one earlier snapshot. The records
// are shuffled when shuffle is set (a history's order is not its
// timestamps').
func randomValidHistory(rng *rand.Rand, items, n int, shuffle bool) (initial, final []uint64, h []Record) {
	initial = make([]uint64, items)
	for i := range initial {
		initial[i] = rng.Uint64N(100)
	}
	states := [][]uint64{slices.Clone(initial)} // states[ts]: after the update of timestamp ts
	for range n {
		ts := uint64(len(states) - 1)
		switch k := rng.IntN(10); {
		case k < 5: // an update transaction
			cur := slices.Clone(states[ts])
			r := Record{TS: ts + 1, Snapshot: rng.Uint64N(ts + 1)}
			for range rng.IntN(4) {
				it := uint32(rng.IntN(items))
				r.Reads = append(r.Reads, Access{it, cur[it]})
			}
			for range 1 + rng.IntN(3) {
				it := uint32(rng.IntN(items))
				if slices.ContainsFunc(r.Writes, func(a Access) bool { return a.Item == it }) {
					continue
				}
				v := rng.Uint64N(1000)
				cur[it] = v
				r.Writes = append(r.Writes, Access{it, v})
			}
			r.Snapshot = ts // the reads came from the state before it
			states = append(states, cur)
			h = append(h, r)
		default: // read-only, or aborted
			snap := rng.Uint64N(ts + 1)
			r := Record{TS: snap, Snapshot: snap, ReadOnly: k < 8, Aborted: k >= 8}
			if r.Aborted {
				r.Cause = ReadWrite
			}
			for range 1 + rng.IntN(5) {
				it := uint32(rng.IntN(items))
				r.Reads = append(r.Reads, Access{it, states[snap][it]})
			}
			h = append(h, r)
		}
	}
	if shuffle {
		rng.Shuffle(len(h), func(i, j int) { h[i], h[j] = h[j], h[i] })
	}
	return initial, states[len(states)-1], h
}

// TestChecksAgreeWithSerialReplay runs CheckHistory and CheckOpacity and
// their serial forms on valid histories and on histories with one
// violation each: both must accept the same ones and report the same
// first violation.
func TestChecksAgreeWithSerialReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	pick := func(h []Record, ok func(*Record) bool) int {
		var idx []int
		for i := range h {
			if ok(&h[i]) {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			return -1
		}
		return idx[rng.IntN(len(idx))]
	}
	mutations := []struct {
		name  string
		apply func(h []Record, items int) bool
	}{
		{"none", func([]Record, int) bool { return true }},
		{"a read changed", func(h []Record, _ int) bool {
			i := pick(h, func(r *Record) bool { return len(r.Reads) > 0 })
			if i < 0 {
				return false
			}
			h[i].Reads = slices.Clone(h[i].Reads)
			h[i].Reads[rng.IntN(len(h[i].Reads))].Value++
			return true
		}},
		{"a timestamp shared", func(h []Record, _ int) bool {
			i := pick(h, func(r *Record) bool { return !r.ReadOnly && !r.Aborted })
			j := pick(h, func(r *Record) bool { return !r.ReadOnly && !r.Aborted })
			if i < 0 || i == j {
				return false
			}
			h[j].TS = h[i].TS
			return true
		}},
		{"a read-only snapshot moved", func(h []Record, _ int) bool {
			i := pick(h, func(r *Record) bool { return r.ReadOnly })
			if i < 0 {
				return false
			}
			h[i].TS += 1 + rng.Uint64N(3)
			h[i].Snapshot = h[i].TS
			return true
		}},
		{"a read-only timestamp apart from its snapshot", func(h []Record, _ int) bool {
			i := pick(h, func(r *Record) bool { return r.ReadOnly })
			if i < 0 {
				return false
			}
			h[i].TS += 1 + rng.Uint64N(3) // the snapshot stays
			return true
		}},
		{"an update at timestamp 0", func(h []Record, _ int) bool {
			i := pick(h, func(r *Record) bool { return !r.ReadOnly && !r.Aborted })
			if i < 0 {
				return false
			}
			h[i].TS = 0
			return true
		}},
		{"an update's timestamp moved", func(h []Record, _ int) bool {
			i := pick(h, func(r *Record) bool { return !r.ReadOnly && !r.Aborted })
			if i < 0 {
				return false
			}
			h[i].TS += 1000
			return true
		}},
		{"an aborted attempt's snapshot moved", func(h []Record, _ int) bool {
			i := pick(h, func(r *Record) bool { return r.Aborted })
			if i < 0 {
				return false
			}
			h[i].Snapshot++
			return true
		}},
		{"a read outside the store", func(h []Record, items int) bool {
			i := pick(h, func(r *Record) bool { return len(r.Reads) > 0 })
			if i < 0 {
				return false
			}
			h[i].Reads = slices.Clone(h[i].Reads)
			h[i].Reads[0].Item = uint32(items + rng.IntN(3))
			return true
		}},
	}
	failed := map[string]int{}
	type shape struct{ items, records, runs int }
	// Short histories, and some long enough to be read in parts on every
	// core (par.Parts of checkGrain records).
	for _, sh := range []shape{{1, 300, 40}, {3, 300, 40}, {40, 300, 40}, {40, 3*checkGrain + 17, 2}} {
		items := sh.items
		for _, shuffle := range []bool{false, true} {
			for _, m := range mutations {
				for run := range sh.runs {
					name := fmt.Sprintf("%d items/shuffled %v/%s/%d", items, shuffle, m.name, run)
					n := 1 + rng.IntN(sh.records)
					if sh.records > checkGrain {
						n = sh.records
					}
					initial, final, h := randomValidHistory(rng, items, n, shuffle)
					if !m.apply(h, items) {
						continue
					}
					for _, fin := range [][]uint64{nil, final} {
						got, want := CheckHistory(initial, h, fin), serialCheckHistory(initial, h, fin)
						if fmt.Sprint(got) != fmt.Sprint(want) {
							t.Fatalf("%s: CheckHistory (final %v): %v, serial replay: %v", name, fin != nil, got, want)
						}
						wantOp := serialCheckOpacity(initial, h)
						if ser, op := CheckHistoryAndOpacity(initial, h, fin); fmt.Sprint(ser) != fmt.Sprint(want) || fmt.Sprint(op) != fmt.Sprint(wantOp) {
							t.Fatalf("%s: CheckHistoryAndOpacity (final %v): %v, %v; serial: %v, %v", name, fin != nil, ser, op, want, wantOp)
						}
					}
					if got, want := CheckOpacity(initial, h), serialCheckOpacity(initial, h); fmt.Sprint(got) != fmt.Sprint(want) {
						t.Fatalf("%s: CheckOpacity: %v, serial: %v", name, got, want)
					}
					if CheckHistory(initial, h, final) != nil || CheckOpacity(initial, h) != nil {
						failed[m.name]++
					}
					if m.name == "none" {
						if err := CheckHistory(initial, h, final); err != nil {
							t.Fatalf("%s: a valid history failed: %v", name, err)
						}
					}
				}
			}
		}
	}
	for _, m := range mutations[1:] {
		if failed[m.name] == 0 {
			t.Errorf("no history with %s failed a check: the mutation tests nothing", m.name)
		}
	}
	t.Logf("histories failing a check, by mutation: %v", failed)
}

// TestChecksNameAWriteOutsideTheStore: a committed write past the store
// fails both checks with the item named (the serial replay indexed past
// its state).
func TestChecksNameAWriteOutsideTheStore(t *testing.T) {
	h := []Record{{TS: 1, Writes: []Access{{Item: 0, Value: 1}}}, {TS: 2, Writes: []Access{{Item: 9, Value: 1}}}}
	ser, op := CheckHistoryAndOpacity([]uint64{0, 0}, h, nil)
	for _, err := range []error{CheckHistory([]uint64{0, 0}, h, nil), CheckOpacity([]uint64{0, 0}, h), ser, op} {
		if err == nil || !strings.Contains(err.Error(), "transaction 2 wrote item 9 outside 2 items") {
			t.Errorf("error %v, want one naming transaction 2's write of item 9", err)
		}
	}
}

// BenchmarkChecks checks a valid history of 1M records over 64K items,
// shaped like the documented CUDA body's (90% read-only sums of 8).
func BenchmarkChecks(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	const items = 1 << 16
	initial := make([]uint64, items)
	cur := slices.Clone(initial)
	h := make([]Record, 0, 1<<20)
	var ts uint64
	for len(h) < cap(h) {
		if rng.IntN(10) == 0 {
			a, c := uint32(rng.IntN(items)), uint32(rng.IntN(items))
			if a == c {
				continue
			}
			r := Record{TS: ts + 1, Snapshot: ts, Reads: []Access{{a, cur[a]}, {c, cur[c]}}}
			cur[a]--
			cur[c]++
			r.Writes = []Access{{a, cur[a]}, {c, cur[c]}}
			ts++
			h = append(h, r)
			continue
		}
		base := uint32(rng.IntN(items/8)) * 8
		r := Record{TS: ts, Snapshot: ts, ReadOnly: true, Reads: make([]Access, 8)}
		for j := range r.Reads {
			r.Reads[j] = Access{base + uint32(j), cur[base+uint32(j)]}
		}
		h = append(h, r)
	}
	// near is h as the GPU engine records it: each record up to 256
	// places from its timestamp's.
	near := slices.Clone(h)
	for i := range near {
		j := min(len(near)-1, i+rng.IntN(256))
		near[i], near[j] = near[j], near[i]
	}
	for _, c := range []struct {
		name  string
		check func() error
	}{
		{"history", func() error { return CheckHistory(initial, h, cur) }},
		{"opacity", func() error { return CheckOpacity(initial, h) }},
		{"history and opacity side by side", func() error {
			var ser, op error
			var wg sync.WaitGroup
			wg.Go(func() { ser = CheckHistory(initial, h, cur) })
			wg.Go(func() { op = CheckOpacity(initial, h) })
			wg.Wait()
			return errors.Join(ser, op)
		}},
		{"history and opacity in one pass", func() error { return errors.Join(CheckHistoryAndOpacity(initial, h, cur)) }},
		{"history and opacity in one pass, records nearly in order", func() error { return errors.Join(CheckHistoryAndOpacity(initial, near, cur)) }},
		{"serial history", func() error { return serialCheckHistory(initial, h, cur) }},
		{"serial opacity", func() error { return serialCheckOpacity(initial, h) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := c.check(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// serialCheckHistory is the serial replay CheckHistory was until
// 2026-11-30, kept as the reference of its differential test: it replays the committed transactions of h serially in
// timestamp order from initial and checks that the history is serializable
// in that order: no two update transactions share a timestamp, every update
// transaction's reads equal the state just before it, every read-only
// transaction's reads equal the state after all commits with a timestamp up
// to its snapshot, and the state at the end equals final (when final is not
// nil). Cost: O(N + total accesses + R log R) for R records.
func serialCheckHistory(initial []uint64, h []Record, final []uint64) error {
	state := slices.Clone(initial)
	var last uint64
	seen := false
	for _, j := range committed(h) {
		r := &h[j]
		if !r.ReadOnly {
			if seen && r.TS == last {
				return fmt.Errorf("stm history: two update transactions have timestamp %d", r.TS)
			}
			last, seen = r.TS, true
		}
		for _, a := range r.Reads {
			if int(a.Item) >= len(state) {
				return fmt.Errorf("stm history: transaction %d read item %d outside %d items", r.TS, a.Item, len(state))
			}
			if state[a.Item] != a.Value {
				what := "update transaction"
				if r.ReadOnly {
					what = "read-only transaction at snapshot"
				}
				return fmt.Errorf("stm history: %s %d read item %d = %d, serial replay has %d", what, r.TS, a.Item, a.Value, state[a.Item])
			}
		}
		for _, a := range r.Writes {
			if int(a.Item) >= len(state) {
				return fmt.Errorf("stm history: transaction %d wrote item %d outside %d items", r.TS, a.Item, len(state))
			}
			state[a.Item] = a.Value
		}
	}
	if final != nil {
		if len(final) != len(state) {
			return fmt.Errorf("stm history: final store has %d items, replay %d", len(final), len(state))
		}
		for i := range state {
			if state[i] != final[i] {
				return fmt.Errorf("stm history: final item %d = %d, serial replay gives %d", i, final[i], state[i])
			}
		}
	}
	return nil
}

// serialCheckOpacity is the serial form of CheckOpacity, the reference
// of its differential test: it checks that every attempt of h, committed or aborted, read
// values consistent with the one snapshot it started from: each read
// equals the item's value after all committed update transactions with a
// timestamp up to the attempt's snapshot. Cost: like CheckHistory.
func serialCheckOpacity(initial []uint64, h []Record) error {
	updates := sortedIndex(h, func(r *Record) (uint64, bool) { return r.TS, false }, func(r *Record) bool { return !r.Aborted && !r.ReadOnly })
	attempts := sortedIndex(h, func(r *Record) (uint64, bool) { return r.Snapshot, false }, nil)
	state := slices.Clone(initial)
	u := 0
	for _, j := range attempts {
		r := &h[j]
		for u < len(updates) && h[updates[u]].TS <= r.Snapshot {
			for _, a := range h[updates[u]].Writes {
				state[a.Item] = a.Value
			}
			u++
		}
		for _, a := range r.Reads {
			if int(a.Item) >= len(state) || state[a.Item] != a.Value {
				status := "committed"
				if r.Aborted {
					status = "aborted (" + r.Cause.String() + ")"
				}
				want := "outside the store"
				if int(a.Item) < len(state) {
					want = strconv.FormatUint(state[a.Item], 10)
				}
				return fmt.Errorf("stm opacity: %s attempt with snapshot %d read item %d = %d, the snapshot has %s",
					status, r.Snapshot, a.Item, a.Value, want)
			}
		}
	}
	return nil
}
