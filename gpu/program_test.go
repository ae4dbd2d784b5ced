package gpu

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"
)

func TestDefKeepsTheConstantsWidth(t *testing.T) {
	for _, c := range []struct {
		got  Define
		want string
	}{
		{Def("A", 7), "7"},
		{Def("B", uint32(7)), "7ull"},
		{Def("C", int64(1)<<40), "1099511627776ll"},
		{Def("D", -3), "(-3)"},
		{Def("E", int64(-1)<<40), "(-1099511627776ll)"},
	} {
		if c.got.Value != c.want {
			t.Errorf("%s = %s, want %s", c.got.Name, c.got.Value, c.want)
		}
	}
}

func TestSharedHeadersAreNamedBelowCuda(t *testing.T) {
	h := SharedHeaders()
	if !strings.Contains(h["warpkv/types.cuh"], "typedef unsigned long long u64;") {
		t.Fatalf("shared headers %v lack warpkv/types.cuh", h)
	}
}

// TestProgramCompilesWithHeadersAndDefines compiles a kernel that needs a
// shared header, an engine header and a define from Go; without NVRTC it
// skips.
func TestProgramCompilesWithHeadersAndDefines(t *testing.T) {
	if _, _, err := NVRTCVersion(); err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	t.Setenv(EnvCacheDir, "off")
	src := `#include "warpkv/types.cuh"
#include "local.cuh"
#if WIDTH != 48
#error WIDTH not passed from Go
#endif
extern "C" __global__ void k(u64* p) { p[threadIdx.x] = twice(WIDTH); }`
	p := NewProgram("k.cu", src, Def("WIDTH", 48))
	p.Headers["local.cuh"] = "#pragma once\n__device__ inline u64 twice(u64 x) { return 2 * x; }\n"
	if _, err := p.CompileCUBIN("sm_90"); err != nil {
		t.Fatal(err)
	}
	p.Defines = nil
	_, err := p.CompileCUBIN("sm_90")
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Log, "WIDTH") {
		t.Fatalf("a missing define compiled or gave %v", err)
	}
}

func TestNewProgramFS(t *testing.T) {
	fsys := fstest.MapFS{
		"main.cu":  {Data: []byte(`#include "pkg/part.cu"`)},
		"part.cu":  {Data: []byte("// part")},
		"pkg.cuh":  {Data: []byte("// header")},
		"notes.md": {Data: []byte("not a kernel")},
	}
	p := NewProgramFS(fsys, "pkg", "main.cu", Def("N", 3))
	if p.Name != "main.cu" || p.Source != `#include "pkg/part.cu"` || len(p.Defines) != 1 {
		t.Fatalf("program %q, source %q, %d defines", p.Name, p.Source, len(p.Defines))
	}
	if p.Headers["pkg/part.cu"] != "// part" || p.Headers["pkg/pkg.cuh"] != "// header" {
		t.Errorf("package headers: %q, %q", p.Headers["pkg/part.cu"], p.Headers["pkg/pkg.cuh"])
	}
	for _, name := range []string{"pkg/main.cu", "pkg/notes.md"} {
		if _, ok := p.Headers[name]; ok {
			t.Errorf("header %s: the main file and non-kernel files are not headers", name)
		}
	}
	for name := range SharedHeaders() {
		if _, ok := p.Headers[name]; !ok {
			t.Errorf("shared header %s missing", name)
		}
	}
}
