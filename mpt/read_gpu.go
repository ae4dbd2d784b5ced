package mpt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/prim"
)

// The GPU engine's read paths: batch lookups, batch proofs (two passes:
// sizes, scan, write) and the snapshot that iteration reads.

// queryable returns the indices of the keys the GPU engine can look up
// (keys too long for it cannot be in the trie) and those keys: nil and
// keys itself, allocating nothing, when every key fits (the usual case).
// Cost: one pass over the keys' lengths; two slices of the fitting keys'
// count only when some key is too long.
func (g *gpuTrie) queryable(keys [][]byte) ([]int, [][]byte) {
	if g.secure {
		return nil, keys
	}
	long := 0
	for _, k := range keys {
		if len(k) > maxKeyBytes {
			long++
		}
	}
	if long == 0 {
		return nil, keys
	}
	idx := make([]int, 0, len(keys)-long)
	ks := make([][]byte, 0, len(keys)-long)
	for i, k := range keys {
		if len(k) <= maxKeyBytes {
			idx = append(idx, i)
			ks = append(ks, k)
		}
	}
	return idx, ks
}

// lookup returns copies of the values of keys (nil when absent) and
// whether each is present: lookupOffsets walks and places the values,
// gatherValues brings them back into fresh buffers (one per part of the
// keys, allocated on all cores while the gather kernel runs), which the
// values slice. Cost: lookupOffsets' and gatherValues', plus the
// allocation of all values' bytes and of the result slices.
func (g *gpuTrie) lookup(keys [][]byte) ([][]byte, []bool, error) {
	g.lookupTimes = [2]time.Duration{}
	defer g.readDone("lookup", len(keys), time.Now())
	if g.host != nil {
		return g.lookupHost(keys)
	}
	values, found := make([][]byte, len(keys)), make([]bool, len(keys))
	idx, ks := g.queryable(keys)
	n := len(ks)
	if n == 0 || g.root == 0 {
		return values, found, nil
	}
	o := make([]uint64, n+1)
	vid, offs, err := g.lookupOffsets(ks, o)
	if err != nil {
		return nil, nil, err
	}
	parts := par.Parts(n, resultPart, 0)
	var bufs [][]byte
	if err := g.gatherValues(vid, offs, n, int(o[n]), func() [][]byte {
		bufs = allocParts(o, parts)
		return bufs
	}); err != nil {
		return nil, nil, err
	}
	par.Ranges(n, parts, func(p, lo, hi int) {
		buf, base := bufs[p], o[lo]
		for j := lo; j < hi; j++ {
			i := j
			if idx != nil {
				i = idx[j]
			}
			if o[j+1] > o[j] { // stored values are never empty
				values[i] = buf[o[j]-base : o[j+1]-base : o[j+1]-base]
				found[i] = true
			}
		}
	})
	return values, found, nil
}

// lookupInto is LookupInto on the device: the values land back to back in
// out.Data and their offsets in out.Offs, both reused when large enough,
// so a lookup allocates nothing per key. Cost: lookupOffsets' and
// gatherValues'.
func (g *gpuTrie) lookupInto(keys [][]byte, out *Values) error {
	g.lookupTimes = [2]time.Duration{}
	defer g.readDone("lookup", len(keys), time.Now())
	if g.host != nil {
		return g.lookupIntoHost(keys, out)
	}
	out.Offs = resize(out.Offs, len(keys)+1)
	idx, ks := g.queryable(keys)
	n := len(ks)
	if n == 0 || g.root == 0 {
		clear(out.Offs)
		out.Data = out.Data[:0]
		return nil
	}
	o := out.Offs
	if idx != nil {
		g.hostOffs = resize(g.hostOffs, n+1)
		o = g.hostOffs
	}
	vid, offs, err := g.lookupOffsets(ks, o)
	if err != nil {
		return err
	}
	if err := g.gatherValues(vid, offs, n, int(o[n]), func() [][]byte {
		out.Data = resize(out.Data, int(o[n]))
		return [][]byte{out.Data}
	}); err != nil {
		return err
	}
	if idx != nil { // keys the engine cannot hold are absent: empty ranges
		j := 0
		for i := range keys {
			out.Offs[i] = o[j]
			if j < n && idx[j] == i {
				j++
			}
		}
		out.Offs[len(keys)] = o[n]
	}
	return nil
}

