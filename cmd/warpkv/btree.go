package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/warpkv/warpkv/btree"
)

// runBTree is "warpkv btree run": it applies a file of B+ tree operations,
// one a line, and prints the answers, as "warpkv art run" does for the
// adaptive radix tree (the same lines but prefix, the same output and
// errors), with keys and values decimal uint64:
//
//	put KEY VALUE        insert or replace
//	upd KEY VALUE        replace only if present
//	del KEY              delete
//	get KEY              prints "KEY VALUE", or "KEY -" when absent
//	range LO HI LIMIT    prints "range N", then the N pairs "KEY VALUE" with
//	                     LO <= key < HI (* for no bound), ascending, at
//	                     most LIMIT (0 or less: no limit)
//	len                  prints the number of keys
//
// Consecutive operations of one kind go to the engine as one batch (at
// most --batch of them, 262144 when it is 0) and the output is what applying them one at a time
// in file order prints. A malformed line is an error naming its line
// number: the lines before it have run and printed their answers, nothing
// after it runs.
func runBTree(e *env, args []string) error {
	lines := fmt.Sprintf("lines (one operation a line; keys and values decimal uint64):\n"+
		"  put KEY VALUE, upd KEY VALUE, del KEY, get KEY, range LO|* HI|* LIMIT (LO <= key < HI), len (no prefix: that is art run's)\n"+
		"  a LIMIT of 0 or less means no limit; a line is at most %d bytes\n", btreeMaxLine)
	return runOpFile(e, args, "btree", lines, "the tool's default, a bounded batch", func(in io.Reader, device string, batch int, w *bufio.Writer) error {
		t, err := btree.Open(btree.Options{Device: device})
		if err != nil {
			return err
		}
		defer t.Close()
		return (&btreeRunner{t: btreeFacade{t}, w: w}).run(in, batch)
	})
}

// btreeOp is one parsed line.
type btreeOp struct {
	verb  string
	key   uint64 // put, upd, del, get; range: LO
	hi    uint64 // range: HI
	noHi  bool   // range: HI is *
	val   uint64
	limit int // range: 0 for no limit
}

// btreeTree is what btree run uses of a B+ tree (btreeFacade; tests use a
// map).
type btreeTree interface {
	Insert(keys, values []uint64) error
	remove(keys []uint64) error
	Lookup(keys, values []uint64, found []bool) error
	Ranges(los, his []uint64, limit int) (keys, values []uint64, offsets []int, err error)
	Len() int
}

// btreeFacade is a *btree.Tree as a btreeTree.
type btreeFacade struct{ *btree.Tree }

// remove is Delete without the count of keys removed.
func (f btreeFacade) remove(keys []uint64) error {
	_, err := f.Delete(keys)
	return err
}

// btreeRunner applies batches of one verb to t and prints their answers.
type btreeRunner struct {
	t btreeTree
	w *bufio.Writer
}

// btreeBatchOps is the most operations of one batch when --batch is 0:
// about 8 MiB of parsed operations, so that a long file is never held
// whole.
const btreeBatchOps = 1 << 18

// btreeMaxLine is the longest line of "warpkv btree run": far more than
// the longest valid one (a verb and three decimal numbers).
const btreeMaxLine = 1 << 16

// run reads and applies every line of in, max operations a batch at most
// (0: btreeBatchOps).
func (r *btreeRunner) run(in io.Reader, max int) error {
	if max == 0 {
		max = btreeBatchOps
	}
	b := &lineBatcher[btreeOp]{tool: "btree", max: max, maxLine: btreeMaxLine, why: "keys, values and limits are decimal numbers", flush: r.flush,
		parse: func(text string) (btreeOp, string, error) {
			op, err := parseBTreeLine(text)
			return op, op.verb, err
		}}
	return b.run(in)
}

// parseBTreeLine parses one operation.
func parseBTreeLine(text string) (btreeOp, error) {
	f := strings.Fields(text)
	op := btreeOp{verb: f[0]}
	want := map[string]int{"put": 3, "upd": 3, "del": 2, "get": 2, "range": 4, "len": 1}[op.verb]
	if want == 0 {
		if op.verb == "prefix" {
			return op, fmt.Errorf("unknown operation %q (want put, upd, del, get, range or len: the B+ tree's keys are numbers, without prefix scans; use range)", op.verb)
		}
		return op, fmt.Errorf("unknown operation %q (want put, upd, del, get, range or len)", op.verb)
	}
	if len(f) != want {
		return op, fmt.Errorf("%s takes %d argument(s), got %d", op.verb, want-1, len(f)-1)
	}
	var err error
	switch {
	case op.verb == "range" && f[1] == "*":
		op.key = 0 // no lower bound
	case want > 1:
		if op.key, err = parseDecimal("key", f[1]); err != nil {
			return op, err
		}
	}
	switch op.verb {
	case "put", "upd":
		op.val, err = parseDecimal("value", f[2])
	case "range":
		if f[2] == "*" {
			op.noHi = true
		} else if op.hi, err = parseDecimal("key", f[2]); err != nil {
			return op, err
		}
		op.limit, err = parseOpLimit(f[3])
	}
	return op, err
}

