package art

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// A pipelined call (rangesPiped) cuts a batch of bounded range or prefix
// queries answered into a pinned Result into a few chunks of contiguous
// queries. The workers pack chunk k+1 into pinned memory of its own while
// the caller's goroutine queues chunk k on the engine's stream s: its
// upload, walk, one scan of its counts (countsLayout), a_totals, which
// copies its totals into host memory mapped into the device (not a
// readback: a copy would queue behind the earlier chunks' downloads on
// the copy engine), and aq_pairs (queuePairs), which places the chunk's
// pairs after the earlier chunks' (it adds their pairs and key bytes to
// the offsets it writes and writes the chunk's query offsets as the
// Result's own) into room guessed for its keys. The host then waits for
// the chunk's totals (an event, no stream synchronization), makes room
// for its keys in the Result (running its pairs again when the guess was
// short) and queues its downloads straight into the Result on the stream
// out, which waits for an event after the pairs. The answers of one chunk
// cross the link while later chunks are packed, walked and written, and
// the call's critical path is the first chunk's packing, walk and pairs
// (chunk 0 may be smaller than the others: rangePipe.firstDiv), then the
// answers' transfer. Key offsets the host writes (chunks whose keys have
// one length) are written in one job after every download is queued.
//
// Until branch artone this path was five options (oneScan, fillOnce,
// lazyTimes, packAhead, pairsEarly; BENCHMARKS.md, branch arng7) beside
// an older one, switched by WARPKV_ART_RANGE_OPTS; the options were
// adopted and the older path removed.

// pipes reports whether a call of Q queries with limit into into runs
// pipelined: into a pinned Result, in the form of rangesCands (a limit,
// at most rangeSlotsMax slots, not collectRanges), in the batch order
// (not sortQueries), and in at least two chunks.
func (g *gpuEngine) pipes(into *Result, Q, limit int) bool {
	return into.pinned() && limit > 0 && Q*limit <= rangeSlotsMax && !g.collectRanges && !g.sortQueries && g.pipe.count(Q, limit) > 1
}

// pipeChunk is one chunk of a pipelined call on the device: its queries
// [a, b) and its buffers. The walk's pair counts, key bytes and squared
// key lengths of the chunk's n queries lie in one buffer, counts, as
// cnt | byt | sq (views of it), n+1 words each (entry n zero: the walk
// writes it), so that one exclusive scan of the 3(n+1) words gives all
// three (countsLayout).
type pipeChunk struct {
	a, b                        int
	slots, counts, cnt, byt, sq *gpu.Buffer[uint64]
	ccnt                        *gpu.Buffer[uint32]
	qout                        *gpu.Buffer[uint64]

	// The answer buffers aq_pairs writes (queuePairs): okeys holds kcap
	// bytes, ovals and ooffs one entry an answer slot.
	okeys *gpu.Buffer[uint8]
	ovals *gpu.Buffer[uint64]
	ooffs *gpu.Buffer[uint32]
	kcap  int
}

// countsLayout: one exclusive scan X of a chunk's counts buffer, cnt |
// byt | sq of n+1 words each with entry n zero, leaves X[q] = the pairs
// before query q (cnt's own scan, X[n] = N, the chunk's pairs), X[n+1+q]
// = N + the key bytes before query q (X[2n+1] = N+B) and X[2n+2+q] = N+B
// + the squared lengths before q (X[3n+2] = N+B+S). So aq_pairs takes
// byt's view as its key offsets less its first entry, N, and a_totals
// copies N, N+B and N+B+S, which chunkTotals differences: the same
// answers as three scans, in one memset and one kernel where they took
// three each.

