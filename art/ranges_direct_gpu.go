package art

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// A call with direct answers (rangesDirect, with rangePipe.direct set:
// measured slower than the downloads on the H200, so not the default)
// answers a batch of bounded
// range or prefix queries into a pinned Result whose arrays are mapped
// into the device (gpu.HostArrayPtr): aq_pairs stores the keys and values
// straight into them, so the answers cross the bus while the kernel runs,
// with no download. Its queries are cut into chunks as a pipelined call's
// (rangePipe.count); each chunk is packed, uploaded, walked and scanned as
// there (queueRangeChunk), and then, with no host turn between chunks,
// aq_base (one thread) places the chunk's pairs after the earlier chunks'
// on the device and aq_pairs writes them on the stream in, while the host
// packs the next chunk. No host turn, because on the H200 every write the
// device makes to host memory (a mapped word, an event's completion)
// arrives behind the answers' stores issued before it: a host waiting for
// a chunk's totals would wait for the earlier chunks' answers to cross
// (BENCHMARKS.md, branch arng4). So the Result is sized before the call:
// its values and key offsets for every slot (queries x limit), its keys
// for the most the Result has held or 16 bytes a slot, whichever is more;
// aq_base skips a chunk whose keys would run past them, and the call is
// then answered again by rangesPiped (with a host turn a chunk), which
// grows the keys for the calls after. The query offsets (8 bytes a query:
// partial writes across the bus) and the key offsets go to device memory;
// the query offsets come by DMA after each chunk's pairs, and the key
// offsets are written by the host when every key of the answer has one
// length (guessed from chunk 0's totals, which arrive before any answer,
// and written while the device works; checked against the call's totals
// at the end), else downloaded at the end.

// directs reports whether a call of Q queries with limit into into has
// direct answers: into a pinned Result, in the form of rangesCands (a
// limit, at most rangeSlotsMax slots, not collectRanges), in the batch
// order (not sortQueries), with pipe.direct set (an option: the
// downloads of rangesPiped are the default).
func (g *gpuEngine) directs(into *Result, Q, limit int) bool {
	return g.pipe.direct && into.pinned() && limit > 0 && Q*limit <= rangeSlotsMax && !g.collectRanges && !g.sortQueries
}

// directKeyBytes is the key bytes a slot that a Result's keys hold at
// least before a call with direct answers (up to directKeysMax in all):
// 16-byte keys fit, longer ones make the first call answer twice and the
// Result keep the room for the next calls.
const directKeyBytes = 16

// directKeysMax bounds the keys' room a call with direct answers makes
// from directKeyBytes alone.
const directKeysMax = 1 << 28

// runWords is the words aq_base copies into mapped memory after each
// chunk: the call's pairs, key bytes and squared key lengths so far, and
// whether a chunk was skipped.
const runWords = 4

