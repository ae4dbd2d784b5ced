package mpt

import (
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
)

// hostValues is the GPU engine's host copy of its value table and arena
// (Options.HostValues): value id v is arena[vals[2v] : vals[2v]+vals[2v+1]],
// as on the device. Updates fill it while packing the values into the
// pinned upload chunks; lookups then bring back only each key's value id
// and read the values here. Values are never overwritten (a new value gets
// a new id), so slices of the arena stay valid.
type hostValues struct {
	arena []byte   // len: the device arena's length
	vals  []uint64 // two words per value id (offset, length); id 0 is none
	ids   []uint32 // the last lookup's value ids, reused
}

// hostCopyGrain is the keys one goroutine copies the values of (or
// slices, in lookupHost) at a time: a 100K-key lookup splits into about a
// hundred pieces, which keep all cores busy.
const hostCopyGrain = 1024

// newHostValues returns an empty copy (value id 0 reserved).
func newHostValues() *hostValues { return &hostValues{vals: make([]uint64, 2)} }

// mirror returns a fill function for a batch of total bytes appended at
// off (the device arena's length): it runs fill and copies what fill packed
// into the host arena as well, so the values are read from Go memory once.
// It grows the arena's capacity first (copying it: amortized O(1) a byte);
// the new bytes become part of the arena only at commit.
func (h *hostValues) mirror(off, total int64, fill func(p []byte, pos int)) func(p []byte, pos int) {
	if need := off + total; int64(cap(h.arena)) < need {
		grown := make([]byte, off, max(need+need/4, 2*int64(cap(h.arena))))
		copy(grown, h.arena)
		h.arena = grown
	}
	dst := h.arena[off : off+total]
	return func(p []byte, pos int) {
		fill(p, pos)
		copy(dst[pos:], p)
	}
}

// commit makes a staged batch part of the copy: its value table entries
// and the arena up to arenaLen.
func (h *hostValues) commit(entries []uint64, arenaLen int64) {
	h.vals = append(h.vals, entries...)
	h.arena = h.arena[:arenaLen]
}

// value returns value id v (nil for 0), aliasing the arena.
func (h *hostValues) value(v uint32) []byte {
	if v == 0 {
		return nil
	}
	off, n := h.vals[2*v], h.vals[2*v+1]
	return h.arena[off : off+n : off+n]
}

// lookupIDs walks keys on the device (one thread per key, as
// lookupOffsets) and reads back only their value ids into g.host.ids
// (through the pinned chunks). The trie must not be empty. Cost: the
// keys' upload, one walk per key, 4 bytes per key back.
func (g *gpuTrie) lookupIDs(keys [][]byte) ([]uint32, error) {
	n := len(keys)
	t0 := time.Now()
	sk, err := g.stageRead("lookup", keys, gpu.NeedOf[uint32](bufVid, n), gpu.NeedOf[uint64](bufWide, n))
	if err != nil {
		return nil, err
	}
	vid, vlen := gpu.Take[uint32](g.pool, bufVid, n), gpu.Take[uint64](g.pool, bufWide, n)
	if err := g.launch(g.k.lookup, threads(n), kernelBlock, g.nodes, g.vals, g.root, sk.keys, uint32(sk.stride), sk.lens,
		uint64(n), vid, vlen); err != nil {
		return nil, err
	}
	ids := resize(g.host.ids, n)
	g.host.ids = ids
	if err := g.drained(gpu.DownloadStaged(g.xfer, g.s, vid, 0, ids)); err != nil {
		return nil, err
	}
	g.lookupTimes[0] = time.Since(t0)
	return ids, nil
}

// lookupHost is lookup with the host copy: the values alias it.
func (g *gpuTrie) lookupHost(keys [][]byte) ([][]byte, []bool, error) {
	values, found := make([][]byte, len(keys)), make([]bool, len(keys))
	idx, ks := g.queryable(keys)
	if len(ks) == 0 || g.root == 0 {
		return values, found, nil
	}
	ids, err := g.lookupIDs(ks)
	if err != nil {
		return nil, nil, err
	}
	t0 := time.Now()
	par.For(len(ids), hostCopyGrain, 0, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			i, v := j, ids[j]
			if idx != nil {
				i = idx[j]
			}
			values[i], found[i] = g.host.value(v), v != 0
		}
	})
	g.lookupTimes[1] = time.Since(t0)
	return values, found, nil
}

// lookupIntoHost is lookupInto with the host copy: the values are copied
// from it into out on all cores.
func (g *gpuTrie) lookupIntoHost(keys [][]byte, out *Values) error {
	out.Offs = resize(out.Offs, len(keys)+1)
	idx, ks := g.queryable(keys)
	if len(ks) == 0 || g.root == 0 {
		clear(out.Offs)
		out.Data = out.Data[:0]
		return nil
	}
	ids, err := g.lookupIDs(ks)
	if err != nil {
		return err
	}
	t0 := time.Now()
	total, j := uint64(0), 0
	for i := range keys {
		out.Offs[i] = total
		if idx == nil || j < len(idx) && idx[j] == i {
			total += g.host.vals[2*ids[j]+1]
			j++
		}
	}
	out.Offs[len(keys)] = total
	out.Data = resize(out.Data, int(total))
	par.For(len(keys), hostCopyGrain, 0, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if out.Offs[i+1] > out.Offs[i] {
				k := i
				if idx != nil {
					k = searchIdx(idx, i)
				}
				copy(out.Data[out.Offs[i]:out.Offs[i+1]], g.host.value(ids[k]))
			}
		}
	})
	g.lookupTimes[1] = time.Since(t0)
	return nil
}

// searchIdx returns j with idx[j] == i (idx ascending, i in it).
func searchIdx(idx []int, i int) int {
	lo, hi := 0, len(idx)
	for lo < hi {
		m := (lo + hi) / 2
		if idx[m] < i {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}
