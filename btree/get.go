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
		for i := lo; i < hi; i++ {
			leaf := t.findLeaf(keys[i])
			c := s.count(leaf)
			lk := s.keys(leaf)[:c]
			values[i], found[i] = 0, false
			if j := lowerBound(lk, keys[i]); j < c && lk[j] == keys[i] {
				values[i], found[i] = s.slots(leaf)[j], true
			}
		}
	})
	return finishHostClock(c, "lookup", len(keys)), nil
}
