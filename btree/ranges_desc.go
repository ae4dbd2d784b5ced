package btree

import (
	"fmt"

	"github.com/warpkv/warpkv/engine"
)

// RangesDesc is Ranges in descending key order: query i's pairs are those
// with los[i] <= key < his[i] (the same half-open range), the largest
// first, at most limit of them (limit <= 0: no limit), so that a limit
// keeps the largest keys of the range. Query i's pairs are
// keys[offsets[i]:offsets[i+1]]. Cost: on the CPU engine as Ranges (one
// walk per query for the first pairs of each chunk of queries, two for
// the rest), each from the leaf of its upper bound along the leaf chain's
// prev links, over the workers; on the GPU engine as Ranges (the same
// kernels, chunks and pipeline, walking the prev links): one descent per
// query, a scan of the counts, a warp per query copying its pairs, and
// the transfers of the bounds and the answers.
func (t *Tree) RangesDesc(los, his []uint64, limit int) (keys, values []uint64, offsets []int, err error) {
	r, err := t.RangesDescInto(nil, los, his, limit)
	if err != nil {
		return nil, nil, nil, err
	}
	return r.Keys, r.Values, r.Offsets, nil
}

// RangesDescInto is RangesDesc answering into r (nil: a new Result), which
// it returns, reusing its arrays as RangesInto does.
func (t *Tree) RangesDescInto(r *Result, los, his []uint64, limit int) (*Result, error) {
	return t.rangesInto("ranges desc", r, los, his, limit, true)
}

// rangesInto runs a batch of half-open range queries for op into r,
// ascending or, with desc, descending.
func (t *Tree) rangesInto(op string, r *Result, los, his []uint64, limit int, desc bool) (*Result, error) {
	if len(los) != len(his) {
		return nil, fmt.Errorf("btree: %s: %d lows but %d highs", op, len(los), len(his))
	}
	if _, err := engine.RLock(&t.Facade, op); err != nil {
		return nil, err
	}
	defer engine.RUnlock(&t.Facade)
	if t.e.state().root == nilNode || len(los) == 0 {
		r, err := sizeResult(r, len(los), 0)
		if err != nil {
			return nil, fmt.Errorf("btree: %s: %w", op, err)
		}
		clear(r.Offsets)
		return r, nil
	}
	var tm engine.Timings
	var err error
	if desc {
		r, tm, err = t.e.rangesDesc(r, los, his, limit)
	} else {
		r, tm, err = t.e.ranges(r, los, his, limit)
	}
	if err != nil {
		return nil, fmt.Errorf("btree: %s: %w", op, err)
	}
	engine.Record(&t.Facade, tm)
	return r, nil
}

// walkDesc calls fn on the pairs with lo <= key <= hi in descending key
// order, at most limit of them (limit <= 0: no limit): from the leaf of hi
// (the first whose max key is at least hi, else the last) along the leaf
// chain's prev links. Cost: O(height * log order + pairs + leaves).
func (t *cpuTree) walkDesc(lo, hi uint64, limit int, fn func(k, v uint64)) {
	if t.root == nilNode || lo > hi {
		return
	}
	s := &t.st
	leaf := t.findLeaf(hi)
	c := s.count(leaf)
	keys := s.keys(leaf)[:c]
	e := lowerBound(keys, hi) // entries [0, e) of the leaf are <= hi
	if e < c && keys[e] == hi {
		e++
	}
	n := 0
	for leaf != nilNode {
		keys, slots := s.keys(leaf), s.slots(leaf)
		for ; e > 0; e-- {
			if keys[e-1] < lo || (limit > 0 && n == limit) {
				return
			}
			fn(keys[e-1], slots[e-1])
			n++
		}
		if leaf = s.prev(leaf); leaf != nilNode {
			e = s.count(leaf)
		}
	}
}
