package art

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"warpkv/engine"
	"warpkv/gpu"
	"warpkv/prim"
)

// lookup runs ag_get, one thread per key (or ag_get_lanes), on the
// uploaded batch and downloads the values and found flags. Cost: a
// transfer each way (through the pipelines) and one walk per key.
func (g *gpuEngine) lookup(kb Keys, vals []uint64, found []bool) error {
	return g.lookupInto(kb, vals, boolBytes(found), false)
}

// lookupInto is lookup with the found flags as bytes; pinned says that
// the keys, vals and found are in pinned memory (a caller's Staging, for
// LookupStaged): they are copied by DMA straight from and into it.
func (g *gpuEngine) lookupInto(kb Keys, vals []uint64, found []uint8, pinned bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := kb.Len()
	g.down.Discard()
	g.start()
	b, err := g.upload("get", kb, nil, pinned)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	g.clock.Mark(g.s, engine.MarkSorted)
	if err := g.pool.Reserve(gpu.NeedOf[uint64]("get.vals", n), gpu.NeedOf[uint8]("get.found", n)); err != nil {
		return err
	}
	ov, of := gpu.Take[uint64](g.pool, "get.vals", n), gpu.Take[uint8](g.pool, "get.found", n)
	if err := g.setDesc(g.t, b); err != nil {
		return err
	}
	if g.lanes == lookupLanes {
		err = g.launch(g.k.getLanes, n*lookupLanes, g.descBuf, uint64(n), ov, of)
	} else {
		err = g.launch(g.k.get, n, g.descBuf, uint64(n), ov, of)
	}
	if err != nil {
		return err
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	if pinned {
		err = errors.Join(ov.Read(g.s, 0, vals), of.Read(g.s, 0, found))
	} else {
		err = errors.Join(gpu.DownloadStaged(g.down, g.s, ov, 0, vals), gpu.DownloadStaged(g.down, g.s, of, 0, found))
	}
	if err != nil {
		return err
	}
	return g.finish("lookup", n)
}

// boolBytes views flags as the bytes 0 and 1 the kernels write.
func boolBytes(f []bool) []uint8 {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*uint8)(unsafe.Pointer(&f[0])), len(f))
}

