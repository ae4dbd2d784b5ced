package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/gpu"
)

// TestMPTCommand runs "warpkv mpt" on the trie of go-ethereum's classic
// doe/dog/dogglesworth vector, on bad input and on bad flags.
func TestMPTCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ops := write("ops.txt", "# doe, dog, dogglesworth\n646f65 7265696e64656572\n0x646f67 7075707079\n\n646f67676c6573776f727468 636174\n")
	withDelete := write("del.txt", "646f65 7265696e64656572\n646f67 7075707079\n646f67676c6573776f727468 636174\nabcd 01\nabcd\n")
	bad := write("bad.txt", "646f65 72\nzz 11\n01 02 03\n")
	const root = "0x8aad789dff2f538bca5d8ea56e8abe10f4c7ba3a5dea95fea4cd6e7c3a1168d3"
	type cmdCase struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}
	// The GPU engine gives the same root where a GPU is usable and a clear
	// error elsewhere.
	gpuCase := cmdCase{"gpu engine without a GPU", []string{"mpt", "root", "--quiet", "--engine", "gpu", ops}, 1, "", "no GPU is usable"}
	lockCase := cmdCase{"gpu engine, LockNU, without a GPU", []string{"mpt", "root", "--quiet", "--engine", "gpu", "--node-update", "lock", "--batch", "1", ops}, 1, "", "no GPU is usable"}
	if ok, _ := gpu.Available(); ok {
		gpuCase = cmdCase{"gpu engine", gpuCase.args, 0, root + "\n", ""}
		lockCase = cmdCase{"gpu engine, LockNU, batches of one", lockCase.args, 0, root + "\n", ""}
	}
	for _, tc := range []cmdCase{
		{"root", []string{"mpt", "root", "--quiet", ops}, 0, root + "\n", ""},
		{"root in batches of one", []string{"mpt", "root", "--quiet", "--batch", "1", ops}, 0, root + "\n", ""},
		{"a key-only line deletes", []string{"mpt", "root", "--quiet", withDelete}, 0, root + "\n", ""},
		{"prove", []string{"mpt", "prove", "--quiet", ops, "646f67"}, 0, "e5831646f6a0", ""},
		{"prove an absent key", []string{"mpt", "prove", "--quiet", ops, "0abc"}, 0, "", "is not in the trie: this is a proof of its absence"},
		{"bad lines", []string{"mpt", "root", bad}, 1, "", "line 2: bad hex"},
		{"bad lines name the third", []string{"mpt", "root", bad}, 1, "", "line 3: 3 fields"},
		{"sequential engine", []string{"mpt", "root", "--quiet", "--engine", "sequential", ops}, 0, root + "\n", ""},
		{"parallel engine", []string{"mpt", "root", "--quiet", "--engine", "parallel", "--batch", "2", ops}, 0, root + "\n", ""},
		gpuCase,
		lockCase,
		{"bad engine", []string{"mpt", "root", "--engine", "tpu", ops}, 2, "", "unknown engine"},
		{"bad node update", []string{"mpt", "root", "--node-update", "locks", ops}, 2, "", "unknown node update"},
		{"no verb", []string{"mpt"}, 2, "", "usage"},
		{"missing file", []string{"mpt", "root", filepath.Join(dir, "nope")}, 1, "", "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCmd(tc.args...)
			if code != tc.code || !strings.HasPrefix(out, tc.stdout) || !strings.Contains(errOut, tc.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout starting %q, stderr containing %q",
					code, out, errOut, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}
