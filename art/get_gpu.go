package art

import (
	"math/bits"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
)

// lookup runs ag_get, one thread per key (or ag_get_lanes), over the
// batch in pipelined chunks (point_gpu.go). Cost: the keys over the bus
// once and the answers back, overlapped with the kernels (one walk per
// key) and with the copies into and out of pinned memory.
func (g *gpuEngine) lookup(kb Keys, vals []uint64, found []bool) error {
	if long, err := longLookup(g, kb, vals, found); long {
		return err
	}
	return g.lookupCall(&pointCall{op: "lookup", src: stringsOf(kb), out: vals, found: boolBytes(found)})
}

// lookupSlices is lookup of keys in Go slices, packed chunk by chunk
// straight into pinned memory (no packed copy of the batch on the Go
// heap); errLongSlices when they hold more than 4 GiB of bytes.
func (g *gpuEngine) lookupSlices(keys [][]byte, vals []uint64, found []bool) error {
	return g.lookupCall(&pointCall{op: "lookup", src: gpu.Strings{Slices: keys}, out: vals, found: boolBytes(found)})
}

// getSlices is lookupSlices into answers it allocates (allocAnswers:
// beside the call's start, awaited before its first answers are copied
// out), as Get returns them; errLongSlices when the keys hold more than 4
// GiB of bytes (the answers allocated all the same).
func (g *gpuEngine) getSlices(keys [][]byte) ([]uint64, []bool, error) {
	a := allocAnswers(len(keys), true)
	err := g.lookupCall(&pointCall{op: "lookup", src: gpu.Strings{Slices: keys}, later: a})
	vals, found := a.wait()
	return vals, found, err
}

// stringsOf views a packed batch as gpu.Strings.
func stringsOf(kb Keys) gpu.Strings {
	if len(kb.Offs) == 0 {
		return gpu.Strings{Offs: []uint32{0}}
	}
	return gpu.Strings{Data: kb.Data, Offs: kb.Offs}
}

// lookupInto is lookup with the found flags as bytes of the keys staged
// in a caller's pinned Staging (LookupStaged, kb.Offs[0] == 0): no host
// copies, every chunk's transfer in queued at once, and check (the
// batch's validation) run while they go.
func (g *gpuEngine) lookupInto(kb Keys, vals []uint64, found []uint8, check func() error) error {
	return g.lookupCall(&pointCall{op: "lookup", kb: kb, out: vals, found: found, staged: true, check: check})
}

// lookupCall runs the lookup pc (its keys, answers and found flags set).
func (g *gpuEngine) lookupCall(pc *pointCall) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	cut, unitAt, done, err := g.pointBegin(pc)
	if done {
		return err
	}
	n, bytes := pc.len(), cut.Bytes()
	if err := g.pool.Reserve(append(pointNeeds("get", n, bytes, false),
		gpu.NeedOf[uint64]("get.out", n), gpu.NeedOf[uint8]("get.found", n))...); err != nil {
		return err
	}
	b := g.takeBatch("get", n, bytes, false)
	ov, of := gpu.Take[uint64](g.pool, "get.out", n), gpu.Take[uint8](g.pool, "get.found", n)
	if err := g.setDesc(g.t, b); err != nil {
		return err
	}
	pc.work = func(base, m int) error {
		if g.lanes == lookupLanes {
			return g.launch(g.k.getLanes, m*lookupLanes, g.descBuf, uint64(base), uint64(m), ov, of)
		}
		return g.launch(g.k.get, m, g.descBuf, uint64(base), uint64(m), ov, of)
	}
	return g.point(pc, cut, unitAt, pointDev{data: b.data, offs: b.offs, out: ov, found: of})
}

