package main

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"warpkv/gpu"
	"warpkv/mpt"
)

// maxBadLines is how many bad input lines "warpkv mpt" reports before it
// stops reading.
const maxBadLines = 20

// runMPT is "warpkv mpt root|prove": it applies a file of trie operations
// (one "HEXKEY [HEXVALUE]" a line; a missing or empty value deletes) in
// batches and prints the root, or the proof of one key.
func runMPT(e *env, args []string) error {
	if len(args) == 0 || (args[0] != "root" && args[0] != "prove") {
		return usagef("usage: warpkv mpt root|prove [--secure] [--device D] [--batch N] FILE [HEXKEY]")
	}
	verb := args[0]
	synopsis := "warpkv mpt root [--secure] [--device cpu] [--batch N] FILE (- for stdin)"
	if verb == "prove" {
		synopsis = "warpkv mpt prove [--secure] [--device cpu] [--batch N] FILE HEXKEY"
	}
	fs := newFlagSet(e, "mpt "+verb, synopsis)
	secure := fs.Bool("secure", false, "hash keys with Keccak-256 first, as Ethereum's state trie")
	device := fs.String("device", "", "engine: auto or cpu (the GPU engine is not built yet)")
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
	if *batch < 1 {
		return usagef("--batch must be at least 1")
	}
	spec, err := gpu.ParseSpec(*device)
	if err != nil {
		return usagef("--device: %v", err)
	}
	if !spec.Auto && spec.Backend == gpu.BackendGPU {
		return fmt.Errorf("mpt: device %s: the GPU MPT engine is not built yet; use --device cpu", spec)
	}
	var proveKey []byte
	if verb == "prove" {
		if proveKey, err = parseHex(fs.Arg(1)); err != nil {
			return usagef("HEXKEY: %v", err)
		}
	}
	in, closeIn, err := openInput(fs.Arg(0))
	if err != nil {
		return err
	}
	defer closeIn()
	t := mpt.New(mpt.Options{Secure: *secure})
	progress := e.stderr
	if *quiet {
		progress = io.Discard
	}
	if err := applyOps(t, in, *batch, progress); err != nil {
		return err
	}
	if verb == "root" {
		root := t.Hash()
		fmt.Fprintf(e.stdout, "0x%x\n", root)
		return nil
	}
	proof, err := t.Prove(proveKey)
	if err != nil {
		return fmt.Errorf("mpt prove: %w", err)
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
		return nil, nil, fmt.Errorf("mpt: %w", err)
	}
	return f, func() { f.Close() }, nil
}

// applyOps reads "HEXKEY [HEXVALUE]" lines from in and applies them to t in
// batches of n, in order. Blank lines and lines starting with # are
// skipped. Bad lines are reported with their numbers, up to maxBadLines,
// and nothing is applied after the first one.
func applyOps(t *mpt.Trie, in io.Reader, n int, progress io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<16), 64<<20)
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
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
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
	if err := sc.Err(); err != nil {
		return fmt.Errorf("mpt: reading input: %w", err)
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
