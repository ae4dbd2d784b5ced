package main

import (
	"bufio"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/warpkv/warpkv/art"
)

// runART is "warpkv art run": it applies a file of adaptive radix tree
// operations, one a line, and prints the answers.
//
// Lines (keys in hex with a 0x prefix, 0x alone the empty key; values
// decimal uint64; blank lines and lines starting with # are skipped):
//
//	put KEY VALUE        insert or replace
//	upd KEY VALUE        replace only if present
//	del KEY              delete
//	get KEY              prints "KEY VALUE", or "KEY -" when absent
//	range LO HI LIMIT    prints "range N", then the N pairs "KEY VALUE" with
//	                     LO <= key < HI (* for no bound), ascending, at
//	                     most LIMIT (0 or less: no limit)
//	prefix P LIMIT       prints "prefix N", then the N pairs whose key starts
//	                     with P, ascending, at most LIMIT (0 or less: no limit)
//	len                  prints the number of keys
//
// Keys are printed as they are written: 0x and lowercase hex. Consecutive
// operations of one kind go to the engine as one batch (at most --batch of
// them) and the output is what applying them one at a time in file order
// prints. A malformed line is an error naming its line number: the lines
// before it have run and printed their answers, nothing after it runs.
func runART(e *env, args []string) error {
	const synopsis = "warpkv art run [--device auto|cpu|gpu|gpu:N] [--batch N] FILE (- for standard input)"
	if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprintf(e.stderr, "usage: %s\n\nLines: put KEY VALUE, upd KEY VALUE, del KEY, get KEY, range LO|* HI|* LIMIT, prefix P LIMIT, len\n(keys 0x-prefixed hex, 0x the empty key; values decimal uint64; LIMIT <= 0: no limit)\n", synopsis)
		return flag.ErrHelp
	}
	if len(args) == 0 || args[0] != "run" {
		return usagef("usage: %s", synopsis)
	}
	fs := newFlagSet(e, "art run", synopsis)
	device := fs.String("device", "", "engine: auto (a GPU where usable, else the CPU engine), cpu, gpu or gpu:N (default $WARPKV_DEVICE, else auto)")
	batch := fs.Int("batch", 0, "most consecutive operations of one kind sent as one batch (0: no limit)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return usagef("art run takes one FILE argument, got %d", fs.NArg())
	}
	if *batch < 0 {
		return usagef("--batch must be at least 0")
	}
	in, closeIn, err := openInput(fs.Arg(0))
	if err != nil {
		return fmt.Errorf("art: %w", err)
	}
	defer closeIn()
	t, err := art.New(art.Options{Device: *device})
	if err != nil {
		return err
	}
	defer t.Close()
	w := bufio.NewWriterSize(e.stdout, 1<<16)
	r := &artRunner{t: t, w: w, max: *batch}
	err = r.run(in)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// artOp is one parsed line.
type artOp struct {
	verb  string
	key   []byte // put, upd, del, get; range: LO; prefix: P
	hi    []byte // range: HI, nil for *
	val   uint64
	limit int
}

// artRunner gathers consecutive operations of one verb into batches.
type artRunner struct {
	t       *art.Tree
	w       *bufio.Writer
	max     int
	pending []artOp
}

// run reads and applies every line of in.
func (r *artRunner) run(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<16), 4*art.MaxKeyLen+1024)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		op, err := parseARTLine(text)
		if err != nil {
			if ferr := r.flush(); ferr != nil {
				return ferr
			}
			return fmt.Errorf("art: line %d: %v (the lines before it ran; nothing after it did)", line, err)
		}
		if len(r.pending) > 0 && (op.verb != r.pending[0].verb || (r.max > 0 && len(r.pending) == r.max)) {
			if err := r.flush(); err != nil {
				return err
			}
		}
		r.pending = append(r.pending, op)
	}
	if err := sc.Err(); err != nil {
		if ferr := r.flush(); ferr != nil {
			return ferr
		}
		return fmt.Errorf("art: reading input: %w", err)
	}
	return r.flush()
}

