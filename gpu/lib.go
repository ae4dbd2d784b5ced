package gpu

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Environment variables that override where the CUDA libraries are loaded from.
const (
	EnvLibCUDA  = "WARPKV_LIBCUDA"  // full path or soname of the CUDA driver library
	EnvLibNVRTC = "WARPKV_LIBNVRTC" // full path or soname of the NVRTC library
)

// driverAPI holds the addresses of the CUDA driver functions warpkv calls.
// Every field is filled by loadDriver; a missing symbol makes loading
// fail, but for the optional ones (vmm), which stay 0.
type driverAPI struct {
	handle uintptr

	cuInit, cuDriverGetVersion, cuGetErrorName, cuGetErrorString                        uintptr
	cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, cuDeviceTotalMem                    uintptr
	cuDeviceGetAttribute, cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease           uintptr
	cuCtxSetCurrent, cuCtxSynchronize, cuMemGetInfo                                     uintptr
	cuMemAlloc, cuMemFree, cuMemHostAlloc, cuMemFreeHost                                uintptr
	cuMemcpyHtoDAsync, cuMemcpyDtoHAsync, cuMemcpyDtoDAsync                             uintptr
	cuMemsetD8Async, cuMemsetD32Async                                                   uintptr
	cuStreamCreate, cuStreamDestroy, cuStreamSynchronize, cuStreamWaitEvent             uintptr
	cuEventCreate, cuEventRecord, cuEventSynchronize, cuEventElapsedTime                uintptr
	cuEventDestroy, cuEventQuery                                                        uintptr
	cuModuleLoadData, cuModuleUnload, cuModuleGetFunction, cuLaunchKernel               uintptr
	cuFuncSetAttribute, cuFuncGetAttribute, cuOccupancyMaxActiveBlocksPerMultiprocessor uintptr
	cuMemHostGetDevicePointer, cuStreamQuery                                            uintptr // mapped.go

	vmm vmmAPI // optional (vmm.go)
}

// nvrtcAPI holds the addresses of the NVRTC functions warpkv calls.
type nvrtcAPI struct {
	handle uintptr
	path   string

	nvrtcVersion, nvrtcGetErrorString, nvrtcCreateProgram, nvrtcDestroyProgram uintptr
	nvrtcCompileProgram, nvrtcGetCUBINSize, nvrtcGetCUBIN                      uintptr
	nvrtcGetProgramLogSize, nvrtcGetProgramLog                                 uintptr
}

// driverSymbol is one driver function: its names, of which the first one
// found is used, and the driverAPI field that holds its address.
type driverSymbol struct {
	names []string
	field func(*driverAPI) *uintptr
}

// lookup stores s's address in d from the library h and reports whether
// it found one. Cost: a dlsym a name tried.
func (s driverSymbol) lookup(h uintptr, d *driverAPI) bool {
	for _, n := range s.names {
		if a, err := purego.Dlsym(h, n); err == nil && a != 0 {
			*s.field(d) = a
			return true
		}
	}
	return false
}

