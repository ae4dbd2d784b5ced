package gpu

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// cuDeviceGetAttribute attribute numbers (CUdevice_attribute).
const (
	attrMaxThreadsPerBlock     = 1
	attrWarpSize               = 10
	attrClockRate              = 13
	attrMultiprocessorCount    = 16
	attrPCIBusID               = 33
	attrMemoryClockRate        = 36
	attrGlobalMemoryBusWidth   = 37
	attrL2CacheSize            = 38
	attrMaxThreadsPerSM        = 39
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
	attrMaxSharedPerSM         = 81
	attrMaxSharedPerBlockOptin = 97
)

// Properties describes one CUDA device.
type Properties struct {
	Ordinal             int    // index among the CUDA devices of this machine
	Name                string // marketing name, e.g. "NVIDIA H100 80GB HBM3"
	Major, Minor        int    // compute capability
	SMs                 int    // streaming multiprocessors
	TotalMem            uint64 // bytes of device memory
	ClockKHz            int    // SM clock, 0 if the driver does not report it
	MemClockKHz         int    // memory clock, 0 if not reported
	BusWidthBits        int    // memory bus width, 0 if not reported
	L2Bytes             int
	MaxThreadsPerBlock  int
	MaxThreadsPerSM     int
	SharedPerBlockOptin int // bytes of shared memory a block may opt in to
	SharedPerSM         int
	WarpSize            int
	PCIBus              int
}

// Arch returns the NVRTC architecture name for the device, e.g. "sm_90".
func (p Properties) Arch() string { return fmt.Sprintf("sm_%d%d", p.Major, p.Minor) }

// PeakMemBandwidth returns the theoretical memory bandwidth in bytes/s from
// the reported clock and bus width (double data rate), or 0 if unknown.
func (p Properties) PeakMemBandwidth() float64 {
	return 2 * float64(p.MemClockKHz) * 1e3 * float64(p.BusWidthBits) / 8
}

// DriverVersion returns the CUDA driver API version as major*1000+minor*10
// (for example 13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	d, err := loadDriver()
	if err != nil {
		return 0, err
	}
	var v int32
	if r := call(d.cuDriverGetVersion, uintptr(unsafe.Pointer(&v))); r != 0 {
		return 0, newError("cuDriverGetVersion", d, r)
	}
	return int(v), nil
}

// Count returns the number of CUDA devices. It fails when the driver cannot
// be loaded or initialised.
func Count() (int, error) {
	d, err := loadDriver()
	if err != nil {
		return 0, err
	}
	var n int32
	if r := call(d.cuDeviceGetCount, uintptr(unsafe.Pointer(&n))); r != 0 {
		return 0, newError("cuDeviceGetCount", d, r)
	}
	return int(n), nil
}

// Available reports whether at least one GPU can run warpkv's kernels: the
// driver loads, a device exists, and NVRTC loads. When it cannot, reason says
// why. It never panics.
func Available() (ok bool, reason string) {
	n, err := Count()
	if err != nil {
		return false, err.Error()
	}
	if n == 0 {
		return false, "the CUDA driver reports no devices"
	}
	if _, err := loadNVRTC(); err != nil {
		return false, err.Error()
	}
	return true, ""
}