// parseDecimal parses a decimal uint64 (no sign), what names it in the
// error.
func parseDecimal(what, s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || s[0] == '+' {
		return 0, fmt.Errorf("%s %q is not a decimal uint64", what, s)
	}
	return v, nil
}

// flush applies one batch and prints its answers in line order.
func (r *btreeRunner) flush(ops []btreeOp) error {
	keys := make([]uint64, len(ops))
	vals := make([]uint64, len(ops))
	for i, op := range ops {
		keys[i], vals[i] = op.key, op.val
	}
	t, w := r.t, r.w
	switch ops[0].verb {
	case "put":
		return t.Insert(keys, vals)
	case "upd":
		return r.update(keys, vals)
	case "del":
		return t.remove(keys)
	case "get":
		found := make([]bool, len(keys))
		if err := t.Lookup(keys, vals, found); err != nil {
			return err
		}
		for i, k := range keys {
			if found[i] {
				fmt.Fprintf(w, "%d %d\n", k, vals[i])
			} else {
				fmt.Fprintf(w, "%d -\n", k)
			}
		}
	case "len":
		n := t.Len()
		for range ops {
			fmt.Fprintln(w, n)
		}
	case "range":
		return r.ranges(ops)
	}
	return nil
}

// update replaces the values of the keys present: an update never changes
// which keys are present, so one lookup before the batch decides every
// line, and Insert's last-occurrence-wins gives the last line's value.
func (r *btreeRunner) update(keys, vals []uint64) error {
	old := make([]uint64, len(keys))
	found := make([]bool, len(keys))
	if err := r.t.Lookup(keys, old, found); err != nil {
		return err
	}
	var ks, vs []uint64
	for i, f := range found {
		if f {
			ks, vs = append(ks, keys[i]), append(vs, vals[i])
		}
	}
	return r.t.Insert(ks, vs)
}

// ranges answers a batch of half-open range lines [LO, HI) with one
// Ranges call (half-open too) per group of limits (limitGroups) and prints
// each with its own limit. A line with no upper bound asks Ranges(LO,
// MaxUint64) and, while under its limit, adds the key MaxUint64 (beyond
// every half-open range of the Go API, within "LO *") from one lookup.
func (r *btreeRunner) ranges(ops []btreeOp) error {
	limits := make([]int, len(ops))
	for i, op := range ops {
		limits[i] = op.limit
	}
	keys, vals := make([][]uint64, len(ops)), make([][]uint64, len(ops)) // each line's pairs
	groups, callLimits := limitGroups(limits)
	for g, idx := range groups {
		los, his := make([]uint64, len(idx)), make([]uint64, len(idx))
		for j, i := range idx {
			los[j], his[j] = ops[i].key, ops[i].hi
			if ops[i].noHi {
				his[j] = math.MaxUint64
			}
		}
		ks, vs, offs, err := r.t.Ranges(los, his, callLimits[g])
		if err != nil {
			return err
		}
		for j, i := range idx {
			keys[i], vals[i] = ks[offs[j]:offs[j+1]], vs[offs[j]:offs[j+1]]
		}
	}
	maxVal, maxFound, err := r.maxKey(ops)
	if err != nil {
		return err
	}
	for i, op := range ops {
		ks, vs := keys[i], vals[i]
		n := shown(len(ks), op.limit)
		addMax := op.noHi && maxFound && (op.limit <= 0 || n < op.limit)
		if addMax {
			fmt.Fprintf(r.w, "range %d\n", n+1)
		} else {
			fmt.Fprintf(r.w, "range %d\n", n)
		}
		for j := range n {
			fmt.Fprintf(r.w, "%d %d\n", ks[j], vs[j])
		}
		if addMax {
			fmt.Fprintf(r.w, "%d %d\n", uint64(math.MaxUint64), maxVal)
		}
	}
	return nil
}

// maxKey looks up the key MaxUint64 when a line of ops has no upper bound.
func (r *btreeRunner) maxKey(ops []btreeOp) (val uint64, found bool, err error) {
	for _, op := range ops {
		if op.noHi {
			v, f := make([]uint64, 1), make([]bool, 1)
			err := r.t.Lookup([]uint64{math.MaxUint64}, v, f)
			return v[0], f[0], err
		}
	}
	return 0, false, nil
}
