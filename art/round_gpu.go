package art

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// entryBufs are node entries on the device (nodes.go's entries).
type entryBufs struct {
	key, node, link *gpu.Buffer[uint64]
	code, op, grp   *gpu.Buffer[uint32]
}

// entryNeeds are the buffers of n entries named name.
func entryNeeds(name string, n int) []gpu.Need {
	return append(needsOf[uint64](n, name+".key", name+".node", name+".link"), needsOf[uint32](n, name+".code", name+".op", name+".grp")...)
}

// takeEntries takes the buffers of n entries named name (reserved by
// entryNeeds).
func (g *gpuEngine) takeEntries(name string, n int) entryBufs {
	w := takeAll[uint64](g.pool, n, name+".key", name+".node", name+".link")
	u := takeAll[uint32](g.pool, n, name+".code", name+".op", name+".grp")
	return entryBufs{key: w[0], node: w[1], link: w[2], code: u[0], op: u[1], grp: u[2]}
}

// roundIn is a node round's input: n entries (the first valid ones after
// sorting all sorted of them; sorted >= n; with valid, the flags of the
// valid ones among the sorted, only those are sorted), whether it is an
// insert's round (keys already set, moves consumed in the round) and the
// insert's groups' old elements and trims.
type roundIn struct {
	e             entryBufs
	n, sorted     int
	valid         *gpu.Buffer[uint8]
	insert        bool
	gtn, trimd    *gpu.Buffer[uint32]
	gtref, trimpr *gpu.Buffer[uint64]
	out           entryBufs // a delete's entries for the next round
}

// Scratch of a node round of up to n entries: n+1 elements each (one per
// entry, touched node or move, and a total), and the totals.
var (
	round32 = []string{"n.eidx", "n.tstart", "n.idx", "n.remb", "n.nkind", "n.nidx", "n.oidx", "n.cnt", "n.scode",
		"n.sop", "n.sgrp", "n.mcode", "n.mop", "n.mgrp"}
	round64 = []string{"n.snode", "n.slink", "n.rem", "n.final", "n.m12", "n.m34", "n.rslot", "n.rlink", "n.okey", "n.mnode",
		"n.mlink", "n.count"}
	round8 = []string{"n.tflag", "n.out", "n.htrim", "n.fflag", "n.mflag"}
)

// roundNeeds are the scratch buffers of a node round of up to n entries
// (a delete reserves them for its largest round before it changes the
// tree).
func roundNeeds(n int) []gpu.Need {
	ns := append(needsOf[uint32](n+1, round32...), needsOf[uint64](n+1, round64...)...)
	ns = append(ns, gpu.NeedOf[uint32]("n.fsel", numNodeKinds*(n+1)), gpu.NeedOf[uint32]("n.fcnt", numNodeKinds))
	return append(append(ns, needsOf[uint8](n+1, round8...)...), gpu.NeedOf[uint64]("n.tot", 10))
}

// numNodeKinds is the number of inner node kinds (N4 to N256).
const numNodeKinds = kindN256 - kindN4 + 1

// entryBits are the low bits of every entry's sort key (nodes.go's
// entryOrder: a 4-bit kind at bit 49; insert.cu's ENTRY_NONE too), the
// bits the node round's sorts order by: seven 8-bit passes, not eight.
const entryBits = 53

