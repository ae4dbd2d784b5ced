package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/mpt"
)

// Bounds of "warpkv mpt"'s input.
const (
	// maxBadLines is how many bad input lines "warpkv mpt" reports before
	// it stops reading.
	maxBadLines = 20
	// mptMaxLine is the longest input line (64 MiB): the CPU engines take
	// keys and values of any length, and this bounds what one line may
	// make the command hold.
	mptMaxLine = 64 << 20
)

// runMPT is "warpkv mpt root|prove": it applies a file of trie operations
// (one "HEXKEY [HEXVALUE]" a line; a missing or empty value deletes) in
// batches and prints the root, or the proof of one key.
func runMPT(e *env, args []string) error {
	if len(args) == 0 || (args[0] != "root" && args[0] != "prove") {
		return usagef("usage: warpkv mpt root|prove [--secure] [--engine E] [--device D] [--batch N] FILE [HEXKEY]")
	}
	verb := args[0]
	synopsis := "warpkv mpt root [--secure] [--engine E] [--device D] [--batch N] FILE (- for stdin)"
	if verb == "prove" {
		synopsis = "warpkv mpt prove [--secure] [--engine E] [--device D] [--batch N] FILE HEXKEY"
	}
	fs := newFlagSet(e, "mpt "+verb, synopsis)
	secure := fs.Bool("secure", false, "hash keys with Keccak-256 first, as Ethereum's state trie")
	engine := fs.String("engine", "auto", "engine: auto (gpu where usable, else parallel), sequential, parallel or gpu")
	device := fs.String("device", "", "device for the gpu engine: auto, cpu (auto then means parallel), gpu or gpu:N (default $WARPKV_DEVICE, else auto)")
	nodeUpdate := fs.String("node-update", "auto", "gpu engine's node update: auto (the decision model), phase (PhaseNU) or lock (LockNU)")
	batch := fs.Int("batch", 100000, "operations applied per batch")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	want := 1
	if verb == "prove" {
		want = 2
	}
	if fs.NArg() != want {
		fs.Usage()
		return usagef("mpt %s takes %d argument(s), got %d", verb, want, fs.NArg())
	}
	if err := atLeast("--batch", *batch, 1); err != nil {
		return err
	}
	eng, err := mpt.ParseEngine(*engine)
	if err != nil {
		return usagef("--engine: %v", err)
	}
	nu, err := mpt.ParseNodeUpdate(*nodeUpdate)
	if err != nil {
		return usagef("--node-update: %v", err)
	}
	spec, err := gpu.ParseSpec(*device)
	if err != nil {
		return usagef("--device: %v", err)
	}
	if eng == mpt.EngineAuto && !spec.Auto {
		if spec.Backend == gpu.BackendGPU {
			eng = mpt.EngineGPU
		} else {
			eng = mpt.EngineParallel
		}
	}
	var proveKey []byte
	if verb == "prove" {
		if proveKey, err = parseHex(fs.Arg(1)); err != nil {
			return usagef("HEXKEY: %v", err)
		}
	}
	in, closeIn, err := openInput(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("mpt: %w", err)
	}
	defer closeIn()
	progress := e.stderr
	if *quiet {
		progress = io.Discard
	}
	t, err := mpt.Open(mpt.Options{Secure: *secure, Engine: eng, Device: *device, NodeUpdate: nu})
	if err != nil {
		return err
	}
	defer t.Close()
	fmt.Fprintln(progress, t.Reason())
	if err := applyOps(t, in, *batch, progress); err != nil {
		return err
	}
	if verb == "root" {
		root, err := t.Hash()
		if err != nil {
			return fmt.Errorf("mpt root: %w", err)
		}
		fmt.Fprintf(e.stdout, "0x%x\n", root)
		return nil
	}
	proof, err := t.Prove(proveKey)
	if err != nil {
		return fmt.Errorf("mpt prove: %w", err)
	}
	_, found, err := t.Lookup([][]byte{proveKey})
	if err != nil {
		return fmt.Errorf("mpt prove: %w", err)
	}
	if !found[0] {
		// The nodes still go to standard output: they prove the absence.
		fmt.Fprintf(e.stderr, "mpt prove: key 0x%x is not in the trie: this is a proof of its absence (%d nodes)\n", proveKey, len(proof))
	}
	for _, n := range proof {
		fmt.Fprintf(e.stdout, "%x\n", n)
	}
	return nil
}

// openInput opens FILE, or standard input for "-".
func openInput(name string) (io.Reader, func(), error) {
	if name == "-" {
		return os.Stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err // *PathError: "open FILE: ..."
	}
	return f, func() { f.Close() }, nil
}

// applyOps reads "HEXKEY [HEXVALUE]" lines from in and applies them to t in
// batches of n, in order. Blank lines and lines starting with # are
// skipped. Bad lines are reported with their numbers, up to maxBadLines,
// and nothing is applied after the first one.
func applyOps(t *mpt.Trie, in io.Reader, n int, progress io.Writer) error {
	lr := newLineReader(in, mptMaxLine, "a key and its value of up to 32 MiB together, in hex")
	var keys, values [][]byte
	var bad []string
	total := 0
	flush := func() error {
		if len(bad) > 0 || len(keys) == 0 {
			return nil
		}
		if err := t.Update(keys, values); err != nil {
			return fmt.Errorf("mpt: batch ending at operation %d: %w", total, err)
		}
		keys, values = keys[:0], values[:0]
		if total%(10*n) == 0 {
			fmt.Fprintf(progress, "mpt: %d operations applied\n", total)
		}
		return nil
	}
	for {
		text, line, ok := lr.record()
		if !ok {
			break
		}
		f := strings.Fields(text)
		var k, v []byte
		var err error
		switch len(f) {
		case 1, 2:
			if k, err = parseHex(f[0]); err == nil && len(f) == 2 {
				v, err = parseHex(f[1])
			}
		default:
			err = fmt.Errorf("%d fields, want HEXKEY [HEXVALUE]", len(f))
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("line %d: %v", line, err))
			if len(bad) == maxBadLines {
				break
			}
			continue
		}
		keys, values = append(keys, k), append(values, v)
		total++
		if len(keys) == n {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := lr.Err(); err != nil {
		if errors.Is(err, errLineTooLong) {
			bad = append(bad, err.Error())
		} else {
			return fmt.Errorf("mpt: reading input: %w", err)
		}
	}
	if len(bad) > 0 {
		return errors.New("mpt: bad input lines (nothing after the first was applied):\n  " + strings.Join(bad, "\n  "))
	}
	return flush()
}

// parseHex decodes hex with an optional 0x prefix.
func parseHex(s string) ([]byte, error) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("bad hex %q: %w", s, err)
	}
	return b, nil
}
