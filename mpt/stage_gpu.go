package mpt

import (
	"errors"
	"fmt"
	"sort"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/prim"
)

// Staging of a batch on the GPU engine: keys (hashed on the device in
// secure mode) and values go up, and lookup results come back, through
// the engine's gpu.Pipeline: two pinned chunks, so that while one chunk's
// copy runs on the stream all cores pack (or unpack) the other, and no
// large pinned buffer is ever allocated inside a batch.

// The pipeline's shape: xferChunks pinned chunks of xferChunk bytes;
// xferPiece is the share of a chunk one goroutine packs or unpacks at a
// time. (64 KiB pieces made packing a 100K-key lookup's keys 0.5 ms
// faster but building a 1M-pair trie with HostValues about 3x slower on
// the H100 machine, 2026-11-26: fillStrided splits its pieces itself.)
const (
	xferChunk  = 32 << 20
	xferChunks = 2
	xferPiece  = 1 << 20
)

// stridedPart is the fewest keys one goroutine lays out in fillStrided.
const stridedPart = 4096

// layoutPart is the fewest keys one goroutine measures in layoutKeys.
const layoutPart = 16 << 10

// newTransfers returns the engine's pipeline with its chunks pinned (once
// per trie: milliseconds). When pinning fails, the transfers go straight
// from and to Go memory (slower, same results).
func newTransfers(d *gpu.Device) *gpu.Pipeline {
	p := gpu.NewPipeline(d, gpu.PipelineConfig{ChunkBytes: xferChunk, Chunks: xferChunks, Grain: xferPiece})
	_ = p.Alloc() // an error means unpinned transfers, which Staged reports
	return p
}

// download copies src[off:] into the parts of dst back to back through
// the pinned chunks (the copy of chunk k into dst, on all cores, overlaps
// the DMA of chunk k+1) and returns once dst holds it. Cost: the bytes
// over the bus once and a parallel copy on the host.
func (g *gpuTrie) download(src *gpu.Buffer[byte], off int, dst ...[]byte) error {
	var err error
	for _, d := range dst {
		if err = gpu.DownloadStaged(g.xfer, g.s, src, off, d); err != nil {
			break
		}
		off += len(d)
	}
	return g.drained(err)
}

// drained completes the staged downloads queued since the last call
// (unpacking them) and synchronizes the stream; when queuing them failed
// (err), it drops them instead and returns err. Cost: the waits and the
// unpacking.
func (g *gpuTrie) drained(err error) error {
	if err != nil {
		g.xfer.Discard()
		return errors.Join(err, g.s.Synchronize())
	}
	return errors.Join(g.xfer.Drain(), g.s.Synchronize())
}

// stagedKeys describes a batch of n keys on the device: key i's bytes at
// keys[i*stride, i*stride+lens[i]), zero-padded to stride.
type stagedKeys struct {
	keys   *gpu.Buffer[byte]
	lens   *gpu.Buffer[uint32]
	n      int
	stride int
	varied bool // lengths differ
}

// keyLayout is how a batch of keys is laid out on the device, from their
// lengths (in the engine's host scratch hostLens): n keys of total bytes,
// the longest maxLen, at stride bytes each (the digests' 32 in secure
// mode), varied when their lengths on the device differ.
type keyLayout struct {
	n, total, maxLen, stride int
	varied                   bool
}

// layoutKeys records the keys' lengths in g.hostLens and returns their
// layout. Cost: O(n), on all cores for large batches.
func (g *gpuTrie) layoutKeys(keys [][]byte) keyLayout {
	n := len(keys)
	g.hostLens = resize(g.hostLens, n)
	lens := g.hostLens
	parts := par.Parts(n, layoutPart, 0)
	ls := make([]keyLayout, parts)
	par.Ranges(n, parts, func(p, lo, hi int) {
		var l keyLayout
		for i, k := range keys[lo:hi] {
			lens[lo+i] = uint32(len(k))
			l.maxLen = max(l.maxLen, len(k))
			l.total += len(k)
			l.varied = l.varied || len(k) != len(keys[0])
		}
		ls[p] = l
	})
	l := keyLayout{n: n}
	for _, p := range ls {
		l.maxLen, l.total, l.varied = max(l.maxLen, p.maxLen), l.total+p.total, l.varied || p.varied
	}
	if g.secure {
		l.stride, l.varied = 32, false
	} else {
		l.stride = max(8, (l.maxLen+7)&^7)
	}
	return l
}

