package art

import "github.com/warpkv/warpkv/internal/par"

// reserveLeaves grows tree t's leaf pools, ahead of the build rounds, for
// the F new keys of batch kb: room for at most min(F, the batch's keys of
// a leaf class) more leaves of each leaf kind, the bound of what the
// rounds allocate. The insert calls it while the device runs the grouping
// kernels it queued, so that the host's allocations overlap them (the
// rounds' reserve then finds the room). Only the pools' capacity changes:
// the records, their counters and the layout do not. Cost: nothing when
// the pools have room for F of each kind; else one pass over kb's offsets
// on all cores, and per pool grown an allocation and a device copy queued
// on the stream (ensurePool).
func (g *gpuEngine) reserveLeaves(t *devTree, kb Keys, F int) error {
	need := func(k int, m uint64) uint64 { // records kind k's pool must hold for m more
		p := &t.pools[k]
		return p.hwm + m - min(m, p.top)
	}
	short := false
	for k := kindL8; k <= kindLV; k++ {
		if p := &t.pools[k]; p.words == nil || need(k, uint64(F)) > p.cap {
			short = true
		}
	}
	if !short {
		return nil
	}
	counts := leafClassCounts(kb.Offs)
	for k := kindL8; k <= kindLV; k++ {
		if m := min(uint64(F), counts[k]); m > 0 {
			if err := g.ensurePool(t, k, need(k, m)); err != nil {
				return err
			}
		}
	}
	return nil
}

// leafClassMinPart is the fewest keys one goroutine of leafClassCounts
// counts.
const leafClassMinPart = 1 << 16

// leafClassCounts returns how many keys of offsets offs fall in each leaf
// class (by leafKind of their lengths). Cost: one read of offs on all
// cores.
func leafClassCounts(offs []uint32) [numKinds + 1]uint64 {
	n := len(offs) - 1
	var total [numKinds + 1]uint64
	if n <= 0 {
		return total
	}
	parts := par.Parts(n, leafClassMinPart, 0)
	part := make([][numKinds + 1]uint64, parts)
	par.Ranges(n, parts, func(p, lo, hi int) {
		c := &part[p]
		for i := lo; i < hi; i++ {
			c[leafKind(int(offs[i+1]-offs[i]))]++
		}
	})
	for _, c := range part {
		for k := range c {
			total[k] += c[k]
		}
	}
	return total
}
