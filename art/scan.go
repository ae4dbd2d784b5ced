package art

import (
	"bytes"
	"iter"
)

// All returns the tree's pairs in ascending key order:
//
//	for k, v := range t.All() { ... }
//
// It is Scan(nil, nil).
func (t *Tree) All() iter.Seq2[[]byte, uint64] { return t.Scan(nil, nil) }

// ScanPrefix returns the pairs whose key starts with p, in ascending key
// order, read a page at a time as Scan does.
func (t *Tree) ScanPrefix(p []byte) iter.Seq2[[]byte, uint64] {
	if p == nil {
		p = []byte{}
	}
	return t.Scan(p, prefixEnd(p))
}

// Scan returns the pairs with lo <= key < hi in ascending key order (the
// half-open range of Range; hi nil means no upper bound). The sequence
// reads the tree a page at a time with range queries (64 pairs, doubling
// up to 16Ki; on the GPU engine each page is one query on the device),
// each under the read lock, so a batch may run between pages: a change
// shows in the later pages, and keys come out strictly ascending either
// way; a loop body may change the tree. The keys are the pages' own
// copies (the caller may keep them, must not modify them). A page that
// fails (the tree closed, a device error) ends the sequence early; Range
// returns such errors. Cost: a seek per page and O(1) amortized node steps
// per pair.
func (t *Tree) Scan(lo, hi []byte) iter.Seq2[[]byte, uint64] {
	return func(yield func([]byte, uint64) bool) {
		if len(lo) > MaxKeyLen {
			return // no key is that long, and every longer key is larger
		}
		bound := append([]byte{}, lo...)
		size := iterFirstPage
		for {
			page, err := t.Ranges([]Query{{Lo: bound, Hi: hi}}, size)
			if err != nil {
				return
			}
			n := len(page.Values)
			for i := range n {
				if !yield(page.Keys.At(i), page.Values[i]) {
					return
				}
			}
			if n < size {
				return
			}
			var ok bool
			if bound, ok = successorBound(page.Keys.At(n - 1)); !ok {
				return
			}
			if hi != nil && bytes.Compare(bound, hi) >= 0 {
				return
			}
			size = min(2*size, iterMaxPage)
		}
	}
}

// successorBound returns the smallest lower bound past key that excludes
// key itself: key+0x00, or, for a key of MaxKeyLen bytes (which no key
// extends), the end of its prefix; false when no key is larger.
func successorBound(key []byte) ([]byte, bool) {
	if len(key) < MaxKeyLen {
		return append(append([]byte{}, key...), 0), true
	}
	end := prefixEnd(key)
	return end, end != nil
}
