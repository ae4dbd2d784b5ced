package mpt

// LockNU on the GPU engine (lock.cu).

// lockIDs is the number of node ids LockNU reserves per insert: a split
// creates at most a branch, a remainder short node and a leaf.
const lockIDs = 3

// lockApply runs LockNU on the kept operations (all inserts, into a
// non-empty trie), then resets the version words of the changed nodes.
func (g *gpuTrie) lockApply(o *opState) error {
	total := uint32(lockIDs * o.m)
	if err := g.reserveNodes(total); err != nil {
		return err
	}
	ids, err := g.allocIDs(total)
	if err != nil {
		return err
	}
	if err := g.setCtl(ctlRestarts, 0); err != nil {
		return err
	}
	if err := g.launch(g.k.lockInsert, threads(o.m), kernelBlock, g.nodes, o.sk.keys, uint32(o.sk.stride), o.ops, o.klen,
		o.vid, uint64(o.m), g.root, ids, g.touched, g.ctl); err != nil {
		return err
	}
	if err := g.reclaim(ids, total); err != nil {
		return err
	}
	c, err := g.readCtl(ctlTouched, ctlRestarts-ctlTouched+1)
	if err != nil {
		return err
	}
	g.times.Restarts = int(c[ctlRestarts-ctlTouched])
	if nt := int(c[0]); nt > 0 {
		return g.launch(g.k.resetVersions, threads(nt), kernelBlock, g.nodes, g.touched, uint64(nt))
	}
	return nil
}
