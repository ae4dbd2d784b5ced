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
	ids, maxes, err := t.level(k, kindLeaf, func(id uint32, a, b int) {
		copy(s.slots(id), v[a:b])
		s.setPrev(id, id-1)
		s.setNext(id, id+1)
	})
	if err != nil {
		return err
	}
	L := len(ids)
	s.setPrev(ids[0], nilNode)
	s.setNext(ids[L-1], nilNode)
	root, err := t.buildUpper(ids, maxes)
	if err != nil {
		return err
	}
	t.root, t.n, t.leaves = root, n, L
	return nil
}

// buildUpper builds internal levels over the given nodes (in key order,
// with their max keys) until one node remains, and returns it with a nil
// parent. Each level is a level call over the children: their max keys
// as the keys, their ids as the slots. Cost: O(len(ids)) over the workers.
func (t *cpuTree) buildUpper(ids []uint32, maxes []uint64) (uint32, error) {
	s := &t.st
	for len(ids) > 1 {
		children := ids
		up, upMax, err := t.level(maxes, kindInternal, func(id uint32, a, b int) {
			sl := s.slots(id)
			for i, c := range children[a:b] {
				sl[i] = uint64(c)
				s.setParent(c, id)
			}
		})
		if err != nil {
			return 0, err
		}
		ids, maxes = up, upMax
	}
	s.setParent(ids[0], nilNode)
	return ids[0], nil
}

// level allocates the p = ceil(n/fill) contiguous nodes of one level over
// n = len(keys) entries in key order (a leaf level's keys, or an upper
// level's children's max keys) and gives node q the entries [share(n, p,
// q), share(n, p, q+1)), the distribution of buildSorted: it copies their
// keys and sets the node's count, kind and a nil parent, and fill writes
// what the kinds differ in (a leaf's values and chain links, an internal
// node's children and their parent links). It returns the nodes' ids and
// max keys, the entries of the level above. Cost: O(n) over the workers,
// fill called once per node.
func (t *cpuTree) level(keys []uint64, kind uint8, fill func(id uint32, a, b int)) ([]uint32, []uint64, error) {
	s := &t.st
	n := len(keys)
	p := (n + t.opt.fill - 1) / t.opt.fill
	first, err := s.grow(p)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]uint32, p)
	maxes := make([]uint64, p)
	par.For(p, groupGrain*8, t.opt.workers, func(lo, hi int) {
		for q := lo; q < hi; q++ {
			a, b := share(n, p, q), share(n, p, q+1)
			id := first + uint32(q)
			copy(s.keys(id), keys[a:b])
			s.setCount(id, b-a)
			s.setKind(id, kind)
			s.setParent(id, nilNode)
			fill(id, a, b)
			ids[q], maxes[q] = id, keys[b-1]
		}
	})
	return ids, maxes, nil
}
