package btree

import (
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// levelSizes returns the node counts of the levels of a built tree of m
// keys, leaves first: ceil(m/fill) leaves, then ceil(below/fill) per level
// up to one root. Empty for m == 0.
func levelSizes(m, fill int) []int {
	var sizes []int
	for n := m; n > 1 || len(sizes) == 0; {
		if n == 0 {
			return nil
		}
		p := (n + fill - 1) / fill
		sizes = append(sizes, p)
		n = p
		if p == 1 {
			break
		}
	}
	return sizes
}

// built is what a build tells the Tree: root, keys, leaves.
type built struct {
	root   uint32
	n      int
	leaves int
}

// buildBatch replaces the tree with the pairs (unsorted, last occurrence
// wins): upload, sort, keep the last occurrences, then writeTree; it
// returns the phase times. Cost: one transfer of the batch, the sort, the
// compaction and writeTree's.
func (g *gpuTree) buildBatch(keys, values []uint64) (built, engine.Timings, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.settleValues()
	g.start()
	if len(keys) == 0 {
		return built{root: nilNode}, g.clock.Timings("build", 0), g.freeNodes()
	}
	m, err := g.uploadSortDedupe(keys, values, false)
	if err != nil {
		return built{}, engine.Timings{}, err
	}
	if err := g.awaitValues(); err != nil {
		return built{}, engine.Timings{}, err
	}
	b, err := g.writeTree(gpu.Take[uint64](g.pool, bufOutK, m), gpu.Take[uint64](g.pool, bufOutV, m), m)
	if err != nil {
		return built{}, engine.Timings{}, err
	}
	tm, err := g.finishTimes("build", len(keys))
	return b, tm, err
}

// finishTimes marks the end of the work (and of the download, none) and
// returns the batch's timings once the stream is there. Callers hold g.mu.
func (g *gpuTree) finishTimes(op string, items int) (engine.Timings, error) {
	g.clock.Mark(g.s, engine.MarkWorked)
	g.clock.Mark(g.s, engine.MarkDone)
	g.step("done")
	g.trace.Synced()
	if err := g.s.Synchronize(); err != nil {
		return engine.Timings{}, err
	}
	return g.clock.Timings(op, items), nil
}

// writeTree builds the tree from the m strictly increasing pairs in uk,
// uv (which must not be node arrays): the leaves (one thread per key) and each internal level (one
// thread per child) with the CPU engine's closed form, so the node arrays
// equal the CPU engine's word for word. Callers hold g.mu.
func (g *gpuTree) writeTree(uk, uv *gpu.Buffer[uint64], m int) (built, error) {
	if m == 0 {
		return built{root: nilNode}, g.freeNodes()
	}
	sizes := levelSizes(m, g.fill)
	total := 0
	for _, p := range sizes {
		total += p
	}
	if total > maxNodes {
		return built{}, fmt.Errorf("%d nodes: at most %d", total, maxNodes)
	}
	if err := g.reserve(total); err != nil {
		return built{}, err
	}
	order := uint32(g.order)
	L := sizes[0]
	if err := g.k.leaves.Launch(g.s, grid(m), gpu.D1(kernelBlock), 0, uk, uv, uint64(m), uint64(L), order, uint32(0),
		g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind); err != nil {
		return built{}, err
	}
	childFirst, first := 0, L
	for l := 1; l < len(sizes); l++ {
		below, p := sizes[l-1], sizes[l]
		if err := g.k.level.Launch(g.s, grid(below), gpu.D1(kernelBlock), 0, uint64(below), uint64(p),
			uint32(childFirst), uint32(first), order, g.keys, g.slots, g.count, g.parent, g.kind); err != nil {
			return built{}, err
		}
		childFirst, first = first, first+p
	}
	if err := g.s.Synchronize(); err != nil {
		return built{}, err
	}
	g.nodes, g.height = total, len(sizes)
	return built{root: uint32(total - 1), n: m, leaves: L}, nil
}