// rangesDirect answers bt (bounded ranges or prefix scans, limit > 0) into
// the pinned Result into with direct answers (the comment above). Cost:
// the packing and walks of rangesCands in chunks, aq_base and aq_pairs a
// chunk, one DMA of the query offsets a chunk, one wait at the end (and
// the host's write of the key offsets, beside the device); twice that
// when the Result's keys are short.
func (g *gpuEngine) rangesDirect(into *Result, bt queryBatch, limit int, dsc int32) (res *Result, err error) {
	Q := bt.n
	defer g.syncOnError(&err)
	chunks, err := g.chunkedCall(Q, limit)
	if err != nil {
		return nil, err
	}
	C := len(chunks)
	if err := g.pipe.totals(g.dev, C+1); err != nil { // chunk k's totals, then the run
		return nil, err
	}
	maxPairs := Q * limit
	if err := into.pinRangeArrays(Q, maxPairs); err != nil {
		return nil, err
	}
	keyCap := min(max(into.keysCap, min(maxPairs*directKeyBytes, directKeysMax)), math.MaxUint32)
	if err := into.pinnedKeys(keyCap, 0, keyCap); err != nil {
		return nil, fmt.Errorf("pinning the answers: %w", err)
	}
	if err := g.pool.Reserve(gpu.NeedOf[uint64]("q.run", runWords), gpu.NeedOf[uint64]("q.cbase", 3*C),
		gpu.NeedOf[uint32]("q.dooffs", maxPairs)); err != nil {
		return nil, err
	}
	run, cbase := gpu.Take[uint64](g.pool, "q.run", runWords), gpu.Take[uint64](g.pool, "q.cbase", 3*C)
	dooffs := gpu.Take[uint32](g.pool, "q.dooffs", maxPairs)
	if err := run.FillBytes(g.s, 0); err != nil {
		return nil, err
	}
	keys, vals := gpu.HostArrayPtr[byte](into.pin, "keys", 0), gpu.HostArrayPtr[uint64](into.pin, "values", 0)
	runOut := g.pipe.tot.PtrAt(totWords * C)
	for k := range chunks {
		c := &chunks[k]
		pc, err := g.packChunk(c, k, bt)
		if be := asBoundErr(err, c.a); be != nil {
			return nil, be
		}
		if err != nil {
			return nil, err
		}
		if err := g.queueRangeChunk(c, k, pc, limit, dsc); err != nil {
			return nil, err
		}
		if k == 0 {
			g.clock.Mark(g.s, engine.MarkUploaded)
			g.clock.Mark(g.s, engine.MarkSorted)
		}
		if err := g.queueDirectPairs(c, k, limit, keyCap, run, gpu.View[uint64](cbase, 8*3*k, 3), keys, dooffs, vals, runOut, into); err != nil {
			return nil, fmt.Errorf("chunk %d: %w", k, err)
		}
	}
	spec, err := g.guessKeyOffsets(into, maxPairs)
	if err != nil {
		return nil, err
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	if err := firstErr(g.pipe.done.Record(g.out), g.s.Wait(g.pipe.done), g.s.Synchronize()); err != nil {
		return nil, err
	}
	g.trace.Synced()
	g.step("answers written")
	w := g.pipe.tot.Slice()[totWords*C : totWords*C+runWords]
	pairs, keyBytes, sq, over := atomic.LoadUint64(&w[0]), atomic.LoadUint64(&w[1]), atomic.LoadUint64(&w[2]), atomic.LoadUint64(&w[3])
	if over != 0 { // the keys' room was short: answer again, making room
		return g.rangesPiped(into, bt, limit, dsc)
	}
	P := int(pairs)
	switch keyLen := sameKeyLen(pairs, keyBytes, sq); {
	case P == 0 || keyLen >= 0 && keyLen == spec:
	case keyLen >= 0:
		fillKeyOffsetsFrom(into.Keys.Offs[:P], 0, keyLen)
	default:
		if err := firstErr(dooffs.Read(g.s, 0, into.Keys.Offs[:P]), g.s.Synchronize()); err != nil {
			return nil, err
		}
	}
	g.step("key offsets written")
	into.Keys.Data, into.Values, into.Keys.Offs = into.Keys.Data[:keyBytes], into.Values[:P], into.Keys.Offs[:P+1]
	into.Keys.Offs[P] = uint32(keyBytes)
	return into, nil
}

// queueDirectPairs queues chunk c's (k) placement and pairs: aq_base on s
// (cb its base, run the call's so far, runOut their mapped copy, keyCap
// the room in the Result's keys), then, on in after it, aq_pairs storing
// the chunk's keys and values into the Result's mapped arrays (keys,
// vals) and its key offsets into dooffs, and, on out after the pairs, the
// download of its query offsets into the Result.
func (g *gpuEngine) queueDirectPairs(c *pipeChunk, k, limit, keyCap int, run, cb *gpu.Buffer[uint64], keys, dooffs, vals, runOut any,
	into *Result) error {
	n := c.b - c.a
	if err := firstErr(g.launch(g.k.qBase, 1, uint64(n), c.cnt, c.byt, c.sq, uint64(keyCap), run, cb, runOut),
		g.pipe.pairsAt[k].Record(g.s), g.in.Wait(g.pipe.pairsAt[k])); err != nil {
		return fmt.Errorf("placing: %w", err)
	}
	blocks := grid(n * warpSize)
	if b := g.pipe.pairsBlocks; b > 0 {
		blocks = gpu.D1(min(b, int(blocks.X)))
	}
	if err := g.k.qPairs.Launch(g.in, blocks, gpu.D1(kernelBlock), 0, g.descBuf, uint64(n), uint64(limit), c.slots, c.cnt, c.byt,
		keys, dooffs, vals, uint64(0), uint64(0), c.qout, cb); err != nil {
		return fmt.Errorf("pairs: aq_pairs: %w", err)
	}
	if err := firstErr(g.pipe.paired[k].Record(g.in), g.out.Wait(g.pipe.paired[k]),
		c.qout.Read(g.out, 0, offsetWords(into.Offsets[c.a+1:c.b+1]))); err != nil {
		return fmt.Errorf("query offsets: %w", err)
	}
	g.stepN("chunk %d queued", k)
	return nil
}

// guessKeyOffsets waits for chunk 0's totals (which arrive before any
// answer crosses the bus) and, when its keys all have one length, writes
// the key offsets of every slot for that length into the Result (on all
// cores, while the device writes the answers) and returns the length;
// else -1. Cost: one event wait, and a pass writing 4 bytes a slot.
func (g *gpuEngine) guessKeyOffsets(into *Result, maxPairs int) (int, error) {
	if err := g.pipe.walked[0].Synchronize(); err != nil {
		return -1, err
	}
	n, nb, sq := g.pipe.chunkTotals(0)
	keyLen := sameKeyLen(uint64(n), uint64(nb), sq)
	if keyLen < 0 || uint64(maxPairs)*uint64(keyLen) > math.MaxUint32 {
		return -1, nil
	}
	fillKeyOffsetsFrom(into.Keys.Offs[:maxPairs], 0, keyLen)
	g.step("key offsets guessed")
	return keyLen, nil
}
