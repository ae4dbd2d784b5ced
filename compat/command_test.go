package compat

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// warpkvBinary builds cmd/warpkv once per test binary, or skips where no
// Go toolchain is installed (the GPU machine runs this module's test
// binary without one; there the command's GPU engine is covered by
// cmd/warpkv's own test and the library's differential tests).
func warpkvBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go toolchain to build warpkv")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "warpkv-cmd")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "warpkv")
		out, err := exec.Command(goTool, "build", "-o", binPath, "warpkv/cmd/warpkv").CombinedOutput()
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
// compares the printed root with go-ethereum's after the same operations;
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
			for _, e := range engines {
				for _, batch := range []string{"1", "7", "100000"} {
					name := fmt.Sprintf("secure=%v/seed=%d/%s/batch=%s", secure, seed, e.Engine, batch)
					args := []string{"mpt", "root", "--quiet", "--engine", string(e.Engine), "--batch", batch}
					if secure {
						args = append(args, "--secure")
					}
					out, err := exec.Command(bin, append(args, file)...).Output()
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if string(out) != want {
						t.Fatalf("%s: warpkv mpt root printed %q, go-ethereum's root is %q", name, out, want)
					}
				}
				args := []string{"mpt", "prove", "--quiet", "--engine", string(e.Engine)}
				if secure {
					args = append(args, "--secure")
				}
				out, err := exec.Command(bin, append(args, file, hex.EncodeToString(probe))...).Output()
				if err != nil {
					t.Fatalf("prove on %s: %v", e.Engine, err)
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
