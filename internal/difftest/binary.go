package difftest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Environment variables read by the binary harness.
const (
	// EnvWarpkvBin names a built warpkv binary to test instead of building
	// one (the GPU machines run packed test binaries without a Go
	// toolchain).
	EnvWarpkvBin = "WARPKV_BIN"
	// EnvRequireTools turns a missing tool (the warpkv build, memccapable,
	// nutcracker, ...) from a skip into a failure when set to 1; .ci/run
	// sets it.
	EnvRequireTools = "WARPKV_REQUIRE_TOOLS"
)

var build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// WarpkvMain runs a test binary's tests (m.Run) and then removes the
// warpkv binary WarpkvBinary built for them; call it from TestMain.
func WarpkvMain(m *testing.M) int {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	return code
}

// WarpkvBinary returns the path of a warpkv binary built from this module
// with "go build" (once per test process; $WARPKV_BIN instead when set), so
// that tests run what users run. Without a Go toolchain the test is
// skipped, or failed under WARPKV_REQUIRE_TOOLS=1. Cost: one build, a few
// seconds uncached.
func WarpkvBinary(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(EnvWarpkvBin); p != "" {
		return p
	}
	build.once.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			build.err = fmt.Errorf("no go toolchain to build warpkv (%v) and $%s is not set", err, EnvWarpkvBin)
			return
		}
		build.dir, build.err = os.MkdirTemp("", "warpkv-bin-")
		if build.err != nil {
			return
		}
		build.path = filepath.Join(build.dir, "warpkv")
		cmd := exec.Command(goTool, "build", "-o", build.path, "github.com/warpkv/warpkv/cmd/warpkv")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build github.com/warpkv/warpkv/cmd/warpkv: %v: %s", err, out)
		}
	})
	if build.err != nil {
		NeedTool(tb, build.err.Error())
	}
	return build.path
}

// NeedTool skips the test for a missing tool, or fails it under
// WARPKV_REQUIRE_TOOLS=1.
func NeedTool(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv(EnvRequireTools) == "1" {
		tb.Fatalf("tool required ($%s=1) but unavailable: %s", EnvRequireTools, why)
	}
	tb.Skipf("tool unavailable: %s", why)
}

// LookTool returns the path of an executable this project did not write
// (memccapable, nutcracker, ...), skipping the test without it (failing
// under WARPKV_REQUIRE_TOOLS=1). Debian installs some in /usr/sbin.
func LookTool(tb testing.TB, name string) string {
	tb.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p
		}
	}
	NeedTool(tb, name+" is not installed")
	return ""
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}
