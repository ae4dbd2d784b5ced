package btree

import (
	"errors"
	"unsafe"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/prim"
)

// rangeForm is a choice of the GPU engine's range kernels
// (gpuTree.rangeForm).
type rangeForm int

const (
	// rangeOneDescent, the default: bt_range_start (one thread per query)
	// descends once, keeps where the query's pairs start and counts them;
	// after the scan of the counts, bt_range_copy (one warp per query)
	// copies them from there with coalesced loads and stores.
	rangeOneDescent rangeForm = iota
	// rangeThread: bt_range in both passes, one thread per query, each
	// pass descending and comparing keys.
	rangeThread
	// rangeWarp: bt_range_warp in both passes, one warp per query that
	// descends once (the write pass starts where the count pass kept).
	rangeWarp
)

// rangesBatch answers range queries on the device in chunks of
// chunkOfRanges' queries, in ascending key order or, with desc,
// descending (every kernel takes the direction: ranges.cu). Into a pinned Result in the default form
// the call is pipelined (rangesPiped: each chunk placed in the Result and
// downloaded as soon as it is counted). Otherwise each chunk's bounds (half-open when
// halfOpen, else inclusive) are converted to inclusive ones on all cores
// (par.Shared) straight into the pool's pinned buffer host.q, reach the
// device by DMA and are counted there (one descent per query: the count
// and, in the default form, where its pairs start) while the host packs
// the next chunk (packAndCount). Then prim's exclusive scan of the counts and one read of
// the total and of each chunk's first offset; the write pass runs chunk by
// chunk on the tree's stream (the default form copies from the kept
// starts without a descent; see rangeForm; the other forms write in one
// piece), and each chunk's pairs go to the host on the second stream as
// soon as they are written, so that the answers' transfer overlaps the
// later chunks' writes, while the host sizes the Result (into, or a new
// one): a pinned one (NewResult) takes them by DMA straight into its
// arrays, any other through the pinned staging buffers (copied out of
// pinned memory in parallel, overlapping the later chunks' DMAs). The
// tree must not be empty. Phases: Upload ends when the last chunk is counted, Work when the
// last is written, Download when every answer is on the host. Cost: two
// kernels, a scan, the transfers of the queries and the result, one
// synchronization in between.
func (g *gpuTree) rangesBatch(into *Result, root uint32, los, his []uint64, limit int, halfOpen, desc bool) (*Result, engine.Timings, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var tm engine.Timings
	q := len(los)
	g.start()
	g.down.Discard()
	if into.pinned() && g.rangeForm == rangeOneDescent {
		r, tm, err := g.rangesPiped(into, root, los, his, limit, halfOpen, desc)
		if err != nil {
			// Nothing the call queued may run on after it.
			err = errors.Join(err, g.s.Synchronize(), g.s2.Synchronize())
		}
		return r, tm, err
	}
	p, bounds, err := g.rangeSetup(root, q, limit, desc)
	if err != nil {
		return nil, tm, err
	}
	counts := p.counts
	ch := chunksOf(q, g.chunkOfRanges(gpuRangeChunk))
	h, err := gpu.Host[uint64](g.pool, "host.q", 2*q+len(ch)+1)
	if err != nil {
		return nil, tm, err
	}
	firsts := h[2*q:] // each chunk's first offset, then the total
	if err := p.packAndCount(h, bounds, ch, los, his, halfOpen); err != nil {
		return nil, tm, err
	}
	if err := gpu.View[uint64](counts, 8*q, 1).FillBytes(g.s, 0); err != nil {
		return nil, tm, err
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	g.step("ranges: pack, upload, count")
	if err := prim.DevScanExclusive(g.pe, counts, counts, q+1); err != nil {
		return nil, tm, err
	}
	for i, c := range ch {
		if err := counts.Read(g.s, c.lo, firsts[i:i+1]); err != nil {
			return nil, tm, err
		}
	}
	g.trace.Synced()
	if err := errors.Join(counts.Read(g.s, q, firsts[len(ch):]), g.s.Synchronize()); err != nil {
		return nil, tm, err
	}
	g.step("ranges: scan, readback: offsets")
	total := int(firsts[len(ch)])
	if err := g.pool.Reserve(gpu.NeedOf[uint64](bufOutK, total), gpu.NeedOf[uint64]("rangev", total)); err != nil {
		return nil, tm, err
	}
	// outV holds the offsets; the values go to a scratch buffer of their own.
	ok, ov := gpu.Take[uint64](g.pool, bufOutK, total), gpu.Take[uint64](g.pool, "rangev", total)
	written, err := g.rangeEvents(len(ch))
	if err != nil {
		return nil, tm, err
	}
	if total > 0 {
		if g.rangeForm == rangeOneDescent {
			for i, c := range ch {
				if err := errors.Join(p.write(bounds, q, c, ok, ov), written[i].Record(g.s)); err != nil {
					return nil, tm, err
				}
			}
		} else if err := errors.Join(p.write(bounds, q, chunk{0, q}, ok, ov), written[len(ch)-1].Record(g.s)); err != nil {
			return nil, tm, err
		}
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	g.step("ranges: write")
	// The host's allocations overlap the write pass.
	r, err := sizeResult(into, q, total)
	if err != nil {
		return nil, tm, err
	}
	offWords := unsafe.Slice((*uint64)(unsafe.Pointer(&r.Offsets[0])), q+1) // int is 64-bit (below)
	down := func(b *gpu.Buffer[uint64], off int, dst []uint64) error {
		if r.pinned() {
			return b.Read(g.s2, off, dst)
		}
		return gpu.DownloadStaged(g.down, g.s2, b, off, dst)
	}
	// The offsets were scanned before the host's synchronization.
	if err := down(counts, 0, offWords); err != nil {
		return nil, tm, err
	}
	for i := range ch {
		a, b := int(firsts[i]), int(firsts[i+1]) // firsts[len(ch)] is the total
		if a == b {
			continue
		}
		ev := written[i]
		if g.rangeForm != rangeOneDescent {
			ev = written[len(ch)-1]
		}
		if err := errors.Join(g.s2.Wait(ev), down(ok, a, r.Keys[a:b]), down(ov, a, r.Values[a:b])); err != nil {
			return nil, tm, err
		}
	}
	if err := g.joinBack(); err != nil {
		return nil, tm, err
	}
	g.clock.Mark(g.s, engine.MarkDone)
	if err := errors.Join(g.down.Drain(), g.s.Synchronize()); err != nil {
		return nil, tm, err
	}
	g.step("ranges: download")
	return r, g.clock.Timings("ranges", q), nil
}

// gpuRangeChunk is the queries of one chunk of a ranges call (rangesBatch):
// 2 MiB of each bound, the pairs of 256Ki queries of ~16 keys (64 MiB)
// per transfer of the answers. At 1M queries of 16 keys in a 100M-key
// tree on the H200 host, 256Ki chunks measured 152.6 M queries/s against
// 146.3 (128Ki), 145.3 (512Ki), 138.1 (one chunk) and 122.6 (32Ki) in
// one run (BENCHMARKS.md, branch bgo): smaller chunks cost more host time
// per chunk than their overlap gains.
const gpuRangeChunk = 1 << 18

// pipedRangeChunk is the queries of one chunk of a pipelined ranges call
// (rangesPiped; chunk 0 a quarter of it): at 1M queries of 16 keys in a
// 100M-key tree on the H200 host, 128Ki chunks measured 190.0 M queries/s
// against 184.1 (256Ki), 183.1 (32Ki), 176.7 (512Ki) and 172.5 (one
// chunk) in one run (BENCHMARKS.md, branch arng5).
const pipedRangeChunk = 1 << 17

// chunkOfRanges returns the queries of one chunk of a ranges call: the
// tree's rangeChunkSize (tests set it small), else def (gpuRangeChunk, or
// pipedRangeChunk for a pipelined call).
func (g *gpuTree) chunkOfRanges(def int) int {
	if g.rangeChunkSize > 0 {
		return g.rangeChunkSize
	}
	return def
}

// chunk is the queries [lo, hi) of a ranges call.
type chunk struct{ lo, hi int }

// n returns the chunk's queries.
func (c chunk) n() int { return c.hi - c.lo }

// chunksOf cuts n queries into chunks of size (the last one shorter; one
// empty chunk when n is 0). Cost: O(n/size).
func chunksOf(n, size int) []chunk {
	size = max(size, 1)
	cs := make([]chunk, 0, (n+size-1)/size+1)
	for lo := 0; lo < n || len(cs) == 0; lo += size {
		cs = append(cs, chunk{lo, min(lo+size, n)})
	}
	return cs
}

// rangeSetup reserves and takes the device buffers of a ranges call of q
// queries that both rangesBatch and rangesPiped use, reserving more
// (rangesPiped's own) with them: the bounds (2q words, returned), and the
// call's rangePass with its counts (q+1 words: the scan's total after
// them) and starts (q words), limit (0 or less: none) and direction
// (desc: descending). Cost: the pool's growth of the buffers that are
// short.
func (g *gpuTree) rangeSetup(root uint32, q, limit int, desc bool, more ...gpu.Need) (rangePass, *gpu.Buffer[uint64], error) {
	needs := append([]gpu.Need{gpu.NeedOf[uint64]("rangeq", 2*q), gpu.NeedOf[uint64](bufOutV, q+1),
		gpu.NeedOf[uint64]("rangestart", q)}, more...)
	if err := g.pool.Reserve(needs...); err != nil {
		return rangePass{}, nil, err
	}
	p := rangePass{g: g, root: root, counts: gpu.Take[uint64](g.pool, bufOutV, q+1), start: gpu.Take[uint64](g.pool, "rangestart", q),
		link: g.next}
	if limit > 0 {
		p.limit = uint64(limit)
	}
	if desc {
		p.desc, p.link = 1, g.prv
	}
	return p, gpu.Take[uint64](g.pool, "rangeq", 2*q), nil
}

// rangeEvents returns n events of the tree for the ends of a ranges
// call's chunk writes, creating those it lacks (closeStreams frees them).
func (g *gpuTree) rangeEvents(n int) ([]*gpu.Event, error) {
	for len(g.rangeEv) < n {
		e, err := g.dev.NewEvent()
		if err != nil {
			return nil, err
		}
		g.rangeEv = append(g.rangeEv, e)
	}
	return g.rangeEv[:n], nil
}

// packAndCount converts the bounds of each chunk of ch (of len(los)
// queries in all) into h (packBounds: lower bounds in h[:q], upper ones in
// h[q:2q]), copies them to bounds by DMA and queues the chunk's count
// pass, all on the tree's stream, before it converts the next chunk.
// (Issuing the DMAs and launches from a goroutine of their own measured no
// faster on the H200 host: BENCHMARKS.md, branch bgo.) Cost: one parallel
// pass over the bounds, two DMAs and a launch per chunk.
func (p rangePass) packAndCount(h []uint64, bounds *gpu.Buffer[uint64], ch []chunk, los, his []uint64, halfOpen bool) error {
	g, q := p.g, len(los)
	for _, c := range ch {
		packBounds(h[c.lo:c.hi], h[q+c.lo:q+c.hi], los[c.lo:c.hi], his[c.lo:c.hi], halfOpen, 0)
		if err := errors.Join(gpu.View[uint64](bounds, 8*c.lo, c.n()).Write(g.s, 0, h[c.lo:c.hi]),
			gpu.View[uint64](bounds, 8*(q+c.lo), c.n()).Write(g.s, 0, h[q+c.lo:q+c.hi]), p.count(bounds, q, c)); err != nil {
			return err
		}
	}
	return nil
}

// rangePackMin is the fewest queries one worker converts.
const rangePackMin = 1 << 13

// packBounds writes the queries' inclusive bounds into hl, hh (the lower
// and the upper ones, each len(los)), converting half-open ones
// (inclusive) on the workers of par.Shared. Cost: one parallel pass over
// the bounds.
func packBounds(hl, hh, los, his []uint64, halfOpen bool, workers int) {
	q := len(los)
	par.Shared().Ranges(q, par.Parts(q, rangePackMin, workers), func(_, a, b int) {
		if !halfOpen {
			copy(hl[a:b], los[a:b])
			copy(hh[a:b], his[a:b])
			return
		}
		for i := a; i < b; i++ {
			hl[i], hh[i] = inclusive(los[i], his[i])
		}
	})
}

// rangePass holds the arguments of a batch's range kernels.
type rangePass struct {
	g             *gpuTree
	limit         uint64 // 0: none
	root          uint32
	desc          int32               // 1: descending key order, 0: ascending
	link          *gpu.Buffer[uint32] // the leaf chain the walks follow: g.next, or g.prv descending
	counts, start *gpu.Buffer[uint64] // per query: pairs (then their scan), where they start
}

// count launches the count pass of the tree's rangeForm over the queries
// of c, of q in all whose inclusive bounds are bounds[:q] (lower) and
// bounds[q:] (upper): counts[i] (and start[i] in the default and warp
// forms) for each.
func (p rangePass) count(bounds *gpu.Buffer[uint64], q int, c chunk) error {
	g := p.g
	lo, hi := gpu.View[uint64](bounds, 8*c.lo, c.n()), gpu.View[uint64](bounds, 8*(q+c.lo), c.n())
	counts, start := gpu.View[uint64](p.counts, 8*c.lo, c.n()), gpu.View[uint64](p.start, 8*c.lo, c.n())
	switch g.rangeForm {
	case rangeWarp:
		return g.k.rngWarp.Launch(g.s, warpGrid(c.n()), gpu.D1(kernelBlock), 0, lo, hi, uint64(c.n()), p.limit, p.root,
			uint32(g.height), uint32(g.order), g.keys, g.slots, g.count, p.link, p.desc, 0, counts, start, counts, counts, counts)
	case rangeThread:
		return g.k.rng.Launch(g.s, grid(c.n()), gpu.D1(kernelBlock), 0, lo, hi, uint64(c.n()), p.limit, p.root,
			uint32(g.height), uint32(g.order), g.keys, g.slots, g.count, p.link, p.desc, 0, counts, counts, counts, counts)
	}
	return g.k.rngStart.Launch(g.s, grid(c.n()), gpu.D1(kernelBlock), 0, lo, hi, uint64(c.n()), p.limit, p.root,
		uint32(g.height), uint32(g.order), g.keys, g.slots, g.count, p.link, p.desc, start, counts)
}

// write launches the write pass of the tree's rangeForm over the queries
// of c (bounds and q as for count): each query's pairs into the device
// buffers outK, outV at its scanned offset (counts, after the scan). The thread and warp
// forms take c whole (all q queries).
func (p rangePass) write(bounds *gpu.Buffer[uint64], q int, c chunk, outK, outV *gpu.Buffer[uint64]) error {
	g := p.g
	lo, hi := gpu.View[uint64](bounds, 0, q), gpu.View[uint64](bounds, 8*q, q)
	switch g.rangeForm {
	case rangeWarp:
		return g.k.rngWarp.Launch(g.s, warpGrid(q), gpu.D1(kernelBlock), 0, lo, hi, uint64(q), p.limit, p.root,
			uint32(g.height), uint32(g.order), g.keys, g.slots, g.count, p.link, p.desc, 1, p.counts, p.start, p.counts, outK, outV)
	case rangeThread:
		return g.k.rng.Launch(g.s, grid(q), gpu.D1(kernelBlock), 0, lo, hi, uint64(q), p.limit, p.root,
			uint32(g.height), uint32(g.order), g.keys, g.slots, g.count, p.link, p.desc, 1, p.counts, p.counts, outK, outV)
	}
	// offs[i+1] of the chunk's last query is the next chunk's first.
	return p.copy(c, gpu.View[uint64](p.counts, 8*c.lo, c.n()+1), outK, outV)
}

// copy launches bt_range_copy over the queries of c: their pairs, from
// where the count pass kept their starts, into outK, outV at offs (c's
// n+1 scanned offsets, relative to outK and outV).
func (p rangePass) copy(c chunk, offs, outK, outV *gpu.Buffer[uint64]) error {
	g := p.g
	return g.k.rngCopy.Launch(g.s, warpGrid(c.n()), gpu.D1(kernelBlock), 0, uint64(c.n()), uint32(g.order), g.keys, g.slots,
		g.count, p.link, p.desc, gpu.View[uint64](p.start, 8*c.lo, c.n()), offs, outK, outV)
}

// Offsets are read from the device's 64-bit words straight into []int.
var _ [1]struct{} = [unsafe.Sizeof(int(0)) / 8]struct{}{}
