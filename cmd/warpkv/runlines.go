package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
)

// runOpFile is the command line of "warpkv TOOL run [--device D] [--batch
// N] FILE" (art, btree; the flags may also follow FILE): help (lines describes the operation lines,
// batchZero what --batch 0 means), the flags (usage errors, exit status
// 2) and the input checked, then apply(in, device, batch, w) with a
// buffered standard output, flushed at the end whatever apply returns.
func runOpFile(e *env, args []string, tool, lines, batchZero string, apply func(in io.Reader, device string, batch int, w *bufio.Writer) error) error {
	synopsis := "warpkv " + tool + " run [--device auto|cpu|gpu|gpu:N] [--batch N] FILE (- for standard input)"
	if len(args) > 0 && isHelpFlag(args[0]) {
		args = []string{"run", "-h"} // "warpkv TOOL -h": run's usage, flags and lines
	}
	if len(args) == 0 || args[0] != "run" {
		return usagef("usage: %s", synopsis)
	}
	fs := newFlagSet(e, tool+" run", synopsis)
	device := fs.String("device", "", "engine: auto (a GPU where usable, else the CPU engine), cpu, gpu or gpu:N (default $WARPKV_DEVICE, else auto)")
	batch := fs.Int("batch", 0, "most consecutive operations of one kind sent as one batch (0: "+batchZero+")")
	usage := fs.Usage
	fs.Usage = func() { // "warpkv help TOOL run" lists the lines too, as art run's help does
		usage()
		fmt.Fprintf(e.stderr, "\n%s", lines)
	}
	// Flags may follow FILE too ("warpkv btree run FILE --batch 7"): the
	// flag package stops at the first argument, so each parse's first
	// argument is kept and the rest parsed again.
	var files []string
	for rest := args[1:]; ; {
		if err := parse(fs, rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		files, rest = append(files, fs.Arg(0)), fs.Args()[1:]
	}
	if len(files) != 1 {
		fs.Usage()
		return usagef("%s run takes one FILE argument, got %d", tool, len(files))
	}
	// The flags' errors: usage errors (exit status 2) naming the flag,
	// before the input is opened.
	if err := atLeast("--batch", *batch, 0); err != nil {
		return err
	}
	if err := checkDevice("--device", *device); err != nil {
		return err
	}
	in, closeIn, err := openInput(files[0])
	if err != nil {
		return fmt.Errorf("%s: %w", tool, err)
	}
	defer closeIn()
	w := bufio.NewWriterSize(e.stdout, 1<<16)
	err = apply(in, *device, *batch, w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

// parseOpLimit parses a decimal LIMIT: 0 or less means no limit (returned
// as 0); values past the largest int32 mean no limit in practice.
func parseOpLimit(s string) (int, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
		err = nil // past int64 either way: no limit in practice, or none
	}
	if err != nil || s[0] == '+' {
		return 0, fmt.Errorf("limit %q is not a decimal count", s)
	}
	return int(min(max(v, 0), math.MaxInt32)), nil
}

// limitGroups splits a batch of queries with these limits into groups of
// one query call each, so that no call asks for far more pairs than its
// queries print: the queries with no limit (0 or less) form one group
// (call limit 0), and those whose limits round up to the same power of two
// another (call limit: the group's largest). A call then writes at most
// twice the pairs its limited queries print, as applying the lines one at
// a time would, where one limit for the whole batch (none when any query
// has none) would write every pair of every range of a query that prints
// one. Groups list query indexes in order; at most 33 groups.
func limitGroups(limits []int) (groups [][]int, callLimits []int) {
	at := map[int]int{} // group key (-1: no limit, else bits.Len of limit-1) -> group
	for i, l := range limits {
		key := -1
		if l > 0 {
			key = bits.Len(uint(l - 1))
		}
		g, ok := at[key]
		if !ok {
			g = len(groups)
			at[key] = g
			groups, callLimits = append(groups, nil), append(callLimits, 0)
		}
		groups[g] = append(groups[g], i)
		if l > 0 {
			callLimits[g] = max(callLimits[g], l)
		}
	}
	return groups, callLimits
}

// shown is how many of n answers a query with limit prints (limit 0: all).
func shown(n, limit int) int {
	if limit <= 0 {
		return n
	}
	return min(n, limit)
}
