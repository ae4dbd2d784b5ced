package gpu

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Device memory that grows in place, through CUDA's virtual memory
// management (the driver's cuMemAddressReserve, cuMemCreate, cuMemMap and
// cuMemSetAccess): a Growable reserves a range of device addresses once
// and backs a prefix of it with physical memory, mapping more as it grows.
// Its address never changes, so growing it copies nothing and frees
// nothing: the cuMemAlloc of a larger buffer, the device copy of the old
// contents and the cuMemFree of the old buffer that growing a Buffer
// takes are replaced by one cuMemCreate and one cuMemMap of the growth.
// Address space is cheap (a reservation holds no memory), so a Growable
// may reserve as much as the device's memory.

// ErrNoVMM reports that the device or its driver lacks virtual memory
// management; callers fall back to Alloc.
var ErrNoVMM = errors.New("gpu: virtual memory management not supported")

// attrVMMSupported is CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED.
const attrVMMSupported = 102

// vmmAPI holds the driver's virtual memory management entry points, part
// of driverAPI but optional (driverOptional), so that a driver without
// them still loads.
type vmmAPI struct {
	reserve, addrFree, create, release, mapMem, unmap, setAccess, granularity uintptr
}

// loaded reports whether the driver has every VMM entry point. Cost: O(1).
func (a *vmmAPI) loaded() bool {
	return a.reserve != 0 && a.addrFree != 0 && a.create != 0 && a.release != 0 &&
		a.mapMem != 0 && a.unmap != 0 && a.setAccess != 0 && a.granularity != 0
}

// memLocation is CUmemLocation: a device and its ordinal.
type memLocation struct {
	typ, id int32
}

// memAllocationProp is CUmemAllocationProp (32 bytes): pinned device
// memory of one device, no shareable handle.
type memAllocationProp struct {
	typ, handleTypes int32
	loc              memLocation
	win32Meta        uintptr
	flags            [8]byte
}

// memAccessDesc is CUmemAccessDesc (12 bytes).
type memAccessDesc struct {
	loc   memLocation
	flags int32
}

const (
	memAllocationPinned = 1 // CU_MEM_ALLOCATION_TYPE_PINNED
	memLocationDevice   = 1 // CU_MEM_LOCATION_TYPE_DEVICE
	memAccessReadWrite  = 3 // CU_MEM_ACCESS_FLAGS_PROT_READWRITE
	granularityRecomm   = 1 // CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
)

// vmmProp returns the allocation properties of d's memory.
func (d *Device) vmmProp() memAllocationProp {
	return memAllocationProp{typ: memAllocationPinned, loc: memLocation{memLocationDevice, d.dev}}
}

// VMMGranularity returns the size that a Growable's reservations and
// mappings are multiples of (the driver's recommended granularity, 2 MiB
// on an H100/H200), or an error matching ErrNoVMM when the device or
// driver lacks virtual memory management. Cost: a device attribute query
// and one driver call the first time on d; O(1) after (the answer is kept).
func (d *Device) VMMGranularity() (int64, error) {
	d.vmmOnce.Do(func() { d.vmmGran, d.vmmErr = d.vmmGranularity() })
	return d.vmmGran, d.vmmErr
}

// vmmGranularity asks the driver for VMMGranularity's answer.
func (d *Device) vmmGranularity() (int64, error) {
	a := &d.drv.vmm
	if !a.loaded() {
		return 0, fmt.Errorf("gpu: %s: driver lacks the VMM entry points: %w", d, ErrNoVMM)
	}
	var ok int32
	if err := d.do("cuDeviceGetAttribute", func() uint32 {
		return call(d.drv.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&ok)), attrVMMSupported, uintptr(d.dev))
	}); err != nil {
		return 0, err
	}
	if ok == 0 {
		return 0, fmt.Errorf("gpu: %s: %w", d, ErrNoVMM)
	}
	prop := d.vmmProp()
	var g uintptr
	if err := d.do("cuMemGetAllocationGranularity", func() uint32 {
		return call(a.granularity, uintptr(unsafe.Pointer(&g)), uintptr(unsafe.Pointer(&prop)), granularityRecomm)
	}); err != nil {
		return 0, err
	}
	if g == 0 {
		return 0, fmt.Errorf("gpu: %s: granularity 0: %w", d, ErrNoVMM)
	}
	return int64(g), nil
}

// Growable is device memory at a fixed address that grows in place: a
// reserved range of addresses of which a prefix is backed by physical
// memory (Mapped bytes). Views of the mapped prefix (GrowableView) stay
// valid as it grows. Grow may run on another goroutine beside kernels
// and copies that use the mapped prefix; closing its Device waits for a
// Grow in flight. A Growable is freed by Free or by closing its Device.
type Growable struct {
	d        *Device
	a        *vmmAPI
	gran     int64
	base     uintptr
	reserved int64

	mu     sync.Mutex // held by Grow and Free
	mapped atomic.Int64
	chunks []vmmChunk
}