// update is store.update on the device: ag_update_mark (the walks and the
// conflict table, cleared first) then ag_update_write.
func (g *gpuEngine) update(kb Keys, vals []uint64, found []bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := kb.Len()
	g.start()
	g.down.Discard()
	b, err := g.upload("upd", kb, vals, false)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	g.clock.Mark(g.s, engine.MarkSorted)
	size := conflictSize(n)
	if err := g.pool.Reserve(gpu.NeedOf[uint64]("upd.tk", size), gpu.NeedOf[uint32]("upd.tp", size),
		gpu.NeedOf[uint64]("upd.leaf", n), gpu.NeedOf[uint8]("upd.found", n)); err != nil {
		return err
	}
	tk, tp := gpu.Take[uint64](g.pool, "upd.tk", size), gpu.Take[uint32](g.pool, "upd.tp", size)
	leaf, of := gpu.Take[uint64](g.pool, "upd.leaf", n), gpu.Take[uint8](g.pool, "upd.found", n)
	bitsN := bits.Len(uint(size)) - 1
	if err := firstErr(g.setDesc(g.t, b),
		tk.FillBytes(g.s, 0), tp.FillBytes(g.s, 0),
		g.launch(g.k.updMark, n, g.descBuf, uint64(n), leaf, of, tk, tp, uint32(bitsN)),
		g.launch(g.k.updWrite, n, g.descBuf, uint64(n), leaf, tk, tp, uint32(bitsN))); err != nil {
		return err
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	if err := gpu.DownloadStaged(g.down, g.s, of, 0, boolBytes(found)); err != nil {
		return err
	}
	return g.finish("update", n)
}

// ranges runs aq_scan twice, one thread per query: counts, exclusive scans
// of counts and key bytes, then the writes at the offsets; the pairs come
// back in one transfer per array.
func (g *gpuEngine) ranges(qs []Query, limit int, desc bool) (*Result, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	Q := len(qs)
	g.start()
	los, his := make([][]byte, Q), make([][]byte, Q)
	has := make([]uint8, Q)
	for i, q := range qs {
		los[i], his[i] = q.Lo, q.Hi
		if q.Hi != nil {
			has[i] = 1
		}
	}
	g.down.Discard()
	lo, err := g.upload("q.lo", Pack(los), nil, false)
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	hi, err := g.upload("q.hi", Pack(his), nil, false)
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	if err := g.pool.Reserve(gpu.NeedOf[uint8]("q.has", Q), gpu.NeedOf[uint64]("q.cnt", Q+1), gpu.NeedOf[uint64]("q.bytes", Q+1),
		gpu.NeedOf[uint8]("q.dummy", 8)); err != nil {
		return nil, err
	}
	hb, cnt, byt := gpu.Take[uint8](g.pool, "q.has", Q), gpu.Take[uint64](g.pool, "q.cnt", Q+1), gpu.Take[uint64](g.pool, "q.bytes", Q+1)
	dummy := gpu.Take[uint8](g.pool, "q.dummy", 8)
	if err := gpu.UploadStaged(g.up, g.s, hb, 0, has); err != nil {
		return nil, err
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	g.clock.Mark(g.s, engine.MarkSorted)
	lim := uint64(0)
	if limit > 0 {
		lim = uint64(limit)
	}
	dsc := int32(0)
	if desc {
		dsc = 1
	}
	scan := func(write int32, okeys, ooffs, ovals any) error {
		return g.launch(g.k.qScan, Q+1, g.descBuf, uint64(Q), lo.data, lo.offs, hi.data, hi.offs, hb, uint64(lim), int32(dsc), int32(write),
			cnt, byt, okeys, ooffs, ovals)
	}
	if err := firstErr(g.setDesc(g.t, nil), scan(0, dummy, dummy, dummy),
		prim.DevScanExclusive(g.pe, cnt, cnt, Q+1), prim.DevScanExclusive(g.pe, byt, byt, Q+1)); err != nil {
		return nil, fmt.Errorf("count: %w", err)
	}
	tc, err := g.readU64(cnt, Q, 1)
	if err != nil {
		return nil, err
	}
	tb, err := g.readU64(byt, Q, 1)
	if err != nil {
		return nil, err
	}
	total, totalBytes := int(tc[0]), tb[0]
	if totalBytes > math.MaxUint32 {
		return nil, fmt.Errorf("%d key bytes in the answers: at most %d per call", totalBytes, uint64(math.MaxUint32))
	}
	if err := g.pool.Reserve(gpu.NeedOf[uint8]("q.okeys", int(totalBytes)), gpu.NeedOf[uint32]("q.ooffs", total+1),
		gpu.NeedOf[uint64]("q.ovals", total)); err != nil {
		return nil, err
	}
	okeys, ooffs, ovals := gpu.Take[uint8](g.pool, "q.okeys", int(totalBytes)), gpu.Take[uint32](g.pool, "q.ooffs", total+1),
		gpu.Take[uint64](g.pool, "q.ovals", total)
	if err := scan(1, okeys, ooffs, ovals); err != nil {
		return nil, fmt.Errorf("write: %w", err)
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	res := &Result{Keys: Keys{Data: make([]byte, totalBytes), Offs: make([]uint32, total+1)},
		Values: make([]uint64, total), Offsets: make([]int, Q+1)}
	offs := make([]uint64, Q+1)
	if err := errors.Join(gpu.DownloadStaged(g.down, g.s, cnt, 0, offs), gpu.DownloadStaged(g.down, g.s, okeys, 0, res.Keys.Data),
		gpu.DownloadStaged(g.down, g.s, ooffs, 0, res.Keys.Offs[:total]), gpu.DownloadStaged(g.down, g.s, ovals, 0, res.Values)); err != nil {
		return nil, err
	}
	if err := g.finish("ranges", Q); err != nil {
		return nil, err
	}
	res.Keys.Offs[total] = uint32(totalBytes)
	for i, o := range offs {
		res.Offsets[i] = int(o)
	}
	return res, nil
}
