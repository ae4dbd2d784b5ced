package gpu

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// NVRTCVersion returns the version of the loaded NVRTC library.
func NVRTCVersion() (major, minor int, err error) {
	n, err := loadNVRTC()
	if err != nil {
		return 0, 0, err
	}
	var ma, mi int32
	if r := call(n.nvrtcVersion, uintptr(unsafe.Pointer(&ma)), uintptr(unsafe.Pointer(&mi))); r != 0 {
		return 0, 0, newNVRTCError("nvrtcVersion", n, r)
	}
	return int(ma), int(mi), nil
}

// NVRTCPath returns the file NVRTC was loaded from.
func NVRTCPath() string {
	if n, err := loadNVRTC(); err == nil {
		return n.path
	}
	return ""
}

// CompileError is a kernel source that NVRTC rejected; Log holds NVRTC's
// diagnostics, which name the file and line.
type CompileError struct {
	File string
	Arch string
	Log  string
	Err  error
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("nvrtc: compiling %s for %s: %v\n%s", e.File, e.Arch, e.Err, strings.TrimSpace(e.Log))
}

func (e *CompileError) Unwrap() error { return e.Err }

// baseOptions are passed to every compilation before the caller's options.
var baseOptions = []string{"-std=c++17"}

// CompileCUBIN compiles CUDA C source with NVRTC into a cubin for arch (for
// example "sm_90"). It needs NVRTC but no GPU. name is the file name used in
// diagnostics. Cost: tens to hundreds of milliseconds; Device.Compile caches.
func CompileCUBIN(name, src, arch string, opts []string) ([]byte, error) {
	return compile(name, src, nil, nil, arch, opts)
}

// compile compiles src, which may include the named headers, with NVRTC.
func compile(name, src string, hdrNames, hdrTexts []string, arch string, opts []string) ([]byte, error) {
	n, err := loadNVRTC()
	if err != nil {
		return nil, err
	}
	csrc, cname := cBytes(src), cBytes(name)
	nh := len(hdrNames)
	hbytes := make([][]byte, 0, 2*nh)
	hnames := make([]uintptr, nh+1)
	htexts := make([]uintptr, nh+1)
	for i := range nh {
		t, nm := cBytes(hdrTexts[i]), cBytes(hdrNames[i])
		hbytes = append(hbytes, t, nm)
		htexts[i] = uintptr(unsafe.Pointer(&t[0]))
		hnames[i] = uintptr(unsafe.Pointer(&nm[0]))
	}
	var prog uintptr
	if r := call(n.nvrtcCreateProgram, uintptr(unsafe.Pointer(&prog)), uintptr(unsafe.Pointer(&csrc[0])),
		uintptr(unsafe.Pointer(&cname[0])), uintptr(nh), uintptr(unsafe.Pointer(&htexts[0])),
		uintptr(unsafe.Pointer(&hnames[0]))); r != 0 {
		return nil, fmt.Errorf("compiling %s: %w", name, newNVRTCError("nvrtcCreateProgram", n, r))
	}
	runtime.KeepAlive(csrc)
	runtime.KeepAlive(cname)
	runtime.KeepAlive(hbytes)
	runtime.KeepAlive(hnames)
	runtime.KeepAlive(htexts)
	defer call(n.nvrtcDestroyProgram, uintptr(unsafe.Pointer(&prog)))

	all := append(append([]string{"--gpu-architecture=" + arch}, baseOptions...), opts...)
	cs := make([][]byte, len(all))
	ptrs := make([]uintptr, len(all))
	for i, o := range all {
		cs[i] = cBytes(o)
		ptrs[i] = uintptr(unsafe.Pointer(&cs[i][0]))
	}
	rc := call(n.nvrtcCompileProgram, prog, uintptr(len(ptrs)), uintptr(unsafe.Pointer(&ptrs[0])))
	runtime.KeepAlive(cs)
	var logSize uintptr
	log := ""
	if call(n.nvrtcGetProgramLogSize, prog, uintptr(unsafe.Pointer(&logSize))) == 0 && logSize > 1 {
		buf := make([]byte, logSize)
		if call(n.nvrtcGetProgramLog, prog, uintptr(unsafe.Pointer(&buf[0]))) == 0 {
			log = string(buf[:logSize-1])
		}
	}
	if rc != 0 {
		return nil, &CompileError{File: name, Arch: arch, Log: log, Err: newNVRTCError("nvrtcCompileProgram", n, rc)}
	}
	var size uintptr
	if r := call(n.nvrtcGetCUBINSize, prog, uintptr(unsafe.Pointer(&size))); r != 0 {
		return nil, fmt.Errorf("compiling %s: %w", name, newNVRTCError("nvrtcGetCUBINSize", n, r))
	}
	if size == 0 {
		return nil, fmt.Errorf("compiling %s: NVRTC produced no cubin (is %s a real architecture?)", name, arch)
	}
	cubin := make([]byte, size)
	if r := call(n.nvrtcGetCUBIN, prog, uintptr(unsafe.Pointer(&cubin[0]))); r != 0 {
		return nil, fmt.Errorf("compiling %s: %w", name, newNVRTCError("nvrtcGetCUBIN", n, r))
	}
	return cubin, nil
}