// vmmChunk is one physical allocation mapped at off.
type vmmChunk struct {
	h         uint64 // CUmemGenericAllocationHandle
	off, size int64
}

// NewGrowable reserves reserve bytes of device addresses (rounded up to
// the granularity) with nothing mapped. Without VMM it returns an error
// matching ErrNoVMM. Cost: one cuMemAddressReserve (no memory).
func NewGrowable(d *Device, reserve int64) (*Growable, error) {
	gran, err := d.VMMGranularity()
	if err != nil {
		return nil, err
	}
	if reserve <= 0 {
		return nil, fmt.Errorf("gpu: reserving %d bytes of addresses", reserve)
	}
	reserve = (reserve + gran - 1) / gran * gran
	g := &Growable{d: d, a: &d.drv.vmm, gran: gran, reserved: reserve}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	var p uintptr
	if err := d.do("cuMemAddressReserve", func() uint32 {
		return call(g.a.reserve, uintptr(unsafe.Pointer(&p)), uintptr(reserve), uintptr(gran), 0, 0)
	}); err != nil {
		return nil, fmt.Errorf("gpu: reserving %d bytes of addresses on %s: %w", reserve, d, err)
	}
	g.base = p
	if d.grows == nil {
		d.grows = map[uintptr]*Growable{}
	}
	d.grows[p] = g
	return g, nil
}

// Ptr returns the device address of byte 0 (fixed for the Growable's life).
func (g *Growable) Ptr() DevicePtr { return DevicePtr(g.base) }

// Reserved returns the bytes of addresses reserved: the most it can grow to.
func (g *Growable) Reserved() int64 { return g.reserved }

// Mapped returns the bytes backed by memory (a multiple of the granularity).
func (g *Growable) Mapped() int64 { return g.mapped.Load() }

// Grow backs at least the first bytes bytes with memory, keeping what is
// mapped (its contents and address). It maps the device's spare memory
// first (spare.go), so the new bytes are undefined. Running out of
// memory, or growth past the reservation, returns an error matching
// ErrOutOfMemory, with nothing changed. Growing a freed Growable, or one
// of a closed Device, returns an error and changes nothing; Device.Close
// waits for a Grow in flight. Cost: nothing when bytes are mapped; else a
// cuMemMap and cuMemSetAccess per spare chunk reused, and one cuMemCreate,
// cuMemMap and cuMemSetAccess of what they do not cover (the growth
// rounded up to the granularity); no copy, no free.
func (g *Growable) Grow(bytes int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	mapped := g.mapped.Load()
	if bytes <= mapped {
		return nil
	}
	if bytes > g.reserved {
		return fmt.Errorf("gpu: growing to %d bytes past a reservation of %d: %w", bytes, g.reserved, ErrOutOfMemory)
	}
	// The reservation and the mapped bytes are multiples of the
	// granularity, so the growth stays within the reservation.
	size := (bytes - mapped + g.gran - 1) / g.gran * g.gran
	d := g.d
	if err := d.beginGrowth(g); err != nil {
		return err
	}
	defer d.endGrowth()
	took := d.takeSpare(size, g.reserved-mapped)
	var added []vmmChunk
	// fail undoes the growth: the spare chunks mapped so far (added holds
	// only those: a created chunk is added last, when nothing can fail)
	// are unmapped, and every chunk taken goes back to the spare list.
	fail := func(err error) error {
		for _, c := range added {
			err = errors.Join(err, d.do("cuMemUnmap", func() uint32 { return call(g.a.unmap, g.base+uintptr(c.off), uintptr(c.size)) }))
		}
		return errors.Join(err, d.giveSpare(took))
	}
	off := mapped
	for _, c := range took {
		if err := g.mapChunk(c.h, off, c.size); err != nil {
			return fail(err)
		}
		added = append(added, vmmChunk{h: c.h, off: off, size: c.size})
		off += c.size
	}
	if rest := size - (off - mapped); rest > 0 {
		h, err := g.createChunk(rest)
		if err != nil {
			return fail(err)
		}
		if err := g.mapChunk(h, off, rest); err != nil {
			return fail(errors.Join(err, d.releaseChunk(h)))
		}
		added = append(added, vmmChunk{h: h, off: off, size: rest})
		off += rest
	}
	g.chunks = append(g.chunks, added...)
	g.mapped.Store(off)
	return nil
}

