package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unsafe"

	"github.com/warpkv/warpkv/art"
	"github.com/warpkv/warpkv/bench"
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
// them; by default at most artBatchBytes of keys and operations) and the
// output is what applying them one at a time in file order prints. A
// malformed line, or one longer than artMaxLine bytes, is an error naming
// its line number: the lines before it have run and printed their
// answers, nothing after it runs.
func runART(e *env, args []string) error {
	lines := fmt.Sprintf("lines (one operation a line; keys 0x-prefixed hex, 0x the empty key, at most %d bytes (art.MaxKeyLen); values decimal uint64):\n"+
		"  put KEY VALUE, upd KEY VALUE, del KEY, get KEY, range LO|* HI|* LIMIT (LO <= key < HI), prefix P LIMIT, len\n"+
		"  a LIMIT of 0 or less means no limit; a line is at most %d bytes\n", art.MaxKeyLen, artMaxLine)
	batchZero := fmt.Sprintf("batches of at most %s of keys and operations", bench.IEC(artBatchBytes))
	return runOpFile(e, args, "art", lines, batchZero, func(in io.Reader, device string, batch int, w *bufio.Writer) error {
		t, err := art.Open(art.Options{Device: device})
		if err != nil {
			return err
		}
		defer t.Close()
		return (&artRunner{t: t, w: w, max: batch, budget: artBatchBytes}).run(in)
	})
}

// artOp is one parsed line.
type artOp struct {
	verb  string
	key   []byte // put, upd, del, get; range: LO; prefix: P
	hi    []byte // range: HI, nil for *
	val   uint64
	limit int
}

// artRunner applies batches of one verb to t and prints their answers.
type artRunner struct {
	t       *art.Tree
	w       *bufio.Writer
	max     int           // --batch; 0: batches of at most budget bytes
	budget  int           // artBatchBytes (a field so that tests can lower it)
	batches int           // batches sent so far
	onFlush func([]artOp) // called before each batch is sent (tests)
}

// Bounds of "warpkv art run".
const (
	// artMaxLine is the longest input line: room for the longest valid
	// one, a range with two keys of art.MaxKeyLen bytes in hex, and
	// spaces.
	artMaxLine = 4*art.MaxKeyLen + 1024
	// artBatchBytes bounds a batch when --batch is 0: the bytes of its
	// keys plus artOpBytes an operation, so that a file of any length
	// runs in bounded memory.
	artBatchBytes = 8 << 20
	// artOpBytes is what an operation holds besides its key bytes: its
	// artOp and its entries in the key and value slices of a call.
	artOpBytes = int(unsafe.Sizeof(artOp{})) + int(unsafe.Sizeof([]byte(nil))) + 8
)

// run reads and applies every line of in: batches of at most r.max
// operations, or with r.max 0 of at most r.budget bytes (artOpSize).
func (r *artRunner) run(in io.Reader) error {
	b := &lineBatcher[artOp]{tool: "art", max: r.max, maxLine: artMaxLine, flush: r.flush,
		why: fmt.Sprintf("a key is at most art.MaxKeyLen = %d bytes, %d hex digits", art.MaxKeyLen, 2*art.MaxKeyLen),
		parse: func(text string) (artOp, string, error) {
			op, err := parseARTLine(text)
			return op, op.verb, err
		}}
	if r.max == 0 {
		b.size, b.budget = artOpSize, r.budget
	}
	return b.run(in)
}

// artOpSize is what op counts against a batch's budget: its key bytes and
// artOpBytes.
func artOpSize(op artOp) int { return len(op.key) + len(op.hi) + artOpBytes }

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

// flush applies a batch of one verb and prints its answers in line order.
func (r *artRunner) flush(ops []artOp) error {
	r.batches++
	if r.onFlush != nil {
		r.onFlush(ops)
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
		// One query call per group of limits (limitGroups); each query
		// prints at most its own.
		limits := make([]int, len(ops))
		for i, op := range ops {
			limits[i] = op.limit
		}
		res := make([]*art.Result, len(ops)) // each line's call's answer
		at := make([]int, len(ops))          // and its query there
		groups, callLimits := limitGroups(limits)
		for g, idx := range groups {
			var rg *art.Result
			var err error
			if verb == "range" {
				qs := make([]art.Query, len(idx))
				for j, i := range idx {
					qs[j] = art.Query{Lo: ops[i].key, Hi: ops[i].hi}
				}
				rg, err = t.Ranges(qs, callLimits[g])
			} else {
				ps := make([][]byte, len(idx))
				for j, i := range idx {
					ps[j] = ops[i].key
				}
				rg, err = t.Prefix(ps, callLimits[g])
			}
			if err != nil {
				return err
			}
			for j, i := range idx {
				res[i], at[i] = rg, j
			}
		}
		for i, op := range ops {
			ks, vs := res[i].Query(at[i])
			n := shown(len(ks), op.limit)
			fmt.Fprintf(w, "%s %d\n", verb, n)
			for j := range n {
				fmt.Fprintf(w, "0x%x %d\n", ks[j], vs[j])
			}
		}
	}
	return nil
}
