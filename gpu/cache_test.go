package gpu

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCompiledKernelsAreCachedOnDiskByKey(t *testing.T) {
	if _, _, err := NVRTCVersion(); err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	dir := t.TempDir()
	t.Setenv(EnvCacheDir, dir)
	src := `extern "C" __global__ void k(int* p) { p[threadIdx.x] = 1; }`
	a, keyA, err := cachedCUBIN("k.cu", src, nil, nil, "sm_90", nil)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.cubin"))
	if len(files) != 1 || filepath.Base(files[0]) != keyA+".cubin" {
		t.Fatalf("cache dir holds %v, want one file named by the key", files)
	}
	// A second call reads the file: corrupt-free identical bytes.
	b, _, err := cachedCUBIN("k.cu", src, nil, nil, "sm_90", nil)
	if err != nil || string(a) != string(b) {
		t.Fatalf("second lookup: %v, equal=%v", err, string(a) == string(b))
	}
	// Options, architecture, source and headers each change the key.
	for _, c := range []struct {
		name, src, arch string
		hn, ht          []string
		opts            []string
	}{
		{"k.cu", src, "sm_90", nil, nil, []string{"-DX=1"}},
		{"k.cu", src, "sm_80", nil, nil, nil},
		{"k.cu", src + "\n", "sm_90", nil, nil, nil},
		{"k.cu", src, "sm_90", []string{"h.cuh"}, []string{"#define A 1"}, nil},
	} {
		if k := cacheKey(c.name, c.src, c.hn, c.ht, c.arch, c.opts); k == keyA {
			t.Fatalf("key did not change for %+v", c)
		}
	}
	t.Setenv(EnvCacheDir, "off")
	if cacheDir() != "" {
		t.Fatal("WARPKV_CACHE_DIR=off still caches")
	}
	os.RemoveAll(dir)
}
