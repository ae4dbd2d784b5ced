package btree

import (
	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/par"
)

// lookup fills values and found for the keys of a non-empty tree, one
// search per key over the workers.
func (t *cpuTree) lookup(keys, values []uint64, found []bool) (engine.Timings, error) {
	c := startHostClock()
	s := &t.st
	par.For(len(keys), keyGrain, t.opt.workers, func(lo, hi int) {
		var leaves [lookupGroup]uint32
		for g := lo; g < hi; g += lookupGroup {
			ks := keys[g:min(g+lookupGroup, hi)]
			t.findLeaves(ks, leaves[:len(ks)])
			for j, k := range ks {
				i, leaf := g+j, leaves[j]
				c := s.count(leaf)
				lk := s.keys(leaf)[:c]
				values[i], found[i] = 0, false
				if x := lowerBound(lk, k); x < c && lk[x] == k {
					values[i], found[i] = s.slots(leaf)[x], true
				}
			}
		}
	})
	return finishHostClock(c, "lookup", len(keys)), nil
}

// lookupGroup is the lookups a worker descends together, a level at a
// time, so that the memory reads of their nodes overlap.
const lookupGroup = 16

// findLeaves sets leaves[j] to the leaf that holds (or would hold)
// keys[j]: findLeaf for a group of keys, descended together one level at
// a time (every leaf is at the same depth), so that the group's node reads
// at a level are independent of each other and overlap in memory.
func (t *cpuTree) findLeaves(keys []uint64, leaves []uint32) {
	s := &t.st
	for j := range keys {
		leaves[j] = t.root
	}
	if len(keys) == 0 {
		return
	}
	for s.kind(leaves[0]) == kindInternal {
		for j, k := range keys {
			leaves[j] = t.child(leaves[j], k)
		}
	}
}
