package main

import (
	"bufio"
	"encoding/hex"
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
	const lines = "Lines: put KEY VALUE, upd KEY VALUE, del KEY, get KEY, range LO|* HI|* LIMIT, prefix P LIMIT, len\n(keys 0x-prefixed hex, 0x the empty key; values decimal uint64; LIMIT <= 0: no limit)\n"
	return runOpFile(e, args, "art", lines, func(in io.Reader, device string, batch int, w *bufio.Writer) error {
		t, err := art.New(art.Options{Device: device})
		if err != nil {
			return err
		}
		defer t.Close()
		return (&artRunner{t: t, w: w}).run(in, batch)
	})
}

// artOp is one parsed line.
type artOp struct {
	verb  string
	key   []byte // put, upd, del, get; range: LO; prefix: P
	hi    []byte // range: HI, nil for *
	val   uint64
	limit int // range, prefix: 0 for no limit
}

// artRunner applies batches of one verb to t and prints their answers.
type artRunner struct {
	t *art.Tree
	w *bufio.Writer
}

// run reads and applies every line of in, max operations a batch at most.
func (r *artRunner) run(in io.Reader, max int) error {
	b := &lineBatcher[artOp]{tool: "art", max: max, maxLine: 4*art.MaxKeyLen + 1024, flush: r.flush,
		parse: func(text string) (artOp, string, error) {
			op, err := parseARTLine(text)
			return op, op.verb, err
		}}
	return b.run(in)
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

// flush applies one batch and prints its answers in line order.
func (r *artRunner) flush(ops []artOp) error {
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
		most := batchLimit(limits)
		var res *art.Result
		var err error
		if verb == "range" {
			qs := make([]art.Query, len(ops))
			for i, op := range ops {
				qs[i] = art.Query{Lo: op.key, Hi: op.hi}
			}
			res, err = t.Ranges(qs, most)
		} else {
			res, err = t.Prefix(keys(), most)
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
