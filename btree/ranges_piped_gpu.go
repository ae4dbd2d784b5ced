package btree

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// A pipelined ranges call (rangesPiped: the default form into a pinned
// Result) answers its queries chunk by chunk, each chunk placed in the
// Result as soon as it is counted, so that the answers' transfer starts
// after the first chunk rather than after every chunk's count: the bounds
// of chunk k are converted on all cores into pinned memory, reach the
// device by DMA and are counted (bt_range_start), their counts scanned on
// their own (prim's exclusive scan into the chunk's offsets) and the
// chunk's total stored into host memory mapped into the device
// (bt_range_total), all on the tree's stream s, an event after them.
// Then the host delivers the chunk: it waits for that event, reads the
// total, makes room in the Result, and queues on s the chunk's write pass
// into device buffers of its own (bt_range_copy) and its query offsets
// after the earlier chunks' pairs (bt_range_qout), and on the second
// stream s2, after an event, their downloads into the Result. Chunk k+1's
// conversion and count overlap chunk k's downloads, and the uploads of the
// bounds run beside the downloads (the link carries both directions at
// once). Chunk 0 holds a quarter of the others' queries, so that the
// first download starts sooner.

// rangeFirstDiv: chunk 0 of a pipelined ranges call holds
// 1/rangeFirstDiv of another chunk's queries.
const rangeFirstDiv = 4

// pipedChunks cuts q queries into chunks of size (chunksOf), chunk 0 of
// size/rangeFirstDiv (at least 1) when q is more than that.
func pipedChunks(q, size int) []chunk {
	first := max(1, size/rangeFirstDiv)
	if q <= first {
		return chunksOf(q, size)
	}
	return append([]chunk{{0, first}}, shiftChunks(chunksOf(q-first, size), first)...)
}

// shiftChunks adds d to every bound of cs.
func shiftChunks(cs []chunk, d int) []chunk {
	for i := range cs {
		cs[i].lo += d
		cs[i].hi += d
	}
	return cs
}

// rangesPiped answers the queries los, his (half-open when halfOpen, else
// inclusive; in descending key order with desc) of the default form into the pinned Result into, pipelined
// in chunks (the comment above). The caller holds g.mu and has started
// the batch. Its phases: Upload ends when chunk 0 is counted, Work when
// chunk 0's pairs are written, Download when every answer is on the host
// (the later chunks' uploads, counts and writes overlap the downloads).
// Cost: the conversion, DMA, count and scan of each chunk, an
// event wait and two small kernels a chunk, the write passes and the
// answers' downloads, which overlap the next chunks' work.
func (g *gpuTree) rangesPiped(into *Result, root uint32, los, his []uint64, limit int, halfOpen, desc bool) (*Result, engine.Timings, error) {
	var tm engine.Timings
	q := len(los)
	ch := pipedChunks(q, g.chunkOfRanges(pipedRangeChunk))
	C := len(ch)
	pass, bounds, err := g.rangeSetup(root, q, limit, desc, gpu.NeedOf[uint64]("rangeoffs", q+C), gpu.NeedOf[uint64]("rangeqout", q))
	if err != nil {
		return nil, tm, err
	}
	p := pipedRanges{g: g, pass: pass, r: into, q: q, ch: ch}
	p.offs, p.qout = gpu.Take[uint64](g.pool, "rangeoffs", q+C), gpu.Take[uint64](g.pool, "rangeqout", q)
	h, err := gpu.Host[uint64](g.pool, "host.q", 2*q)
	if err != nil {
		return nil, tm, err
	}
	evs, err := g.rangeEvents(2 * C)
	if err != nil {
		return nil, tm, err
	}
	p.counted, p.written = evs[:C], evs[C:]
	if err := g.rangeTotals(C); err != nil {
		return nil, tm, err
	}
	if err := p.size(); err != nil {
		return nil, tm, err
	}
	// The count of the last chunk's last query reads no further; its
	// scan's input word q is zeroed as in rangesBatch.
	if err := gpu.View[uint64](p.pass.counts, 8*q, 1).FillBytes(g.s, 0); err != nil {
		return nil, tm, err
	}
	for k, c := range ch {
		if err := p.pass.packAndCount(h, bounds, ch[k:k+1], los, his, halfOpen); err != nil {
			return nil, tm, err
		}
		if err := p.scan(k, c); err != nil {
			return nil, tm, err
		}
		if k == 0 {
			g.clock.Mark(g.s, engine.MarkUploaded)
		}
		if err := p.deliver(k, c); err != nil {
			return nil, tm, fmt.Errorf("chunk %d: %w", k, err)
		}
		if k == 0 {
			g.clock.Mark(g.s, engine.MarkWorked)
		}
	}
	g.step("ranges: chunks delivered")
	if err := g.joinBack(); err != nil {
		return nil, tm, err
	}
	g.clock.Mark(g.s, engine.MarkDone)
	if err := g.s.Synchronize(); err != nil {
		return nil, tm, err
	}
	g.step("ranges: download")
	r := p.r
	r.Keys, r.Values = r.Keys[:p.pairs], r.Values[:p.pairs]
	return r, g.clock.Timings("ranges", q), nil
}

// pipedRanges is one pipelined ranges call's state: its chunks, their
// device buffers and events, the Result and the pairs placed so far.
type pipedRanges struct {
	g                *gpuTree
	pass             rangePass
	r                *Result
	q                int
	ch               []chunk
	offs, qout       *gpu.Buffer[uint64] // chunk k's exclusive scan at offs[lo+k:], its query offsets at qout[lo:]
	counted, written []*gpu.Event        // chunk k counted and scanned; written (on s)
	pairs            int                 // placed in the Result by the chunks delivered
	queued           bool                // downloads queued on s2
}