// Query returns the properties of device ordinal without creating a context.
func Query(ordinal int) (Properties, error) {
	d, err := loadDriver()
	if err != nil {
		return Properties{}, err
	}
	n, err := Count()
	if err != nil {
		return Properties{}, err
	}
	if ordinal < 0 || ordinal >= n {
		return Properties{}, fmt.Errorf("gpu: device %d does not exist (%d devices)", ordinal, n)
	}
	var dev int32
	if r := call(d.cuDeviceGet, uintptr(unsafe.Pointer(&dev)), uintptr(ordinal)); r != 0 {
		return Properties{}, newError("cuDeviceGet", d, r)
	}
	p := Properties{Ordinal: ordinal}
	name := make([]byte, 256)
	if r := call(d.cuDeviceGetName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), uintptr(dev)); r != 0 {
		return p, newError("cuDeviceGetName", d, r)
	}
	p.Name = cString(uintptr(unsafe.Pointer(&name[0])))
	runtime.KeepAlive(name)
	var total uint64
	if r := call(d.cuDeviceTotalMem, uintptr(unsafe.Pointer(&total)), uintptr(dev)); r != 0 {
		return p, newError("cuDeviceTotalMem", d, r)
	}
	p.TotalMem = total
	attr := func(a int, required bool, dst *int) error {
		var v int32
		if r := call(d.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(a), uintptr(dev)); r != 0 {
			if required {
				return newError(fmt.Sprintf("cuDeviceGetAttribute(%d)", a), d, r)
			}
			v = 0
		}
		*dst = int(v)
		return nil
	}
	for _, a := range []struct {
		attr     int
		required bool
		dst      *int
	}{
		{attrComputeCapabilityMajor, true, &p.Major},
		{attrComputeCapabilityMinor, true, &p.Minor},
		{attrMultiprocessorCount, true, &p.SMs},
		{attrWarpSize, true, &p.WarpSize},
		{attrMaxThreadsPerBlock, true, &p.MaxThreadsPerBlock},
		{attrMaxThreadsPerSM, true, &p.MaxThreadsPerSM},
		{attrMaxSharedPerBlockOptin, true, &p.SharedPerBlockOptin},
		{attrMaxSharedPerSM, true, &p.SharedPerSM},
		{attrL2CacheSize, true, &p.L2Bytes},
		{attrClockRate, false, &p.ClockKHz},
		{attrMemoryClockRate, false, &p.MemClockKHz},
		{attrGlobalMemoryBusWidth, false, &p.BusWidthBits},
		{attrPCIBusID, false, &p.PCIBus},
	} {
		if err := attr(a.attr, a.required, a.dst); err != nil {
			return p, err
		}
	}
	return p, nil
}

// List returns the properties of every CUDA device.
func List() ([]Properties, error) {
	n, err := Count()
	if err != nil {
		return nil, err
	}
	out := make([]Properties, 0, n)
	for i := 0; i < n; i++ {
		p, err := Query(i)
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

// Device is an open CUDA device: its primary context and every resource
// allocated through it. All methods are safe for concurrent use; each call
// that touches the device runs on a locked OS thread with the context current.
// Close frees whatever is still allocated.
type Device struct {
	drv   *driverAPI
	props Properties
	dev   int32
	ctx   uintptr

	mu      sync.Mutex
	closed  bool
	allocs  map[uintptr]int64 // device pointer -> bytes
	hosts   map[uintptr]int64 // pinned host pointer -> bytes
	streams map[uintptr]struct{}
	events  map[uintptr]struct{}
	modules map[uintptr]struct{}
	kcache  map[string]*Module    // compiled kernels by cache key
	grows   map[uintptr]*Growable // reserved ranges by base (vmm.go)
	growing int                   // Growable.Grow calls between beginGrowth and endGrowth (vmm.go)
	grown   sync.Cond             // signalled when growing drops to 0; its L is &mu, set by waitGrowths

	spareState // freed Growable memory kept for reuse (spare.go)

	vmmOnce sync.Once // VMMGranularity's answer, asked once
	vmmGran int64
	vmmErr  error
}

// Open retains the primary context of device ordinal. NVRTC must load too,
// since every warpkv engine compiles its kernels at run time.
func Open(ordinal int) (*Device, error) {
	p, err := Query(ordinal)
	if err != nil {
		return nil, err
	}
	if _, err := loadNVRTC(); err != nil {
		return nil, err
	}
	d := driver
	var dev int32
	if r := call(d.cuDeviceGet, uintptr(unsafe.Pointer(&dev)), uintptr(ordinal)); r != 0 {
		return nil, newError("cuDeviceGet", d, r)
	}
	var ctx uintptr
	if r := call(d.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&ctx)), uintptr(dev)); r != 0 {
		return nil, newError("cuDevicePrimaryCtxRetain", d, r)
	}
	keepSignalsOnStack() // the driver may install handlers as the context starts
	return &Device{
		drv: d, props: p, dev: dev, ctx: ctx,
		allocs: map[uintptr]int64{}, hosts: map[uintptr]int64{},
		streams: map[uintptr]struct{}{}, events: map[uintptr]struct{}{},
		modules: map[uintptr]struct{}{}, kcache: map[string]*Module{},
	}, nil
}

