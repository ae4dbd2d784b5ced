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

	// ascending, with valid, is how many of the n valid entries come
	// first in the sorted ones, already in ascending key order, all keys
	// distinct (an insert's node entries: ai_entries): only the rest is
	// sorted, then merged with them (0: all are sorted; mergeAscending
	// orders them either way).
	ascending int
}

// Scratch of a node round of up to n entries: n+1 elements each (one per
// entry, touched node or move, and a total), and the totals.
var (
	round32 = []string{"n.eidx", "n.tstart", "n.idx", "n.remb", "n.nkind", "n.nidx", "n.oidx", "n.cnt", "n.scode",
		"n.sop", "n.sgrp", "n.mcode", "n.mop", "n.mgrp"}
	round64 = []string{"n.snode", "n.slink", "n.rem", "n.final", "n.m12", "n.m34", "n.rslot", "n.rlink", "n.okey", "n.mnode",
		"n.mlink", "n.count", "n.tnode", "n.runs"}
	round8 = []string{"n.tflag", "n.out", "n.htrim", "n.mflag"}
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
// first), gather them, select the touched nodes (group), an_plan, scans
// of the moves per kind, an_final, an_emit, one readback of the moves and
// the emit's counts (planEmit), the pools grown (grow), (insert: the
// moves sorted) an_write, an_moved_inplace, an_root_writes (write), and
// the frees per kind selected in node order (frees). It returns how many
// entries it emitted for the next round (a delete).
func (g *gpuEngine) nodeRound(t *devTree, in roundIn) (int, error) {
	if in.n == 0 {
		return 0, nil
	}
	r, err := g.newNodeRun(t, in)
	if err != nil {
		return 0, err
	}
	if err := r.group(); err != nil {
		return 0, err
	}
	tv, R, O, err := r.planEmit()
	if err != nil {
		return 0, err
	}
	if err := r.grow(tv); err != nil {
		return 0, err
	}
	if err := r.write(R, O); err != nil {
		return 0, err
	}
	return r.frees(O)
}

// nodeRun is one node round on the device: its input, sizes and the
// scratch it took from the pool (roundNeeds).
type nodeRun struct {
	g  *gpuEngine
	t  *devTree
	in roundIn
	// E entries, N scratch elements each, T touched nodes (group), the
	// entries sorted, insert 1 for an insert's round.
	E, N, T, sorted, insert int

	eidx, tstart, idx, remb, nkind, nidx, oidx, cnt *gpu.Buffer[uint32]
	scode, sop, sgrp, mcode, mop, mgrp              *gpu.Buffer[uint32]
	snode, slink, rem, final, m12, m34              *gpu.Buffer[uint64]
	rslot, rlink, okey, mnode, mlink, count         *gpu.Buffer[uint64]
	tnode, runs                                     *gpu.Buffer[uint64] // the touched nodes (an_final), their moves (an_runs)
	tflag, out, htrim, mflag                        *gpu.Buffer[uint8]
	tot                                             *gpu.Buffer[uint64]
	fsel, fcnt                                      *gpu.Buffer[uint32]

	// The insert's group trims (a delete's: scratch, never read) and the
	// entries emitted (a delete's for the next round, an insert's moves).
	trimpr, gtref *gpu.Buffer[uint64]
	gtn, trimd    *gpu.Buffer[uint32]
	oe            entryBufs
}

// newNodeRun reserves and takes a node round's scratch for in.n entries.
func (g *gpuEngine) newNodeRun(t *devTree, in roundIn) (*nodeRun, error) {
	E := in.n
	N := max(in.sorted, E) + 1
	if err := g.pool.Reserve(roundNeeds(N - 1)...); err != nil {
		return nil, fmt.Errorf("node round: %w", err)
	}
	r := &nodeRun{g: g, t: t, in: in, E: E, N: N, sorted: E}
	if in.insert {
		r.insert, r.sorted = 1, in.sorted
	}
	u32 := takeAll[uint32](g.pool, N, round32...)
	r.eidx, r.tstart, r.idx, r.remb, r.nkind, r.nidx, r.oidx, r.cnt = u32[0], u32[1], u32[2], u32[3], u32[4], u32[5], u32[6], u32[7]
	r.scode, r.sop, r.sgrp, r.mcode, r.mop, r.mgrp = u32[8], u32[9], u32[10], u32[11], u32[12], u32[13]
	u64 := takeAll[uint64](g.pool, N, round64...)
	r.snode, r.slink, r.rem, r.final, r.m12, r.m34 = u64[0], u64[1], u64[2], u64[3], u64[4], u64[5]
	r.rslot, r.rlink, r.okey, r.mnode, r.mlink, r.count = u64[6], u64[7], u64[8], u64[9], u64[10], u64[11]
	r.tnode, r.runs = u64[12], u64[13]
	u8 := takeAll[uint8](g.pool, N, round8...)
	r.tflag, r.out, r.htrim, r.mflag = u8[0], u8[1], u8[2], u8[3]
	r.tot = gpu.Take[uint64](g.pool, "n.tot", 10)
	r.fsel, r.fcnt = gpu.Take[uint32](g.pool, "n.fsel", numNodeKinds*N), gpu.Take[uint32](g.pool, "n.fcnt", numNodeKinds)
	return r, nil
}

// group sorts the entries (only the valid ones, compacted, when they are
// flagged), gathers them and selects the first entry of each touched
// node: T, read back, and tstart[T] = E.
func (r *nodeRun) group() error {
	g, k, e, E, sorted := r.g, r.g.k, r.in.e, r.E, r.sorted
	sortKeys := func() error {
		if r.in.valid == nil {
			return firstErr(g.launch(k.nKeys, sorted, uint64(sorted), e.node, e.code, e.key, r.eidx, int32(1-r.insert)),
				prim.DevSortPairsBits(g.pe, e.key, r.eidx, sorted, 0, entryBits))
		}
		if err := firstErr(g.launch(k.iota, sorted, uint64(sorted), r.idx),
			prim.DevSelect(g.pe, r.idx, r.in.valid, r.eidx, sorted, r.cnt), prim.DevSelect(g.pe, e.key, r.in.valid, r.okey, sorted, r.cnt)); err != nil {
			return err
		}
		return r.mergeAscending()
	}
	if err := firstErr(
		sortKeys(),
		g.launch(k.nGather, E, uint64(E), r.eidx, e.node, e.code, e.op, e.link, e.grp, r.snode, r.scode, r.sop, r.slink, r.sgrp, r.tflag),
		g.launch(k.iota, E, uint64(E), r.idx),
		prim.DevSelect(g.pe, r.idx, r.tflag, r.tstart, E, r.cnt),
	); err != nil {
		return fmt.Errorf("node round: group: %w", err)
	}
	c, err := g.readU32(r.cnt, 0, 1)
	if err != nil {
		return err
	}
	r.T = int(c[0])
	g.step("node round: group")
	return r.tstart.Write(g.s, r.T, []uint32{uint32(E)})
}

// planEmit runs U1 plan, then the final links and U2 emit before the
// pools grow: an_final reads only the allocation counters and the free
// stacks, an_emit the touched records' parent words, all of which a
// growth copies unchanged (its copies follow them on the stream). One
// readback brings the moves per kind (tv) and the emit's counts: R root
// writes and O entries emitted.
func (r *nodeRun) planEmit() (tv []uint64, R, O int, err error) {
	g, k, T := r.g, r.g.k, r.T
	r.trimpr, r.gtn, r.trimd, r.gtref = r.in.trimpr, r.in.gtn, r.in.trimd, r.in.gtref
	if r.trimpr == nil { // a delete: never read
		r.trimpr, r.gtn, r.trimd, r.gtref = r.rem, r.remb, r.remb, r.rem
	}
	r.oe = r.in.out // a delete's entries for the next round
	if r.in.insert {
		if err := g.pool.Reserve(entryNeeds("n.moved", T+1)...); err != nil {
			return nil, 0, 0, fmt.Errorf("node round: %w", err)
		}
		r.oe = g.takeEntries("n.moved", T+1)
	}
	if err := firstErr(g.setDesc(r.t, nil),
		g.launch(k.nPlan, T+1, g.descBuf, uint64(T), r.tstart, r.snode, r.scode, r.sop, r.slink, r.out, r.nkind, r.htrim, r.rem, r.remb, r.m12, r.m34, r.nidx),
		prim.DevScanExclusive(g.pe, r.m12, r.m12, T+1), prim.DevScanExclusive(g.pe, r.m34, r.m34, T+1),
		g.launch(k.totals, 1, uint64(T), r.m12, r.m34, nullPtr, nullPtr, nullPtr, uint64(0), nullPtr, r.tot),
	); err != nil {
		return nil, 0, 0, fmt.Errorf("node round: plan: %w", err)
	}
	g.step("node round: plan")
	oe := r.oe
	if err := firstErr(g.launch(k.nFinal, T, g.descBuf, uint64(T), r.tstart, r.snode, r.out, r.nkind, r.m12, r.m34, r.final, r.tnode),
		r.count.FillBytes(g.s, 0),
		g.launch(k.nEmit, T, g.descBuf, uint64(T), r.tstart, r.snode, r.sgrp, r.out, r.htrim, r.final, r.rem, r.trimpr,
			r.rslot, r.rlink, r.count, oe.node, oe.code, oe.op, oe.link, r.count.PtrAt(1))); err != nil {
		return nil, 0, 0, fmt.Errorf("node round: emit: %w", err)
	}
	rb, err := g.readSpans(span(r.tot, 0, 4), span(r.count, 0, 2))
	if err != nil {
		return nil, 0, 0, fmt.Errorf("node round: emit: %w", err)
	}
	tv, cv := u64sOf(rb[0]), u64sOf(rb[1])
	g.step("node round: emit")
	return tv, int(cv[0]), int(cv[1]), nil
}

// grow grows the inner node pools by the moves per kind tv and gives the
// writers the grown pools (the counters as an_final saw them).
func (r *nodeRun) grow(tv []uint64) error {
	g := r.g
	var req [numKinds + 1]uint64
	for kk := kindN4; kk <= kindN256; kk++ {
		req[kk] = tv[kk-1]
	}
	if g.trace != nil {
		// Traced, each pool that grows grows alone, in a step of its
		// own: which kind's growth the round waits for, and how long.
		for kk := kindN4; kk <= kindN256; kk++ {
			p := &r.t.pools[kk]
			if req[kk] <= p.top || p.hwm+req[kk]-p.top <= p.cap {
				continue
			}
			var one [numKinds + 1]uint64
			one[kk] = req[kk]
			if err := g.reserve(r.t, one, 0); err != nil {
				return fmt.Errorf("node round: %w", err)
			}
			g.step(fmt.Sprintf("node round: grow kind %d to %d", kk, p.cap))
		}
	}
	if err := g.reserve(r.t, req, 0); err != nil {
		return fmt.Errorf("node round: %w", err)
	}
	if err := g.setDesc(r.t, nil); err != nil {
		return fmt.Errorf("node round: %w", err)
	}
	r.t.consume(req, 0)
	g.step("node round: reserve")
	return nil
}

// write sorts an insert's O moves for their parents' writers, then runs
// U3 write (writeTouched) and U4 in place, and the R root writes.
func (r *nodeRun) write(R, O int) error {
	g, k, T, oe := r.g, r.g.k, r.T, r.oe
	M := 0
	if r.in.insert && O > 0 {
		M = O
		if err := firstErr(
			g.launch(k.nKeys, O, uint64(O), oe.node, oe.code, r.okey, r.oidx, int32(1)),
			prim.DevSortPairsBits(g.pe, r.okey, r.oidx, O, 0, entryBits),
			g.launch(k.nGather, O, uint64(O), r.oidx, oe.node, oe.code, oe.op, oe.link, nullPtr, r.mnode, r.mcode, r.mop, r.mlink, r.mgrp, r.mflag),
			r.runs.FillBytes(g.s, 0),
			g.launch(k.nRuns, O, uint64(O), r.mnode, r.tnode, uint64(T), r.runs),
		); err != nil {
			return fmt.Errorf("node round: moves: %w", err)
		}
	}
	g.step("node round: moves")
	if err := r.writeTouched(M); err != nil {
		return fmt.Errorf("node round: write: %w", err)
	}
	if err := firstErr(
		g.launch(k.nMovedInplace, M, g.descBuf, uint64(M), r.mnode, r.mcode, r.mlink, r.tnode, uint64(T)),
		g.launch(k.nRootWrites, R, g.descBuf, uint64(R), r.rslot, r.rlink),
	); err != nil {
		return fmt.Errorf("node round: write: %w", err)
	}
	g.step("node round: moved in place, root writes")
	return nil
}

// frees runs U5, per kind in node order: each kind's freed nodes
// selected into its own part of fsel (selectFrees), the four counts read
// back at once and the frees made pending (an insert with no pending
// nodes pushes them at once, pushLate). It returns the round's emitted
// entries for the next round: O for a delete, 0 for an insert.
func (r *nodeRun) frees(O int) (int, error) {
	g, T, N := r.g, r.T, r.N
	if err := r.selectFrees(); err != nil {
		return 0, fmt.Errorf("node round: frees: %w", err)
	}
	if r.in.insert && r.t.noPendingNodes() {
		// An insert frees nothing else: the frees go on the free
		// stacks now, their counts come back with the batch's last
		// synchronization (pushLate).
		return 0, g.pushLate(r.t, T, N, r.fsel, r.fcnt)
	}
	fc, err := g.readU32(r.fcnt, 0, numNodeKinds)
	if err != nil {
		return 0, err
	}
	g.step("node round: frees")
	for kk := kindN4; kk <= kindN256; kk++ {
		i := kk - kindN4
		if err := g.pushPending(r.t, kk, gpu.View[uint32](r.fsel, 4*i*N, T), int(fc[i])); err != nil {
			return 0, err
		}
	}
	if r.in.insert {
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
	g.step("node round: frees")
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
