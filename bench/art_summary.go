package bench

import (
	"fmt"
	"runtime"
	"strings"
)

// ARTTarget is one of the targets for CuART's GPU engine, stated
// for a tree of 100M 16-byte keys: the row it applies to (a case of
// ARTCases and the suffix of its row, "" for the whole call from Go
// slices) and the rate it asks for.
type ARTTarget struct {
	Op     ARTOp
	Suffix string  // ": kernels", ": from pinned staging", or "" (whole call)
	Min    float64 // operations (keys, queries) per second
	Label  string
}

// ARTTargets are the open issue's targets on one H100/H200 (issue 22,
// whose table restates issue 12's kernel targets and raises its
// whole-call ones), with the rows that have no target of their own beside
// them for context (Min 0).
var ARTTargets = []ARTTarget{
	{ARTLookup, ": kernels", 3e9, "lookups, kernels >= 3 G/s"},
	{ARTLookup, ": from pinned staging", 1e9, "lookups, whole call from pinned staging >= 1 G/s"},
	{ARTLookup, "", 1e9, "lookups, whole call from a packed Go batch >= 1 G/s"},
	{ARTLookup, ": from [][]byte", 1e9, "lookups, whole call from [][]byte >= 1 G/s"},
	{ARTLookup, ": from [][]byte into reused answers", 1e9, "lookups, whole call from [][]byte into reused answers (GetInto) >= 1 G/s"},
	{ARTUpdate, ": kernels", 2e9, "updates, kernels >= 2 G/s"},
	{ARTUpdate, "", 1e9, "updates, whole call from a packed Go batch >= 1 G/s"},
	{ARTUpdate, ": from [][]byte", 1e9, "updates, whole call from [][]byte >= 1 G/s"},
	{ARTUpdate, ": from [][]byte into reused answers", 1e9, "updates, whole call from [][]byte into reused answers (UpdateInto) >= 1 G/s"},
	{ARTInsert, "", 5e8, "inserts of a tenth of the tree, whole call >= 500 M keys/s"},
	{ARTInsert, artSettledRow, 5e8, "inserts of a tenth of a tree built 20 ms before, whole call >= 500 M keys/s"},
	{ARTInsert, ": kernels", 0, "inserts, work phase"},
	{ARTRanges, "", 1e8, "ranges of 16 keys, whole call >= 100 M queries/s"},
	{ARTRanges, ": kernels", 2e8, "ranges of 16 keys, kernels >= 200 M queries/s"},
	{ARTPrefix, "", 5e7, "prefix scans, whole call >= 50 M/s"},
}

// artMainCase is the case of op on the largest tree of 16-byte keys of
// ARTCases(size).
func artMainCase(op ARTOp, size int) ARTCase {
	for _, c := range ARTCases(size) {
		if c.Op == op && c.Keys == ARTKeys16 && c.Tree == artScaled(100_000_000, size) &&
			(op != ARTLookup || c.Batch == min(ARTBatch, c.Tree)) {
			return c
		}
	}
	return ARTCase{}
}

// artScaled is ARTCases' scaling of a size as written for ARTPaperSize.
func artScaled(n, size int) int {
	return max(1, int((int64(n)*int64(size)+ARTPaperSize/2)/ARTPaperSize))
}

// ARTSummary sums results of the art cases at largest tree size up: the
// GPU rows of the targets (ARTTargets) with their ratio to the
// target; with peer (the name of a single-goroutine peer's rows, in
// artbench) also the GPU engine's whole call on every case against that
// peer (the issue asks >= 100x plar on one goroutine) and the CPU engine's
// lookups against the peer times GOMAXPROCS (>= 3x per core). It returns
// the rows and a title, or nil when no row applies.
func ARTSummary(results []Result, size int, peer string) ([]Result, string) {
	find := func(op, engine string) (Result, bool) {
		for _, r := range results {
			if r.Op == op && r.Engine == engine {
				return r, true
			}
		}
		return Result{}, false
	}
	var out []Result
	for _, tg := range ARTTargets {
		c := artMainCase(tg.Op, size)
		r, ok := find(c.Name()+tg.Suffix, "gpu")
		if !ok {
			continue
		}
		r.Op = tg.Label + " (" + c.Name() + ")"
		r.Ratio, r.RatioTo = 0, ""
		if tg.Min > 0 {
			r.Ratio, r.RatioTo = r.OpsPerSec/tg.Min, "target"
		}
		out = append(out, r)
	}
	if peer != "" {
		seen := map[string]bool{}
		for _, r := range results {
			if r.Engine != "gpu" || seen[r.Op] {
				continue
			}
			p, ok := find(r.Op, peer)
			if !ok || p.OpsPerSec <= 0 {
				continue
			}
			seen[r.Op] = true
			r.Op = "gpu vs " + peer + " (>= 100x): " + r.Op
			r.Ratio, r.RatioTo = r.OpsPerSec/p.OpsPerSec, peer
			out = append(out, r)
		}
		for _, r := range results {
			p, ok := find(r.Op, peer)
			if r.Engine != "cpu" || !ok || p.OpsPerSec <= 0 || !strings.HasPrefix(r.Op, "lookup ") {
				continue
			}
			w := runtime.GOMAXPROCS(0)
			r.Op = fmt.Sprintf("cpu engine vs %s x %d cores (>= 3x): %s", peer, w, r.Op)
			r.Ratio, r.RatioTo = r.OpsPerSec/(p.OpsPerSec*float64(w)), fmt.Sprintf("%s x %d", peer, w)
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		return nil, ""
	}
	t := artScaled(100_000_000, size)
	return out, fmt.Sprintf("summary against the issue's targets (stated for one H100 and a tree of 100M 16 B keys; here %s keys):", SI(float64(t)))
}