// resize returns s with length n, reusing its array when large enough
// (the contents are then stale: callers overwrite them).
func resize[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n)
}

// resultPart is the fewest keys of a part of a read's results: large
// results (values, proofs) are allocated in near-equal parts of the keys
// on all cores, since Go zeroes a large allocation on one core.
const resultPart = 4096

// allocParts returns a fresh buffer for each of parts near-equal parts of
// the keys whose results lie at offsets offs (part p, keys [lo, hi) as
// par.Bound cuts them, gets offs[hi]-offs[lo] bytes), allocated on all
// cores. Cost: the allocations, one part per goroutine.
func allocParts(offs []uint64, parts int) [][]byte {
	n := len(offs) - 1
	bufs := make([][]byte, parts)
	par.Ranges(n, parts, func(p, lo, hi int) { bufs[p] = make([]byte, offs[hi]-offs[lo]) })
	return bufs
}

// lookupOffsets uploads keys (hashing them in secure mode), walks them
// from the root one thread per key, places their values back to back with
// a scan of their lengths, and reads the n+1 offsets into o (o[n]: the
// total; an absent key gets an empty range) through the pinned chunks. It
// returns the value ids and the offsets on the device for gatherValues.
// The trie must not be empty. Cost: the keys' upload, one walk per key, a
// scan, and 8 bytes per key back.
func (g *gpuTrie) lookupOffsets(keys [][]byte, o []uint64) (vid *gpu.Buffer[uint32], offs *gpu.Buffer[uint64], err error) {
	n := len(keys)
	t0 := time.Now()
	sk, err := g.stageRead("lookup", keys, gpu.NeedOf[uint32](bufVid, n), gpu.NeedOf[uint64](bufWide, n+1),
		gpu.NeedOf[uint64](bufWideOffs, n+1))
	if err != nil {
		return nil, nil, err
	}
	vid, offs = gpu.Take[uint32](g.pool, bufVid, n), gpu.Take[uint64](g.pool, bufWideOffs, n+1)
	vlen := gpu.Take[uint64](g.pool, bufWide, n+1)
	if err := g.launch(g.k.lookup, threads(n), kernelBlock, g.nodes, g.vals, g.root, sk.keys, uint32(sk.stride), sk.lens,
		uint64(n), vid, vlen); err != nil {
		return nil, nil, err
	}
	if err := vlen.Write(g.s, n, []uint64{0}); err != nil {
		return nil, nil, err
	}
	if err := prim.DevScanExclusive(g.pe, vlen, offs, n+1); err != nil {
		return nil, nil, err
	}
	if err := g.drained(gpu.DownloadStaged(g.xfer, g.s, offs, 0, o[:n+1])); err != nil {
		return nil, nil, err
	}
	g.lookupTimes[0] = time.Since(t0)
	return vid, offs, nil
}

// gatherValues copies the values of the n looked-up keys (vid, offs from
// lookupOffsets; total bytes) into host memory: one warp per key gathers
// them into one device buffer; dst, called on the host while that kernel
// runs (so that allocating the destination overlaps it), returns the
// destinations of consecutive ranges of the total bytes, in order; the
// bytes come back into them through the pinned chunks (the copy of one
// chunk, on all cores, overlapping the DMA of the next). Cost: the values'
// bytes over the bus once.
func (g *gpuTrie) gatherValues(vid *gpu.Buffer[uint32], offs *gpu.Buffer[uint64], n, total int, dst func() [][]byte) error {
	t0 := time.Now()
	defer func() { g.lookupTimes[1] = time.Since(t0) }()
	if total == 0 {
		dst()
		return nil
	}
	out, err := gpu.Get[byte](g.pool, bufOut, total)
	if err != nil {
		return fmt.Errorf("mpt: gpu engine: gathering %d bytes of values: %w", total, err)
	}
	if err := g.launch(g.k.gather, warps(n), warpBlock, g.vals, g.arena, vid, uint64(n), offs, out); err != nil {
		return err
	}
	return g.download(out, 0, dst()...)
}

