package gpu

import (
	"errors"
	"fmt"
	"unsafe"
)

// CUDA driver result codes that callers may want to test for.
const (
	cudaSuccess         = 0
	cudaErrOutOfMemory  = 2
	cudaErrNoDevice     = 100
	cudaErrNotReady     = 600
	nvrtcSuccess        = 0
	nvrtcErrCompilation = 6
)

// ErrOutOfMemory is matched (errors.Is) by any error caused by the device
// running out of memory.
var ErrOutOfMemory = errors.New("gpu: out of device memory")

// Error is a failed CUDA driver or NVRTC call. Code is the numeric result,
// Name its symbolic name (for example CUDA_ERROR_INVALID_VALUE).
type Error struct {
	Call string // the API function that failed, e.g. "cuMemAlloc"
	Code uint32
	Name string
	Desc string
}

func (e *Error) Error() string {
	if e.Desc != "" && e.Desc != e.Name {
		return fmt.Sprintf("%s: %s (%d): %s", e.Call, e.Name, e.Code, e.Desc)
	}
	return fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
}

// Is makes errors.Is(err, ErrOutOfMemory) true for allocation failures.
func (e *Error) Is(target error) bool {
	return target == ErrOutOfMemory && e.Code == cudaErrOutOfMemory && !e.nvrtc()
}

func (e *Error) nvrtc() bool { return len(e.Call) >= 5 && e.Call[:5] == "nvrtc" }

// newError builds an Error for a failed driver call, asking the driver for the
// code's name and description.
func newError(call string, d *driverAPI, code uint32) error {
	e := &Error{Call: call, Code: code, Name: fmt.Sprintf("CUDA_ERROR_%d", code)}
	if d != nil {
		var p uintptr
		if call2(d.cuGetErrorName, code, &p) == 0 && p != 0 {
			e.Name = cString(p)
		}
		if call2(d.cuGetErrorString, code, &p) == 0 && p != 0 {
			e.Desc = cString(p)
		}
	}
	return e
}

func call2(fn uintptr, code uint32, out *uintptr) uint32 {
	return call(fn, uintptr(code), uintptr(unsafe.Pointer(out)))
}

// newNVRTCError builds an Error for a failed NVRTC call.
func newNVRTCError(call string, n *nvrtcAPI, code uint32) error {
	e := &Error{Call: call, Code: code, Name: fmt.Sprintf("NVRTC_ERROR_%d", code)}
	if n != nil {
		r, _, _ := syscallN(n.nvrtcGetErrorString, uintptr(code))
		if r != 0 {
			e.Name = cString(r)
		}
	}
	return e
}
