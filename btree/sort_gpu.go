package btree

import (
	"errors"
	"math"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// uploadSortDedupe copies the batch to inK (and inV when values is not
// nil) and sorts it on the device; then keeps the last occurrence of each
// key in outK and returns their number; outV holds their values once
// awaitValues has returned. With values, a large batch (overlapSort) is
// sorted as (key, batch position) pairs while the values are uploaded
// on the second stream by a goroutine (valuesUpload), and the kept
// positions' values are gathered by awaitValues, which callers call as
// late as they can (insert: after locating the batch's leaves): the
// values' host copy and transfer overlap the sort, the dedupe and the
// locate, and the sort's payload is 4 bytes instead of 8. The phase
// marks put the keys' upload in Upload and the sort and the dedupe in
// Sort. With pinned, keys and values are in pinned host memory (a
// caller's Staging) and go to the device by DMA with no host copy; else
// through the pinned staging rings. Cost: the transfers, a radix sort, a
// flag kernel, one or two selects (and a gather) and one synchronization.
func (g *gpuTree) uploadSortDedupe(keys, values []uint64, pinned bool) (int, error) {
	if err := g.sortDedupe(keys, values, pinned); err != nil {
		return 0, err
	}
	return g.keptKeys()
}

// keptKeys reads the number of keys that sortDedupe kept (one
// synchronization) and gives it to the values' upload in flight. Cost:
// one synchronization.
func (g *gpuTree) keptKeys() (int, error) {
	m, err := g.keptCount(gpu.Take[uint32](g.pool, bufCounters, 2))
	if err != nil {
		return 0, err
	}
	g.setKept(m)
	g.step("readback: kept keys")
	return m, nil
}

// setKept records m, the number of keys sortDedupe kept once the host
// has read it (keptKeys, or locate with its totals), for the values'
// upload in flight (awaitValues and scatterValues launch over them).
func (g *gpuTree) setKept(m int) {
	if g.values != nil {
		g.values.m = m
	}
}

// keptCounter is the device word where sortDedupe leaves the number of
// keys kept (counters[0]), for kernels that read it (bt_locate) before
// the host has.
func (g *gpuTree) keptCounter() *gpu.Buffer[uint32] {
	return gpu.View[uint32](gpu.Take[uint32](g.pool, bufCounters, 2), 0, 1)
}

// sortDedupe is uploadSortDedupe without the readback: the number of keys
// kept stays in keptCounter, sizes are bounded by len(keys) until the
// host reads it (keptKeys, or locate with its totals). Cost: as
// uploadSortDedupe, less the synchronization.
func (g *gpuTree) sortDedupe(keys, values []uint64, pinned bool) error {
	tr := transfers{g: g, pinned: pinned, grain: g.uploadGrain()}
	n := len(keys)
	k, err := gpu.Get[uint64](g.pool, bufInK, n)
	if err != nil {
		return err
	}
	var v *gpu.Buffer[uint64]
	if values != nil {
		if v, err = gpu.Get[uint64](g.pool, bufInV, n); err != nil {
			return err
		}
	}
	overlap := values != nil && overlapSort(n) && (pinned || g.up.Staged())
	if overlap {
		if err := g.pool.Reserve(gpu.NeedOf[uint32]("sortidx", n), gpu.NeedOf[uint32]("selidx", n),
			gpu.NeedOf[uint64](bufOutV, n)); err != nil {
			return err
		}
		if g.splitUpload(n) {
			return g.uploadSortHalves(k, v, keys, values, tr)
		}
	}
	if err := upload(tr, g.s, k, 0, keys); err != nil {
		return err
	}
	if !overlap && values != nil {
		if err := upload(tr, g.s, v, 0, values); err != nil {
			return err
		}
	}
	g.clock.Mark(g.s, engine.MarkUploaded)
	g.step("upload keys")
	if overlap {
		idx := gpu.Take[uint32](g.pool, "sortidx", n)
		if err := g.fork(); err != nil { // s2's upload into inV after s's earlier use of it
			return err
		}
		if err := g.launch(g.k.iota, n, uint64(n), idx); err != nil {
			return err
		}
		if err := prim.DevSortPairs(g.pe, k, idx, n); err != nil {
			return err
		}
		g.step("sort (key, position)")
		return g.dedupeValuesLater(tr, n, k, idx, v, values)
	}
	if values != nil {
		err = prim.DevSortPairs(g.pe, k, v, n)
	} else {
		err = prim.DevSortKeys(g.pe, k, n)
	}
	if err != nil {
		return err
	}
	if err := g.dedupe(n, values != nil); err != nil {
		return err
	}
	g.clock.Mark(g.s, engine.MarkSorted)
	g.step("sort, dedupe")
	return nil
}

// dedupeValuesLater ends uploadSortDedupe's overlapped path once the n
// (key, batch position) pairs in keys, idx are sorted (or queued to be):
// it starts the values' upload into v (startValues, as tr says) and
// dedupes the pairs (dedupeSelect), leaving the kept positions in selidx
// for awaitValues or scatterValues, the number kept in keptCounter. Cost:
// a goroutine and the dedupe's kernels.
func (g *gpuTree) dedupeValuesLater(tr transfers, n int, keys *gpu.Buffer[uint64], idx *gpu.Buffer[uint32], v *gpu.Buffer[uint64], values []uint64) error {
	sel := gpu.Take[uint32](g.pool, "selidx", n)
	g.values = g.startValues(tr, v, values, sel)
	if err := g.dedupeSelect(n, keys, idx, sel); err != nil {
		return err
	}
	g.clock.Mark(g.s, engine.MarkSorted)
	g.step("dedupe")
	return nil
}

// valuesUpload is a batch's values on their way to the device: a
// goroutine copies them through the pinned upload ring on the second
// stream (done says when it has queued the last chunk, and how it went);
// awaitValues then gathers the m kept ones (positions sel) into outV.
type valuesUpload struct {
	done   chan error
	got    bool  // done's answer was taken (queued)
	err    error // that answer
	v      *gpu.Buffer[uint64]
	sel    *gpu.Buffer[uint32]
	m      int
	pinned bool // from pinned memory by DMA (InsertStaged)
}

// startValues starts the upload of values into v on s2 (after fork) in a
// goroutine, as tr says (through the upload ring, or by DMA from pinned
// memory). Nothing else may use the upload ring or s2 until
// awaitValues or settleValues has returned. Cost: a goroutine.
func (g *gpuTree) startValues(tr transfers, v *gpu.Buffer[uint64], values []uint64, sel *gpu.Buffer[uint32]) *valuesUpload {
	u := &valuesUpload{done: make(chan error, 1), v: v, sel: sel, pinned: tr.pinned}
	go func() { u.done <- upload(tr, g.s2, v, 0, values) }()
	return u
}

// awaitValues waits until the values' upload started by uploadSortDedupe
// is queued, makes the tree's stream wait for it and gathers the kept
// values into outV; nothing when there is none pending. Cost: the rest of
// the values' host copy, a stream wait and a gather kernel.
func (g *gpuTree) awaitValues() error {
	u, err := g.valuesArrived()
	if u == nil || err != nil {
		return err
	}
	cnt := gpu.Take[uint32](g.pool, bufCounters, 2)
	if err := g.launch(g.k.gatherSel, u.m, uint64(u.m), gpu.View[uint32](cnt, 4, 1), u.sel, u.v, gpu.Take[uint64](g.pool, bufOutV, u.m)); err != nil {
		return err
	}
	g.step("values: wait, gather")
	return nil
}

// scatterValues is awaitValues for a batch whose keys the warp merge put in
// their leaves without their values (insertSorted's late values): it waits
// for the values' upload and writes each kept value into its key's leaf
// slot, whose word index bt_merge_leaves_E left in outV. Cost: the rest of
// the values' host copy, a stream wait and a scatter kernel.
func (g *gpuTree) scatterValues() error {
	u, err := g.valuesArrived()
	if u == nil || err != nil {
		return err
	}
	if err := g.launch(g.k.scatterVals, u.m, uint64(u.m), gpu.Take[uint64](g.pool, bufOutV, u.m), u.sel, u.v, g.slots); err != nil {
		return err
	}
	g.step(stepScatter)
	return nil
}

// valuesArrived takes the pending values' upload (nil when there is none),
// waits until its goroutine has queued the last chunk, and makes the
// tree's stream wait for the second stream. Cost: the rest of the values'
// host copy and a stream wait.
func (g *gpuTree) valuesArrived() (*valuesUpload, error) {
	u := g.values
	if u == nil {
		return nil, nil
	}
	g.values = nil
	if err := u.wait(); err != nil {
		return nil, err
	}
	return u, g.joinBack()
}

// wait blocks until the upload's goroutine has queued the last chunk and
// returns how it went. Cost: the rest of the host copy.
func (u *valuesUpload) wait() error {
	if !u.got {
		u.err, u.got = <-u.done, true
	}
	return u.err
}

// queued reports, without blocking, whether the upload's goroutine has
// queued the last chunk (its DMA may still run: the stream wait of
// valuesArrived orders it). Cost: O(1).
func (u *valuesUpload) queued() bool {
	if !u.got {
		select {
		case u.err = <-u.done:
			u.got = true
		default:
		}
	}
	return u.got
}

// settleValues waits for a values' upload still pending (a batch that
// failed before awaitValues) so that the caller's slice and the ring are
// free when the call returns; its error is dropped (the batch already
// failed). Cost: the rest of the upload's host copy.
func (g *gpuTree) settleValues() {
	if u := g.values; u != nil {
		g.values = nil
		_ = u.wait()           // the batch's own error is returned
		_ = g.s2.Synchronize() // best effort, likewise // best effort: the batch's own error is returned
	}
}

// overlapSort reports whether a batch of n pairs is sorted with a position
// payload while its values upload (uploadSortDedupe): large enough to be
// staged, and positions fit in 32 bits.
func overlapSort(n int) bool { return n >= stageMin && uint64(n) <= math.MaxUint32 }

// dedupeSelect is dedupe for a batch sorted as (key, position) pairs in
// keys, idx: the last of each run of equal keys goes to outK, its position
// (from idx) to sel and the kept count to counters[0] and counters[1]
// (awaitValues gathers their values). No synchronization.
func (g *gpuTree) dedupeSelect(n int, keys *gpu.Buffer[uint64], idx, sel *gpu.Buffer[uint32]) error {
	flags, cnt, err := g.selectLastKeys(n, keys)
	if err != nil {
		return err
	}
	return prim.DevSelect(g.pe, idx, flags, sel, n, gpu.View[uint32](cnt, 4, 1))
}

// dedupe flags the last of each run of equal keys among the n sorted keys
// of inK and compacts them (and their values from inV, withValues) into
// outK (outV), their number to counters[0]. No synchronization.
func (g *gpuTree) dedupe(n int, withValues bool) error {
	flags, cnt, err := g.selectLastKeys(n, gpu.Take[uint64](g.pool, bufInK, n))
	if err != nil {
		return err
	}
	if withValues {
		uv, err := gpu.Get[uint64](g.pool, bufOutV, n)
		if err != nil {
			return err
		}
		return prim.DevSelect(g.pe, gpu.Take[uint64](g.pool, bufInV, n), flags, uv, n, gpu.View[uint32](cnt, 4, 1))
	}
	return nil
}

// selectLastKeys flags the last of each run of equal keys among the n
// sorted keys of keys and compacts those keys into outK, their number into
// cnt[0]; the flags and cnt (two words; the second for the caller's own
// select) are returned for the caller's payload. No synchronization.
func (g *gpuTree) selectLastKeys(n int, keys *gpu.Buffer[uint64]) (*gpu.Buffer[uint8], *gpu.Buffer[uint32], error) {
	flags, err := gpu.Get[uint8](g.pool, bufFlags, n)
	if err != nil {
		return nil, nil, err
	}
	uk, err := gpu.Get[uint64](g.pool, bufOutK, n)
	if err != nil {
		return nil, nil, err
	}
	cnt, err := gpu.Get[uint32](g.pool, bufCounters, 2)
	if err != nil {
		return nil, nil, err
	}
	if err := g.launch(g.k.lastFlags, n, keys, uint64(n), flags); err != nil {
		return nil, nil, err
	}
	if err := prim.DevSelect(g.pe, keys, flags, uk, n, gpu.View[uint32](cnt, 0, 1)); err != nil {
		return nil, nil, err
	}
	return flags, cnt, nil
}

// keptCount synchronizes and returns cnt[0], the number of keys kept.
func (g *gpuTree) keptCount(cnt *gpu.Buffer[uint32]) (int, error) {
	var c [1]uint32
	g.trace.Synced()
	if err := errors.Join(cnt.Read(g.s, 0, c[:]), g.s.Synchronize()); err != nil {
		return 0, err
	}
	return int(c[0]), nil
}
