package art

import (
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// writeTouched runs U3, an_write over the T touched nodes with M moved
// entries, in one launch. Cost: one thread per touched node.
func (r *nodeRun) writeTouched(M int) error {
	g, T := r.g, r.T
	if err := g.launch(g.k.nWrite, T, g.descBuf, uint64(T), int32(r.insert), r.tstart, r.scode, r.sop, r.slink, r.sgrp, r.out,
		r.htrim, r.final, r.rem, r.remb, r.mcode, r.mop, r.mlink, uint64(M), r.gtn, r.gtref, r.trimd, r.trimpr, r.tnode, r.runs); err != nil {
		return err
	}
	g.step("node round: write")
	return nil
}

// selectFrees writes the round's freed nodes of each inner kind, in node
// order, into that kind's part of fsel (N apart) and their counts into
// fcnt, in one pass (an_free_marks, two scans of T+1 words,
// an_free_scatter; m12 and m34, which an_final consumed, hold the marks).
// Cost: one pass over the touched nodes.
func (r *nodeRun) selectFrees() error {
	g, k, T, N := r.g, r.g.k, r.T, r.N
	return firstErr(g.launch(k.nFreeMarks, T+1, uint64(T), r.tnode, r.out, r.m12, r.m34),
		prim.DevScanExclusive(g.pe, r.m12, r.m12, T+1), prim.DevScanExclusive(g.pe, r.m34, r.m34, T+1),
		g.launch(k.nFreeScatter, T+1, uint64(T), uint64(N), r.tnode, r.out, r.m12, r.m34, r.fsel, r.fcnt))
}

// mergeAscending orders a round's E selected entries (keys okey, indices
// eidx) whose first A = in.ascending are in ascending key order already:
// the other E-A are sorted (radix, entryBits), and the two runs merged
// into rem and remb, which then trade places with okey and eidx (scratch
// of the same length, unused until the plan). With all keys distinct the
// order is the one a sort of all E gives; with A = 0 it is that sort
// (no merge). Cost: a sort of E-A entries and one merge pass over E,
// where a sort of all E took a pass per 8 bits of the keys.
func (r *nodeRun) mergeAscending() error {
	g, E, A := r.g, r.E, r.in.ascending
	B := E - A
	if B == 0 {
		return nil
	}
	bk, bv := gpu.View[uint64](r.okey, 8*A, B), gpu.View[uint32](r.eidx, 4*A, B)
	if err := prim.DevSortPairsBits(g.pe, bk, bv, B, 0, entryBits); err != nil {
		return err
	}
	if A == 0 {
		return nil
	}
	if err := prim.DevMerge(g.pe, gpu.View[uint64](r.okey, 0, A), gpu.View[uint32](r.eidx, 0, A), A, bk, bv, B, r.rem, r.remb); err != nil {
		return err
	}
	r.okey, r.rem = r.rem, r.okey
	r.eidx, r.remb = r.remb, r.eidx
	return nil
}
