package art

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// Record pools that grow in place. Where the device has virtual memory
// management (gpu.Growable; g.vmm, on by default where supported), each
// of a tree's pools keeps its records, free stack and pending frees on
// three reserved ranges of addresses, and a pool's growth maps more
// memory behind the records it holds: no new buffer, no device copy of the
// records in use, no old buffer retired and freed. At 100M keys an
// insert's N16 pool grows by about 3 GB; as buffers that growth was a
// cuMemAlloc of the new pool, a 2 GB device copy and a cuMemFree of the
// old pool, beside the upload of the keys, which the driver's calls slowed
// (BENCHMARKS.md, branch ains6). Without VMM (or with g.vmm off) pools
// are buffers, grown as ensurePool's doc says.

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

// growInPlace grows kind k's pool of tree t, on reserved ranges, to hold
// at least nc records (reserving them at its first growth) and points
// the pool's buffers at what is mapped. On failure the capacity is
// unchanged. Cost: grow's; nothing is copied or retired.
func (g *gpuEngine) growInPlace(t *devTree, k int, nc uint64) error {
	p := &t.pools[k]
	if p.vm == nil {
		vm, err := newPoolVM(g.dev, k)
		if err != nil {
			return err
		}
		p.vm = vm
	}
	if err := p.vm.grow(k, nc); err != nil {
		return err
	}
	g.viewPool(t, k)
	return nil
}

// viewPool sets kind k's buffers of tree t to the views of its ranges'
// mapped memory, its capacity to the records they hold (never less than
// before).
func (g *gpuEngine) viewPool(t *devTree, k int) {
	p := &t.pools[k]
	nc := p.vm.capacity(k)
	if nc < p.cap || nc == 0 {
		return
	}
	p.words = gpu.GrowableView[uint64](p.vm.words, int(nc)*kindWords[k])
	p.free = gpu.GrowableView[uint32](p.vm.free, int(nc))
	p.pend = gpu.GrowableView[uint32](p.vm.pend, int(nc))
	p.cap = nc
}

// inPlace reports whether kind k's pool of tree t grows in place: it is
// on reserved ranges, or has no buffers yet and g.vmm is on.
func (g *gpuEngine) inPlace(t *devTree, k int) bool {
	p := &t.pools[k]
	return p.vm != nil || p.words == nil && g.vmm
}
