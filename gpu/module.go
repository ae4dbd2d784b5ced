package gpu

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// EnvCacheDir names the directory of the compiled-kernel cache; "off"
// disables the cache. Default: $XDG_CACHE_HOME/warpkv/cubin.
const EnvCacheDir = "WARPKV_CACHE_DIR"

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

// cacheKey identifies a compilation: source, options, architecture and the
// NVRTC version all change the cubin.
func cacheKey(name, src string, hdrNames, hdrTexts []string, arch string, opts []string) string {
	ma, mi, _ := NVRTCVersion()
	h := sha256.New()
	fmt.Fprintf(h, "nvrtc %d.%d\x00%s\x00%s\x00%q\x00%q\x00", ma, mi, arch, name, baseOptions, opts)
	h.Write([]byte(src))
	for i := range hdrNames {
		fmt.Fprintf(h, "\x00header %q %d\x00", hdrNames[i], len(hdrTexts[i]))
		h.Write([]byte(hdrTexts[i]))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func cacheDir() string {
	if v := os.Getenv(EnvCacheDir); v != "" {
		if v == "off" {
			return ""
		}
		return v
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "warpkv", "cubin")
}

// cachedCUBIN returns the cubin for the compilation, from the on-disk cache
// when present, else compiling it and storing the result. A cache that
// cannot be read or written only costs a recompile.
func cachedCUBIN(name, src string, hdrNames, hdrTexts []string, arch string, opts []string) ([]byte, string, error) {
	key := cacheKey(name, src, hdrNames, hdrTexts, arch, opts)
	dir := cacheDir()
	var path string
	if dir != "" {
		path = filepath.Join(dir, key+".cubin")
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return b, key, nil
		}
	}
	cubin, err := compile(name, src, hdrNames, hdrTexts, arch, opts)
	if err != nil {
		return nil, key, err
	}
	if path != "" && os.MkdirAll(dir, 0o755) == nil {
		tmp, err := os.CreateTemp(dir, key+".*.tmp")
		if err == nil {
			_, werr := tmp.Write(cubin)
			cerr := tmp.Close()
			if werr == nil && cerr == nil {
				os.Rename(tmp.Name(), path)
			} else {
				os.Remove(tmp.Name())
			}
		}
	}
	return cubin, key, nil
}

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