// size sizes the Result's query offsets for the call and points its keys
// and values at the pairs it already holds room for.
func (p *pipedRanges) size() error {
	r := p.r
	var err error
	if r.Offsets, err = gpu.HostArray[int](r.pin, "offsets", p.q+1); err != nil {
		return fmt.Errorf("pinning the answers: %w", err)
	}
	r.Offsets[0] = 0
	return r.pinnedPairs(0, 0, r.pairsCap())
}

// chunkOffs is chunk k's (c) scanned offsets, n+1 words.
func (p *pipedRanges) chunkOffs(k int, c chunk) *gpu.Buffer[uint64] {
	return gpu.View[uint64](p.offs, 8*(c.lo+k), c.n()+1)
}

// scan queues chunk k's (c) exclusive scan of its counts into its offsets
// and the copy of its total into the mapped totals, then records its
// counted event.
func (p *pipedRanges) scan(k int, c chunk) error {
	g := p.g
	offs := p.chunkOffs(k, c)
	if err := prim.DevScanExclusive(g.pe, gpu.View[uint64](p.pass.counts, 8*c.lo, c.n()+1), offs, c.n()+1); err != nil {
		return fmt.Errorf("chunk %d: scan: %w", k, err)
	}
	if err := errors.Join(g.launch(g.k.rngTotal, 1, uint64(c.n()), offs, g.rangeTot.PtrAt(k)), p.counted[k].Record(g.s)); err != nil {
		return fmt.Errorf("chunk %d: total: %w", k, err)
	}
	return nil
}

// deliver waits for chunk k's (c) total, makes room for its pairs in the
// Result after the earlier chunks', and queues its write pass and query
// offsets on s and their downloads into the Result on s2.
func (p *pipedRanges) deliver(k int, c chunk) error {
	g, r := p.g, p.r
	if err := p.counted[k].Synchronize(); err != nil {
		return err
	}
	g.trace.Synced()
	n := int(atomic.LoadUint64(&g.rangeTot.Slice()[k]))
	base := p.pairs
	if err := p.room(base+n, c); err != nil {
		return err
	}
	offs := p.chunkOffs(k, c)
	kn, vn := fmt.Sprintf("rangek.%d", k), fmt.Sprintf("rangev.%d", k)
	if err := g.pool.Reserve(gpu.NeedOf[uint64](kn, n), gpu.NeedOf[uint64](vn, n)); err != nil {
		return err
	}
	ok, ov := gpu.Take[uint64](g.pool, kn, n), gpu.Take[uint64](g.pool, vn, n)
	qout := gpu.View[uint64](p.qout, 8*c.lo, c.n())
	if n > 0 {
		if err := p.pass.copy(c, offs, ok, ov); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	if err := errors.Join(g.launch(g.k.rngQout, c.n(), uint64(c.n()), offs, uint64(base), qout), p.written[k].Record(g.s),
		g.s2.Wait(p.written[k])); err != nil {
		return fmt.Errorf("query offsets: %w", err)
	}
	offWords := unsafe.Slice((*uint64)(unsafe.Pointer(&r.Offsets[0])), p.q+1) // int is 64-bit (ranges_gpu.go)
	err := qout.Read(g.s2, 0, offWords[c.lo+1:c.hi+1])
	if n > 0 {
		err = errors.Join(err, ok.Read(g.s2, 0, r.Keys[base:base+n]), ov.Read(g.s2, 0, r.Values[base:base+n]))
	}
	if err != nil {
		return fmt.Errorf("downloads: %w", err)
	}
	p.queued = true
	p.pairs = base + n
	return nil
}

// room makes the Result's keys and values hold need pairs, keeping the
// pairs placed so far: when they are short (the first calls into a
// Result), after the downloads queued so far, grown to need extrapolated
// to the whole call (chunk c the last counted) and an eighth more.
func (p *pipedRanges) room(need int, c chunk) error {
	if need <= p.r.pairsCap() {
		return p.r.pinnedPairs(need, 0, need)
	}
	if p.queued {
		if err := p.g.s2.Synchronize(); err != nil {
			return err
		}
	}
	want := int(int64(need)*int64(p.q)/int64(c.hi)) + need/8
	return p.r.pinnedPairs(need, p.pairs, want)
}

// rangeTotals makes sure the tree's mapped chunk totals hold c words.
// Cost: a cuMemHostAlloc of mapped memory the first time a call has that
// many chunks.
func (g *gpuTree) rangeTotals(c int) error {
	var err error
	g.rangeTot, err = gpu.MappedAtLeast(g.dev, g.rangeTot, c)
	return err
}

// pinnedPairs points a pinned Result's keys and values at n pairs of its
// pinned arrays, keeping the first keep: views when the arrays hold n
// pairs already (pairsCap), else (no transfer into them may still be
// queued) new arrays of want pairs (at least n) with the kept pairs
// copied into them. With nothing to hold (n and want 0) it pins nothing.
// Cost: O(1), or the growth: two frees, two cuMemHostAlloc and one host
// copy of keep pairs.
func (r *Result) pinnedPairs(n, keep, want int) error {
	if n > r.pairsCap() {
		want = max(want, n)
	} else {
		want, keep = n, 0
	}
	var err error
	if r.Keys, err = gpu.HostArrayKeep[uint64](r.pin, "keys", want, keep); err == nil {
		r.Values, err = gpu.HostArrayKeep[uint64](r.pin, "values", want, keep)
	}
	if err != nil {
		r.Keys, r.Values = nil, nil
		return fmt.Errorf("pinning the answers: %w", err)
	}
	r.Keys, r.Values = r.Keys[:n], r.Values[:n]
	return nil
}
