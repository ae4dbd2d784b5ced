package art

import (
	"fmt"

	"warpkv/gpu"
	"warpkv/prim"
)

// entryBufs are node entries on the device (nodes.go's entries).
type entryBufs struct {
	key, node, link *gpu.Buffer[uint64]
	code, op, grp   *gpu.Buffer[uint32]
}

func (g *gpuEngine) entryBufs(name string, n int) (entryBufs, error) {
	var e entryBufs
	var err error
	for _, b := range []struct {
		p **gpu.Buffer[uint64]
		s string
	}{{&e.key, ".key"}, {&e.node, ".node"}, {&e.link, ".link"}} {
		if *b.p, err = g.b64(name+b.s, n); err != nil {
			return e, err
		}
	}
	for _, b := range []struct {
		p **gpu.Buffer[uint32]
		s string
	}{{&e.code, ".code"}, {&e.op, ".op"}, {&e.grp, ".grp"}} {
		if *b.p, err = g.b32(name+b.s, n); err != nil {
			return e, err
		}
	}
	return e, nil
}

// roundIn is a node round's input: n entries (the first valid ones after
// sorting all sorted of them; sorted >= n), whether it is an insert's
// round (keys already set, moves consumed in the round) and the insert's
// groups' old elements and trims.
type roundIn struct {
	e             entryBufs
	n, sorted     int
	insert        bool
	gtn, trimd    *gpu.Buffer[uint32]
	gtref, trimpr *gpu.Buffer[uint64]
	out           entryBufs // a delete's entries for the next round
}

// roundScratch gets the scratch a node round of up to n entries needs, so
// that a delete can reserve it before it changes the tree.
func (g *gpuEngine) roundScratch(n int) error {
	for _, name := range []string{"n.eidx", "n.tstart", "n.idx", "n.remb", "n.nkind", "n.nidx", "n.sel", "n.oidx", "n.cnt", "n.scode", "n.sop", "n.sgrp", "n.mcode", "n.mop", "n.mgrp"} {
		if _, err := g.b32(name, n+1); err != nil {
			return err
		}
	}
	for _, name := range []string{"n.snode", "n.slink", "n.rem", "n.final", "n.m12", "n.m34", "n.rslot", "n.rlink", "n.okey", "n.mnode", "n.mlink", "n.count"} {
		if _, err := g.b64(name, n+1); err != nil {
			return err
		}
	}
	if _, err := g.b64("n.tot", 10); err != nil {
		return err
	}
	for _, name := range []string{"n.tflag", "n.out", "n.htrim", "n.fflag", "n.mflag"} {
		if _, err := g.b8(name, n+1); err != nil {
			return err
		}
	}
	return nil
}