// pointBegin is the start every point call shares, under g.mu: it waits
// for the frees of earlier batches, runs an empty call to its end (point
// records its timings) and sizes a non-empty one in chunks (pointSizes),
// tracing its start when the engine is traced. done is true when the call
// is over (empty, or err from sizing).
func (g *gpuEngine) pointBegin(pc *pointCall) (cut gpu.Layout, unitAt []int, done bool, err error) {
	g.waitFrees()
	if pc.len() == 0 {
		return gpu.Layout{}, nil, true, g.point(pc, gpu.Layout{}, nil, pointDev{})
	}
	g.pointTraceStart()
	if cut, unitAt, err = g.pointSizes(pc); err != nil {
		return cut, nil, true, err
	}
	g.pointMark(g.s, "sized", -1)
	return cut, unitAt, false, nil
}

// boolBytes views flags as the bytes 0 and 1 the kernels write.
func boolBytes(f []bool) []uint8 {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*uint8)(unsafe.Pointer(&f[0])), len(f))
}

// update is store.update on the device: the conflict table cleared, then
// ag_update_mark (the walks and the table) chunk by chunk as the keys
// arrive (point_gpu.go), ag_update_write over the whole batch after the
// last chunk's marks; each chunk's found flags go back as soon as its
// marks are done. Cost: keys, offsets and values over the bus once, the
// flags back, two passes of one thread per key.
func (g *gpuEngine) update(kb Keys, vals []uint64, found []bool) error {
	if long, err := longUpdate(g, kb, vals, found); long {
		return err
	}
	return g.updateCall(&pointCall{op: "update", src: stringsOf(kb), vals: vals, found: boolBytes(found)})
}

// updateSlices is update of keys in Go slices, packed chunk by chunk
// straight into pinned memory; errLongSlices when they hold more than 4
// GiB of bytes.
func (g *gpuEngine) updateSlices(keys [][]byte, vals []uint64, found []bool) error {
	return g.updateCall(&pointCall{op: "update", src: gpu.Strings{Slices: keys}, vals: vals, found: boolBytes(found)})
}

// updateSlicesFound is updateSlices into found flags it allocates
// (allocAnswers), as Update returns them; errLongSlices as updateSlices.
func (g *gpuEngine) updateSlicesFound(keys [][]byte, vals []uint64) ([]bool, error) {
	a := allocAnswers(len(keys), false)
	err := g.updateCall(&pointCall{op: "update", src: gpu.Strings{Slices: keys}, vals: vals, later: a})
	_, found := a.wait()
	return found, err
}

// updateCall runs the update pc (its keys, values and found flags set).
func (g *gpuEngine) updateCall(pc *pointCall) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	cut, unitAt, done, err := g.pointBegin(pc)
	if done {
		return err
	}
	n, bytes := pc.len(), cut.Bytes()
	size := conflictSize(n)
	if err := g.pool.Reserve(append(pointNeeds("upd", n, bytes, true), gpu.NeedOf[uint64]("upd.tk", size), gpu.NeedOf[uint32]("upd.tp", size),
		gpu.NeedOf[uint64]("upd.leaf", n), gpu.NeedOf[uint8]("upd.found", n))...); err != nil {
		return err
	}
	b := g.takeBatch("upd", n, bytes, true)
	tk, tp := gpu.Take[uint64](g.pool, "upd.tk", size), gpu.Take[uint32](g.pool, "upd.tp", size)
	leaf, of := gpu.Take[uint64](g.pool, "upd.leaf", n), gpu.Take[uint8](g.pool, "upd.found", n)
	bitsN := bits.Len(uint(size)) - 1
	if err := firstErr(g.setDesc(g.t, b), tk.FillBytes(g.s, 0), tp.FillBytes(g.s, 0)); err != nil {
		return err
	}
	pc.work = func(base, m int) error {
		return g.launch(g.k.updMark, m, g.descBuf, uint64(base), uint64(m), leaf, of, tk, tp, uint32(bitsN))
	}
	pc.after = func() error { return g.launch(g.k.updWrite, n, g.descBuf, uint64(n), leaf, tk, tp, uint32(bitsN)) }
	return g.point(pc, cut, unitAt, pointDev{data: b.data, offs: b.offs, vals: b.vals, found: of})
}
