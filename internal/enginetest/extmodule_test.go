package enginetest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExternalModule builds and runs internal/extmodule, a module outside
// this one that requires github.com/warpkv/warpkv through a replace to the
// checkout and uses the five engines, their iterators, Context calls and
// engine.ErrClosed on the CPU engine, as a user's program does. Its
// dependencies come from the module cache (GOFLAGS=-mod=mod lets go fetch
// a missing one through GOPROXY). Skipped with -short (it compiles the
// engines once more).
func TestExternalModule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the external module compiles the engines")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the external module")
	}
	cmd := exec.Command(goBin, "run", ".")
	cmd.Dir = filepath.Join("..", "extmodule")
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run in %s: %v\n%s", cmd.Dir, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[len(lines)-1] != "ok" || len(lines) != 6 {
		t.Fatalf("output:\n%s\nwant a line per engine and ok", out)
	}
	for i, name := range []string{"art", "btree", "hashindex", "mpt", "stm"} {
		if want := name + ": " + name + ": cpu engine: requested"; !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d: %q, want it to begin with %q", i+1, lines[i], want)
		}
	}
}