// nodeRound runs round.go's nodeRound on the device (art.cu's an_*
// kernels): sort the entries (prim; an insert's valid ones selected
// first), gather them, select the touched nodes, an_plan, scans of the
// moves per kind, an_final, an_emit, one readback of the moves and the
// emit's counts, the pools grown, (insert: the moves sorted) an_write,
// an_moved_inplace, an_root_writes, and the frees per kind selected in
// node order. It returns how many entries it emitted for
// the next round (a delete).
func (g *gpuEngine) nodeRound(t *devTree, in roundIn) (int, error) {
	k := g.k
	E := in.n
	if E == 0 {
		return 0, nil
	}
	N := max(in.sorted, E) + 1
	if err := g.pool.Reserve(roundNeeds(N - 1)...); err != nil {
		return 0, fmt.Errorf("node round: %w", err)
	}
	u32 := takeAll[uint32](g.pool, N, round32...)
	eidx, tstart, idx, remb, nkind, nidx, oidx, cnt := u32[0], u32[1], u32[2], u32[3], u32[4], u32[5], u32[6], u32[7]
	scode, sop, sgrp, mcode, mop, mgrp := u32[8], u32[9], u32[10], u32[11], u32[12], u32[13]
	u64 := takeAll[uint64](g.pool, N, round64...)
	snode, slink, rem, final, m12, m34 := u64[0], u64[1], u64[2], u64[3], u64[4], u64[5]
	rslot, rlink, okey, mnode, mlink, count := u64[6], u64[7], u64[8], u64[9], u64[10], u64[11]
	u8 := takeAll[uint8](g.pool, N, round8...)
	tflag, out, htrim, fflag, mflag := u8[0], u8[1], u8[2], u8[3], u8[4]
	tot := gpu.Take[uint64](g.pool, "n.tot", 10)
	fsel, fcnt := gpu.Take[uint32](g.pool, "n.fsel", numNodeKinds*N), gpu.Take[uint32](g.pool, "n.fcnt", numNodeKinds)
	insert := 0
	sorted := E
	if in.insert {
		insert, sorted = 1, in.sorted
	}
	e := in.e
	// Sort (only the valid entries, compacted, when they are flagged)
	// and group.
	sortKeys := func() error {
		if in.valid == nil {
			return firstErr(g.launch(k.nKeys, sorted, uint64(sorted), e.node, e.code, e.key, eidx, int32(1-insert)),
				prim.DevSortPairsBits(g.pe, e.key, eidx, sorted, 0, entryBits))
		}
		return firstErr(g.launch(k.iota, sorted, uint64(sorted), idx),
			prim.DevSelect(g.pe, idx, in.valid, eidx, sorted, cnt), prim.DevSelect(g.pe, e.key, in.valid, okey, sorted, cnt),
			prim.DevSortPairsBits(g.pe, okey, eidx, E, 0, entryBits))
	}
	if err := firstErr(
		sortKeys(),
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
	g.step("node round: group")
	if err := tstart.Write(g.s, T, []uint32{uint32(E)}); err != nil {
		return 0, err
	}
	// U1 plan, then the final links and U2 emit before the pools grow:
	// an_final reads only the allocation counters and the free stacks,
	// an_emit the touched records' parent words, all of which a growth
	// copies unchanged (its copies follow them on the stream). One
	// readback brings the moves per kind and the emit's counts.
	trimpr, gtn, trimd, gtref := in.trimpr, in.gtn, in.trimd, in.gtref
	if trimpr == nil { // a delete: never read
		trimpr, gtn, trimd, gtref = rem, remb, remb, rem
	}
	oe := in.out // a delete's entries for the next round
	if in.insert {
		if err := g.pool.Reserve(entryNeeds("n.moved", T+1)...); err != nil {
			return 0, fmt.Errorf("node round: %w", err)
		}
		oe = g.takeEntries("n.moved", T+1)
	}
	if err := firstErr(g.setDesc(t, nil),
		g.launch(k.nPlan, T+1, g.descBuf, uint64(T), tstart, snode, scode, sop, slink, out, nkind, htrim, rem, remb, m12, m34, nidx),
		prim.DevScanExclusive(g.pe, m12, m12, T+1), prim.DevScanExclusive(g.pe, m34, m34, T+1),
		g.launch(k.totals, 1, uint64(T), m12, m34, nullPtr, nullPtr, nullPtr, uint64(0), nullPtr, tot),
	); err != nil {
		return 0, fmt.Errorf("node round: plan: %w", err)
	}
	g.step("node round: plan")
	if err := firstErr(g.launch(k.nFinal, T, g.descBuf, uint64(T), tstart, snode, out, nkind, m12, m34, final),
		count.FillBytes(g.s, 0),
		g.launch(k.nEmit, T, g.descBuf, uint64(T), tstart, snode, sgrp, out, htrim, final, rem, trimpr,
			rslot, rlink, count, oe.node, oe.code, oe.op, oe.link, count.PtrAt(1))); err != nil {
		return 0, fmt.Errorf("node round: emit: %w", err)
	}
	rb, err := g.readSpans(span(tot, 0, 4), span(count, 0, 2))
	if err != nil {
		return 0, fmt.Errorf("node round: emit: %w", err)
	}
	tv, cv := u64sOf(rb[0]), u64sOf(rb[1])
	R, O := int(cv[0]), int(cv[1])
	g.step("node round: emit")
	var req [numKinds + 1]uint64
	for kk := kindN4; kk <= kindN256; kk++ {
		req[kk] = tv[kk-1]
	}
	if err := g.reserve(t, req, 0); err != nil {
		return 0, fmt.Errorf("node round: %w", err)
	}
	// The grown pools for the writers (the counters as an_final saw
	// them).
	if err := g.setDesc(t, nil); err != nil {
		return 0, fmt.Errorf("node round: %w", err)
	}
	t.consume(req, 0)
	g.step("node round: reserve")
	M := 0
	if in.insert && O > 0 { // the moves, sorted, for their parents' writers
		M = O
		if err := firstErr(
			g.launch(k.nKeys, O, uint64(O), oe.node, oe.code, okey, oidx, int32(1)),
			prim.DevSortPairsBits(g.pe, okey, oidx, O, 0, entryBits),
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
	// U5 frees, per kind in node order: each kind's selected into its own
	// part of fsel, the four counts read back at once.
	for kk := kindN4; kk <= kindN256; kk++ {
		i := kk - kindN4
		if err := firstErr(g.launch(k.nFreeFlags, T, uint64(T), tstart, snode, out, uint32(kk), fflag),
			prim.DevSelect(g.pe, nidx, fflag, gpu.View[uint32](fsel, 4*i*N, T), T, gpu.View[uint32](fcnt, 4*i, 1))); err != nil {
			return 0, fmt.Errorf("node round: frees: %w", err)
		}
	}
	if in.insert && t.noPendingNodes() {
		// An insert frees nothing else: the frees go on the free
		// stacks now, their counts come back with the batch's last
		// synchronization (pushLate).
		return 0, g.pushLate(t, T, N, fsel, fcnt)
	}
	fc, err := g.readU32(fcnt, 0, numNodeKinds)
	if err != nil {
		return 0, err
	}
	g.step("node round: write, frees")
	for kk := kindN4; kk <= kindN256; kk++ {
		i := kk - kindN4
		if err := g.pushPending(t, kk, gpu.View[uint32](fsel, 4*i*N, T), int(fc[i])); err != nil {
			return 0, err
		}
	}
	if in.insert {
		return 0, nil
	}
	return O, nil
}

// noPendingNodes says whether no inner node kind has pending frees.
func (t *devTree) noPendingNodes() bool {
	for k := kindN4; k <= kindN256; k++ {
		if t.pools[k].pendN != 0 {
			return false
		}
	}
	return true
}

// pushLate pushes an insert node round's frees (per kind, fcnt[q] of them
// in fsel's part q of N) on the free stacks above their heights after the
// round's allocations (an_push_frees), and queues the counts' download
// into a pinned buffer: the host's heights stay as they are until
// applyLate, after the batch has synchronized. Cost: a descriptor upload,
// one kernel over 4T threads and a 16-byte download, no synchronization.
func (g *gpuEngine) pushLate(t *devTree, T, N int, fsel, fcnt *gpu.Buffer[uint32]) error {
	h, err := gpu.Host[uint32](g.pool, "host.late", numNodeKinds)
	if err != nil {
		return fmt.Errorf("node round: frees: %w", err)
	}
	if err := firstErr(g.setDesc(t, nil), g.launch(g.k.nPushFrees, numNodeKinds*T, g.descBuf, uint64(T), uint64(N), fsel, fcnt),
		fcnt.Read(g.s, 0, h)); err != nil {
		return fmt.Errorf("node round: frees: %w", err)
	}
	g.late = h
	g.step("node round: write, frees")
	return nil
}

// applyLate adds the frees pushLate pushed to the host's free stack
// heights; the stream must have passed the download (the batch drained).
// Cost: O(1).
func (g *gpuEngine) applyLate(t *devTree) {
	for i, n := range g.late {
		t.pools[kindN4+i].top += uint64(n)
	}
	g.late = nil
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