// rangesPiped answers bt (bounded ranges or prefix scans, limit > 0) into
// the pinned Result into in chunks (the comment above). The Result's
// query offsets are sized at once, its values and key offsets for the
// most pairs the call can have (Q*limit, kept for the next calls), its
// keys as each chunk's totals come (grown, keeping the earlier chunks'
// keys after their downloads, when short). Cost: the packing and walks of
// rangesCands in chunks, a one-thread kernel and an event wait per chunk;
// the downloads overlap the next chunks' packing, walks and pairs.
func (g *gpuEngine) rangesPiped(into *Result, bt queryBatch, limit int, dsc int32) (res *Result, err error) {
	Q := bt.n
	defer g.syncOnError(&err)
	call := &pipedCall{g: g, res: into, Q: Q, limit: limit}
	if call.chunks, err = g.chunkedCall(Q, limit); err != nil {
		return nil, err
	}
	C := len(call.chunks)
	if err := g.pipe.totals(g.dev, C); err != nil {
		return nil, err
	}
	if err := into.pinRangeArrays(Q, Q*limit); err != nil {
		return nil, err
	}
	g.step("chunks taken")
	if err := call.run(bt, dsc); err != nil {
		return nil, err
	}
	return call.finish()
}

// chunkedCall begins a call of Q queries with limit in chunks
// (rangesPiped): the pipe's events for its chunks
// (rangePipe.count), the tree's descriptor, and the chunks with their
// buffers (takeRangeChunks).
func (g *gpuEngine) chunkedCall(Q, limit int) ([]pipeChunk, error) {
	C := g.pipe.count(Q, limit)
	if err := g.pipe.events(g.dev, C); err != nil {
		return nil, err
	}
	if err := g.setDesc(g.t, nil); err != nil {
		return nil, err
	}
	return g.takeRangeChunks(Q, C, limit)
}

// syncOnError waits, when *err is set, for everything queued on the
// engine's three streams (nothing a failed chunked call queued may run on
// after it), joining their errors to *err. Deferred by the chunked calls.
func (g *gpuEngine) syncOnError(err *error) {
	if *err != nil {
		*err = errors.Join(*err, g.s.Synchronize(), g.in.Synchronize(), g.out.Synchronize())
	}
}

// takeRangeChunks cuts a call of Q queries into C chunks and takes each
// chunk's device buffers (candidate slots for limit answers a query, the
// counts (countsLayout) and query offsets) from the pool, reserved at
// once.
func (g *gpuEngine) takeRangeChunks(Q, C, limit int) ([]pipeChunk, error) {
	chunks := make([]pipeChunk, C)
	var needs []gpu.Need
	for k := range chunks {
		a, b := g.pipe.bound(Q, C, k), g.pipe.bound(Q, C, k+1)
		n, nm := b-a, &g.pipe.names[k]
		chunks[k] = pipeChunk{a: a, b: b}
		needs = append(needs, gpu.NeedOf[uint64](nm[bSlots], n*limit), gpu.NeedOf[uint32](nm[bCcnt], n), gpu.NeedOf[uint64](nm[bQout], n),
			gpu.NeedOf[uint64](nm[bCounts], 3*(n+1)))
	}
	if err := g.pool.Reserve(needs...); err != nil {
		return nil, err
	}
	for k := range chunks {
		c, nm := &chunks[k], &g.pipe.names[k]
		n := c.b - c.a
		c.slots, c.ccnt = gpu.Take[uint64](g.pool, nm[bSlots], n*limit), gpu.Take[uint32](g.pool, nm[bCcnt], n)
		c.qout, c.counts = gpu.Take[uint64](g.pool, nm[bQout], n), gpu.Take[uint64](g.pool, nm[bCounts], 3*(n+1))
		c.cnt, c.byt, c.sq = gpu.View[uint64](c.counts, 0, n+1), gpu.View[uint64](c.counts, 8*(n+1), n+1), gpu.View[uint64](c.counts, 16*(n+1), n+1)
	}
	return chunks, nil
}

// pinRangeArrays sizes the pinned Result's query offsets for Q queries and
// its values and key offsets for maxPairs pairs, and empties its keys.
func (res *Result) pinRangeArrays(Q, maxPairs int) error {
	var err error
	if res.Offsets, err = gpu.HostArray[int](res.pin, "offsets", Q+1); err == nil {
		if res.Values, err = gpu.HostArray[uint64](res.pin, "values", maxPairs); err == nil {
			res.Keys.Offs, err = gpu.HostArray[uint32](res.pin, "offs", maxPairs+1)
		}
	}
	if err != nil {
		return fmt.Errorf("pinning the answers: %w", err)
	}
	res.Keys.Data = res.Keys.Data[:0]
	res.Offsets[0] = 0
	return nil
}

