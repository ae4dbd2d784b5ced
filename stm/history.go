package stm

import (
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/warpkv/warpkv/internal/hugepages"
	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/prim"
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
// all cores, historyLines records a piece, and written in order, one
// batch of pieces while the next is formatted. Cost: a
// sort of the committed records' timestamps, then O(R) formatting divided
// among the cores, and the writes.
func WriteHistory(w io.Writer, h []Record) error {
	return writeHistory(w, h, 4*par.Workers(0))
}

// writeHistory is WriteHistory formatting batch pieces at once: the
// pieces of one batch are formatted on all cores while a goroutine
// writes the previous batch's, in order.
func writeHistory(w io.Writer, h []Record, batch int) error {
	order := committed(h)
	pieces := (len(order) + historyLines - 1) / historyLines
	batch = max(min(batch, pieces), 1)
	var bufs [2][][]byte // the batch being formatted and the one being written
	for i := range bufs {
		bufs[i] = make([][]byte, batch)
	}
	var wg sync.WaitGroup
	var werr error
	for b, first := 0, 0; first < pieces; b, first = b^1, first+batch {
		n := min(batch, pieces-first)
		fill := bufs[b][:n]
		par.For(n, 1, 0, func(lo, hi int) {
			for p := lo; p < hi; p++ {
				buf := fill[p][:0]
				from := (first + p) * historyLines
				for _, j := range order[from:min(from+historyLines, len(order))] {
					buf = h[j].AppendJSON(buf)
				}
				fill[p] = buf
			}
		})
		wg.Wait() // the previous batch is written
		if werr != nil {
			return werr
		}
		wg.Go(func() {
			for _, buf := range fill {
				if _, err := w.Write(buf); err != nil {
					werr = fmt.Errorf("stm: writing history: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	return werr
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
// of equal keys in h's order. It sorts (timestamp, index) pairs rather than
// the records (72 bytes each, with pointers, which a stable sort moves
// O(log R) times each; the package example's "warpkv stm run", 34M
// records, was once killed by a 30 s limit that way): the kept records'
// pairs are gathered on all cores, those whose flag is false first, each
// group in h's order, then sorted stably by timestamp with prim's parallel
// CPU radix sort (8-bit digits; passes in which every timestamp has the
// same digit are skipped). Cost: O(R) per executed pass, divided among
// the cores; memory of 16 bytes a kept record twice (the pairs and the
// sort's scratch) and of the 8-byte indices returned.
func sortedIndex(h []Record, key func(*Record) (uint64, bool), keep func(*Record) bool) []int {
	parts := par.Parts(len(h), sortGrain, 0)
	// counts[p] and counts[parts+p]: part p's kept records with the flag
	// false and true; scanned, where each part's first of each goes.
	counts := make([]int, 2*parts)
	par.Ranges(len(h), parts, func(p, lo, hi int) {
		plain, flagged := 0, 0
		for i := lo; i < hi; i++ {
			if keep != nil && !keep(&h[i]) {
				continue
			}
			if _, f := key(&h[i]); f {
				flagged++
			} else {
				plain++
			}
		}
		counts[p], counts[parts+p] = plain, flagged
	})
	n := 0
	for p, c := range counts {
		counts[p], n = n, n+c
	}
	ts := make([]uint64, n)
	idx := make([]uint64, n)
	hugepages.Advise(ts) // filled once: a fault per 2 MiB, not per 4 KiB
	hugepages.Advise(idx)
	par.Ranges(len(h), parts, func(p, lo, hi int) {
		next, nextFlagged := counts[p], counts[parts+p]
		for i := lo; i < hi; i++ {
			if keep != nil && !keep(&h[i]) {
				continue
			}
			k, f := key(&h[i])
			at := &next
			if f {
				at = &nextFlagged
			}
			ts[*at], idx[*at] = k, uint64(i)
			*at++
		}
	})
	// The sort is stable: records of one timestamp keep the order above,
	// the flag's, then h's.
	if err := prim.SortPairs(prim.NewCPU(0), ts, idx); err != nil {
		panic(err) // the lengths are equal, and the CPU engine does not fail
	}
	out := make([]int, n)
	hugepages.Advise(out)
	par.For(n, sortGrain, 0, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			out[j] = int(idx[j])
		}
	})
	return out
}

// sortGrain is the fewest records sortedIndex gives one core.
const sortGrain = 1 << 15