// driverSymbols are the driver functions every driver must have.
var driverSymbols = []driverSymbol{
	{[]string{"cuInit"}, func(d *driverAPI) *uintptr { return &d.cuInit }},
	{[]string{"cuDriverGetVersion"}, func(d *driverAPI) *uintptr { return &d.cuDriverGetVersion }},
	{[]string{"cuGetErrorName"}, func(d *driverAPI) *uintptr { return &d.cuGetErrorName }},
	{[]string{"cuGetErrorString"}, func(d *driverAPI) *uintptr { return &d.cuGetErrorString }},
	{[]string{"cuDeviceGetCount"}, func(d *driverAPI) *uintptr { return &d.cuDeviceGetCount }},
	{[]string{"cuDeviceGet"}, func(d *driverAPI) *uintptr { return &d.cuDeviceGet }},
	{[]string{"cuDeviceGetName"}, func(d *driverAPI) *uintptr { return &d.cuDeviceGetName }},
	{[]string{"cuDeviceTotalMem_v2"}, func(d *driverAPI) *uintptr { return &d.cuDeviceTotalMem }},
	{[]string{"cuDeviceGetAttribute"}, func(d *driverAPI) *uintptr { return &d.cuDeviceGetAttribute }},
	{[]string{"cuDevicePrimaryCtxRetain"}, func(d *driverAPI) *uintptr { return &d.cuDevicePrimaryCtxRetain }},
	{[]string{"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"}, func(d *driverAPI) *uintptr { return &d.cuDevicePrimaryCtxRelease }},
	{[]string{"cuCtxSetCurrent"}, func(d *driverAPI) *uintptr { return &d.cuCtxSetCurrent }},
	{[]string{"cuCtxSynchronize"}, func(d *driverAPI) *uintptr { return &d.cuCtxSynchronize }},
	{[]string{"cuMemGetInfo_v2"}, func(d *driverAPI) *uintptr { return &d.cuMemGetInfo }},
	{[]string{"cuMemAlloc_v2"}, func(d *driverAPI) *uintptr { return &d.cuMemAlloc }},
	{[]string{"cuMemFree_v2"}, func(d *driverAPI) *uintptr { return &d.cuMemFree }},
	{[]string{"cuMemHostAlloc"}, func(d *driverAPI) *uintptr { return &d.cuMemHostAlloc }},
	{[]string{"cuMemFreeHost"}, func(d *driverAPI) *uintptr { return &d.cuMemFreeHost }},
	{[]string{"cuMemcpyHtoDAsync_v2"}, func(d *driverAPI) *uintptr { return &d.cuMemcpyHtoDAsync }},
	{[]string{"cuMemcpyDtoHAsync_v2"}, func(d *driverAPI) *uintptr { return &d.cuMemcpyDtoHAsync }},
	{[]string{"cuMemcpyDtoDAsync_v2"}, func(d *driverAPI) *uintptr { return &d.cuMemcpyDtoDAsync }},
	{[]string{"cuMemsetD8Async"}, func(d *driverAPI) *uintptr { return &d.cuMemsetD8Async }},
	{[]string{"cuMemsetD32Async"}, func(d *driverAPI) *uintptr { return &d.cuMemsetD32Async }},
	{[]string{"cuStreamCreate"}, func(d *driverAPI) *uintptr { return &d.cuStreamCreate }},
	{[]string{"cuStreamDestroy_v2"}, func(d *driverAPI) *uintptr { return &d.cuStreamDestroy }},
	{[]string{"cuStreamSynchronize"}, func(d *driverAPI) *uintptr { return &d.cuStreamSynchronize }},
	{[]string{"cuStreamWaitEvent"}, func(d *driverAPI) *uintptr { return &d.cuStreamWaitEvent }},
	{[]string{"cuEventCreate"}, func(d *driverAPI) *uintptr { return &d.cuEventCreate }},
	{[]string{"cuEventRecord"}, func(d *driverAPI) *uintptr { return &d.cuEventRecord }},
	{[]string{"cuEventSynchronize"}, func(d *driverAPI) *uintptr { return &d.cuEventSynchronize }},
	{[]string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, func(d *driverAPI) *uintptr { return &d.cuEventElapsedTime }},
	{[]string{"cuEventDestroy_v2"}, func(d *driverAPI) *uintptr { return &d.cuEventDestroy }},
	{[]string{"cuEventQuery"}, func(d *driverAPI) *uintptr { return &d.cuEventQuery }},
	{[]string{"cuModuleLoadData"}, func(d *driverAPI) *uintptr { return &d.cuModuleLoadData }},
	{[]string{"cuModuleUnload"}, func(d *driverAPI) *uintptr { return &d.cuModuleUnload }},
	{[]string{"cuModuleGetFunction"}, func(d *driverAPI) *uintptr { return &d.cuModuleGetFunction }},
	{[]string{"cuLaunchKernel"}, func(d *driverAPI) *uintptr { return &d.cuLaunchKernel }},
	{[]string{"cuFuncSetAttribute"}, func(d *driverAPI) *uintptr { return &d.cuFuncSetAttribute }},
	{[]string{"cuFuncGetAttribute"}, func(d *driverAPI) *uintptr { return &d.cuFuncGetAttribute }},
	{[]string{"cuOccupancyMaxActiveBlocksPerMultiprocessor"}, func(d *driverAPI) *uintptr { return &d.cuOccupancyMaxActiveBlocksPerMultiprocessor }},
	{[]string{"cuMemHostGetDevicePointer_v2"}, func(d *driverAPI) *uintptr { return &d.cuMemHostGetDevicePointer }},
	{[]string{"cuStreamQuery"}, func(d *driverAPI) *uintptr { return &d.cuStreamQuery }},
}