// pipedCall is one pipelined call's state on the host: its chunks, the
// Result, and what has been delivered of them so far.
type pipedCall struct {
	g        *gpuEngine
	res      *Result
	chunks   []pipeChunk
	Q, limit int

	queued          bool      // downloads queued on out
	pairs, keyBytes int       // the chunks' before the next one delivered
	fills           []keyFill // the key offsets the host writes
}

// run packs and delivers every chunk: the workers pack chunk k+1 (on a
// goroutine of its own, the pool's caller) while this goroutine queues
// chunk k's upload, walk and pairs, waits for its totals and delivers it,
// so that a chunk's host time is the longer of its packing and its
// queueing and delivery, not their sum, and chunk 0's downloads start
// once its walk and pairs are done. The pool's buffers are taken under a
// lock both hold (gpu.Pool is not safe for concurrent use). A failed
// packing is returned once the chunk before it is queued; no goroutine
// outlives the call.
func (p *pipedCall) run(bt queryBatch, dsc int32) (err error) {
	g := p.g
	var mu sync.Mutex // g.pool, between the packer and this goroutine
	type packed struct {
		pc  packedChunk
		err error
	}
	pack := func(k int) packed {
		pc, err := g.packChunk(&p.chunks[k], k, bt, func(m int) ([]byte, error) {
			mu.Lock()
			defer mu.Unlock()
			return gpu.Host[byte](g.pool, g.pipe.names[k][bHostQ], m)
		})
		return packed{pc, err}
	}
	var next chan packed // the packing in flight, if any
	defer func() {
		if next != nil {
			<-next
		}
	}()
	cur := pack(0)
	for k := range p.chunks {
		if be := asBoundErr(cur.err, p.chunks[k].a); be != nil {
			return be
		}
		if cur.err != nil {
			return cur.err
		}
		if k+1 < len(p.chunks) {
			next = make(chan packed, 1)
			go func(k int, ch chan<- packed) { ch <- pack(k) }(k+1, next)
		}
		mu.Lock()
		err := g.queueRangeChunk(&p.chunks[k], k, cur.pc, p.limit, dsc)
		if err == nil {
			err = p.queuePairs(k)
		}
		mu.Unlock()
		if err != nil {
			return err
		}
		if k == 0 {
			g.clock.Mark(g.s, engine.MarkUploaded)
			g.clock.Mark(g.s, engine.MarkSorted)
		}
		if err := p.deliver(k, &mu); err != nil {
			return fmt.Errorf("chunk %d: %w", k, err)
		}
		if next != nil {
			cur, next = <-next, nil
		}
	}
	return nil
}

// deliver waits for chunk k's totals (outside mu), then, under mu, makes
// room for its keys in the Result, runs its pairs again when their keys
// did not fit the room queuePairs guessed, queues its answers' downloads
// on out (after the pairs) and counts its pairs and key bytes.
func (p *pipedCall) deliver(k int, mu *sync.Mutex) error {
	if err := p.g.pipe.walked[k].Synchronize(); err != nil {
		return err
	}
	p.g.trace.Synced()
	mu.Lock()
	defer mu.Unlock()
	g, res, c := p.g, p.res, &p.chunks[k]
	n, nb, sq := g.pipe.chunkTotals(k)
	if err := p.keyRoom(c, nb); err != nil {
		return err
	}
	// Every key of the chunk has one length (keyLen >= 0): the host
	// writes its key offsets rather than download them.
	keyLen := sameKeyLen(uint64(n), uint64(nb), sq)
	if nb > c.kcap { // the keys did not fit the room queuePairs guessed: the pairs again, with room
		g.pipe.keySlot = max(g.pipe.keySlot, (nb+nb/8)/max(1, (c.b-c.a)*p.limit)+1)
		name := g.pipe.names[k][bOkeys]
		if err := g.pool.Reserve(gpu.NeedOf[uint8](name, nb)); err != nil {
			return err
		}
		c.okeys, c.kcap = gpu.Take[uint8](g.pool, name, nb), nb
		if err := p.launchPairs(k); err != nil {
			return err
		}
	}
	if err := g.out.Wait(g.pipe.paired[k]); err != nil {
		return err
	}
	p.queued = true
	pairs, keyBytes := p.pairs, p.keyBytes
	err := errors.Join(c.qout.Read(g.out, 0, offsetWords(res.Offsets[c.a+1:c.b+1])),
		c.okeys.Read(g.out, 0, res.Keys.Data[keyBytes:keyBytes+nb]))
	if keyLen < 0 {
		err = errors.Join(err, c.ooffs.Read(g.out, 0, res.Keys.Offs[pairs:pairs+n]))
	}
	if err = errors.Join(err, c.ovals.Read(g.out, 0, res.Values[pairs:pairs+n])); err != nil {
		return err
	}
	if g.trace != nil {
		e, err := g.pipe.fetchedEvent(g.dev, k)
		if err != nil {
			return err
		}
		if err := e.Record(g.out); err != nil {
			return err
		}
	}
	if keyLen >= 0 {
		p.fills = append(p.fills, keyFill{pairs, n, uint32(keyBytes), keyLen})
	}
	g.stepN("chunk %d delivered", k)
	p.pairs, p.keyBytes = pairs+n, keyBytes+nb
	return nil
}

