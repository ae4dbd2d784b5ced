package gpu

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Module is compiled device code loaded into a device's context.
type Module struct {
	d    *Device
	h    uintptr
	name string

	mu    sync.Mutex
	funcs map[string]*Function
}

// Compile compiles CUDA C source for this device's architecture (through the
// on-disk cache) and loads it. A module with the same source and options is
// loaded once per device and shared. Compile errors carry NVRTC's log.
func (d *Device) Compile(name, src string, opts ...string) (*Module, error) {
	return d.load(name, src, nil, nil, opts)
}

// load compiles (through the cache) and loads src with its headers.
func (d *Device) load(name, src string, hdrNames, hdrTexts []string, opts []string) (*Module, error) {
	arch := d.props.Arch()
	cubin, key, err := cachedCUBIN(name, src, hdrNames, hdrTexts, arch, opts)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	if m, ok := d.kcache[key]; ok {
		return m, nil
	}
	var h uintptr
	if err := d.do("cuModuleLoadData", func() uint32 {
		return call(d.drv.cuModuleLoadData, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&cubin[0])))
	}); err != nil {
		return nil, fmt.Errorf("loading %s: %w", name, err)
	}
	runtime.KeepAlive(cubin)
	d.modules[h] = struct{}{}
	m := &Module{d: d, h: h, name: name, funcs: map[string]*Function{}}
	d.kcache[key] = m
	return m, nil
}

// Function looks up a kernel by its (extern "C") name.
func (m *Module) Function(name string) (*Function, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.funcs[name]; ok {
		return f, nil
	}
	cname := cBytes(name)
	var h uintptr
	if err := m.d.do("cuModuleGetFunction", func() uint32 {
		return call(m.d.drv.cuModuleGetFunction, uintptr(unsafe.Pointer(&h)), m.h, uintptr(unsafe.Pointer(&cname[0])))
	}); err != nil {
		return nil, fmt.Errorf("kernel %s in %s: %w", name, m.name, err)
	}
	f := &Function{m: m, h: h, name: name}
	m.funcs[name] = f
	return f, nil
}

// Functions looks up several kernels, failing on the first missing one.
func (m *Module) Functions(names ...string) ([]*Function, error) {
	out := make([]*Function, len(names))
	for i, n := range names {
		f, err := m.Function(n)
		if err != nil {
			return nil, err
		}
		out[i] = f
	}
	return out, nil
}
