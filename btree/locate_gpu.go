package btree

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// bufLeafCount holds locate's two counts: the runs of the reduction by
// leaf and the touched leaves (bt_leaf_sizes).
const bufLeafCount = "leafcount"

// Pinned host words of locate's readback: the totals and the counts.
const (
	bufLocateWords  = "locate.words"
	bufLocateCounts = "locate.counts"
)

// maxHiBlocks caps bt_max_hi's grid: one atomic per warp on one word.
const maxHiBlocks = 512

// groups are the touched nodes of the leaf level after bt_locate, the
// reduction by leaf and the scans.
type groups struct {
	m       int // batch keys kept by the dedupe
	G       int // touched leaves
	flagged int // batch keys flagged (insert: new; delete: found)
	entries int // total new entries of the touched leaves (merged or kept)
	pieces  int // total pieces
	extra   int // total new nodes
	oldTot  int // total old entries of the touched leaves
	maxKeys int // the most batch keys of one touched leaf
}

// locate runs the leaf phases shared by insert and delete over the
// sorted unique keys in outK that sortDedupe kept, at most n (their
// number is in keptCounter): bt_locate, the reduction by leaf (prim
// reduce by key), bt_leaf_sizes and the scans; it reads the number of
// keys kept, the touched leaves' count, the totals and the most batch keys
// of one leaf back in one synchronization (and gives the kept count to
// the values' upload in flight). The counts stay on the device until
// then: the locate runs over n keys and the sizing and the scans over a
// bound of the touched leaves (n and the live leaves, whichever is
// fewer), the elements past the counts made neutral. Nothing in the tree
// changes. Cost: one thread per key searching the tree, a reduce-by-key,
// four scans, one synchronization.
func (g *gpuTree) locate(st treeState, n int, del bool) (groups, error) {
	var gr groups
	m := n                         // bound of the kept keys
	B := max(min(m, st.leaves), 1) // bound of the touched leaves
	if err := g.pool.Reserve(gpu.NeedOf[uint32]("leafOf", m), gpu.NeedOf[uint32]("pos", m), gpu.NeedOf[uint64]("packed", m+1),
		gpu.NeedOf[uint32]("node.0", m), gpu.NeedOf[uint64]("gsum", m+1), gpu.NeedOf[uint64]("gc.0", B+1),
		gpu.NeedOf[uint64]("gp.0", B+1), gpu.NeedOf[uint64]("oldmax.0", B), gpu.NeedOf[uint32]("oldnext", B),
		gpu.NeedOf[uint64]("maxkeys", 1), gpu.NeedOf[uint32](bufLeafCount, 2)); err != nil {
		return gr, err
	}
	leafOf, pos, packed := gpu.Take[uint32](g.pool, "leafOf", m), gpu.Take[uint32](g.pool, "pos", m), gpu.Take[uint64](g.pool, "packed", m+1)
	gLeaf, gSum := gpu.Take[uint32](g.pool, "node.0", m), gpu.Take[uint64](g.pool, "gsum", m+1)
	cnt, kept := gpu.Take[uint32](g.pool, bufLeafCount, 2), g.keptCounter()
	order := uint32(g.order)
	if err := g.launch(g.k.locate, m, gpu.Take[uint64](g.pool, bufOutK, m), uint64(m), kept, st.root, uint32(g.height), order, boolInt(del),
		g.keys, g.slots, g.count, leafOf, pos, packed); err != nil {
		return gr, err
	}
	if err := prim.DevReduceByKey(g.pe, leafOf, packed, gLeaf, gSum, m, gpu.View[uint32](cnt, 0, 1)); err != nil {
		return gr, err
	}
	g.step("locate, reduce by leaf")
	gc, gp, maxKeys := gpu.Take[uint64](g.pool, "gc.0", B+1), gpu.Take[uint64](g.pool, "gp.0", B+1), gpu.Take[uint64](g.pool, "maxkeys", 1)
	if err := maxKeys.FillBytes(g.s, 0); err != nil {
		return gr, err
	}
	if err := g.launch(g.k.leafSizes, B+1, uint64(B), cnt, gLeaf, gSum, order, uint32(g.fill), boolInt(del),
		g.keys, g.count, g.next, gc, gp, gpu.Take[uint64](g.pool, "oldmax.0", B), gpu.Take[uint32](g.pool, "oldnext", B)); err != nil {
		return gr, err
	}
	if err := g.k.maxHi.Launch(g.s, gpu.D1(min(gpu.Grid(B, kernelBlock), maxHiBlocks)), gpu.D1(kernelBlock), 0,
		uint64(B), gSum, maxKeys); err != nil {
		return gr, err
	}
	for _, x := range []struct {
		b *gpu.Buffer[uint64]
		n int
	}{{packed, m + 1}, {gSum, B + 1}, {gc, B + 1}, {gp, B + 1}} {
		if err := prim.DevScanExclusive(g.pe, x.b, x.b, x.n); err != nil {
			return gr, err
		}
	}
	g.step("leaf sizes, scans")
	// The words come back by copies into pinned memory queued behind the
	// scans (asynchronous), and one synchronization.
	w, err := gpu.Host[uint64](g.pool, bufLocateWords, 4)
	if err != nil {
		return gr, err
	}
	c, err := gpu.Host[uint32](g.pool, bufLocateCounts, 2)
	if err != nil {
		return gr, err
	}
	g.trace.Synced()
	if err := errors.Join(kept.Read(g.s, 0, c[0:1]), cnt.Read(g.s, 1, c[1:2]), gSum.Read(g.s, B, w[0:1]), gc.Read(g.s, B, w[1:2]),
		gp.Read(g.s, B, w[2:3]), maxKeys.Read(g.s, 0, w[3:4]), g.s.Synchronize()); err != nil {
		return gr, err
	}
	g.step("readback: kept keys, leaves, totals")
	gr.m, gr.G = int(c[0]), int(c[1])
	if gr.m > n || gr.G > B {
		return gr, fmt.Errorf("btree: locate: %d keys kept of %d, %d touched leaves of at most %d", gr.m, n, gr.G, B)
	}
	g.setKept(gr.m)
	gr.maxKeys = int(w[3])
	gr.flagged = int(uint32(w[0]))
	gr.entries = int(w[1])
	gr.pieces, gr.extra = int(w[2]>>32), int(uint32(w[2]))
	if del {
		gr.oldTot = gr.entries + gr.flagged
	} else {
		gr.oldTot = gr.entries - gr.flagged
	}
	return gr, nil
}
