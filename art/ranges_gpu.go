package art

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// rangesCands is the single-walk form of ranges (limit > 0, at most
// rangeSlotsMax slots), the default: the walk (walk) walks
// each query once (in perm's order when the queries are sorted) and keeps
// up to limit leaves in the query's slots. A tile of lanes per query
// (aq_walk8/16/32, the default) stops at the far bound and counts the
// pairs, their key bytes and the squares of their key lengths itself; with
// walkLanes 1, aq_cands (one thread per query) keeps the leaves without
// reading them and aq_trim (a warp per query) cuts them at the far bound
// and counts them. Exclusive scans of those Q+1 counts give each query's
// first pair and key offset (and the totals, read back once); aq_pairs (a
// warp per query) writes the pairs. The scanned pair counts are the
// Result's query offsets; when every key of the answer has one length
// (the squares' total says so), aq_pairs does not write the key offsets
// and the host writes them rather than download them. Cost: one walk per query (and with aq_cands a warp
// pass over the candidates), a warp pass writing the pairs, three scans
// of Q+1 words, one readback.
func (g *gpuEngine) rangesCands(into *Result, Q, limit int, dsc int32, perm *gpu.Buffer[uint32], lo, hi *devBatch, hb *gpu.Buffer[uint8]) (*Result, error) {
	S := Q * limit
	if err := g.pool.Reserve(gpu.NeedOf[uint64]("q.slots", S), gpu.NeedOf[uint32]("q.ccnt", Q),
		gpu.NeedOf[uint64]("q.cnt", Q+1), gpu.NeedOf[uint64]("q.bytes", Q+1), gpu.NeedOf[uint64]("q.sq", Q+1)); err != nil {
		return nil, err
	}
	slots, ccnt := gpu.Take[uint64](g.pool, "q.slots", S), gpu.Take[uint32](g.pool, "q.ccnt", Q)
	cnt, byt := gpu.Take[uint64](g.pool, "q.cnt", Q+1), gpu.Take[uint64](g.pool, "q.bytes", Q+1)
	sq := gpu.Take[uint64](g.pool, "q.sq", Q+1)
	var order any = nullPtr // the batch order
	if perm != nil {
		order = perm
	}
	if err := g.walk(Q, limit, dsc, order, lo, hi, hb, slots, ccnt, cnt, byt, sq); err != nil {
		return nil, fmt.Errorf("walk: %w", err)
	}
	g.step("walk")
	if err := g.scanCounts(Q, cnt, byt, sq); err != nil {
		return nil, fmt.Errorf("walk scans: %w", err)
	}
	g.step("scans")
	out, err := g.answerSpace(cnt, byt, sq, Q)
	if err != nil {
		return nil, err
	}
	g.step("totals read back")
	var ooffs any = out.offs
	if out.keyLen >= 0 { // the host writes the key offsets
		ooffs = nullPtr
	}
	if err := g.launch(g.k.qPairs, Q*warpSize, g.descBuf, uint64(Q), uint64(limit), slots, cnt, byt, out.keys, ooffs, out.vals,
		uint64(0), uint64(0), nullPtr, uint64(out.totalBytes)); err != nil {
		return nil, fmt.Errorf("pairs: %w", err)
	}
	g.step("pairs")
	return g.deliver(into, Q, out, cnt)
}

// warpSize is the lanes of a warp: the threads a warp-per-query kernel
// (aq_trim, aq_pairs) is launched with per query.
const warpSize = 32

// walkLanesValid reports whether the walk has a kernel for n lanes per
// query (1, 8, 16, 32).
func walkLanesValid(n int) bool { return n == 1 || n == 8 || n == 16 || n == 32 }

// defaultWalkLanes is the lanes per query of the walk of ranges and
// prefix scans (gpuEngine.walkLanes) of a new GPU engine.
const defaultWalkLanes = 8

// walk launches the walk of rangesCands for g.walkLanes: aq_cands and
// aq_trim (1), or aq_walk8/16/32 (a tile of that many lanes per query).
// Either leaves each query's leaves in slots and its pair count, key bytes
// and squared key lengths in cnt, byt and sq (entry Q zero).
func (g *gpuEngine) walk(Q, limit int, dsc int32, order any, lo, hi *devBatch, hb *gpu.Buffer[uint8], slots *gpu.Buffer[uint64],
	ccnt *gpu.Buffer[uint32], cnt, byt, sq *gpu.Buffer[uint64]) error {
	switch g.walkLanes {
	case 1:
		return firstErr(
			g.launch(g.k.qCands, Q, g.descBuf, uint64(Q), order, lo.data, lo.offs, hi.data, hi.offs, hb, uint64(limit), int32(dsc), slots, ccnt),
			g.launch(g.k.qTrim, (Q+1)*warpSize, g.descBuf, uint64(Q), lo.data, lo.offs, hi.data, hi.offs, hb, uint64(limit), int32(dsc), slots,
				ccnt, cnt, byt, sq))
	case 8:
		return g.launch(g.k.qWalk8, Q*8, g.descBuf, uint64(Q), order, lo.data, lo.offs, hi.data, hi.offs, hb, uint64(limit), int32(dsc), slots,
			cnt, byt, sq)
	case 16:
		return g.launch(g.k.qWalk16, Q*16, g.descBuf, uint64(Q), order, lo.data, lo.offs, hi.data, hi.offs, hb, uint64(limit), int32(dsc), slots,
			cnt, byt, sq)
	case 32:
		return g.launch(g.k.qWalk32, Q*32, g.descBuf, uint64(Q), order, lo.data, lo.offs, hi.data, hi.offs, hb, uint64(limit), int32(dsc), slots,
			cnt, byt, sq)
	}
	return fmt.Errorf("art: walk lanes %d: want 1, 8, 16 or 32", g.walkLanes)
}

// scanCounts queues the exclusive scans, in place, of a walk's Q+1 pair
// counts, key bytes and squared key lengths (rangesCands, a chunk of
// rangesPiped). Cost: three device scans of Q+1 words.
func (g *gpuEngine) scanCounts(Q int, cnt, byt, sq *gpu.Buffer[uint64]) error {
	return firstErr(prim.DevScanExclusive(g.pe, cnt, cnt, Q+1), prim.DevScanExclusive(g.pe, byt, byt, Q+1),
		prim.DevScanExclusive(g.pe, sq, sq, Q+1))
}