// Properties returns the device's properties.
func (d *Device) Properties() Properties { return d.props }

// String names the device, e.g. "gpu:0 (NVIDIA H100 80GB HBM3, sm_90)".
func (d *Device) String() string {
	return fmt.Sprintf("gpu:%d (%s, %s)", d.props.Ordinal, d.props.Name, d.props.Arch())
}

// Do runs fn on a locked OS thread with the device's context current, so
// that a sequence of driver calls made by fn goes to this device.
func (d *Device) Do(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r := call(d.drv.cuCtxSetCurrent, d.ctx); r != 0 {
		return newError("cuCtxSetCurrent", d.drv, r)
	}
	return fn()
}

// do runs one driver call with the context current and wraps its failure.
func (d *Device) do(name string, fn func() uint32) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if r := call(d.drv.cuCtxSetCurrent, d.ctx); r != 0 {
		return newError("cuCtxSetCurrent", d.drv, r)
	}
	if r := fn(); r != 0 {
		return newError(name, d.drv, r)
	}
	return nil
}

// Synchronize waits for all work on the device to finish and returns the
// first asynchronous error, if any.
func (d *Device) Synchronize() error {
	return d.do("cuCtxSynchronize", func() uint32 { return call(d.drv.cuCtxSynchronize) })
}

// MemInfo returns the free and total device memory in bytes. Free
// counts the device's spare memory (SpareBytes), which an allocation that
// needs it gets back. Cost: one driver call.
func (d *Device) MemInfo() (free, total uint64, err error) {
	err = d.do("cuMemGetInfo", func() uint32 {
		return call(d.drv.cuMemGetInfo, uintptr(unsafe.Pointer(&free)), uintptr(unsafe.Pointer(&total)))
	})
	free += uint64(d.SpareBytes())
	return
}

// Live returns the number and total size of device and pinned host
// allocations that have not been freed; tests use it to find leaks.
func (d *Device) Live() (allocs int, bytes int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range d.allocs {
		bytes += b
	}
	for _, b := range d.hosts {
		bytes += b
	}
	for _, g := range d.grows {
		bytes += g.Mapped()
	}
	return len(d.allocs) + len(d.hosts) + len(d.grows), bytes
}

func (d *Device) checkOpen() error {
	if d.closed {
		return fmt.Errorf("gpu: %s is closed", d)
	}
	return nil
}

// Close frees every allocation, stream, event and module still held, then
// releases the primary context. Further use of the device fails. A
// Growable.Grow in flight (on another goroutine) finishes first: Close
// refuses new growths and waits for it.
func (d *Device) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true // refuses new work, and a second Close, while the growths end
	d.waitGrowths()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	keep(d.do("cuCtxSynchronize", func() uint32 { return call(d.drv.cuCtxSynchronize) }))
	for s := range d.streams {
		keep(d.do("cuStreamDestroy", func() uint32 { return call(d.drv.cuStreamDestroy, s) }))
	}
	for e := range d.events {
		keep(d.do("cuEventDestroy", func() uint32 { return call(d.drv.cuEventDestroy, e) }))
	}
	for m := range d.modules {
		keep(d.do("cuModuleUnload", func() uint32 { return call(d.drv.cuModuleUnload, m) }))
	}
	for p := range d.allocs {
		keep(d.do("cuMemFree", func() uint32 { return call(d.drv.cuMemFree, p) }))
	}
	for p := range d.hosts {
		keep(d.do("cuMemFreeHost", func() uint32 { return call(d.drv.cuMemFreeHost, p) }))
	}
	for _, g := range d.grows {
		keep(g.release())
	}
	clear(d.grows)
	keep(d.trimSpare(0))
	clear(d.streams)
	clear(d.events)
	clear(d.modules)
	clear(d.allocs)
	clear(d.hosts)
	clear(d.kcache)
	if r := call(d.drv.cuDevicePrimaryCtxRelease, uintptr(d.dev)); r != 0 {
		keep(newError("cuDevicePrimaryCtxRelease", d.drv, r))
	}
	return first
}
