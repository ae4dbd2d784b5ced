package art

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"warpkv/engine"
	"warpkv/prim"
)

// lookup runs ag_get, one thread per key, on the uploaded batch and
// downloads the values and found flags. Cost: a transfer each way and one
// walk per key.
func (g *gpuEngine) lookup(kb Keys, vals []uint64, found []bool) error {
	return g.lookupInto(kb, vals, boolBytes(found))
}

// lookupInto is lookup with the found flags as bytes (a pinned staging
// buffer's, for LookupStaged).
func (g *gpuEngine) lookupInto(kb Keys, vals []uint64, found []uint8) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := kb.Len()
	g.start()
	b, err := g.upload("get", kb, nil)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	g.clock.Mark(g.s, engine.MarkSorted)
	ov, err := g.b64("get.vals", n)
	if err != nil {
		return err
	}
	of, err := g.b8("get.found", n)
	if err != nil {
		return err
	}
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
	if n > 0 {
		if err := errors.Join(ov.Read(g.s, 0, vals), of.Read(g.s, 0, found)); err != nil {
			return err
		}
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
	b, err := g.upload("upd", kb, vals)
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	g.clock.Mark(g.s, engine.MarkSorted)
	size := conflictSize(n)
	tk, err := g.b64("upd.tk", size)
	if err != nil {
		return err
	}
	tp, err := g.b32("upd.tp", size)
	if err != nil {
		return err
	}
	leaf, err := g.b64("upd.leaf", n)
	if err != nil {
		return err
	}
	of, err := g.b8("upd.found", n)
	if err != nil {
		return err
	}
	bitsN := bits.Len(uint(size)) - 1
	if err := firstErr(g.setDesc(g.t, b),
		tk.FillBytes(g.s, 0), tp.FillBytes(g.s, 0),
		g.launch(g.k.updMark, n, g.descBuf, uint64(n), leaf, of, tk, tp, uint32(bitsN)),
		g.launch(g.k.updWrite, n, g.descBuf, uint64(n), leaf, tk, tp, uint32(bitsN))); err != nil {
		return err
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	if n > 0 {
		if err := of.Read(g.s, 0, boolBytes(found)); err != nil {
			return err
		}
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
	lo, err := g.upload("q.lo", Pack(los), nil)
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	hi, err := g.upload("q.hi", Pack(his), nil)
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	hb, err := g.b8("q.has", Q)
	if err != nil {
		return nil, err
	}
	if err := hb.Write(g.s, 0, has); err != nil {
		return nil, err
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	g.clock.Mark(g.s, engine.MarkSorted)
	cnt, err := g.b64("q.cnt", Q+1)
	if err != nil {
		return nil, err
	}
	byt, err := g.b64("q.bytes", Q+1)
	if err != nil {
		return nil, err
	}
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
	dummy, err := g.b8("q.dummy", 8)
	if err != nil {
		return nil, err
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
	okeys, err := g.b8("q.okeys", max(1, int(totalBytes)))
	if err != nil {
		return nil, err
	}
	ooffs, err := g.b32("q.ooffs", total+1)
	if err != nil {
		return nil, err
	}
	ovals, err := g.b64("q.ovals", max(1, total))
	if err != nil {
		return nil, err
	}
	if err := scan(1, okeys, ooffs, ovals); err != nil {
		return nil, fmt.Errorf("write: %w", err)
	}
	g.clock.Mark(g.s, engine.MarkWorked)
	res := &Result{Keys: Keys{Data: make([]byte, totalBytes), Offs: make([]uint32, total+1)},
		Values: make([]uint64, total), Offsets: make([]int, Q+1)}
	offs := make([]uint64, Q+1)
	if err := errors.Join(cnt.Read(g.s, 0, offs), okeys.Read(g.s, 0, res.Keys.Data), ooffs.Read(g.s, 0, res.Keys.Offs[:total]),
		ovals.Read(g.s, 0, res.Values)); err != nil {
		return nil, err
	}
	res.Keys.Offs[total] = uint32(totalBytes)
	for i, o := range offs {
		res.Offsets[i] = int(o)
	}
	return res, g.finish("ranges", Q)
}
