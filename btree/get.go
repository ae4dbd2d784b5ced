package btree

// Get looks up every key: values[i] is the value of keys[i] and found[i]
// whether it is in the tree (values[i] is 0 when not). On a closed tree
// nothing is found. Cost: O(len(keys) * height * log order) spread over the
// workers, one search per key.
func (t *Tree) Get(keys []uint64) (values []uint64, found []bool) {
	values = make([]uint64, len(keys))
	found = make([]bool, len(keys))
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.root == nilNode {
		return values, found
	}
	s := &t.st
	parallelFor(t.opt.workers, len(keys), keyGrain, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			leaf := t.findLeaf(keys[i])
			c := s.count(leaf)
			lk := s.keys(leaf)[:c]
			if j := lowerBound(lk, keys[i]); j < c && lk[j] == keys[i] {
				values[i], found[i] = s.slots(leaf)[j], true
			}
		}
	})
	return values, found
}
