package gpu

import (
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
)

//go:embed cuda
var headerFS embed.FS

// Program is one kernel translation unit: a .cu source, the headers it may
// include by name, and the constants Go passes to it as -D options, so that
// no constant is copied into a .cu file by hand. Every part is in the
// compile cache's key.
type Program struct {
	Name    string            // the file name used in diagnostics, e.g. "btree.cu"
	Source  string            // CUDA C
	Headers map[string]string // include name -> text, e.g. "warpkv/types.cuh"
	Defines []Define          // passed as -DNAME=VALUE, in order
}

// Define is one constant owned by Go and passed to the compiler.
type Define struct{ Name, Value string }

// Integer is the set of types Def accepts.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

// Def returns the define NAME=v for an integer constant; unsigned values
// get a "ull" suffix and values outside int32 an "ll" suffix, so they keep
// their width in C. Cost: O(1).
func Def[T Integer](name string, v T) Define {
	switch {
	case v < 0:
		if int64(v) < -1<<31 {
			return Define{name, fmt.Sprintf("(%dll)", int64(v))}
		}
		return Define{name, fmt.Sprintf("(%d)", int64(v))}
	case isUnsigned[T]():
		return Define{name, fmt.Sprintf("%dull", uint64(v))}
	case uint64(v) > 1<<31-1:
		return Define{name, fmt.Sprintf("%dll", uint64(v))}
	}
	return Define{name, fmt.Sprintf("%d", uint64(v))}
}

func isUnsigned[T Integer]() bool {
	var z T
	return z-1 > 0
}

// SharedHeaders returns the headers every program may include: the files
// under gpu/cuda, by their path below it (for example
// "warpkv/types.cuh"). Cost: reads the embedded files.
func SharedHeaders() map[string]string {
	out := map[string]string{}
	fs.WalkDir(headerFS, "cuda", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := headerFS.ReadFile(path)
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(path, "cuda/")] = string(b)
		return nil
	})
	return out
}

// NewProgram returns the program of source with the shared headers and the
// given defines. Engines add their own headers to Headers. Cost: reads the
// embedded headers.
func NewProgram(name, source string, defines ...Define) Program {
	return Program{Name: name, Source: source, Headers: SharedHeaders(), Defines: defines}
}

// NewProgramFS returns the program of a package's kernels embedded in
// fsys: the file main as the source, and every other .cu and .cuh file
// of fsys's top folder as a header the source includes as "dir/NAME", with
// the shared headers and the given defines. It panics when main is not in
// fsys (a build error: the files are embedded). Cost: reads the embedded
// files.
func NewProgramFS(fsys fs.FS, dir, main string, defines ...Define) Program {
	src, err := fs.ReadFile(fsys, main)
	if err != nil {
		panic(fmt.Sprintf("gpu: embedded %s/%s: %v", dir, main, err))
	}
	p := NewProgram(main, string(src), defines...)
	for _, pattern := range []string{"*.cu", "*.cuh"} {
		names, _ := fs.Glob(fsys, pattern)
		for _, name := range names {
			if name == main {
				continue
			}
			b, err := fs.ReadFile(fsys, name)
			if err != nil {
				panic(fmt.Sprintf("gpu: embedded %s/%s: %v", dir, name, err))
			}
			p.Headers[dir+"/"+name] = string(b)
		}
	}
	return p
}

// options returns the -D options of the defines.
func (p Program) options() []string {
	out := make([]string, len(p.Defines))
	for i, d := range p.Defines {
		out[i] = "-D" + d.Name + "=" + d.Value
	}
	return out
}

// headerList returns the headers in a fixed order (by include name).
func (p Program) headerList() (names, texts []string) {
	names = slices.Sorted(maps.Keys(p.Headers))
	texts = make([]string, len(names))
	for i, n := range names {
		texts[i] = p.Headers[n]
	}
	return names, texts
}

// CompileCUBIN compiles the program with NVRTC for arch (for example
// "sm_90") with extra options after the defines. It needs NVRTC but no GPU.
// Cost: tens to hundreds of milliseconds; Device.Load caches.
func (p Program) CompileCUBIN(arch string, extra ...string) ([]byte, error) {
	names, texts := p.headerList()
	return compile(p.Name, p.Source, names, texts, arch, append(p.options(), extra...))
}

// Load compiles the program for this device's architecture (through the
// on-disk cache) and loads it; a program with the same sources, headers and
// options is loaded once per device. Compile errors carry NVRTC's log.
func (d *Device) Load(p Program, extra ...string) (*Module, error) {
	names, texts := p.headerList()
	return d.load(p.Name, p.Source, names, texts, append(p.options(), extra...))
}
