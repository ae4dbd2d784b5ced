package btree

import (
	"iter"
	"math"

	"github.com/warpkv/warpkv/engine"
)

// Page sizes of the iterators: the first page is small (a seek and a few
// keys are cheap), later ones double up to iterMaxPage.
const (
	iterFirstPage = 64
	iterMaxPage   = 1 << 14
)

// All returns the tree's pairs in ascending key order, math.MaxUint64
// included:
//
//	for k, v := range t.All() { ... }
//
// The sequence reads the tree a page at a time (64 pairs, doubling up to
// 16Ki), each page under the read lock, so a batch may run between pages:
// a change shows in the later pages, and keys come out strictly ascending
// either way; a loop body may change the tree. A page that fails (the tree
// closed, a device error) ends the sequence early; Range returns such
// errors. Cost: a seek per page and O(1) per pair (on the GPU engine one
// range query per page).
func (t *Tree) All() iter.Seq2[uint64, uint64] { return t.scan(0, math.MaxUint64) }

// Scan returns the pairs with lo <= key < hi in ascending key order (the
// half-open range of Range), read a page at a time as All is.
func (t *Tree) Scan(lo, hi uint64) iter.Seq2[uint64, uint64] {
	if lo >= hi {
		return func(func(uint64, uint64) bool) {}
	}
	return t.scan(lo, hi-1)
}

// scan yields the pairs with lo <= key <= last, a page at a time.
func (t *Tree) scan(lo, last uint64) iter.Seq2[uint64, uint64] {
	return func(yield func(uint64, uint64) bool) {
		size := iterFirstPage
		for {
			keys, vals, err := t.page(lo, last, size)
			if err != nil {
				return
			}
			for i, k := range keys {
				if !yield(k, vals[i]) {
					return
				}
			}
			if len(keys) < size || keys[len(keys)-1] == last {
				return
			}
			lo = keys[len(keys)-1] + 1
			size = min(2*size, iterMaxPage)
		}
	}
}

// page returns up to limit pairs with lo <= key <= last (inclusive bounds:
// the last page may end at math.MaxUint64).
func (t *Tree) page(lo, last uint64, limit int) (keys, vals []uint64, err error) {
	if _, err := engine.RLock(&t.Facade, "scan"); err != nil {
		return nil, nil, err
	}
	defer engine.RUnlock(&t.Facade)
	if t.e.state().root == nilNode {
		return nil, nil, nil
	}
	return t.e.rangeOf(lo, last, limit)
}
