package hashindex

import "github.com/warpkv/warpkv/internal/par"

// DropReason says why Insert stopped indexing a location.
type DropReason uint8

// Drop reasons.
const (
	// Overwritten: the key was inserted again; Loc is its previous
	// location.
	Overwritten DropReason = 1
	// Displaced: the job's two buckets were full and MaxDisplacements
	// evictions found no free cell; Loc is the last evicted entry's
	// location (possibly the one the job inserted).
	Displaced DropReason = 2
)

func (r DropReason) String() string {
	switch r {
	case Overwritten:
		return "overwritten"
	case Displaced:
		return "displaced"
	}
	return "unknown"
}

// Dropped is a location the index no longer holds after an insert: the item
// store must free it.
type Dropped struct {
	Job    int        // index in the Insert batch of the job that dropped it
	Loc    uint32     // the location no longer indexed
	Reason DropReason // why
}

// Per-job insert results, as the engines and the insert kernel write them:
// result = reason<<32 | loc, reason 0 meaning the entry was placed without
// dropping anything (loc 0).
const resultPlaced = 0

// insertResult encodes one insert job's outcome.
func insertResult(reason DropReason, loc uint32) uint64 {
	return uint64(reason)<<32 | uint64(loc)
}

// DecodeInsertResults appends to dropped, in job order, the drops recorded
// in per-job insert results (as DevInsert writes them: reason<<32 | loc,
// 0 for a job that dropped nothing) and returns it with the number of
// overwrites and of displacement drops. Cost: one pass over results.
func DecodeInsertResults(results []uint64, dropped []Dropped) (_ []Dropped, overwrites, displaced int) {
	return decodeRange(results, 0, dropped)
}

// decodeRange is DecodeInsertResults for the results of jobs first,
// first+1, ...
func decodeRange(results []uint64, first int, dropped []Dropped) (_ []Dropped, overwrites, displaced int) {
	for j, r := range results {
		if r>>32 == resultPlaced {
			continue
		}
		reason := DropReason(r >> 32)
		if reason == Overwritten {
			overwrites++
		} else {
			displaced++
		}
		dropped = append(dropped, Dropped{Job: first + j, Loc: uint32(r), Reason: reason})
	}
	return dropped, overwrites, displaced
}

// decodeResults is decodeRange on up to workers goroutines, each taking at
// least hostParallelMin results; the drops stay in job order.
func decodeResults(results []uint64, first int, dropped []Dropped, workers int) (_ []Dropped, overwrites, displaced int) {
	n := len(results)
	w := min(workers, n/hostParallelMin)
	if w <= 1 {
		return decodeRange(results, first, dropped)
	}
	type part struct {
		drops      []Dropped
		over, disp int
	}
	parts := make([]part, w)
	par.Ranges(n, w, func(i, lo, hi int) {
		p := &parts[i]
		p.drops, p.over, p.disp = decodeRange(results[lo:hi], first+lo, nil)
	})
	for _, p := range parts {
		dropped = append(dropped, p.drops...)
		overwrites += p.over
		displaced += p.disp
	}
	return dropped, overwrites, displaced
}
