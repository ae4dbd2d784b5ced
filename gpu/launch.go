package gpu

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"unsafe"
)

// EnvDebugSync makes every kernel launch synchronize and report the kernel's
// name with any asynchronous error ("1" to enable). Slow; for debugging.
const EnvDebugSync = "WARPKV_GPU_SYNC"

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// D1 returns a one-dimensional shape of n.
func D1(n int) Dim3 { return Dim3{uint32(n), 1, 1} }

// Function is a kernel in a loaded module.
type Function struct {
	m    *Module
	h    uintptr
	name string
}

// Name returns the kernel's name.
func (f *Function) Name() string { return f.name }

// CUfunction_attribute values used here.
const (
	funcAttrMaxThreadsPerBlock    = 0
	funcAttrNumRegs               = 4
	funcAttrMaxDynamicSharedBytes = 8
)

// SetMaxDynamicShared allows launches with up to bytes of dynamic shared
// memory (needed above 48 KiB).
func (f *Function) SetMaxDynamicShared(bytes int) error {
	d := f.m.d
	return d.do("cuFuncSetAttribute", func() uint32 {
		return call(d.drv.cuFuncSetAttribute, f.h, funcAttrMaxDynamicSharedBytes, uintptr(bytes))
	})
}

// Registers returns the number of registers each thread of the kernel uses.
func (f *Function) Registers() (int, error) {
	d := f.m.d
	var v int32
	err := d.do("cuFuncGetAttribute", func() uint32 {
		return call(d.drv.cuFuncGetAttribute, uintptr(unsafe.Pointer(&v)), funcAttrNumRegs, f.h)
	})
	return int(v), err
}

// BlocksPerSM returns how many blocks of the given size and dynamic shared
// memory can be resident on one multiprocessor.
func (f *Function) BlocksPerSM(block, dynShared int) (int, error) {
	d := f.m.d
	var v int32
	err := d.do("cuOccupancyMaxActiveBlocksPerMultiprocessor", func() uint32 {
		return call(d.drv.cuOccupancyMaxActiveBlocksPerMultiprocessor, uintptr(unsafe.Pointer(&v)), f.h,
			uintptr(block), uintptr(dynShared))
	})
	return int(v), err
}

// devicePointer is implemented by *Buffer[T] so that buffers can be passed
// to kernels directly.
type devicePointer interface{ Ptr() DevicePtr }

// Launch queues the kernel on stream s (nil: default stream) with the given
// grid, block and dynamic shared memory. Each argument must match the
// kernel's parameter: Go integers and floats of the same size, bool,
// DevicePtr, or a *Buffer (passed as its device address). A grid with a
// zero dimension launches nothing. Launch errors (bad configuration,
// missing resources) are returned; errors inside the kernel surface at the
// next synchronization, or at once when WARPKV_GPU_SYNC=1.
func (f *Function) Launch(s *Stream, grid, block Dim3, dynShared int, args ...any) error {
	if grid.X == 0 || grid.Y == 0 || grid.Z == 0 {
		return nil
	}
	slots := make([]uint64, len(args)+1)
	ptrs := make([]uintptr, len(args)+1)
	for i, a := range args {
		v, err := paramBits(a)
		if err != nil {
			return fmt.Errorf("launch %s: argument %d: %w", f.name, i, err)
		}
		slots[i] = v
		ptrs[i] = uintptr(unsafe.Pointer(&slots[i]))
	}
	d := f.m.d
	err := d.do("cuLaunchKernel("+f.name+")", func() uint32 {
		r := call(d.drv.cuLaunchKernel, f.h,
			uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z),
			uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
			uintptr(dynShared), s.handle(), uintptr(unsafe.Pointer(&ptrs[0])), 0)
		if r == 0 && debugSync {
			r = call(d.drv.cuStreamSynchronize, s.handle())
		}
		return r
	})
	runtime.KeepAlive(slots)
	runtime.KeepAlive(ptrs)
	return err
}

var debugSync = os.Getenv(EnvDebugSync) == "1"

// paramBits returns the little-endian bits of a kernel argument in a 64-bit
// slot; the driver copies the parameter's size from the slot's start.
func paramBits(a any) (uint64, error) {
	switch v := a.(type) {
	case DevicePtr:
		return uint64(v), nil
	case devicePointer:
		return uint64(v.Ptr()), nil
	case int:
		return uint64(int64(v)), nil
	case int32:
		return uint64(uint32(v)), nil
	case int64:
		return uint64(v), nil
	case uint:
		return uint64(v), nil
	case uint32:
		return uint64(v), nil
	case uint64:
		return v, nil
	case uint8:
		return uint64(v), nil
	case bool:
		if v {
			return 1, nil
		}
		return 0, nil
	case float32:
		return uint64(math.Float32bits(v)), nil
	case float64:
		return math.Float64bits(v), nil
	default:
		return 0, fmt.Errorf("unsupported kernel argument type %T", a)
	}
}

// Grid returns the number of blocks of blockSize threads needed for n
// threads, at least 0.
func Grid(n, blockSize int) int {
	if n <= 0 {
		return 0
	}
	return (n + blockSize - 1) / blockSize
}
