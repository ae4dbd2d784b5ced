package gpu

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// EnvCacheDir names the directory of the compiled-kernel cache; "off"
// disables the cache. Default: $XDG_CACHE_HOME/warpkv/cubin.
const EnvCacheDir = "WARPKV_CACHE_DIR"

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

// cacheDir is the cache's directory ($WARPKV_CACHE_DIR, else the user's
// cache directory's warpkv/cubin); "" when the cache is off or there is none.
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