// queuePairs queues chunk k's aq_pairs on s right behind its walk and
// totals (in run, where every chunk before k is delivered, so their
// pairs and key bytes are known): into buffers for
// every answer slot (values, key offsets, always written) and keys of
// rangePipe.keySlot bytes a slot, the key bytes a guess that deliver
// checks against the chunk's totals (aq_pairs copies no key past kcap;
// when they do not fit it runs the pairs again with room). The host then
// only waits for the totals, sizes the Result and queues the downloads,
// while the device writes the pairs. Cost: the reservations (growths
// synchronize s) and one kernel.
func (p *pipedCall) queuePairs(k int) error {
	g, c, nm := p.g, &p.chunks[k], &p.g.pipe.names[k]
	slots := (c.b - c.a) * p.limit
	kcap := slots * max(g.pipe.keySlot, keySlotMin)
	if err := g.pool.Reserve(gpu.NeedOf[uint8](nm[bOkeys], kcap), gpu.NeedOf[uint64](nm[bOvals], slots),
		gpu.NeedOf[uint32](nm[bOoffs], slots)); err != nil {
		return err
	}
	c.okeys, c.kcap = gpu.Take[uint8](g.pool, nm[bOkeys], kcap), kcap
	c.ovals, c.ooffs = gpu.Take[uint64](g.pool, nm[bOvals], slots), gpu.Take[uint32](g.pool, nm[bOoffs], slots)
	return p.launchPairs(k)
}

// keySlotMin is the key bytes an answer slot queuePairs reserves at least:
// every key of 16 bytes or less fits.
const keySlotMin = 16

// launchPairs queues chunk k's aq_pairs on s into the chunk's answer
// buffers, between its pairsAt and paired events, after the pairs and key
// bytes of the chunks delivered before it.
func (p *pipedCall) launchPairs(k int) error {
	g, c := p.g, &p.chunks[k]
	Qk := c.b - c.a
	if err := g.pipe.pairsAt[k].Record(g.s); err != nil {
		return err
	}
	if err := g.launch(g.k.qPairs, Qk*warpSize, g.descBuf, uint64(Qk), uint64(p.limit), c.slots, c.cnt, c.byt, c.okeys, c.ooffs, c.ovals,
		uint64(p.pairs), uint64(p.keyBytes), c.qout, uint64(c.kcap)); err != nil {
		return fmt.Errorf("pairs: %w", err)
	}
	return g.pipe.paired[k].Record(g.s)
}

// keyRoom makes room in the Result's pinned keys for chunk c's nb bytes
// after the earlier chunks' (grown for the whole call at the bytes a query
// so far when short, after the downloads queued so far, which the growth
// moves).
func (p *pipedCall) keyRoom(c *pipeChunk, nb int) error {
	keyBytes := p.keyBytes
	if uint64(keyBytes)+uint64(nb) > math.MaxUint32 {
		return fmt.Errorf("%d key bytes in the answers: at most %d per call", uint64(keyBytes)+uint64(nb), uint64(math.MaxUint32))
	}
	need := keyBytes + nb
	capacity := need
	if need > p.res.keysCap {
		if p.queued {
			if err := p.g.out.Synchronize(); err != nil {
				return err
			}
		}
		capacity = int(min(uint64(need)*uint64(p.Q)/uint64(c.b)+uint64(need)/8, math.MaxUint32))
	}
	if err := p.res.pinnedKeys(need, keyBytes, capacity); err != nil {
		return fmt.Errorf("pinning the answers: %w", err)
	}
	return nil
}

