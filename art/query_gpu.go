package art

import (
	"errors"
	"fmt"
	"math"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// ranges answers range queries on the device, the queries taken in the
// order queryOrder gives (by start key for large batches). Into a pinned
// Result, large batches with a limit run pipelined in chunks
// (rangesPiped: pipes says when). Otherwise, with a limit
// and at most rangeSlotsMax slots (queries x limit), one walk per query:
// rangesCands (ranges.cu: the walk collects leaves into per-query slots
// without reading them, a warp per query trims them to the bound and
// sizes them, exclusive scans of the Q counts and key bytes, one readback
// of both totals, a warp per query writes the pairs), or with
// collectRanges the earlier rangesSlots (aq_collect and aq_emit, scans
// over every slot). Otherwise aq_scan twice, one thread per query: counts,
// exclusive scans of counts and key bytes, then the writes at the offsets.
// The Result is allocated on the host while the device writes the pairs;
// the pairs come back in one transfer per array.
func (g *gpuEngine) ranges(into *Result, qs []Query, limit int, desc bool) (*Result, error) {
	return g.answer(into, rangesBatch(qs), limit, desc)
}

// answer answers the batch of range queries b (ranges: qs; prefix: the
// queries of prefix scans) as ranges describes.
func (g *gpuEngine) answer(into *Result, b queryBatch, limit int, desc bool) (*Result, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waitFrees()
	if !walkLanesValid(g.walkLanes) {
		return nil, fmt.Errorf("art: walk lanes %d: want 1, 8, 16 or 32", g.walkLanes)
	}
	Q := b.n
	g.start()
	g.down.Discard()
	dsc := int32(0)
	if desc {
		dsc = 1
	}
	if g.pipes(into, Q, limit) {
		res, err := g.rangesPiped(into, b, limit, dsc)
		if err != nil {
			return nil, err
		}
		if err := g.finishLazy("ranges", Q, g.pipedTimings(Q, limit)); err != nil {
			return nil, err
		}
		g.step("drained")
		return res, nil
	}
	lo, hi, hb, err := g.uploadBatch(b)
	if be := asBoundErr(err, 0); be != nil {
		return nil, be
	}
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	if err := g.pool.Reserve(gpu.NeedOf[uint8]("q.dummy", 8)); err != nil {
		return nil, err
	}
	dummy := gpu.Take[uint8](g.pool, "q.dummy", 8)
	g.clock.Mark(g.s, engine.MarkUploaded)
	g.clock.Mark(g.s, engine.MarkSorted)
	if err := g.setDesc(g.t, nil); err != nil {
		return nil, err
	}
	g.step("bounds uploaded")
	perm, err := g.queryOrder(Q, dsc, lo, hi, hb)
	if err != nil {
		return nil, fmt.Errorf("order: %w", err)
	}
	g.step("order")
	var res *Result
	switch {
	case limit > 0 && Q*limit <= rangeSlotsMax && !g.collectRanges:
		res, err = g.rangesCands(into, Q, limit, dsc, perm, lo, hi, hb)
	case limit > 0 && Q*limit <= rangeSlotsMax:
		res, err = g.rangesSlots(into, Q, limit, dsc, perm, lo, hi, hb)
	default:
		res, err = g.rangesTwoPass(into, Q, limit, dsc, perm, lo, hi, hb, dummy)
	}
	if err != nil {
		return nil, err
	}
	if err := g.finish("ranges", Q); err != nil {
		return nil, err
	}
	g.step("drained")
	return res, nil
}

// pipedTimings returns what sets LastBatch's Work of the pipelined call
// just drained (Q queries, limit): the device's time in the chunks'
// kernels (rangePipe.work), not the span from the first walk to the last
// pairs (the host packs in between), into the Timings already recorded.
// Cost when run: 4 cuEventElapsedTime a chunk.
func (g *gpuEngine) pipedTimings(Q, limit int) func() {
	c := g.pipe.count(Q, limit)
	return func() {
		tm := g.last.Get()
		tm.Work = g.pipe.work(c)
		g.last.Set(tm)
	}
}

// checksBounds makes the GPU engine a boundChecker: packQueries checks
// every bound's length in the pass that packs it (Tree.query makes no
// pass of its own).
func (g *gpuEngine) checksBounds() {}

// querySortMin is the fewest queries whose walks are sorted by start: below
// it the sort costs more than the locality saves.
const querySortMin = 1 << 12

// queryOrder returns the order in which the range kernels take the
// queries when they are sorted: with sortQueries set and at least
// querySortMin queries, by the first 8 bytes of the key each walk starts
// from (aq_order_keys, then prim's device sort), so that the threads of a
// warp descend neighbouring paths and share the nodes they read; nil
// otherwise (the batch order, aq_scan and aq_collect). Cost: one kernel of
// one thread per query and a sort of Q 64-bit keys with 32-bit payloads.
func (g *gpuEngine) queryOrder(Q int, dsc int32, lo, hi *devBatch, hb *gpu.Buffer[uint8]) (*gpu.Buffer[uint32], error) {
	if Q < querySortMin || !g.sortQueries {
		return nil, nil
	}
	if err := g.pool.Reserve(gpu.NeedOf[uint32]("q.perm", Q), gpu.NeedOf[uint64]("q.sortkey", Q)); err != nil {
		return nil, err
	}
	perm, sk := gpu.Take[uint32](g.pool, "q.perm", Q), gpu.Take[uint64](g.pool, "q.sortkey", Q)
	return perm, firstErr(
		g.launch(g.k.qOrderKeys, Q, uint64(Q), lo.data, lo.offs, hi.data, hi.offs, hb, int32(dsc), sk, perm),
		prim.DevSortPairs(g.pe, sk, perm, Q))
}

// queueAnswers queues the downloads of a batch of queries' answers: the
// query offsets qoff (Q+1, converted into res.Offsets at the end of the
// batch by fin) and the pairs (their key offsets only when ooffs is not
// nil: the caller writes them otherwise).
func (g *gpuEngine) queueAnswers(res *Result, qoff *gpu.Buffer[uint64], okeys *gpu.Buffer[uint8], ooffs *gpu.Buffer[uint32],
	ovals *gpu.Buffer[uint64]) (fin func(), err error) {
	total := len(res.Values)
	offs := make([]uint64, len(res.Offsets))
	err = errors.Join(gpu.DownloadStaged(g.down, g.s, qoff, 0, offs), gpu.DownloadStaged(g.down, g.s, okeys, 0, res.Keys.Data))
	if ooffs != nil {
		err = errors.Join(err, gpu.DownloadStaged(g.down, g.s, ooffs, 0, res.Keys.Offs[:total]))
	}
	if err := errors.Join(err, gpu.DownloadStaged(g.down, g.s, ovals, 0, res.Values)); err != nil {
		return nil, err
	}
	return func() {
		for i, o := range offs {
			res.Offsets[i] = int(o)
		}
	}, nil
}

// rangesSlots is the single-walk form of ranges (limit > 0).
func (g *gpuEngine) rangesSlots(into *Result, Q, limit int, dsc int32, perm *gpu.Buffer[uint32], lo, hi *devBatch, hb *gpu.Buffer[uint8]) (*Result, error) {
	S := Q * limit
	if err := g.pool.Reserve(needsOf[uint64](S+1, "q.slots", "q.pres", "q.lens")...); err != nil {
		return nil, err
	}
	u64s := takeAll[uint64](g.pool, S+1, "q.slots", "q.pres", "q.lens")
	slots, pres, lens := u64s[0], u64s[1], u64s[2]
	var collect error
	if perm != nil {
		collect = g.launch(g.k.qCollectPerm, Q+1, g.descBuf, uint64(Q), perm, lo.data, lo.offs, hi.data, hi.offs, hb, uint64(limit), int32(dsc), slots, pres, lens)
	} else {
		collect = g.launch(g.k.qCollect, Q+1, g.descBuf, uint64(Q), lo.data, lo.offs, hi.data, hi.offs, hb, uint64(limit), int32(dsc), slots, pres, lens)
	}
	if err := firstErr(collect,
		prim.DevScanExclusive(g.pe, pres, pres, S+1), prim.DevScanExclusive(g.pe, lens, lens, S+1)); err != nil {
		return nil, fmt.Errorf("collect: %w", err)
	}
	out, err := g.answerSpace(pres, lens, nil, S, gpu.NeedOf[uint64]("q.qoff", Q+1))
	if err != nil {
		return nil, err
	}
	qoff := gpu.Take[uint64](g.pool, "q.qoff", Q+1)
	if err := g.launch(g.k.qEmit, S+1, g.descBuf, uint64(S), uint64(limit), slots, pres, lens, out.keys, out.offs, out.vals, qoff); err != nil {
		return nil, fmt.Errorf("emit: %w", err)
	}
	return g.deliver(into, Q, out, qoff)
}

// rangesTwoPass is the two-pass form of ranges (no limit, or too many
// slots).
func (g *gpuEngine) rangesTwoPass(into *Result, Q, limit int, dsc int32, perm *gpu.Buffer[uint32], lo, hi *devBatch, hb, dummy *gpu.Buffer[uint8]) (*Result, error) {
	if err := g.pool.Reserve(gpu.NeedOf[uint64]("q.cnt", Q+1), gpu.NeedOf[uint64]("q.bytes", Q+1)); err != nil {
		return nil, err
	}
	cnt, byt := gpu.Take[uint64](g.pool, "q.cnt", Q+1), gpu.Take[uint64](g.pool, "q.bytes", Q+1)
	lim := uint64(0)
	if limit > 0 {
		lim = uint64(limit)
	}
	scan := func(write int32, okeys, ooffs, ovals any) error {
		if perm != nil {
			return g.launch(g.k.qScanPerm, Q+1, g.descBuf, uint64(Q), perm, lo.data, lo.offs, hi.data, hi.offs, hb, uint64(lim), int32(dsc),
				int32(write), cnt, byt, okeys, ooffs, ovals)
		}
		return g.launch(g.k.qScan, Q+1, g.descBuf, uint64(Q), lo.data, lo.offs, hi.data, hi.offs, hb, uint64(lim), int32(dsc), int32(write),
			cnt, byt, okeys, ooffs, ovals)
	}
	if err := firstErr(scan(0, dummy, dummy, dummy),
		prim.DevScanExclusive(g.pe, cnt, cnt, Q+1), prim.DevScanExclusive(g.pe, byt, byt, Q+1)); err != nil {
		return nil, fmt.Errorf("count: %w", err)
	}
	out, err := g.answerSpace(cnt, byt, nil, Q)
	if err != nil {
		return nil, err
	}
	if err := scan(1, out.keys, out.offs, out.vals); err != nil {
		return nil, fmt.Errorf("write: %w", err)
	}
	return g.deliver(into, Q, out, cnt)
}

// answers are the sizes of a batch of queries' answers and the device
// buffers their pairs are written into.
type answers struct {
	total      int                 // pairs
	totalBytes uint64              // their key bytes
	keyLen     int                 // every pair's key length when all are equal and known so (else -1): offsets not downloaded
	keys       *gpu.Buffer[uint8]  // q.okeys: the pairs' key bytes
	offs       *gpu.Buffer[uint32] // q.ooffs: their key offsets
	vals       *gpu.Buffer[uint64] // q.ovals: their values
}

// answerSpace reads back the totals of a batch's answers, entry n of the
// exclusive scans of the pair counts cnt, key bytes byt and, when sq is
// not nil, the squares of the key lengths (one readback), and reserves
// (with the callers' extra needs) and takes the device buffers of the
// pairs. Cost: one readback.
func (g *gpuEngine) answerSpace(cnt, byt, sq *gpu.Buffer[uint64], n int, extra ...gpu.Need) (answers, error) {
	spans := []*gpu.Buffer[byte]{span(cnt, n, 1), span(byt, n, 1)}
	if sq != nil {
		spans = append(spans, span(sq, n, 1))
	}
	rb, err := g.readSpans(spans...)
	if err != nil {
		return answers{}, err
	}
	total, totalBytes := int(u64sOf(rb[0])[0]), u64sOf(rb[1])[0]
	if totalBytes > math.MaxUint32 {
		return answers{}, fmt.Errorf("%d key bytes in the answers: at most %d per call", totalBytes, uint64(math.MaxUint32))
	}
	keyLen := -1
	if sq != nil {
		keyLen = sameKeyLen(uint64(total), totalBytes, u64sOf(rb[2])[0])
	}
	needs := append([]gpu.Need{gpu.NeedOf[uint8]("q.okeys", int(totalBytes)), gpu.NeedOf[uint32]("q.ooffs", total+1),
		gpu.NeedOf[uint64]("q.ovals", total)}, extra...)
	if err := g.pool.Reserve(needs...); err != nil {
		return answers{}, err
	}
	return answers{total: total, totalBytes: totalBytes, keyLen: keyLen, keys: gpu.Take[uint8](g.pool, "q.okeys", int(totalBytes)),
		offs: gpu.Take[uint32](g.pool, "q.ooffs", total+1), vals: gpu.Take[uint64](g.pool, "q.ovals", total)}, nil
}

// deliver ends the work phase of a batch of Q queries whose pairs' writes
// are queued: it sizes the Result (into, or a new one) on the host while
// the device writes them, downloads the query offsets qoff (Q+1) and the
// pairs into it and waits for them; when every key has one length
// (out.keyLen) the host writes the key offsets while the rest downloads. A pinned Result (NewResult) takes
// them by DMA straight into its arrays; any other through the download
// pipeline's pinned chunks, copied out on all cores. Cost: the Result's
// allocation when it grows, overlapping the writes; the downloads.
func (g *gpuEngine) deliver(into *Result, Q int, out answers, qoff *gpu.Buffer[uint64]) (*Result, error) {
	g.clock.Mark(g.s, engine.MarkWorked)
	res, err := sizeResult(into, Q, out.total, out.totalBytes)
	if err != nil {
		return nil, err
	}
	if res.pinned() {
		err = errors.Join(qoff.Read(g.s, 0, offsetWords(res.Offsets)), out.keys.Read(g.s, 0, res.Keys.Data))
		if out.keyLen < 0 {
			err = errors.Join(err, out.offs.Read(g.s, 0, res.Keys.Offs[:out.total]))
		}
		err = errors.Join(err, out.vals.Read(g.s, 0, res.Values))
		if err != nil {
			return nil, err
		}
		if out.keyLen >= 0 {
			fillKeyOffsets(res.Keys.Offs[:out.total], out.keyLen)
		}
		return res, g.drain()
	}
	ooffs := out.offs
	if out.keyLen >= 0 {
		ooffs = nil
	}
	fin, err := g.queueAnswers(res, qoff, out.keys, ooffs, out.vals)
	if err != nil {
		return nil, err
	}
	if out.keyLen >= 0 {
		fillKeyOffsets(res.Keys.Offs[:out.total], out.keyLen)
	}
	if err := g.drain(); err != nil {
		return nil, err
	}
	fin()
	return res, nil
}
