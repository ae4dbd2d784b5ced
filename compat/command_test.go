package compat

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/warpkv/warpkv/internal/workload"
	"github.com/warpkv/warpkv/mpt"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// warpkvBinary returns the warpkv command to test: $WARPKV_BIN when set,
// else cmd/warpkv built once per test binary in the main module, else, where no Go toolchain
// is installed (the GPU machine runs this module's test binary without
// one), the command scripts/pack-gpu.sh packed beside it in ../.gpu/;
// it skips when there is none.
func warpkvBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("WARPKV_BIN"); p != "" {
		return p
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		if p, err := filepath.Abs(filepath.Join("..", ".gpu", "warpkv")); err == nil {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
		t.Skip("no go toolchain to build warpkv, no WARPKV_BIN and no ../.gpu/warpkv")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "warpkv-cmd")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "warpkv")
		// Built in the main module (the checkout above), with its own
		// go.sum: the command users build, whatever this module requires.
		build := exec.Command(goTool, "build", "-o", binPath, "./cmd/warpkv")
		build.Dir = ".."
		out, err := build.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// TestCommandAgainstGeth writes random operation files (inserts,
// overwrites, deletes as key-only lines and as empty values, comments,
// every key distribution of keyGen), runs `warpkv mpt root` on them with
// every engine, in batches of several sizes and in both modes, and
// compares the printed root with go-ethereum's after the same operations
// (the GPU engine where usable, with --node-update auto, phase and lock);
// `warpkv mpt prove` must print go-ethereum's proof.
func TestCommandAgainstGeth(t *testing.T) {
	bin := warpkvBinary(t)
	dir := t.TempDir()
	for _, secure := range []bool{false, true} {
		for seed := range uint64(4) {
			r := rand.New(rand.NewPCG(seed, 11))
			g := &keyGen{rng: r, base: bytes.Repeat([]byte{0xab}, 30)}
			geth, gethProve := newGeth(t, secure)
			var lines []string
			var probe []byte
			for i := range 400 + r.IntN(400) {
				k, v := g.key(), value(r)
				geth.MustUpdate(k, v)
				hk := hex.EncodeToString(k)
				if len(k) == 0 || r.IntN(2) == 0 {
					hk = "0x" + hk // the empty key needs its prefix
				}
				switch {
				case len(v) > 0:
					lines = append(lines, hk+" "+hex.EncodeToString(v))
					probe = k
				case r.IntN(2) == 0:
					lines = append(lines, hk) // a key-only line deletes
				default:
					lines = append(lines, hk+" 0x") // so does an empty value
				}
				if i%97 == 0 {
					lines = append(lines, "# a comment", "")
				}
			}
			file := filepath.Join(dir, fmt.Sprintf("ops-%v-%d.txt", secure, seed))
			if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("0x%x\n", geth.Hash())
			wantProof, err := gethProve(probe)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range configs {
				for _, batch := range []string{"1", "7", "100000"} {
					name := fmt.Sprintf("secure=%v/seed=%d/%s/batch=%s", secure, seed, configName(e), batch)
					out, err := exec.Command(bin, append(commandArgs("root", e, secure, batch), file)...).Output()
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if string(out) != want {
						t.Fatalf("%s: warpkv mpt root printed %q, go-ethereum's root is %q", name, out, want)
					}
				}
				out, err := exec.Command(bin, append(commandArgs("prove", e, secure, "100000"), file, hex.EncodeToString(probe))...).Output()
				if err != nil {
					t.Fatalf("prove on %s: %v", configName(e), err)
				}
				var got []string
				for _, n := range wantProof {
					got = append(got, hex.EncodeToString(n))
				}
				if string(out) != strings.Join(got, "\n")+"\n" {
					t.Fatalf("secure=%v seed=%d %s: warpkv mpt prove printed\n%s\nwant go-ethereum's\n%s", secure, seed, e.Engine, out, strings.Join(got, "\n"))
				}
			}
		}
	}
}

// commandArgs returns the `warpkv mpt VERB` arguments for engine
// configuration e (its --node-update where one is forced).
func commandArgs(verb string, e mpt.Options, secure bool, batch string) []string {
	args := []string{"mpt", verb, "--quiet", "--engine", string(e.Engine), "--batch", batch}
	if e.NodeUpdate != mpt.NodeUpdateAuto {
		args = append(args, "--node-update", string(e.NodeUpdate))
	}
	if secure {
		args = append(args, "--secure")
	}
	return args
}

// proofLines formats a proof as `warpkv mpt prove` prints it.
func proofLines(proof [][]byte) string {
	var b strings.Builder
	for _, n := range proof {
		fmt.Fprintf(&b, "%x\n", n)
	}
	return b.String()
}

