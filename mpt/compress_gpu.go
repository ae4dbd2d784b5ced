package mpt

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// The dirty set and PhaseNU's compress (compress.cu).

// dirtyStarts makes sure the dirty list's buffers hold nt nodes, counts,
// for the nt listed nodes, their dirty children (parents' pending
// counters) and returns the start list: the listed live nodes without
// dirty children. The buffers were reserved with the node capacity, so
// the reservation here allocates only when that one failed (the batch is
// then being abandoned, and compress needs no more than the list holds).
func (g *gpuTrie) dirtyStarts(nt int) (*gpu.Buffer[uint32], int, error) {
	if err := g.pool.Reserve(dirtyNeeds(nt)...); err != nil {
		return nil, 0, fmt.Errorf("mpt: gpu engine: scratch for %d dirty nodes: %w", nt, err)
	}
	if err := g.launch(g.k.countPending, threads(nt), kernelBlock, g.nodes, g.touched, uint64(nt)); err != nil {
		return nil, 0, err
	}
	starts := gpu.Take[uint32](g.pool, bufStarts, nt)
	if err := g.setCtl(ctlStarts, 0); err != nil {
		return nil, 0, err
	}
	if err := g.launch(g.k.starts, threads(nt), kernelBlock, g.nodes, g.touched, uint64(nt), starts, g.ctl); err != nil {
		return nil, 0, err
	}
	c, err := g.readCtl(ctlStarts, 1)
	if err != nil {
		return nil, 0, err
	}
	return starts, int(c[0]), nil
}

// compress closes the dirty set under ancestors, puts every dirty node
// back into canonical form bottom-up, updates the root, and compacts the
// dirty list to its live nodes.
func (g *gpuTrie) compress() error {
	c, err := g.readCtl(ctlTouched, 1)
	if err != nil {
		return err
	}
	if c[0] == 0 {
		return nil
	}
	nt, err := g.markUp(int(c[0]))
	if err != nil {
		return err
	}
	starts, ns, err := g.dirtyStarts(nt)
	if err != nil {
		return err
	}
	if err := g.setCtl(ctlFreed, 0); err != nil {
		return err
	}
	if err := g.launch(g.k.compress, threads(ns), kernelBlock, g.nodes, starts, uint64(ns), g.freelist, g.nfree, g.ctl); err != nil {
		return err
	}
	if c, err = g.readCtl(ctlFreed, 1); err != nil {
		return err
	}
	g.nfree += c[0]
	var kind [4]byte
	if err := errors.Join(g.nodes.Read(g.s, int(g.root)*nodeBytes, kind[:]), g.s.Synchronize()); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(kind[:]) == kindFree {
		g.root = 0
	}
	// Keep the live nodes of the dirty list (freed ones may be reused).
	flags := gpu.Take[uint8](g.pool, bufFlags, nt)
	tmp := gpu.Take[uint32](g.pool, bufList, nt)
	if err := g.launch(g.k.liveFlags, threads(nt), kernelBlock, g.nodes, g.touched, uint64(nt), flags); err != nil {
		return err
	}
	if err := prim.DevSelect(g.pe, g.touched, flags, tmp, nt, g.ctlView(ctlTouched)); err != nil {
		return err
	}
	if c, err = g.readCtl(ctlTouched, 1); err != nil {
		return err
	}
	return g.touched.CopyFrom(g.s, 0, tmp, 0, int(c[0]))
}

// markUp closes the first nt nodes of the dirty list under ancestors and
// returns the list's new length.
func (g *gpuTrie) markUp(nt int) (int, error) {
	if err := g.launch(g.k.markUp, threads(nt), kernelBlock, g.nodes, g.touched, uint64(nt), g.ctl); err != nil {
		return 0, err
	}
	c, err := g.readCtl(ctlTouched, 1)
	if err != nil {
		return 0, err
	}
	return int(c[0]), nil
}