// driverOptional are the driver functions a driver may lack (their
// fields stay 0): virtual memory management (vmm.go; vmmAPI.loaded says
// whether all of them are there).
var driverOptional = []driverSymbol{
	{[]string{"cuMemAddressReserve"}, func(d *driverAPI) *uintptr { return &d.vmm.reserve }},
	{[]string{"cuMemAddressFree"}, func(d *driverAPI) *uintptr { return &d.vmm.addrFree }},
	{[]string{"cuMemCreate"}, func(d *driverAPI) *uintptr { return &d.vmm.create }},
	{[]string{"cuMemRelease"}, func(d *driverAPI) *uintptr { return &d.vmm.release }},
	{[]string{"cuMemMap"}, func(d *driverAPI) *uintptr { return &d.vmm.mapMem }},
	{[]string{"cuMemUnmap"}, func(d *driverAPI) *uintptr { return &d.vmm.unmap }},
	{[]string{"cuMemSetAccess"}, func(d *driverAPI) *uintptr { return &d.vmm.setAccess }},
	{[]string{"cuMemGetAllocationGranularity"}, func(d *driverAPI) *uintptr { return &d.vmm.granularity }},
}

var nvrtcSymbols = []struct {
	name  string
	field func(*nvrtcAPI) *uintptr
}{
	{"nvrtcVersion", func(n *nvrtcAPI) *uintptr { return &n.nvrtcVersion }},
	{"nvrtcGetErrorString", func(n *nvrtcAPI) *uintptr { return &n.nvrtcGetErrorString }},
	{"nvrtcCreateProgram", func(n *nvrtcAPI) *uintptr { return &n.nvrtcCreateProgram }},
	{"nvrtcDestroyProgram", func(n *nvrtcAPI) *uintptr { return &n.nvrtcDestroyProgram }},
	{"nvrtcCompileProgram", func(n *nvrtcAPI) *uintptr { return &n.nvrtcCompileProgram }},
	{"nvrtcGetCUBINSize", func(n *nvrtcAPI) *uintptr { return &n.nvrtcGetCUBINSize }},
	{"nvrtcGetCUBIN", func(n *nvrtcAPI) *uintptr { return &n.nvrtcGetCUBIN }},
	{"nvrtcGetProgramLogSize", func(n *nvrtcAPI) *uintptr { return &n.nvrtcGetProgramLogSize }},
	{"nvrtcGetProgramLog", func(n *nvrtcAPI) *uintptr { return &n.nvrtcGetProgramLog }},
}

// The libraries are process-wide resources (dlopen handles), loaded once.
var (
	driverOnce sync.Once
	driver     *driverAPI
	driverErr  error

	nvrtcOnce sync.Once
	nvrtc     *nvrtcAPI
	nvrtcErr  error
)

const rtldNowGlobal = purego.RTLD_NOW | purego.RTLD_GLOBAL

// candidates returns the library names to try: the environment override alone
// when it is set, else the sonames followed by files matching the globs.
func candidates(env string, names []string, globs []string) []string {
	if v := strings.TrimSpace(os.Getenv(env)); v != "" {
		return []string{v}
	}
	out := append([]string(nil), names...)
	for _, g := range globs {
		m, _ := filepath.Glob(g)
		// Newest version last in lexical order; try newest first.
		for i := len(m) - 1; i >= 0; i-- {
			out = append(out, m[i])
		}
	}
	return out
}