// prove returns the proof of every key, as the CPU engines' Prove: a size
// pass (one thread per key counts the proof's nodes and bytes), two scans,
// and a write pass that encodes the nodes on the path into one device
// buffer, downloaded once into host buffers allocated on all cores while
// the write pass runs (one per part of the keys: a proof's nodes alias its
// part's buffer). Cost: the keys' upload, two walks per key with one
// encoding per proof node each, and the proofs' download.
func (g *gpuTrie) prove(keys [][]byte) ([][][]byte, error) {
	g.lookupTimes = [2]time.Duration{}
	defer g.readDone("prove", len(keys), time.Now())
	proofs := make([][][]byte, len(keys))
	idx, ks := g.queryable(keys)
	if idx != nil {
		// A key too long for the engine is absent; its proof still walks
		// the trie, so fall back to a snapshot for those keys.
		root, err := g.snapshot()
		if err != nil {
			return nil, err
		}
		for i, k := range keys {
			if len(k) > maxKeyBytes {
				if proofs[i], err = prove(root, keyToHex(k)); err != nil {
					return nil, err
				}
			}
		}
	}
	n := len(ks)
	if n == 0 || g.root == 0 {
		return proofs, nil
	}
	sk, err := g.stageRead("proof", ks, gpu.NeedOf[uint32](bufCounts, n+1), gpu.NeedOf[uint32](bufOffs, n+1),
		gpu.NeedOf[uint64](bufWide, n+1), gpu.NeedOf[uint64](bufWideOffs, n+1))
	if err != nil {
		return nil, err
	}
	count := gpu.Take[uint32](g.pool, bufCounts, n+1)
	bytes, boffs := gpu.Take[uint64](g.pool, bufWide, n+1), gpu.Take[uint64](g.pool, bufWideOffs, n+1)
	stride := uint32(sk.stride)
	if err := g.launch(g.k.proofSize, threads(n), kernelBlock, g.nodes, g.vals, g.arena, g.root, sk.keys, stride, sk.lens,
		uint64(n), count, bytes); err != nil {
		return nil, err
	}
	if err := bytes.Write(g.s, n, []uint64{0}); err != nil {
		return nil, err
	}
	if err := prim.DevScanExclusive(g.pe, bytes, boffs, n+1); err != nil {
		return nil, err
	}
	noffs, totalNodes, err := g.scanCounts(count, n)
	if err != nil {
		return nil, err
	}
	bo := make([]uint64, n+1)
	no := make([]uint32, n+1)
	if err := g.drained(errors.Join(gpu.DownloadStaged(g.xfer, g.s, boffs, 0, bo),
		gpu.DownloadStaged(g.xfer, g.s, noffs, 0, no))); err != nil {
		return nil, err
	}
	total := int(bo[n])
	if err := g.pool.Reserve(gpu.NeedOf[byte](bufOut, total), gpu.NeedOf[uint32](bufStarts, int(totalNodes))); err != nil {
		return nil, fmt.Errorf("mpt: gpu engine: %d proofs of %d bytes: %w", n, total, err)
	}
	out, ends := gpu.Take[byte](g.pool, bufOut, total), gpu.Take[uint32](g.pool, bufStarts, int(totalNodes))
	if err := g.launch(g.k.proofWrite, threads(n), kernelBlock, g.nodes, g.vals, g.arena, g.root, sk.keys, stride, sk.lens,
		uint64(n), boffs, noffs, out, ends); err != nil {
		return nil, err
	}
	// While the kernel runs: the proofs' memory, a byte buffer, a node
	// slice and the node ends per part of the keys, allocated on all cores.
	parts := par.Parts(n, resultPart, 0)
	bufs, nodes, e := make([][]byte, parts), make([][][]byte, parts), make([][]uint32, parts)
	par.Ranges(n, parts, func(p, lo, hi int) {
		bufs[p] = make([]byte, bo[hi]-bo[lo])
		nodes[p] = make([][]byte, no[hi]-no[lo])
		e[p] = make([]uint32, no[hi]-no[lo])
	})
	// The bytes first, then the ends: consecutive large chunks keep each
	// chunk's unpacking overlapped with the next one's DMA.
	var qerr error
	for p := 0; p < parts && qerr == nil; p++ {
		qerr = gpu.DownloadStaged(g.xfer, g.s, out, int(bo[par.Bound(n, parts, p)]), bufs[p])
	}
	for p := 0; p < parts && qerr == nil; p++ {
		qerr = gpu.DownloadStaged(g.xfer, g.s, ends, int(no[par.Bound(n, parts, p)]), e[p])
	}
	if err := g.drained(qerr); err != nil {
		return nil, err
	}
	par.Ranges(n, parts, func(p, lo, hi int) {
		buf, ns, ends := bufs[p], nodes[p], e[p]
		for j := lo; j < hi; j++ {
			i := j
			if idx != nil {
				i = idx[j]
			}
			first, last := no[j]-no[lo], no[j+1]-no[lo]
			base, start := bo[j]-bo[lo], uint64(0)
			for q := first; q < last; q++ {
				end := uint64(ends[q])
				ns[q] = buf[base+start : base+end : base+end]
				start = end
			}
			if last > first {
				proofs[i] = ns[first:last:last]
			}
		}
	})
	return proofs, nil
}

