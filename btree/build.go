package btree

import (
	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/par"
)

// build replaces the contents with the pairs (unsorted, the last
// occurrence of a key wins): a radix sort of the batch, then buildSorted.
func (t *cpuTree) build(keys, values []uint64) (engine.Timings, error) {
	c := startHostClock()
	k, v, err := t.sortBatch(keys, values)
	if err != nil {
		return engine.Timings{}, err
	}
	c.Mark(nil, engine.MarkSorted)
	err = t.buildSorted(k, v)
	return finishHostClock(c, "build", len(keys)), err
}

// buildSorted replaces the contents with strictly increasing keys and their
// values. Leaf q of L = ceil(n/fill) leaves holds keys [share(n, L, q),
// share(n, L, q+1)): the closed-form key position -> (leaf, slot) map that
// the GPU engine evaluates one thread per key. Cost: O(n) over the workers.
func (t *cpuTree) buildSorted(k, v []uint64) error {
	t.clear()
	n := len(k)
	if n == 0 {
		return nil
	}
	s := &t.st
	L := (n + t.opt.fill - 1) / t.opt.fill
	first, err := s.grow(L)
	if err != nil {
		return err
	}
	ids := make([]uint32, L)
	maxes := make([]uint64, L)
	par.For(L, groupGrain*8, t.opt.workers, func(lo, hi int) {
		for q := lo; q < hi; q++ {
			a, b := share(n, L, q), share(n, L, q+1)
			id := first + uint32(q)
			copy(s.keys(id), k[a:b])
			copy(s.slots(id), v[a:b])
			s.setCount(id, b-a)
			s.setKind(id, kindLeaf)
			s.setParent(id, nilNode)
			s.setPrev(id, id-1)
			s.setNext(id, id+1)
			ids[q], maxes[q] = id, k[b-1]
		}
	})
	s.setPrev(first, nilNode)
	s.setNext(first+uint32(L-1), nilNode)
	root, err := t.buildUpper(ids, maxes)
	if err != nil {
		return err
	}
	t.root, t.n, t.leaves = root, n, L
	return nil
}

// buildUpper builds internal levels over the given nodes (in key order,
// with their max keys) until one node remains, and returns it with a nil
// parent. Each level uses the closed-form distribution of buildSorted; it
// is the leaf level's mirror there (child ids and max keys in place of keys
// and values, parents left to the next level) and stays a loop of its own
// rather than one loop with a level flag. Cost: O(len(ids)) over the workers.
func (t *cpuTree) buildUpper(ids []uint32, maxes []uint64) (uint32, error) {
	s := &t.st
	for len(ids) > 1 {
		n := len(ids)
		p := (n + t.opt.fill - 1) / t.opt.fill
		first, err := s.grow(p)
		if err != nil {
			return 0, err
		}
		upIDs := make([]uint32, p)
		upMax := make([]uint64, p)
		par.For(p, groupGrain*8, t.opt.workers, func(lo, hi int) {
			for q := lo; q < hi; q++ {
				a, b := share(n, p, q), share(n, p, q+1)
				id := first + uint32(q)
				copy(s.keys(id), maxes[a:b])
				sl := s.slots(id)
				for i := a; i < b; i++ {
					sl[i-a] = uint64(ids[i])
					s.setParent(ids[i], id)
				}
				s.setCount(id, b-a)
				s.setKind(id, kindInternal)
				s.setParent(id, nilNode)
				upIDs[q], upMax[q] = id, maxes[b-1]
			}
		})
		ids, maxes = upIDs, upMax
	}
	s.setParent(ids[0], nilNode)
	return ids[0], nil
}
