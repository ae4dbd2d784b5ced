package mpt

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// PhaseHC on the GPU engine (hash.cu) and the root hash read back after
// every batch.

// hash runs PhaseHC over the dirty list (marking, then computing: leaves
// one thread each, then the walks up one warp each), empties the list and
// reads the root hash back.
func (g *gpuTrie) hash() error {
	c, err := g.readCtl(ctlTouched, 1)
	if err != nil {
		return err
	}
	nt := int(c[0])
	if nt > 0 {
		starts, ns, err := g.dirtyStarts(nt)
		if err != nil {
			return err
		}
		next := gpu.Take[uint32](g.pool, bufList, nt)
		if err := g.setCtl(ctlNext, 0); err != nil {
			return err
		}
		if err := g.launch(g.k.hashLeaves, threads(ns), kernelBlock, g.nodes, g.vals, g.arena, starts, uint64(ns), g.root, next, g.ctl); err != nil {
			return err
		}
		c, err := g.readCtl(ctlNext, 1)
		if err != nil {
			return err
		}
		if nn := int(c[0]); nn > 0 {
			if err := g.launch(g.k.hash, warps(nn), warpBlock, g.nodes, g.vals, g.arena, next, uint64(nn), g.root); err != nil {
				return err
			}
		}
		if err := g.setCtl(ctlTouched, 0); err != nil {
			return err
		}
		g.times.Dirty = nt
	}
	return g.readRoot()
}

// readRoot reads the root node's record back after PhaseHC and caches its
// hash, after checking that the record is a canonical, hashed root: live,
// clean, without a parent, holding a 32-byte reference, and a branch with
// at least two entries, an extension with a path and a child, or a leaf
// with a value. A record that is not (a bug in a phase) is an error rather
// than a root hash: the cached hash is only ever one read from a checked
// record, and Hash derives EmptyRoot from an empty trie (root 0) instead
// of caching it. Cost: one 256-byte read and a synchronization.
func (g *gpuTrie) readRoot() error {
	if g.root == 0 {
		return g.s.Synchronize()
	}
	rec := make([]byte, nodeBytes)
	if err := errors.Join(g.nodes.Read(g.s, int(g.root)*nodeBytes, rec), g.s.Synchronize()); err != nil {
		return err
	}
	if err := checkRootRecord(rec); err != nil {
		return fmt.Errorf("mpt: gpu engine: root node %d after the batch: %w (a bug)", g.root, err)
	}
	copy(g.rootRef[:], rec[nodeRefOffset:nodeRefOffset+32])
	g.rootOK = true
	return nil
}

// checkRootRecord returns an error naming what makes the node record rec
// unfit as a hashed, canonical root.
func checkRootRecord(rec []byte) error {
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(rec[off:]) }
	kind, flags, reflen := u32(nodeKindOffset), u32(nodeFlagsOffset), u32(nodeReflenOffset)
	switch {
	case kind == kindFree:
		return errors.New("the node is free")
	case kind != kindBranch && kind != kindExt && kind != kindLeaf:
		return fmt.Errorf("kind %d", kind)
	case flags != 0:
		return fmt.Errorf("still flagged dirty (flags %#x)", flags)
	case u32(nodeParentOffset) != 0:
		return fmt.Errorf("parent %d", u32(nodeParentOffset))
	case reflen != 32:
		return fmt.Errorf("reference of %d bytes, not its hash", reflen)
	}
	switch kind {
	case kindBranch:
		entries := 0
		for s := 0; s < 16; s++ {
			if u32(nodeChildOffset+4*s) != 0 {
				entries++
			}
		}
		if u32(nodeValOffset) != 0 {
			entries++
		}
		if entries < 2 {
			return fmt.Errorf("a branch with %d entries", entries)
		}
	case kindExt:
		if u32(nodePlenOffset) == 0 || u32(nodeChildOffset) == 0 {
			return fmt.Errorf("an extension with a %d-nibble path and child %d", u32(nodePlenOffset), u32(nodeChildOffset))
		}
	case kindLeaf:
		if u32(nodeValOffset) == 0 {
			return errors.New("a leaf without value")
		}
	}
	return nil
}

// rootHash returns the root hash: EmptyRoot for an empty trie, else the
// hash readRoot read back and checked after the last batch, read again
// when a failed batch left none. Cost: O(1), or one read of the root
// record after a failed batch.
func (g *gpuTrie) rootHash() ([32]byte, error) {
	if g.root == 0 {
		return EmptyRoot, nil
	}
	if !g.rootOK {
		if err := g.readRoot(); err != nil {
			return [32]byte{}, err
		}
	}
	return g.rootRef, nil
}