// snapshot downloads the trie and rebuilds it as the CPU engines' nodes,
// with every node's cached reference as the device computed it (the root's
// left empty, so a CPU hasher recomputes it). Cost: a download of all
// nodes, values and the arena, and O(nodes) host work.
func (g *gpuTrie) snapshot() (node, error) {
	if g.root == 0 {
		return nil, nil
	}
	nodes := make([]byte, int(g.bump)*nodeBytes)
	vals := make([]uint64, 2*int(g.nvals))
	arena := make([]byte, g.arenaLen)
	if err := errors.Join(g.nodes.Read(g.s, 0, nodes), g.vals.Read(g.s, 0, vals), g.arena.Read(g.s, 0, arena),
		g.s.Synchronize()); err != nil {
		return nil, err
	}
	value := func(v uint32) valueNode {
		off, l := vals[2*v], vals[2*v+1]
		return valueNode(arena[off : off+l : off+l])
	}
	var build func(id uint32, depth int) (node, error)
	build = func(id uint32, depth int) (node, error) {
		if id == 0 || int(id) >= int(g.bump) || depth > 2*maxKeyBytes+1 {
			return nil, fmt.Errorf("mpt: gpu snapshot: bad node id %d at depth %d", id, depth)
		}
		rec := nodes[int(id)*nodeBytes : (int(id)+1)*nodeBytes]
		u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(rec[off:]) }
		var ref nodeCache
		if id != g.root {
			if rl := u32(nodeReflenOffset); rl > 0 && rl <= 32 {
				ref.set(rec[nodeRefOffset : nodeRefOffset+int(rl)])
			}
		}
		path := func() []byte {
			l := int(u32(nodePlenOffset))
			p := make([]byte, l, l+1)
			for i := range p {
				b := rec[nodePathOffset+i/2]
				if i&1 == 0 {
					p[i] = b >> 4
				} else {
					p[i] = b & 15
				}
			}
			return p
		}
		switch u32(nodeKindOffset) {
		case kindBranch:
			f := &fullNode{cache: ref}
			for s := 0; s < 16; s++ {
				if c := u32(nodeChildOffset + 4*s); c != 0 {
					cn, err := build(c, depth+1)
					if err != nil {
						return nil, err
					}
					f.children[s] = cn
				}
			}
			if v := u32(nodeValOffset); v != 0 {
				f.children[terminator] = value(v)
			}
			return f, nil
		case kindExt:
			c, err := build(u32(nodeChildOffset), depth+1)
			if err != nil {
				return nil, err
			}
			return &shortNode{key: path(), val: c, cache: ref}, nil
		case kindLeaf:
			return &shortNode{key: append(path(), terminator), val: value(u32(nodeValOffset)), cache: ref}, nil
		}
		return nil, fmt.Errorf("mpt: gpu snapshot: node %d has kind %d", id, u32(nodeKindOffset))
	}
	return build(g.root, 0)
}