// nodeRound runs round.go's nodeRound on the device (art.cu's an_*
// kernels): sort the entries (prim), gather them, select the touched
// nodes, an_plan, scans of the moves per kind, the pools grown, an_final,
// an_emit, (insert: the moves sorted) an_write, an_moved_inplace,
// an_root_writes, and the frees per kind selected in node order. It
// returns how many entries it emitted for the next round (a delete).
func (g *gpuEngine) nodeRound(t *devTree, in roundIn) (int, error) {
	k := g.k
	E := in.n
	if E == 0 {
		return 0, nil
	}
	if err := g.roundScratch(max(in.sorted, E)); err != nil {
		return 0, err
	}
	must32 := func(name string) *gpu.Buffer[uint32] { b, _ := g.b32(name, 1); return b }
	must64 := func(name string) *gpu.Buffer[uint64] { b, _ := g.b64(name, 1); return b }
	must8 := func(name string) *gpu.Buffer[uint8] { b, _ := g.b8(name, 1); return b }
	eidx, tstart, idx, remb, nkind, nidx, sel, oidx, cnt := must32("n.eidx"), must32("n.tstart"), must32("n.idx"), must32("n.remb"),
		must32("n.nkind"), must32("n.nidx"), must32("n.sel"), must32("n.oidx"), must32("n.cnt")
	scode, sop, sgrp, mcode, mop := must32("n.scode"), must32("n.sop"), must32("n.sgrp"), must32("n.mcode"), must32("n.mop")
	snode, slink, rem, final, m12, m34 := must64("n.snode"), must64("n.slink"), must64("n.rem"), must64("n.final"), must64("n.m12"), must64("n.m34")
	rslot, rlink, okey, mnode, mlink, tot, count := must64("n.rslot"), must64("n.rlink"), must64("n.okey"), must64("n.mnode"),
		must64("n.mlink"), must64("n.tot"), must64("n.count")
	tflag, out, htrim, fflag, mflag := must8("n.tflag"), must8("n.out"), must8("n.htrim"), must8("n.fflag"), must8("n.mflag")
	mgrp := must32("n.mgrp")
	insert := 0
	sorted := E
	if in.insert {
		insert, sorted = 1, in.sorted
	}
	e := in.e
	// Sort and group.
	if err := firstErr(
		g.launch(k.nKeys, sorted, uint64(sorted), e.node, e.code, e.key, eidx, int32(1-insert)),
		prim.DevSortPairs(g.pe, e.key, eidx, sorted),
		g.launch(k.nGather, E, uint64(E), eidx, e.node, e.code, e.op, e.link, e.grp, snode, scode, sop, slink, sgrp, tflag),
		g.launch(k.iota, E, uint64(E), idx),
		prim.DevSelect(g.pe, idx, tflag, tstart, E, cnt),
	); err != nil {
		return 0, fmt.Errorf("node round: group: %w", err)
	}
	c, err := g.readU32(cnt, 0, 1)
	if err != nil {
		return 0, err
	}
	T := int(c[0])
	if err := tstart.Write(g.s, T, []uint32{uint32(E)}); err != nil {
		return 0, err
	}
	// U1 plan and the moves' allocation.
	if err := firstErr(g.setDesc(t, nil),
		g.launch(k.nPlan, T+1, g.descBuf, uint64(T), tstart, snode, scode, sop, slink, out, nkind, htrim, rem, remb, m12, m34, nidx),
		prim.DevScanExclusive(g.pe, m12, m12, T+1), prim.DevScanExclusive(g.pe, m34, m34, T+1),
		g.launch(k.totals, 1, uint64(T), m12, m34, nullPtr, nullPtr, nullPtr, uint64(0), nullPtr, tot),
	); err != nil {
		return 0, fmt.Errorf("node round: plan: %w", err)
	}
	tv, err := g.readU64(tot, 0, 4)
	if err != nil {
		return 0, err
	}
	var req [numKinds + 1]uint64
	for kk := kindN4; kk <= kindN256; kk++ {
		req[kk] = tv[kk-1]
	}
	if err := g.reserve(t, req, 0); err != nil {
		return 0, fmt.Errorf("node round: %w", err)
	}
	if err := firstErr(g.setDesc(t, nil),
		g.launch(k.nFinal, T, g.descBuf, uint64(T), tstart, snode, out, nkind, m12, m34, final)); err != nil {
		return 0, fmt.Errorf("node round: final: %w", err)
	}
	t.consume(req, 0)
	// U2 emit.
	trimpr, gtn, trimd, gtref := in.trimpr, in.gtn, in.trimd, in.gtref
	if trimpr == nil { // a delete: never read
		trimpr, gtn, trimd, gtref = rem, remb, remb, rem
	}
	oe := in.out // a delete's entries for the next round
	if in.insert {
		var err error
		if oe, err = g.entryBufs("n.moved", T+1); err != nil {
			return 0, err
		}
	}
	if err := firstErr(count.FillBytes(g.s, 0),
		g.launch(k.nEmit, T, g.descBuf, uint64(T), tstart, snode, sgrp, out, htrim, final, rem, trimpr,
			rslot, rlink, count, oe.node, oe.code, oe.op, oe.link, count.PtrAt(1))); err != nil {
		return 0, fmt.Errorf("node round: emit: %w", err)
	}
	cv, err := g.readU64(count, 0, 2)
	if err != nil {
		return 0, err
	}
	R, O := int(cv[0]), int(cv[1])
	M := 0
	if in.insert && O > 0 { // the moves, sorted, for their parents' writers
		M = O
		if err := firstErr(
			g.launch(k.nKeys, O, uint64(O), oe.node, oe.code, okey, oidx, int32(1)),
			prim.DevSortPairs(g.pe, okey, oidx, O),
			g.launch(k.nGather, O, uint64(O), oidx, oe.node, oe.code, oe.op, oe.link, nullPtr, mnode, mcode, mop, mlink, mgrp, mflag),
		); err != nil {
			return 0, fmt.Errorf("node round: moves: %w", err)
		}
	}
	// U3 write, U4 in place.
	if err := firstErr(
		g.launch(k.nWrite, T, g.descBuf, uint64(T), int32(insert), tstart, snode, scode, sop, slink, sgrp, out, nkind, htrim,
			final, rem, remb, mnode, mcode, mop, mlink, uint64(M), gtn, gtref, trimd, trimpr),
		g.launch(k.nMovedInplace, M, g.descBuf, uint64(M), mnode, mcode, mlink, tstart, snode, uint64(T)),
		g.launch(k.nRootWrites, R, g.descBuf, uint64(R), rslot, rlink),
	); err != nil {
		return 0, fmt.Errorf("node round: write: %w", err)
	}
	// U5 frees, per kind in node order.
	for kk := kindN4; kk <= kindN256; kk++ {
		if err := firstErr(g.launch(k.nFreeFlags, T, uint64(T), tstart, snode, out, uint32(kk), fflag),
			prim.DevSelect(g.pe, nidx, fflag, sel, T, cnt)); err != nil {
			return 0, fmt.Errorf("node round: frees: %w", err)
		}
		c, err := g.readU32(cnt, 0, 1)
		if err != nil {
			return 0, err
		}
		if err := g.pushPending(t, kk, sel, int(c[0])); err != nil {
			return 0, err
		}
	}
	if in.insert {
		return 0, nil
	}
	return O, nil
}

// pushPending appends n freed record indices of kind k (in src) to the
// batch's pending frees.
func (g *gpuEngine) pushPending(t *devTree, k int, src *gpu.Buffer[uint32], n int) error {
	if n == 0 {
		return nil
	}
	p := &t.pools[k]
	if err := p.pend.CopyFrom(g.s, int(p.pendN), src, 0, n); err != nil {
		return err
	}
	p.pendN += uint64(n)
	return nil
}