func openFirst(what string, names []string) (uintptr, string, error) {
	if runtime.GOOS != "linux" {
		return 0, "", fmt.Errorf("%s: only linux is supported, this is %s", what, runtime.GOOS)
	}
	// dlerror is per thread: keep each dlopen and the dlerror that explains
	// its failure on one thread, or a goroutine moved between them reads an
	// empty message (seen as "libcuda.so): ;" in 4 of 30 starts).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var errs []string
	for _, n := range names {
		h, err := purego.Dlopen(n, rtldNowGlobal)
		if err == nil {
			return h, n, nil
		}
		msg := strings.TrimSpace(err.Error())
		if msg == "" {
			msg = n + ": dlopen failed (no reason given)"
		}
		errs = append(errs, msg)
	}
	if len(errs) > 3 {
		errs = append(errs[:3], fmt.Sprintf("and %d more", len(errs)-3))
	}
	return 0, "", fmt.Errorf("%s not found (tried %s): %s", what, strings.Join(names, ", "), strings.Join(errs, "; "))
}

func loadDriver() (*driverAPI, error) {
	driverOnce.Do(func() {
		names := candidates(EnvLibCUDA, []string{"libcuda.so.1", "libcuda.so"},
			[]string{"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/local/nvidia/lib64/libcuda.so.1", "/usr/lib64/libcuda.so.1"})
		h, _, err := openFirst("CUDA driver library libcuda.so.1", names)
		if err != nil {
			driverErr = err
			return
		}
		d := &driverAPI{handle: h}
		for _, s := range driverSymbols {
			if !s.lookup(h, d) {
				driverErr = fmt.Errorf("CUDA driver library lacks %s: driver too old", s.names[0])
				return
			}
		}
		for _, s := range driverOptional {
			s.lookup(h, d)
		}
		if r := call(d.cuInit, 0); r != 0 {
			driverErr = newError("cuInit", d, r)
			return
		}
		keepSignalsOnStack()
		driver = d
	})
	return driver, driverErr
}

func loadNVRTC() (*nvrtcAPI, error) {
	nvrtcOnce.Do(func() {
		names := candidates(EnvLibNVRTC,
			[]string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2"},
			[]string{
				"/usr/local/cuda/lib64/libnvrtc.so.*",
				"/usr/local/cuda/targets/x86_64-linux/lib/libnvrtc.so.*",
				"/usr/local/cuda-*/targets/x86_64-linux/lib/libnvrtc.so.*",
				"/usr/lib/x86_64-linux-gnu/libnvrtc.so.*",
				"/opt/*/.venv/lib/python3*/site-packages/nvidia/cu*/lib/libnvrtc.so.*",
				"/usr/local/lib/python3*/dist-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.*",
			})
		h, path, err := openFirst("NVRTC library libnvrtc.so", names)
		if err != nil {
			nvrtcErr = err
			return
		}
		n := &nvrtcAPI{handle: h, path: path}
		for _, s := range nvrtcSymbols {
			a, err := purego.Dlsym(h, s.name)
			if err != nil || a == 0 {
				nvrtcErr = fmt.Errorf("NVRTC library %s lacks %s", path, s.name)
				return
			}
			*s.field(n) = a
		}
		nvrtc = n
	})
	return nvrtc, nvrtcErr
}

// call invokes a C function that returns a 32-bit status code. Pointer
// arguments must be written as uintptr(unsafe.Pointer(p)) in the call itself:
// the uintptrescapes directive then keeps the object alive and on the heap for the call.
//
//go:uintptrescapes
func call(fn uintptr, args ...uintptr) uint32 {
	r, _, _ := purego.SyscallN(fn, args...)
	return uint32(r)
}

// syscallN invokes a C function and returns its raw result, with the same
// pointer rules as call.
//
//go:uintptrescapes
func syscallN(fn uintptr, args ...uintptr) (uintptr, uintptr, uintptr) {
	return purego.SyscallN(fn, args...)
}

// cString copies a NUL-terminated C string at p into a Go string.
func cString(p uintptr) string {
	if p == 0 {
		return ""
	}
	ptr := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	n := 0
	for *(*byte)(unsafe.Add(ptr, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(ptr), n))
}

// cBytes returns s as a NUL-terminated byte slice.
func cBytes(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// ErrNoDriver reports that the CUDA driver could not be loaded or initialised.
var ErrNoDriver = errors.New("gpu: no usable CUDA driver")