// createChunk creates size bytes of physical memory on g's device; out
// of memory with spare memory kept, it releases that and tries once more.
// Cost: one cuMemCreate (two and the releases after running out).
func (g *Growable) createChunk(size int64) (uint64, error) {
	d := g.d
	prop := d.vmmProp()
	var h uint64
	create := func() error {
		return d.do("cuMemCreate", func() uint32 {
			return call(g.a.create, uintptr(unsafe.Pointer(&h)), uintptr(size), uintptr(unsafe.Pointer(&prop)), 0)
		})
	}
	err := create()
	if err != nil && d.releaseSpareFor(err) {
		err = create()
	}
	if err != nil {
		return 0, fmt.Errorf("gpu: %d bytes of memory on %s: %w", size, d, err)
	}
	return h, nil
}

// mapChunk maps the physical allocation h of size bytes at off into g's
// range and makes it readable and writable; on failure nothing stays
// mapped. Cost: one cuMemMap and one cuMemSetAccess.
func (g *Growable) mapChunk(h uint64, off, size int64) error {
	d := g.d
	at := g.base + uintptr(off)
	err := d.do("cuMemMap", func() uint32 { return call(g.a.mapMem, at, uintptr(size), 0, uintptr(h), 0) })
	if err == nil {
		acc := memAccessDesc{loc: memLocation{memLocationDevice, d.dev}, flags: memAccessReadWrite}
		err = d.do("cuMemSetAccess", func() uint32 {
			return call(g.a.setAccess, at, uintptr(size), uintptr(unsafe.Pointer(&acc)), 1)
		})
		if err != nil {
			err = errors.Join(err, d.do("cuMemUnmap", func() uint32 { return call(g.a.unmap, at, uintptr(size)) }))
		}
	}
	if err != nil {
		return fmt.Errorf("gpu: mapping %d bytes on %s: %w", size, d, err)
	}
	return nil
}

// beginGrowth checks that d is open and g not freed, and counts a growth
// of g in flight (Grow's driver calls run without d.mu), which Close
// waits for; endGrowth ends it. Cost: O(1).
func (d *Device) beginGrowth(g *Growable) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return fmt.Errorf("gpu: growing a Growable: %w", err)
	}
	if g.base == 0 {
		return errors.New("gpu: growing a freed Growable")
	}
	d.growing++
	return nil
}

// endGrowth ends a growth counted by beginGrowth and wakes a Close
// waiting for the last one. Cost: O(1).
func (d *Device) endGrowth() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.growing--; d.growing == 0 {
		d.grown.Broadcast()
	}
}

// waitGrowths waits until no growth is in flight; the caller holds d.mu,
// which the wait releases and takes back (sync.Cond.Wait).
func (d *Device) waitGrowths() {
	if d.grown.L == nil {
		d.grown.L = &d.mu
	}
	for d.growing > 0 {
		d.grown.Wait()
	}
}

// Free unmaps the memory, keeps it as the device's spare memory up to
// its limit and releases the rest (spare.go), and frees the reservation.
// Freeing twice is a no-op. Cost: a cuMemUnmap per growth, a cuMemRelease
// per chunk not kept, and one cuMemAddressFree.
func (g *Growable) Free() error {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	d := g.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if g.base == 0 || d.grows[g.base] != g {
		return nil // freed, or released by Device.Close
	}
	delete(d.grows, g.base)
	return g.release()
}

// release unmaps everything g holds, keeps the chunks as spare memory
// where the limit allows (never once the device is closing) and releases
// the rest and the reservation; the caller holds d.mu (and g.mu, but for
// Device.Close).
func (g *Growable) release() error {
	d := g.d
	var err error
	for _, c := range g.chunks {
		at := g.base + uintptr(c.off)
		uerr := d.do("cuMemUnmap", func() uint32 { return call(g.a.unmap, at, uintptr(c.size)) })
		err = errors.Join(err, uerr)
		if uerr != nil || !d.keepSpare(spareChunk{h: c.h, size: c.size}) {
			err = errors.Join(err, d.releaseChunk(c.h))
		}
	}
	err = errors.Join(err, d.do("cuMemAddressFree", func() uint32 { return call(g.a.addrFree, g.base, uintptr(g.reserved)) }))
	g.chunks, g.base = nil, 0
	g.mapped.Store(0)
	return err
}

// GrowableView returns the first n elements of T of g as a Buffer sharing
// its memory: a view, which Free leaves alone, valid until g is freed. It
// panics when n elements pass the mapped bytes.
func GrowableView[T any](g *Growable, n int) *Buffer[T] {
	if int64(n)*int64(sizeOf[T]()) > g.Mapped() {
		panic(fmt.Sprintf("gpu: view of %d x %d bytes past %d mapped", n, sizeOf[T](), g.Mapped()))
	}
	return &Buffer[T]{d: g.d, ptr: g.base, n: n, view: true}
}
