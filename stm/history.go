package stm

import (
	"fmt"
	"io"
	"strconv"

	"github.com/warpkv/warpkv/internal/par"
)

// Access is one item read or written, with the value read or written.
type Access struct {
	Item  uint32
	Value uint64
}

// Record is one transaction attempt of a history.
type Record struct {
	// TS is the commit timestamp of a committed update transaction, else
	// the snapshot.
	TS uint64
	// Snapshot is the timestamp of the state the reads came from.
	Snapshot uint64
	ReadOnly bool
	Aborted  bool
	Cause    Cause // why, when Aborted
	// Reads are the reads served from the store (not from the
	// transaction's own writes), in order; Writes the items written with
	// their final values.
	Reads, Writes []Access
}

// AppendJSON appends the record as one line of the history format of
// "warpkv stm bank --history": {"ts": T, "reads": [[ITEM, VALUE], ...],
// "writes": [[ITEM, VALUE], ...]} for an update transaction,
// {"ts": S, "ro": true, "reads": [...]} for a read-only one.
func (r Record) AppendJSON(b []byte) []byte {
	b = append(b, `{"ts": `...)
	b = strconv.AppendUint(b, r.TS, 10)
	if r.ReadOnly {
		b = append(b, `, "ro": true`...)
	}
	b = append(b, `, "reads": `...)
	b = appendAccesses(b, r.Reads)
	if !r.ReadOnly {
		b = append(b, `, "writes": `...)
		b = appendAccesses(b, r.Writes)
	}
	return append(b, "}\n"...)
}

func appendAccesses(b []byte, as []Access) []byte {
	b = append(b, '[')
	for i, a := range as {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, '[')
		b = strconv.AppendUint(b, uint64(a.Item), 10)
		b = append(b, ", "...)
		b = strconv.AppendUint(b, a.Value, 10)
		b = append(b, ']')
	}
	return append(b, ']')
}

// WriteHistory writes the committed records of h, one JSON object a line,
// in timestamp order (update transactions before read-only ones of the
// same timestamp). Aborted records are skipped. The lines are formatted on
// all cores, historyLines records a piece, and written in order. Cost: a
// sort of the committed records' timestamps, then O(R) formatting divided
// among the cores, and the writes.
func WriteHistory(w io.Writer, h []Record) error {
	order := committed(h)
	pieces := (len(order) + historyLines - 1) / historyLines
	batch := 4 * par.Workers(0) // pieces formatted at once
	bufs := make([][]byte, min(batch, pieces))
	for first := 0; first < pieces; first += batch {
		n := min(batch, pieces-first)
		par.For(n, 1, 0, func(lo, hi int) {
			for p := lo; p < hi; p++ {
				b := bufs[p][:0]
				from := (first + p) * historyLines
				for _, j := range order[from:min(from+historyLines, len(order))] {
					b = h[j].AppendJSON(b)
				}
				bufs[p] = b
			}
		})
		for _, b := range bufs[:n] {
			if _, err := w.Write(b); err != nil {
				return fmt.Errorf("stm: writing history: %w", err)
			}
		}
	}
	return nil
}

// historyLines is how many records WriteHistory formats as one piece.
const historyLines = 1 << 13

// committed returns the indices of the committed records of h sorted by
// timestamp, update transactions before read-only ones of the same
// timestamp, records of equal order in h's order.
func committed(h []Record) []int {
	return sortedIndex(h, func(r *Record) (uint64, bool) { return r.TS, r.ReadOnly }, func(r *Record) bool { return !r.Aborted })
}

// sortedIndex returns the indices of the records of h that keep accepts
// (nil: all), ordered by key (a timestamp, then false before true), records
// of equal keys in h's order. It sorts (timestamp, index) pairs of 16 bytes
// rather than the records (72 bytes each, with pointers, which a stable
// sort moves O(log R) times each: the package example's "warpkv stm run",
// 34M records, was killed by a 30 s limit during its checks on the H200
// host that way; this way the two checks of then, side by side, took
// 5.9 s; the checks no longer sort (historycheck.go), WriteHistory does):
// a stable partition by the flag, then a least-significant-digit
// radix sort of the timestamps, 8 bits a pass, as many passes as the
// largest timestamp has digits (4 below 2^32). At 3.4M records, on a
// shared 2-core build machine, it took 0.64 s against 2.47 s for
// slices.SortFunc of the pairs and 1.13 s with 16-bit digits (whose
// scatter misses the caches). Cost: O(R) per pass; memory of 16-byte
// pairs, a record's twice (the pairs and the passes' scratch) and the
// flagged ones' once more while partitioning, and of the 8-byte indices
// returned.
func sortedIndex(h []Record, key func(*Record) (uint64, bool), keep func(*Record) bool) []int {
	type pair struct {
		k uint64 // the timestamp
		i int    // the record
	}
	var ps, flagged []pair
	var all uint64 // every key's bits
	for i := range h {
		if keep != nil && !keep(&h[i]) {
			continue
		}
		k, f := key(&h[i])
		all |= k
		if f {
			flagged = append(flagged, pair{k, i})
		} else {
			ps = append(ps, pair{k, i})
		}
	}
	ps = append(ps, flagged...)
	// Each pass is stable, so keys that tie keep the order before it:
	// the flag's, then h's.
	tmp := make([]pair, len(ps))
	count := make([]int, 1<<8)
	for shift := 0; shift < 64 && all>>shift != 0; shift += 8 {
		clear(count)
		for _, p := range ps {
			count[p.k>>shift&0xff]++
		}
		sum := 0
		for d, c := range count {
			count[d], sum = sum, sum+c
		}
		for _, p := range ps {
			d := p.k >> shift & 0xff
			tmp[count[d]] = p
			count[d]++
		}
		ps, tmp = tmp, ps
	}
	out := make([]int, len(ps))
	for j, p := range ps {
		out[j] = p.i
	}
	return out
}
