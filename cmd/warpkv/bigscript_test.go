package main

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// bigScript returns a random operation file of about n lines for "warpkv
// TOOL run" (tool btree or art) whose trees have many leaves and levels: a
// run of n/4 puts first, then a run of n/20 ranges, then runs of one verb
// of up to 2000 lines (so that
// a batch holds thousands of operations, puts and gets of the same keys,
// deletes then gets, ranges after updates), keys spread over a space of
// about 4n, ranges of a few dozen keys open at either end or reversed,
// limits of 0 or less (none) and up to 40; art's keys share prefixes and
// one in eight is long (33 to 300 bytes), and prefix scans are mixed in.
func bigScript(r *rand.Rand, tool string, n int) string {
	space := uint64(4 * n)
	long := bytes.Repeat([]byte("warpkv long key "), 20)
	key := func() string { // a key of the space, its ends now and then
		if tool == "btree" {
			switch r.IntN(50) {
			case 0:
				return fmt.Sprint(uint64(math.MaxUint64) - r.Uint64N(2))
			case 1:
				return "0"
			}
			return fmt.Sprint(r.Uint64N(space))
		}
		b := make([]byte, 1+r.IntN(4))
		for i := range b {
			b[i] = byte(r.IntN(16) * 17) // 16 values a byte: keys share prefixes
		}
		if r.IntN(8) == 0 {
			b = append(append([]byte{}, long[:33+r.IntN(len(long)-33)]...), b...)
		}
		return fmt.Sprintf("0x%x", b)
	}
	bound := func(lo string) string { // an upper bound a few dozen keys past lo, or *
		switch {
		case r.IntN(8) == 0:
			return "*"
		case tool == "btree" && lo != "*":
			var v uint64
			fmt.Sscan(lo, &v)
			if v < space {
				return fmt.Sprint(v + r.Uint64N(space/64))
			}
		}
		return key()
	}
	verbs := []string{"put", "put", "upd", "del", "get", "get", "range", "range", "len"}
	if tool == "art" {
		verbs = append(verbs, "prefix")
	}
	var in strings.Builder
	lines := 0
	for runs := 0; lines < n; runs++ {
		verb, run := verbs[r.IntN(len(verbs))], 1+r.IntN(2000)
		switch runs {
		case 0:
			verb, run = "put", n/4
		case 1:
			verb, run = "range", n/20
		}
		for range run {
			var line string
			switch verb {
			case "put", "upd", "del", "get":
				line = pointLine(r, verb, key())
			case "range":
				lo := key()
				if r.IntN(10) == 0 {
					lo = "*"
				}
				line = fmt.Sprintf("range %s %s %d", lo, bound(lo), r.IntN(43)-2)
			case "prefix":
				p := key()
				p = p[:min(len(p), 2+2*r.IntN(3))] // 0 to 2 bytes
				line = fmt.Sprintf("prefix %s %d", p, r.IntN(43)-2)
			case "len":
				line = "len"
			}
			in.WriteString(line + "\n")
			lines++
		}
	}
	return in.String()
}

// pointLine is a run file's line of the point verb (put, upd, del or
// get) on key, with a random value for put and upd.
func pointLine(r *rand.Rand, verb, key string) string {
	if verb == "put" || verb == "upd" {
		return fmt.Sprintf("%s %s %d", verb, key, r.Uint64())
	}
	return verb + " " + key
}

// TestRunBinaryBigScripts runs the built binary's "btree run" and "art
// run" on large random files (trees of thousands of keys, batches of
// thousands of operations) and compares the output of every --batch on the
// CPU engine and, where a GPU is usable (required under
// WARPKV_REQUIRE_GPU=1), on the GPU engine with what the CPU engine prints
// applying the lines one at a time (--batch 1). The files are new each
// run (runRand logs their seed).
func TestRunBinaryBigScripts(t *testing.T) {
	devices := testDevices(t)
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		code, stdout, stderr := runBinary(t, nil, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\nstderr:\n%s", args, code, stderr)
		}
		return stdout
	}
	r := runRand(t, 11)
	for _, tool := range []string{"btree", "art"} {
		t.Run(tool, func(t *testing.T) {
			script := bigScript(r, tool, 20000)
			path := writeTemp(t, "ops", script)
			want := run(t, tool, "run", "--device", "cpu", "--batch", "1", path)
			// Every get, range, prefix and len line prints at least one
			// line; puts, updates and deletes print none.
			queries := 0
			for _, line := range strings.Split(script, "\n") {
				switch strings.SplitN(line, " ", 2)[0] {
				case "get", "range", "prefix", "len":
					queries++
				}
			}
			if got := strings.Count(want, "\n"); queries < 1000 || got < queries {
				t.Fatalf("one at a time printed %d lines for %d query lines: want at least one each, and at least 1000 queries", got, queries)
			}
			for _, dev := range devices {
				for _, batch := range []string{"0", "7", "1000"} {
					got := run(t, tool, "run", "--device", dev, "--batch", batch, path)
					if got != want {
						t.Fatalf("--device %s --batch %s: output differs from one at a time on the CPU at line %d", dev, batch, firstDiffLine(got, want))
					}
				}
			}
			t.Logf("%s: %d output lines, same on %v", tool, strings.Count(want, "\n"), devices)
		})
	}
}
