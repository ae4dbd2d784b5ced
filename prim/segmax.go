package prim

import (
	"fmt"
	"sort"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
)

// segmaxCPUGrain is the fewest events (segments plus elements) worth a
// goroutine of their own in the CPU segmented max.
const segmaxCPUGrain = 1 << 14

// SegmentedMax writes out[s] = max(vals[offsets[s]:offsets[s+1]]) for every
// segment s, and 0 for an empty segment. len(out) must be len(offsets)-1;
// offsets must be nondecreasing and at most len(vals). Elements outside
// [offsets[0], offsets[len(out)]) are ignored. Cost: O(segments + elements)
// over e.Workers() goroutines on the CPU, balanced whatever the segment
// lengths; on the GPU, the copies in and out plus one pass over the data.
func SegmentedMax[T Word](e *Engine, vals []T, offsets []uint32, out []T) error {
	if err := checkSegments(len(vals), offsets, len(out)); err != nil {
		return fmt.Errorf("prim: segmented max: %w", err)
	}
	if e.Backend() == gpu.BackendGPU {
		if err := segmaxOnGPU(e, vals, offsets, out); err != nil {
			return fmt.Errorf("prim: segmented max: %w", err)
		}
		return nil
	}
	segmaxCPU(e.Workers(), vals, offsets, out)
	return nil
}

// checkSegments validates offsets as the bounds of nseg segments of a slice
// of n elements.
func checkSegments(n int, offsets []uint32, nseg int) error {
	if len(offsets) == 0 {
		return fmt.Errorf("no offsets: %d segments need %d", nseg, nseg+1)
	}
	if nseg != len(offsets)-1 {
		return fmt.Errorf("out has %d elements, want len(offsets)-1 = %d", nseg, len(offsets)-1)
	}
	for s := 1; s < len(offsets); s++ {
		if offsets[s] < offsets[s-1] {
			return fmt.Errorf("offsets decrease at %d: %d after %d", s, offsets[s], offsets[s-1])
		}
	}
	if last := offsets[len(offsets)-1]; int64(last) > int64(n) {
		return fmt.Errorf("offsets[%d] = %d is past the %d values", len(offsets)-1, last, n)
	}
	return nil
}

// segmaxCPU is the CPU twin of the GPU segmented max, with the same load
// balancing: the work is the sequence of events "segment s starts" and
// "element i", in order (segment s starts at event s + offsets[s] -
// offsets[0]); each goroutine takes an equal share of events. A part
// stores the maxima of the segments that start in it and returns the
// maximum of its leading piece of the segment open at its start, which is
// folded in afterwards.
func segmaxCPU[T Word](workers int, vals []T, offsets []uint32, out []T) {
	nseg := len(out)
	if nseg == 0 {
		return
	}
	base := int(offsets[0])
	events := nseg + int(offsets[nseg]) - base
	parts := min(workers, events/segmaxCPUGrain)
	if parts <= 1 {
		segmaxPart(vals, offsets, out, 0, nseg, base, int(offsets[nseg]))
		return
	}
	// starts[p]: segments that start before part p's first event.
	starts := make([]int, parts+1)
	for p := range starts {
		d := events * p / parts
		starts[p] = sort.Search(nseg+1, func(s int) bool { return s+int(offsets[s])-base >= d })
	}
	carry := make([]T, parts)
	par.Do(parts, func(p int) {
		sLo, sHi := starts[p], starts[p+1]
		eLo := base + events*p/parts - sLo
		eHi := base + events*(p+1)/parts - sHi
		carry[p] = segmaxPart(vals, offsets, out, sLo, sHi, eLo, eHi)
	})
	for p := 1; p < parts; p++ {
		if s := starts[p] - 1; s >= 0 {
			out[s] = max(out[s], carry[p])
		}
	}
}

// segmaxPart handles the events of the segment starts [sLo, sHi) and the
// elements [eLo, eHi): it stores out[s] for s in [sLo, sHi) over the
// segment's elements before eHi, and returns the maximum of the elements
// before offsets[sLo] (those of segment sLo-1), 0 if none.
func segmaxPart[T Word](vals []T, offsets []uint32, out []T, sLo, sHi, eLo, eHi int) T {
	lead := maxOf(vals[eLo:min(int(offsets[sLo]), eHi)])
	for s := sLo; s < sHi; s++ {
		out[s] = maxOf(vals[offsets[s]:min(int(offsets[s+1]), eHi)])
	}
	return lead
}

// maxOf returns the largest element of v, 0 when v is empty.
func maxOf[T Word](v []T) T {
	var m T
	for _, x := range v {
		m = max(m, x)
	}
	return m
}