// checkKeys returns an error wrapping ErrKeyTooLong for the first key the
// engine cannot take.
func (g *gpuTrie) checkKeys(keys [][]byte) error {
	if g.secure {
		return nil
	}
	for i, k := range keys {
		if len(k) > maxKeyBytes {
			return fmt.Errorf("%w: key %d has %d bytes (at most %d)", ErrKeyTooLong, i, len(k), maxKeyBytes)
		}
	}
	return nil
}

// stageKeys uploads keys laid out as l (layoutKeys) in the stride layout
// and their lengths (both through the pinned chunks, packed on all cores),
// hashing them on the device first in secure mode. It reserves its
// buffers before it queues anything.
func (g *gpuTrie) stageKeys(keys [][]byte, l keyLayout) (stagedKeys, error) {
	if err := g.pool.Reserve(g.keyNeeds(l)...); err != nil {
		return stagedKeys{}, fmt.Errorf("mpt: gpu engine: staging %d keys: %w", l.n, err)
	}
	n, lens := l.n, g.hostLens
	lb := gpu.Take[uint32](g.pool, bufLens, n)
	if g.secure {
		// Raw keys back to back, then Keccak-256 on the device.
		g.hostKoff, g.hostKoff64 = resize(g.hostKoff, n+1), resize(g.hostKoff64, n+1)
		offs, offs64 := g.hostKoff, g.hostKoff64
		offs[0], offs64[0] = 0, 0
		for i, k := range keys {
			offs[i+1] = offs[i] + uint32(len(k))
			offs64[i+1] = int64(offs[i+1])
		}
		raw := gpu.Take[byte](g.pool, bufRaw, l.total+8)
		koff := gpu.Take[uint32](g.pool, bufKoff, n+1)
		out := gpu.Take[[32]byte](g.pool, bufHashed, n)
		if err := errors.Join(g.xfer.UploadFunc(g.s, raw, 0, l.total, fillConcat(keys, offs64)),
			gpu.UploadStaged(g.xfer, g.s, koff, 0, offs)); err != nil {
			return stagedKeys{}, err
		}
		if err := prim.DevKeccak256(g.pe, raw, koff, n, out, l.maxLen); err != nil {
			return stagedKeys{}, err
		}
		if err := lb.Fill32(g.s, 32); err != nil { // every digest is 32 bytes
			return stagedKeys{}, err
		}
		return stagedKeys{keys: gpu.View[byte](out, 0, 32*n), lens: lb, n: n, stride: 32}, nil
	}
	kb := gpu.Take[byte](g.pool, bufKeys, n*l.stride)
	if err := errors.Join(g.xfer.UploadFunc(g.s, kb, 0, n*l.stride, fillStrided(keys, l.stride)),
		gpu.UploadStaged(g.xfer, g.s, lb, 0, lens)); err != nil {
		return stagedKeys{}, err
	}
	return stagedKeys{keys: kb, lens: lb, n: n, stride: l.stride, varied: l.varied}, nil
}

// stageRead reserves the buffers of a read of keys (op names it in
// errors): the keys' staging and more, then stages the keys. Cost: as
// stageKeys, plus the allocations of the buffers that grow.
func (g *gpuTrie) stageRead(op string, keys [][]byte, more ...gpu.Need) (stagedKeys, error) {
	l := g.layoutKeys(keys)
	if err := g.pool.Reserve(append(g.keyNeeds(l), more...)...); err != nil {
		return stagedKeys{}, fmt.Errorf("mpt: gpu engine: %s of %d keys: %w", op, len(keys), err)
	}
	return g.stageKeys(keys, l)
}