// finish writes the key offsets of the chunks of one key length while the
// answers download, makes s wait for the downloads on out (so that the
// batch's end, finish's MarkDone and the drain, covers them), and trims
// the Result to the call's pairs and key bytes.
func (p *pipedCall) finish() (*Result, error) {
	g, res := p.g, p.res
	fillKeyFills(res.Keys.Offs, p.fills)
	g.step("key offsets written")
	g.clock.Mark(g.s, engine.MarkWorked)
	if err := firstErr(g.pipe.done.Record(g.out), g.s.Wait(g.pipe.done)); err != nil {
		return nil, err
	}
	g.step("answers downloaded")
	res.Keys.Data, res.Values, res.Keys.Offs = res.Keys.Data[:p.keyBytes], res.Values[:p.pairs], res.Keys.Offs[:p.pairs+1]
	res.Keys.Offs[p.pairs] = uint32(p.keyBytes)
	return res, nil
}

// keyFill is a chunk's key offsets the host writes (its keys all have
// one length): n pairs from pair at, base bytes before them.
type keyFill struct {
	at, n  int
	base   uint32
	keyLen int
}

// packedChunk is a chunk's queries packed into pinned memory: the plan
// and the bytes.
type packedChunk struct {
	p queryPack
	h []byte
}

// packChunk packs chunk k's queries of bt on the workers into the pinned
// buffer host gives (of m bytes: chunk k's host.q.k). Cost: bt's packing
// of the chunk.
func (g *gpuEngine) packChunk(c *pipeChunk, k int, bt queryBatch, host func(m int) ([]byte, error)) (packedChunk, error) {
	p, h, err := bt.pack(c.a, c.b, g.workers, host)
	if err != nil {
		return packedChunk{}, fmt.Errorf("chunk %d: packing: %w", k, err)
	}
	return packedChunk{p, h}, nil
}

// queueRangeChunk queues on s chunk k's upload (pc, into q.in.k), walk, the
// scan of its counts (one scan of the three arrays, countsLayout) and
// a_totals copying the running sums of its totals (pairs, key bytes,
// squared key lengths) into the pipe's mapped memory, then records the
// chunk's walked event. Cost: one DMA, the walk, one scan (a memset and a
// kernel) and a one-thread kernel.
func (g *gpuEngine) queueRangeChunk(c *pipeChunk, k int, pc packedChunk, limit int, dsc int32) error {
	n, p, end := c.b-c.a, pc.p, pc.p.l.end
	in, err := gpu.Get[byte](g.pool, g.pipe.names[k][bIn], end)
	if err != nil {
		return fmt.Errorf("chunk %d: %w", k, err)
	}
	if err := in.Write(g.s, 0, pc.h[:end]); err != nil {
		return fmt.Errorf("chunk %d: upload: %w", k, err)
	}
	lo, hi, hb := p.views(in)
	g.stepN("chunk %d uploaded", k)
	if err := g.pipe.walkAt[k].Record(g.s); err != nil {
		return err
	}
	if err := g.walk(n, limit, dsc, nullPtr, lo, hi, hb, c.slots, c.ccnt, c.cnt, c.byt, c.sq); err != nil {
		return fmt.Errorf("chunk %d: walk: %w", k, err)
	}
	if err := prim.DevScanExclusive(g.pe, c.counts, c.counts, 3*(n+1)); err != nil {
		return fmt.Errorf("chunk %d: walk scans: %w", k, err)
	}
	if err := firstErr(g.launch(g.k.totals, 1, uint64(n), c.cnt, c.byt, c.sq, nullPtr, nullPtr, uint64(0), nullPtr, g.pipe.tot.PtrAt(totWords*k)),
		g.pipe.walked[k].Record(g.s)); err != nil {
		return fmt.Errorf("chunk %d: totals: %w", k, err)
	}
	g.stepN("chunk %d walked", k)
	return nil
}