// parseARTLine parses one operation.
func parseARTLine(text string) (artOp, error) {
	f := strings.Fields(text)
	op := artOp{verb: f[0]}
	want := map[string]int{"put": 3, "upd": 3, "del": 2, "get": 2, "range": 4, "prefix": 3, "len": 1}[op.verb]
	if want == 0 {
		return op, fmt.Errorf("unknown operation %q (want put, upd, del, get, range, prefix or len)", op.verb)
	}
	if len(f) != want {
		return op, fmt.Errorf("%s takes %d argument(s), got %d", op.verb, want-1, len(f)-1)
	}
	var err error
	switch {
	case op.verb == "range" && f[1] == "*":
		op.key = []byte{} // no lower bound: from the empty key, the smallest
	case want > 1:
		if op.key, err = parseARTKey(f[1]); err != nil {
			return op, err
		}
	}
	switch op.verb {
	case "put", "upd":
		if op.val, err = strconv.ParseUint(f[2], 10, 64); err != nil || f[2][0] == '+' {
			return op, fmt.Errorf("value %q is not a decimal uint64", f[2])
		}
	case "range":
		if f[2] != "*" {
			if op.hi, err = parseARTKey(f[2]); err != nil {
				return op, err
			}
		}
		op.limit, err = parseLimit(f[3])
	case "prefix":
		op.limit, err = parseLimit(f[2])
	}
	return op, err
}

// parseARTKey decodes a 0x-prefixed hex key.
func parseARTKey(s string) ([]byte, error) {
	if len(s) < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return nil, fmt.Errorf("key %q: want hex with a 0x prefix (0x alone is the empty key)", s)
	}
	k, err := hex.DecodeString(s[2:])
	if err != nil {
		return nil, fmt.Errorf("key %q: %v", s, err)
	}
	if len(k) > art.MaxKeyLen {
		return nil, fmt.Errorf("key of %d bytes: at most %d", len(k), art.MaxKeyLen)
	}
	if k == nil {
		k = []byte{}
	}
	return k, nil
}

// parseLimit parses a decimal LIMIT: 0 or less means no limit (parseOpLimit,
// shared with btree run).
func parseLimit(s string) (int, error) { return parseOpLimit(s) }

// flush applies the pending batch and prints its answers in line order.
func (r *artRunner) flush() error {
	ops := r.pending
	r.pending = r.pending[:0]
	if len(ops) == 0 {
		return nil
	}
	keys := func() [][]byte {
		k := make([][]byte, len(ops))
		for i, op := range ops {
			k[i] = op.key
		}
		return k
	}
	vals := func() []uint64 {
		v := make([]uint64, len(ops))
		for i, op := range ops {
			v[i] = op.val
		}
		return v
	}
	t, w := r.t, r.w
	switch verb := ops[0].verb; verb {
	case "put":
		return t.Insert(keys(), vals())
	case "upd":
		_, err := t.Update(keys(), vals())
		return err
	case "del":
		_, err := t.Delete(keys())
		return err
	case "get":
		v, found, err := t.Get(keys())
		if err != nil {
			return err
		}
		for i, op := range ops {
			if found[i] {
				fmt.Fprintf(w, "0x%x %d\n", op.key, v[i])
			} else {
				fmt.Fprintf(w, "0x%x -\n", op.key)
			}
		}
	case "len":
		n := t.Len()
		for range ops {
			fmt.Fprintln(w, n)
		}
	case "range", "prefix":
		// One limit for the batch (none when a query has none, else the
		// largest); each query prints at most its own.
		limits := make([]int, len(ops))
		for i, op := range ops {
			limits[i] = op.limit
		}
		var res *art.Result
		var err error
		if verb == "range" {
			qs := make([]art.Query, len(ops))
			for i, op := range ops {
				qs[i] = art.Query{Lo: op.key, Hi: op.hi}
			}
			res, err = t.Ranges(qs, batchLimit(limits))
		} else {
			res, err = t.Prefix(keys(), batchLimit(limits))
		}
		if err != nil {
			return err
		}
		for i, op := range ops {
			ks, vs := res.Query(i)
			n := shown(len(ks), op.limit)
			fmt.Fprintf(w, "%s %d\n", verb, n)
			for j := range n {
				fmt.Fprintf(w, "0x%x %d\n", ks[j], vs[j])
			}
		}
	}
	return nil
}