// stageValues appends the batch's non-empty values to the arena (through
// the pinned chunks) and writes value table entries vbase+i for every operation i (an
// empty value gets a zero-length entry, never referenced). It returns
// vbase and whether any value is non-empty. On failure nothing changed.
// The values' lengths go into vlens, which update reserved.
func (g *gpuTrie) stageValues(values [][]byte) (vbase uint32, anyInsert, anyDelete bool, err error) {
	n := len(values)
	offs := make([]int64, n+1)
	vl := make([]uint32, n)
	for i, v := range values {
		offs[i+1] = offs[i] + int64(len(v))
		vl[i] = uint32(len(v))
		anyInsert = anyInsert || len(v) > 0
		anyDelete = anyDelete || len(v) == 0
	}
	total := offs[n]
	if uint64(g.nvals)+uint64(n) >= 1<<32 {
		return 0, false, false, fmt.Errorf("mpt: gpu engine: value table full")
	}
	// Grow the table and the arena first: failure leaves both as they were.
	if need := int(g.nvals) + n; need > g.capVals {
		c := max(need+need/4, 2*g.capVals, 1024)
		b, err := growBuffer(g, g.vals, 2*int(g.nvals), 2*c)
		if err != nil {
			return 0, false, false, err
		}
		g.vals, g.capVals = b, c
	}
	if need := g.arenaLen + total + 8; g.arena == nil || need > int64(g.arena.Len()) {
		c := max(need+need/4, 2*int64(g.bufLen(g.arena)), 1<<20)
		b, err := growBuffer(g, g.arena, int(g.arenaLen), int(c))
		if err != nil {
			return 0, false, false, err
		}
		g.arena = b
	}
	entries := make([]uint64, 2*n)
	for i := range values {
		entries[2*i] = uint64(g.arenaLen + offs[i])
		entries[2*i+1] = uint64(vl[i])
	}
	vb := gpu.Take[uint32](g.pool, bufVlens, n)
	fill := fillConcat(values, offs)
	if g.host != nil {
		fill = g.host.mirror(g.arenaLen, total, fill)
	}
	if err := errors.Join(g.xfer.UploadFunc(g.s, g.arena, int(g.arenaLen), int(total), fill),
		gpu.UploadStaged(g.xfer, g.s, g.vals, 2*int(g.nvals), entries), gpu.UploadStaged(g.xfer, g.s, vb, 0, vl)); err != nil {
		return 0, false, false, err
	}
	if g.host != nil {
		g.host.commit(entries, g.arenaLen+total)
	}
	vbase = g.nvals
	g.nvals += uint32(n)
	g.arenaLen += total
	return vbase, anyInsert, anyDelete, nil
}

// bufLen is b's length, 0 for nil.
func (g *gpuTrie) bufLen(b *gpu.Buffer[byte]) int {
	if b == nil {
		return 0
	}
	return b.Len()
}

// fillConcat returns a fill function for the concatenation of parts,
// whose prefix sums are offs (offs[i] = bytes before part i, offs[len] =
// total).
func fillConcat(parts [][]byte, offs []int64) func(p []byte, pos int) {
	return func(p []byte, pos int) {
		i := sort.Search(len(parts), func(i int) bool { return offs[i+1] > int64(pos) })
		for w := 0; w < len(p) && i < len(parts); i++ {
			src := parts[i][int64(pos+w)-offs[i]:]
			w += copy(p[w:], src)
		}
	}
}

// fillStrided returns a fill function for keys laid out at a fixed stride,
// each zero-padded. A piece of many keys is split at key boundaries over
// goroutines (stridedPart keys or more each): the work is per key, and a
// lookup's keys fill only a few of the pipeline's pieces.
func fillStrided(keys [][]byte, stride int) func(p []byte, pos int) {
	fill := func(p []byte, pos int) {
		i, in := pos/stride, pos%stride
		for w := 0; w < len(p); i, in = i+1, 0 {
			n := min(stride-in, len(p)-w)
			dst := p[w : w+n]
			c := 0
			if k := keys[i]; in < len(k) {
				c = copy(dst, k[in:])
			}
			clear(dst[c:])
			w += n
		}
	}
	return func(p []byte, pos int) {
		parts := par.Parts(len(p)/stride, stridedPart, 0)
		if parts == 1 {
			fill(p, pos)
			return
		}
		cut := func(i int) int { // part i's first byte, at a key boundary
			if i == parts {
				return len(p)
			}
			x := par.Bound(len(p), parts, i)
			return x - (pos+x)%stride
		}
		par.Do(parts, func(i int) {
			lo, hi := max(cut(i), 0), cut(i+1)
			if lo < hi {
				fill(p[lo:hi], pos+lo)
			}
		})
	}
}
