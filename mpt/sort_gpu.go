package mpt

import (
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// The batch's device sort and last-wins dedupe (sort.cu).

// sortBatch sorts the staged keys (their indices, stably: length first,
// then big-endian words from the last to the first), keeps the last
// operation of each key in the ops buffer, and returns how many were kept.
// Its buffers are update's (batchNeeds).
func (g *gpuTrie) sortBatch(sk stagedKeys, n int) (int, error) {
	perm := gpu.Take[uint32](g.pool, bufPerm, n)
	if err := g.launch(g.k.iota, threads(n), kernelBlock, perm, uint64(n)); err != nil {
		return 0, err
	}
	if sk.varied {
		l := gpu.Take[uint32](g.pool, bufL32, n)
		if err := g.launch(g.k.keyLen, threads(n), kernelBlock, sk.lens, perm, uint64(n), l); err != nil {
			return 0, err
		}
		if err := prim.DevSortPairsBits(g.pe, l, perm, n, 0, 8); err != nil {
			return 0, err
		}
	}
	w := gpu.Take[uint64](g.pool, bufW64, n)
	for word := sk.stride/8 - 1; word >= 0; word-- {
		if err := g.launch(g.k.keyWord, threads(n), kernelBlock, sk.keys, uint32(sk.stride), perm, uint64(n), uint32(word), w); err != nil {
			return 0, err
		}
		if err := prim.DevSortPairs(g.pe, w, perm, n); err != nil {
			return 0, err
		}
	}
	flags := gpu.Take[uint8](g.pool, bufFlags, n)
	ops := gpu.Take[uint32](g.pool, bufOps, n)
	if err := g.launch(g.k.lastFlags, threads(n), kernelBlock, sk.keys, uint32(sk.stride), sk.lens, perm, uint64(n), flags); err != nil {
		return 0, err
	}
	if err := prim.DevSelect(g.pe, perm, flags, ops, n, g.ctlView(ctlSelect)); err != nil {
		return 0, err
	}
	c, err := g.readCtl(ctlSelect, 1)
	if err != nil {
		return 0, err
	}
	return int(c[0]), nil
}