// gpuCommandFiles are the files TestCommandEdgeCases runs the GPU engine's
// command on.
var gpuCommandFiles = map[string]bool{
	"issue-cancel-out": true, "issue-delete-absent": true, "issue-then-inserts": true, "empty-file": true,
	"cancel-out": true, "deletes-on-empty": true, "delete-all-insert-again": true,
}

// TestCommandEdgeCases writes the cases and the edge-case
// scenarios (see TestEdgeCasesAgainstGeth) as operation files and runs the
// built `warpkv mpt root` on them with every engine configuration (the GPU
// engine where usable, with --node-update auto, phase and lock, on the
// files of gpuCommandFiles), plain and --secure, in batches of 1, 3 and
// the whole file; the printed root must
// be go-ethereum's after the same operations, and `warpkv mpt prove` must
// print go-ethereum's proof of present and absent keys (nothing on an
// empty trie).
func TestCommandEdgeCases(t *testing.T) {
	bin := warpkvBinary(t)
	dir := t.TempDir()
	files := []workload.MPTScenario{
		{Name: "issue-cancel-out", Sections: [][]workload.MPTOp{{{Key: []byte{1}, Value: []byte{2}}, {Key: []byte{1}}}}},
		{Name: "issue-delete-absent", Sections: [][]workload.MPTOp{{{Key: []byte{1}}}}},
		{Name: "issue-then-inserts", Sections: [][]workload.MPTOp{
			{{Key: []byte{1}, Value: []byte{2}}, {Key: []byte{1}}},
			{{Key: []byte{2}, Value: []byte{3}}, {Key: []byte{4}, Value: []byte{5}}, {Key: []byte{0x46}, Value: []byte{6}}},
		}},
		{Name: "empty-file"},
	}
	for i := range files {
		files[i].Probes = [][]byte{{1}, {2}, {}, {0x46, 0x01}}
	}
	files = append(files, edgeScenarios(t)...)
	for fi, sc := range files {
		file := filepath.Join(dir, fmt.Sprintf("ops-%d.txt", fi))
		if err := os.WriteFile(file, []byte(workload.MPTFile(sc)), 0o644); err != nil {
			t.Fatal(err)
		}
		ops := sc.Ops()
		probes := slices.Clone(sc.Probes[:min(len(sc.Probes), 3)]) // the empty key and the first keys touched
		probes = append(probes, sc.Probes[len(sc.Probes)-1])       // a key never stored
		allProbes := probes
		for _, secure := range []bool{false, true} {
			geth, gethProve := newGeth(t, secure)
			for _, o := range ops {
				geth.MustUpdate(o.Key, o.Value)
			}
			want := fmt.Sprintf("0x%x\n", geth.Hash())
			wantProofs := make([]string, len(probes))
			for i, k := range probes {
				p, err := gethProve(k)
				if err != nil {
					t.Fatal(err)
				}
				wantProofs[i] = proofLines(p)
			}
			for _, e := range configs {
				batches, probes := []string{"1", "3", "100000"}, probes
				if e.Engine == mpt.EngineGPU {
					// Each run opens the device: the GPU engine runs the
					// issue's files and a few scenarios here, in batches of
					// one and of the whole file (TestEdgeCasesAgainstGeth runs
					// every scenario on it in process).
					if !gpuCommandFiles[sc.Name] {
						continue
					}
					batches, probes = []string{"1", "100000"}, probes[len(probes)-2:]
				}
				for _, batch := range batches {
					name := fmt.Sprintf("%s/secure=%v/%s/batch=%s", sc.Name, secure, configName(e), batch)
					out, err := exec.Command(bin, append(commandArgs("root", e, secure, batch), file)...).Output()
					if err != nil {
						t.Fatalf("%s: warpkv mpt root: %v", name, err)
					}
					if string(out) != want {
						t.Fatalf("%s: warpkv mpt root printed %q, go-ethereum's root is %q", name, out, want)
					}
				}
				for _, k := range probes {
					i := slices.IndexFunc(allProbes, func(p []byte) bool { return bytes.Equal(p, k) })
					out, err := exec.Command(bin, append(commandArgs("prove", e, secure, "3"), file, workload.HexKey(k))...).Output()
					if err != nil {
						t.Fatalf("%s/secure=%v/%s: warpkv mpt prove %x: %v", sc.Name, secure, configName(e), k, err)
					}
					if string(out) != wantProofs[i] {
						t.Fatalf("%s/secure=%v/%s: warpkv mpt prove %x printed\n%s\nwant go-ethereum's\n%s", sc.Name, secure, configName(e), k, out, wantProofs[i])
					}
				}
			}
		}
	}
}
