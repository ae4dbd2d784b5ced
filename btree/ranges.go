package btree

import (
	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/par"

	"github.com/warpkv/warpkv/prim"
)

// rangeOf returns the pairs with lo <= key <= hi in key order, at most
// limit of them, walking the leaf chain.
func (t *cpuTree) rangeOf(lo, hi uint64, limit int) (keys, values []uint64, err error) {
	t.walk(lo, hi, limit, func(k, v uint64) {
		keys, values = append(keys, k), append(values, v)
	})
	return keys, values, nil
}

// Shape of the CPU engine's ranges: a worker answers rangeChunk queries at
// a time and keeps the pairs of its first queries, up to about
// rangeChunkPairs, from their one walk; the chunk's later queries are only
// counted then and walked again to be written.
const (
	rangeChunk      = 256
	rangeChunkPairs = 8192
)

// ranges answers the half-open range queries into into (nil: a new
// Result) over the workers, a chunk of queries at a time: one walk per
// query counts its pairs and keeps them (while the chunk's kept pairs are
// few), a scan of the counts places them, then each chunk copies its kept
// pairs into place and walks its other queries again to write theirs.
// Cost: one walk per query with answers of about rangeChunkPairs per
// rangeChunk queries or less, two for the others; a copy of the kept
// pairs.
func (t *cpuTree) ranges(into *Result, los, his []uint64, limit int) (*Result, engine.Timings, error) {
	return t.rangesDir(into, los, his, limit, false)
}

// rangesDesc is ranges in descending key order (Tree.RangesDescInto):
// each query's walk starts at the leaf of its upper bound and follows the
// leaf chain's prev links. Cost: as ranges.
func (t *cpuTree) rangesDesc(into *Result, los, his []uint64, limit int) (*Result, engine.Timings, error) {
	return t.rangesDir(into, los, his, limit, true)
}

// rangesDir is ranges, or rangesDesc with desc.
func (t *cpuTree) rangesDir(into *Result, los, his []uint64, limit int, desc bool) (*Result, engine.Timings, error) {
	c := startHostClock()
	q := len(los)
	var tm engine.Timings
	counts := make([]uint64, q+1)
	chunks := (q + rangeChunk - 1) / rangeChunk
	kept := make([][]uint64, chunks) // a chunk's kept pairs, key and value interleaved
	keptQ := make([]int, chunks)     // how many of its first queries they answer
	par.For(chunks, 1, t.opt.workers, func(a, b int) {
		for ch := a; ch < b; ch++ {
			kept[ch], keptQ[ch] = t.countRanges(los, his, limit, ch*rangeChunk, min(q, (ch+1)*rangeChunk), desc, counts)
		}
	})
	if err := prim.ScanExclusive(t.eng, counts, counts); err != nil {
		return nil, tm, err
	}
	r, err := sizeResult(into, q, int(counts[q]))
	if err != nil {
		return nil, tm, err
	}
	par.For(chunks, 1, t.opt.workers, func(a, b int) {
		for ch := a; ch < b; ch++ {
			lo, hi := ch*rangeChunk, min(q, (ch+1)*rangeChunk)
			w := counts[lo]
			for j := 0; j < len(kept[ch]); j += 2 {
				r.Keys[w], r.Values[w] = kept[ch][j], kept[ch][j+1]
				w++
			}
			for i := lo + keptQ[ch]; i < hi; i++ {
				w = counts[i]
				l, h := inclusive(los[i], his[i])
				t.walkDir(l, h, limit, desc, func(k, v uint64) {
					r.Keys[w], r.Values[w] = k, v
					w++
				})
			}
		}
	})
	for i, c := range counts {
		r.Offsets[i] = int(c)
	}
	return r, finishHostClock(c, "ranges", q), nil
}

// countRanges walks queries [lo, hi) once (in descending key order with
// desc), setting counts[i] to query i's pairs, and returns the pairs of
// its first queries (key and value interleaved), kept until they pass
// rangeChunkPairs, and how many queries they answer.
func (t *cpuTree) countRanges(los, his []uint64, limit, lo, hi int, desc bool, counts []uint64) (kept []uint64, keptQ int) {
	var starts [lookupGroup]uint64
	var leaves [lookupGroup]uint32
	for g := lo; g < hi; g += lookupGroup {
		m := min(lookupGroup, hi-g)
		if !desc {
			for j := range m {
				starts[j], _ = inclusive(los[g+j], his[g+j])
			}
			t.findLeaves(starts[:m], leaves[:m]) // the group's descents overlap
		}
		for j := range m {
			i := g + j
			var n uint64
			keep := len(kept) < 2*rangeChunkPairs
			if keep {
				keptQ = i + 1 - lo
			}
			fn := func(uint64, uint64) { n++ }
			if keep {
				fn = func(k, v uint64) { kept = append(kept, k, v); n++ }
			}
			switch l, h := inclusive(los[i], his[i]); {
			case l > h:
			case desc:
				t.walkDesc(l, h, limit, fn)
			default:
				t.walkFrom(leaves[j], l, h, limit, fn)
			}
			counts[i] = n
		}
	}
	return kept, keptQ
}

// walk calls fn on the pairs with lo <= key <= hi in key order, at most
// limit of them (limit <= 0: no limit), following the leaf chain. Cost: O(height * log order + pairs + leaves).
func (t *cpuTree) walk(lo, hi uint64, limit int, fn func(k, v uint64)) {
	if t.root == nilNode || lo > hi {
		return
	}
	t.walkFrom(t.findLeaf(lo), lo, hi, limit, fn)
}

// walkDir is walk, or walkDesc with desc.
func (t *cpuTree) walkDir(lo, hi uint64, limit int, desc bool, fn func(k, v uint64)) {
	if desc {
		t.walkDesc(lo, hi, limit, fn)
	} else {
		t.walk(lo, hi, limit, fn)
	}
}

// walkFrom is walk from leaf, the leaf findLeaf(lo) returns, on a
// non-empty tree with lo <= hi.
func (t *cpuTree) walkFrom(leaf uint32, lo, hi uint64, limit int, fn func(k, v uint64)) {
	s := &t.st
	c := s.count(leaf)
	j := lowerBound(s.keys(leaf)[:c], lo)
	n := 0
	for leaf != nilNode {
		keys, slots := s.keys(leaf)[:c], s.slots(leaf)[:c]
		for ; j < c; j++ {
			if keys[j] > hi || (limit > 0 && n == limit) {
				return
			}
			fn(keys[j], slots[j])
			n++
		}
		leaf = s.next(leaf)
		if leaf != nilNode {
			c, j = s.count(leaf), 0
		}
	}
}
