package art

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// Record pools that grow in place. Where the device has virtual memory
// management (gpu.Growable; g.vmm, on by default where supported), each
// of a tree's pools of at least inPlaceMinBytes keeps its records, free
// stack and pending frees on three reserved ranges of addresses, and a
// pool's growth maps more memory behind the records it holds: no new
// buffer, no device copy of the records in use, no old buffer retired and
// freed. At 100M keys an insert's N16 pool grows from about 2 to 3 GB; as
// buffers that growth was a cuMemAlloc of the new pool, a 2 GB device
// copy and a cuMemFree of the old pool, beside the upload of the keys,
// which the driver's calls slowed (BENCHMARKS.md, branches ains6 and
// ains7). Smaller pools, and every pool without VMM (or with g.vmm off),
// are buffers, grown as ensurePool's doc says; a pool of buffers that
// grows past the size moves in place (one copy).

// poolVM are one pool's reserved ranges: its records (words), free
// stack and pending frees.
type poolVM struct {
	words, free, pend *gpu.Growable
}

// newPoolVM reserves the ranges of a pool of kind k: each as much as the
// device's memory holds of records of that kind. Cost: three
// cuMemAddressReserve (no memory).
func newPoolVM(d *gpu.Device, k int) (*poolVM, error) {
	total := int64(d.Properties().TotalMem)
	recs := total/int64(8*kindWords[k]) + 1
	vm := &poolVM{}
	var err error
	if vm.words, err = gpu.NewGrowable(d, total); err == nil {
		if vm.free, err = gpu.NewGrowable(d, 4*recs); err == nil {
			vm.pend, err = gpu.NewGrowable(d, 4*recs)
		}
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("reserving the addresses of a pool of kind %d: %w", k, err), vm.release())
	}
	return vm, nil
}

// grow maps memory behind at least nc records of kind k (records, free
// stack and pending frees). It makes no stream calls, so another
// goroutine may run it beside a batch. On failure the memory mapped
// stays (unused) and the pool's capacity is as before. Cost: up to three
// cuMemCreate and cuMemMap of the growth; none when mapped.
func (vm *poolVM) grow(k int, nc uint64) error {
	err := vm.words.Grow(int64(nc) * int64(8*kindWords[k]))
	if err == nil {
		if err = vm.free.Grow(int64(nc) * 4); err == nil {
			err = vm.pend.Grow(int64(nc) * 4)
		}
	}
	if err != nil {
		return fmt.Errorf("%d records of kind %d: %w", nc, k, err)
	}
	return nil
}

// capacity is the records of kind k that the mapped memory holds.
func (vm *poolVM) capacity(k int) uint64 {
	return uint64(min(vm.words.Mapped()/int64(8*kindWords[k]), vm.free.Mapped()/4, vm.pend.Mapped()/4))
}

// release unmaps and frees the ranges. Cost: the unmaps and releases.
func (vm *poolVM) release() error {
	if vm == nil {
		return nil
	}
	return errors.Join(vm.words.Free(), vm.free.Free(), vm.pend.Free())
}

// inPlaceMinBytes is the default size of records from which a pool grows
// in place (gpuEngine.inPlaceMin): smaller pools are buffers. A small
// pool's growth as buffers is cheap (an allocation and a copy of a few
// MB), while every tree and growth in place costs a handful of driver
// calls (reservations, creates, maps, and their release), which builds
// and inserts of small trees pay many times: TestRandomSequences' first
// case ran 5.6 s with every pool in place against 1.7-1.9 s with buffers
// (H200, 2026-11-29). At 100M keys every pool but the N48 one passes it
// after the build, and that one moves in place as it grows ahead.
const inPlaceMinBytes = 64 << 20

// inPlace reports whether kind k's pool of tree t grows in place to nc
// records: it is on reserved ranges already, or g.vmm is on and nc
// records take at least g.inPlaceMin bytes. Cost: O(1).
func (g *gpuEngine) inPlace(t *devTree, k int, nc uint64) bool {
	return t.pools[k].vm != nil || g.vmm && nc*uint64(8*kindWords[k]) >= g.inPlaceMin
}

// growInPlace grows kind k's pool of tree t, on reserved ranges, to hold
// at least nc records and points the pool's buffers at what is mapped. A
// pool of buffers moves onto ranges reserved here (moveInPlace). On
// failure the capacity is unchanged, and a pool without ranges has none.
// Cost: grow's, and for a move the copy of the records in use; else
// nothing is copied or retired.
func (g *gpuEngine) growInPlace(t *devTree, k int, nc uint64) error {
	p := &t.pools[k]
	if p.vm != nil {
		if err := p.vm.grow(k, nc); err != nil {
			return err
		}
		g.viewPool(t, k)
		return nil
	}
	vm, err := newPoolVM(g.dev, k)
	if err != nil {
		return err
	}
	if err := vm.grow(k, nc); err != nil {
		return errors.Join(err, vm.release())
	}
	return g.moveInPlace(t, k, vm)
}

// moveInPlace makes vm (mapped for more records than the pool holds) kind
// k's pool of tree t: the records, free stack and pending frees of a pool
// of buffers are copied on g.s into its views and the buffers retired
// (adoptPool). On failure vm is released and nothing changes. Cost: the
// copy, queued.
func (g *gpuEngine) moveInPlace(t *devTree, k int, vm *poolVM) error {
	if err := g.adoptPool(t, k, vm.views(k)); err != nil {
		return errors.Join(err, vm.release())
	}
	t.pools[k].vm = vm
	return nil
}

// views are the buffers over vm's mapped memory, for the records of kind
// k it holds.
func (vm *poolVM) views(k int) poolBufs {
	nc := vm.capacity(k)
	return poolBufs{words: gpu.GrowableView[uint64](vm.words, int(nc)*kindWords[k]),
		free: gpu.GrowableView[uint32](vm.free, int(nc)), pend: gpu.GrowableView[uint32](vm.pend, int(nc)), cap: nc}
}

// viewPool sets kind k's buffers of tree t (in place) to the views of its
// ranges' mapped memory, its capacity to the records they hold (never
// less than before).
func (g *gpuEngine) viewPool(t *devTree, k int) {
	p := &t.pools[k]
	b := p.vm.views(k)
	if b.cap <= p.cap {
		return
	}
	p.words, p.free, p.pend, p.cap = b.words, b.free, b.pend, b.cap
}
