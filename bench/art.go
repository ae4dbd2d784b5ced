package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/warpkv/warpkv/art"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/prim"
)

// Sizes and inputs of the art suite (CuART).
const (
	ARTGPUSize   = 100_000_000 // largest tree by default with a GPU
	ARTCPUSize   = 1_000_000   // largest tree by default on the CPU engine alone
	ARTMinSize   = 1000
	ARTPaperSize = 100_000_000 // the case list as written; every size scales by Size/ARTPaperSize
	ARTSeed      = 0xA27_5EED_0012
	// ARTRangeKeys is the limit of a range query (lo a present key, no
	// upper bound: the ~16 keys from lo).
	ARTRangeKeys = 16
	// ARTPrefixLimit bounds a prefix scan's answer.
	ARTPrefixLimit = 64
	// ARTBatch is the batch of the point operations (lookups, updates).
	ARTBatch = 1 << 20
)

// ARTKeys names a key shape of the art cases.
type ARTKeys string

// The key shapes: fixed 8, 16 and 32 bytes (the first 8 bytes a bijection
// of the key's number, so keys are distinct), variable-length text
// ("word:hex", 4 to 30 bytes), and 16-byte keys of which 3% or 30% are
// long (64 to 256 bytes: the LV leaf class).
const (
	ARTKeys8      ARTKeys = "8 B"
	ARTKeys16     ARTKeys = "16 B"
	ARTKeys32     ARTKeys = "32 B"
	ARTKeysText   ARTKeys = "text"
	ARTKeysLong3  ARTKeys = "16 B, 3% long"
	ARTKeysLong30 ARTKeys = "16 B, 30% long"
)

// ARTOp is the operation of an art case.
type ARTOp string

// The operations of the art cases.
const (
	ARTBuild  ARTOp = "build"  // bulk build from unsorted pairs
	ARTLookup ARTOp = "lookup" // point lookups of present keys
	ARTMiss   ARTOp = "miss"   // point lookups of absent keys
	ARTUpdate ARTOp = "update" // value updates of present keys (CuART's update)
	ARTInsert ARTOp = "insert" // inserts of new keys
	ARTDelete ARTOp = "delete" // deletes of present keys
	ARTRanges ARTOp = "ranges" // range queries of ARTRangeKeys keys from a present key
	ARTPrefix ARTOp = "prefix" // prefix scans (a prefix ~16 to 4096 keys share), at most ARTPrefixLimit
)

// ARTCase is one measured operation of the art suite, shared with
// compat/cmd/artbench so that both measure the same operations on the
// same data.
type ARTCase struct {
	Op    ARTOp
	Keys  ARTKeys
	Tree  int // keys in the tree (0 for a build)
	Batch int // keys built, looked up, updated, inserted, deleted; queries
}

// Name is the case's operation column, e.g. "lookup 1M of 16 B keys in 100M".
func (c ARTCase) Name() string {
	b, t := SI(float64(c.Batch)), SI(float64(c.Tree))
	switch c.Op {
	case ARTBuild:
		return fmt.Sprintf("build %s, %s keys", b, c.Keys)
	case ARTMiss:
		return fmt.Sprintf("lookup %s absent, %s keys, in %s", b, c.Keys, t)
	case ARTRanges:
		return fmt.Sprintf("ranges %s x %d keys, %s keys, in %s", b, ARTRangeKeys, c.Keys, t)
	case ARTPrefix:
		return fmt.Sprintf("prefix %s scans, %s keys, in %s", b, c.Keys, t)
	}
	return fmt.Sprintf("%s %s, %s keys, in %s", c.Op, b, c.Keys, t)
}

// ARTDefaultSize is the suite's largest tree when Options.Size is 0.
func ARTDefaultSize(gpu bool) int { return defaultSize(gpu, ARTGPUSize, ARTCPUSize) }

// ARTCases returns the cases with largest tree maxTree. As written (max =
// ARTPaperSize = 100M): build of 100M 16-byte keys; on a tree of 100M
// 16-byte keys every operation with batches of 1M (inserts and deletes:
// 10M); lookups against batch size 1K to 16M (x4); the same operations on
// 8-byte, 32-byte and text keys; lookups on trees of 1M and 16M keys; and
// lookups with 0%, 3% and 30% long keys. Sizes scale by max/ARTPaperSize
// (at least 1); cases that coincide are listed once.
func ARTCases(maxTree int) []ARTCase {
	const M = 1_000_000
	s := func(n int) int { return scaleSize(n, maxTree, ARTPaperSize) }
	T := s(100 * M)
	var out []ARTCase
	add := func(c ARTCase) {
		c.Batch = min(c.Batch, max(c.Tree, c.Batch*boolInt(c.Op == ARTBuild || c.Op == ARTMiss || c.Op == ARTInsert)))
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	add(ARTCase{Op: ARTBuild, Keys: ARTKeys16, Batch: T})
	for _, k := range []ARTKeys{ARTKeys16, ARTKeys8, ARTKeys32, ARTKeysText} {
		for _, op := range []ARTOp{ARTLookup, ARTMiss, ARTUpdate, ARTRanges, ARTPrefix, ARTInsert, ARTDelete} {
			b := min(ARTBatch, T)
			if op == ARTInsert || op == ARTDelete {
				b = max(1, T/10)
			}
			if op == ARTRanges || op == ARTPrefix {
				b = max(1, b/16)
			}
			add(ARTCase{Op: op, Keys: k, Tree: T, Batch: b})
		}
		if k == ARTKeys16 {
			for b := 1 << 10; b <= 1<<24 && b <= T; b <<= 2 {
				add(ARTCase{Op: ARTLookup, Keys: k, Tree: T, Batch: b})
			}
		}
	}
	for _, k := range []ARTKeys{ARTKeysLong3, ARTKeysLong30} {
		add(ARTCase{Op: ARTLookup, Keys: k, Tree: T, Batch: min(ARTBatch, T)})
	}
	for _, t := range []int{s(M), s(16 * M)} {
		add(ARTCase{Op: ARTLookup, Keys: ARTKeys16, Tree: t, Batch: min(ARTBatch, t)})
	}
	// Trees in increasing size per key shape, so that a tree is built once
	// for the cases on it.
	slices.SortStableFunc(out, func(a, b ARTCase) int {
		if a.Keys != b.Keys {
			return strings.Compare(string(a.Keys), string(b.Keys))
		}
		return a.Tree - b.Tree
	})
	return out
}

func (c ARTCase) opName() string { return string(c.Op) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ARTKey appends key i of shape k to dst. Keys of distinct i are distinct;
// i >= a tree's size gives keys not in it.
func ARTKey(dst []byte, k ARTKeys, i uint64) []byte {
	h := prim.SplitMix64(ARTSeed, i)
	start := len(dst)
	fill := func(n int) []byte { // n bytes: h, then more random words
		dst = binary.BigEndian.AppendUint64(dst, h)
		for j := 1; 8*j < n; j++ {
			dst = binary.BigEndian.AppendUint64(dst, prim.SplitMix64(ARTSeed+uint64(j), i))
		}
		return dst
	}
	switch k {
	case ARTKeys8:
		return fill(8)[:start+8]
	case ARTKeys32:
		return fill(32)[:start+32]
	case ARTKeysText:
		w := 2 + int(h%11)
		for j := range w {
			dst = append(dst, byte('a'+(prim.SplitMix64(h, uint64(j))%26)))
		}
		return fmt.Appendf(dst, ":%x", i)
	case ARTKeysLong3, ARTKeysLong30:
		p := uint64(3)
		if k == ARTKeysLong30 {
			p = 30
		}
		if prim.SplitMix64(ARTSeed+99, i)%100 < p {
			n := 64 + int(prim.SplitMix64(ARTSeed+98, i)%193)
			return fill(n)[:start+n]
		}
	}
	return fill(16)[:start+16]
}

// ARTData is the input of one case.
type ARTData struct {
	Keys   art.Keys // the batch's keys (build, lookups, updates, inserts, deletes), or the queries' lower bounds or prefixes
	Values []uint64
}

// ARTInputs generates the inputs and keeps the last tree's pairs.
type ARTInputs struct {
	k     ARTKeys
	n     int
	keys  art.Keys
	vals  []uint64
	valid bool
}

// NewARTInputs returns an empty input cache.
func NewARTInputs() *ARTInputs { return &ARTInputs{} }

// artKeys returns the keys f(j) for j < n, packed. Cost: O(n) over
// GOMAXPROCS goroutines.
func artKeys(n int, f func(dst []byte, j int) []byte) art.Keys {
	parts := par.Parts(n, 4096, 0)
	chunks := make([][]byte, parts)
	lens := make([]uint32, n)
	par.Ranges(n, parts, func(p, lo, hi int) {
		var buf []byte
		for j := lo; j < hi; j++ {
			before := len(buf)
			buf = f(buf, j)
			lens[j] = uint32(len(buf) - before)
		}
		chunks[p] = buf
	})
	out := art.Keys{Offs: make([]uint32, n+1)}
	total := 0
	for _, c := range chunks {
		total += len(c)
	}
	out.Data = make([]byte, 0, total)
	for _, c := range chunks {
		out.Data = append(out.Data, c...)
	}
	for j, l := range lens {
		out.Offs[j+1] = out.Offs[j] + l
	}
	return out
}

// Tree returns the pairs of a tree of n keys of shape k (key i = ARTKey(k,
// i), unsorted; value i random). The slices are shared: do not modify
// them.
func (in *ARTInputs) Tree(k ARTKeys, n int) (art.Keys, []uint64) {
	if in.valid && in.k == k && in.n == n {
		return in.keys, in.vals
	}
	in.keys, in.vals = art.Keys{}, nil
	runtime.GC()
	in.keys = artKeys(n, func(dst []byte, j int) []byte { return ARTKey(dst, k, uint64(j)) })
	in.vals = make([]uint64, n)
	par.Ranges(n, par.Parts(n, 4096, 0), func(_, lo, hi int) {
		for j := lo; j < hi; j++ {
			in.vals[j] = prim.SplitMix64(ARTSeed+7, uint64(j))
		}
	})
	in.k, in.n, in.valid = k, n, true
	return in.keys, in.vals
}

// Data returns the input of case c.
func (in *ARTInputs) Data(c ARTCase) *ARTData {
	d := &ARTData{}
	t := uint64(max(c.Tree, 1))
	pick := func(j int) uint64 { return prim.SplitMix64(ARTSeed+11, uint64(j)) % t } // a present key
	switch c.Op {
	case ARTBuild:
		d.Keys, d.Values = in.Tree(c.Keys, c.Batch)
		return d
	case ARTLookup, ARTUpdate, ARTRanges:
		d.Keys = artKeys(c.Batch, func(dst []byte, j int) []byte { return ARTKey(dst, c.Keys, pick(j)) })
	case ARTDelete:
		d.Keys = artKeys(c.Batch, func(dst []byte, j int) []byte { return ARTKey(dst, c.Keys, uint64(j)*t/uint64(c.Batch)) })
	case ARTMiss, ARTInsert:
		d.Keys = artKeys(c.Batch, func(dst []byte, j int) []byte { return ARTKey(dst, c.Keys, t+uint64(j)) })
	case ARTPrefix:
		p := artPrefixLen(c.Keys, c.Tree)
		d.Keys = artKeys(c.Batch, func(dst []byte, j int) []byte {
			k := ARTKey(dst, c.Keys, pick(j))
			return k[:len(dst)+min(p, len(k)-len(dst))]
		})
	}
	if c.Op == ARTUpdate || c.Op == ARTInsert {
		d.Values = make([]uint64, c.Batch)
		for j := range d.Values {
			d.Values[j] = prim.SplitMix64(ARTSeed+13, uint64(j))
		}
	}
	return d
}

// artPrefixLen is the prefix length of the prefix scans: for random
// binary keys the bytes that ~16 to 4096 keys of the tree share; for text
// keys 3 letters.
func artPrefixLen(k ARTKeys, tree int) int {
	if k == ARTKeysText {
		return 3
	}
	p := 0
	for n := tree / 16; n >= 256; n /= 256 {
		p++
	}
	return max(1, p)
}

// ARTImpl is an ordered map of byte-string keys to uint64 values measured
// by the art cases: warpkv's engines and, in compat/cmd/artbench, other
// Go indexes.
type ARTImpl interface {
	Name() string
	// Build replaces the contents with the pairs (distinct keys, unsorted).
	Build(keys art.Keys, values []uint64) error
	Insert(keys art.Keys, values []uint64) error
	Update(keys art.Keys, values []uint64) error
	Delete(keys art.Keys) error
	Lookup(keys art.Keys, values []uint64, found []bool) error
	// Ranges answers a range query of at most limit keys from each lower
	// bound (no upper bound) and returns the pairs found and their
	// checksum.
	Ranges(los art.Keys, limit int) (pairs int, sum uint64, err error)
	// Prefix answers prefix scans of at most limit keys each.
	Prefix(prefixes art.Keys, limit int) (pairs int, sum uint64, err error)
	Len() int
	Close() error
}

// ARTCheck summarizes an answer for comparison across implementations.
type ARTCheck struct {
	Len   int
	Found int
	Sum   uint64
}

func (c ARTCheck) String() string {
	return fmt.Sprintf("len %d, found %d, checksum %#x", c.Len, c.Found, c.Sum)
}

// ARTMix is the checksum term of a found pair: the key's bytes eight at a
// time (then the tail) folded into the value, mixed with the key's length.
func ARTMix(k []byte, v uint64) uint64 {
	h, n := v, len(k)
	for ; len(k) >= 8; k = k[8:] {
		h = (h ^ binary.LittleEndian.Uint64(k)) * 0x100000001b3
	}
	for _, b := range k {
		h = h*0x100000001b3 ^ uint64(b)
	}
	return prim.SplitMix64(h, uint64(n))
}

// artAnswerer is an implementation whose answers to ranges and prefix
// scans stay in its own memory after the call (warpkv's engines: a
// reused Result), so that a case times the call alone and sums the
// answers after it, untimed; the call with the checksum (Ranges, Prefix)
// is its own row.
type artAnswerer interface {
	Answer(op ARTOp, qs art.Keys, limit int) error
	// AnswerCall returns the call Answer makes for qs (op ARTRanges:
	// range queries from each key; else prefix scans), the queries made
	// once now, as a caller holds its batch's queries before its call.
	AnswerCall(op ARTOp, qs art.Keys, limit int) func() error
	AnswerSum() (pairs int, sum uint64)
	AnswerBytes() int64 // the last answer's bytes (its Result's arrays), which the call moved to the host
}

// artQueryLimit is the limit of a case's queries: ARTRangeKeys for
// ranges, ARTPrefixLimit for prefix scans.
func artQueryLimit(op ARTOp) int {
	if op == ARTRanges {
		return ARTRangeKeys
	}
	return ARTPrefixLimit
}

// artPhaser is an implementation that reports its last batch's phases.
type artPhaser interface {
	LastBatchTimes() (work, total time.Duration)
}

// artLanes is an implementation with a choice of lanes per lookup
// (warpkv's GPU engine: art.Tree.SetLookupLanes).
type artLanes interface{ SetLookupLanes(n int) error }

// artStager is an implementation that looks keys up from pinned staging
// buffers (warpkv's GPU engine: art.Tree.LookupStaged).
type artStager interface {
	Stage(keys art.Keys) error
	LookupStaged() error
}

// artSlicer is an implementation that also takes batches as one Go slice
// per key, with answers it allocates (warpkv's engines: art.Tree.Get and
// art.Tree.Update) or into the caller's (art.Tree.GetInto and
// art.Tree.UpdateInto).
type artSlicer interface {
	GetSlices(keys [][]byte) ([]uint64, []bool, error)
	UpdateSlices(keys [][]byte, values []uint64) error
	GetSlicesInto(keys [][]byte, values []uint64, found []bool) error
	UpdateSlicesInto(keys [][]byte, values []uint64, found []bool) error
}

// ARTLimits are the references of the GPU rows (MeasureLimits), zero
// without a GPU.
type ARTLimits struct {
	Gather32 float64 // random 32-byte gathers per second
	H2DGBps  float64 // pinned host to device
	D2HGBps  float64
}

// RunARTCase measures impl on case c, median of reps runs after
// DefaultWarmup: the tree is built from in.Tree outside the timed region
// (before each run for inserts and deletes; once for the other cases:
// updates write the same values every run). It returns the case's
// row and, for an implementation that reports its phases, a "kernels" row
// (the engine's work phase alone) with its ratio to the random 32-byte
// gather rate, and the whole call's ratio to the pinned transfer limit.
// In a run with a GPU (lim measured), ranges and prefix scans of an
// implementation that keeps its answers (artAnswerer: warpkv's engines,
// answering into a reused Result) are called for artQueryWarm first,
// time the call alone on queries made once (AnswerCall), each run the
// mean of the calls that fill artQueryRun, its answers summed after it,
// and add a ": call and checksum" row timing both, as the peers' rows
// and runs without a GPU do. The GPU engine's lookups and updates (an
// artPhaser's point calls) are timed the same way, back to back after
// artQueryWarm: a single call of about a millisecond right after the
// case's 100M-key build ran 2-3x slower than the calls after it. With a
// GPU, an implementation's inserts are also timed into a tree built
// artSettle before (the artSettledRow row), and lookups and updates from
// [][]byte (artSlicer) with answers allocated and into reused ones.
func RunARTCase(c ARTCase, impl ARTImpl, in *ARTInputs, d *ARTData, reps int, lim ARTLimits) ([]Result, ARTCheck, error) {
	r, err := newARTRun(c, impl, in, d, lim)
	if err != nil {
		return nil, ARTCheck{}, err
	}
	ch := &r.ch
	prepare, run, full, answerer, lv, lf := r.prepare, r.run, r.full, r.answerer, r.lv, r.lf
	phaser, _ := impl.(artPhaser)
	per := 1 // calls a timed run makes
	if answerer != nil || (phaser != nil && lim.Gather32 > 0 && prepare == nil && artPointOp(c.Op)) {
		n, el, err := warmFor(artQueryWarm, run)
		if err != nil {
			return nil, *ch, err
		}
		per = callsFor(artQueryRun, el/time.Duration(n))
		one := run
		run = func() error {
			for range per {
				if err := one(); err != nil {
					return err
				}
			}
			return nil
		}
	}
	var work []float64
	wall, err := timeRuns(reps, prepare, run, func() {
		if phaser != nil {
			w, _ := phaser.LastBatchTimes()
			work = append(work, w.Seconds())
		}
	})
	if err != nil {
		return nil, *ch, err
	}
	for i := range wall {
		wall[i] /= float64(per)
	}
	items := int64(c.Batch)
	up, down := artTransferBytes(c, d)
	if answerer != nil {
		ch.Found, ch.Sum = answerer.AnswerSum()
		down = answerer.AnswerBytes()
	}
	whole := NewResult(c.Name(), impl.Name(), items, up+down, Median(wall))
	rows := []Result{whole}
	if phaser != nil && lim.Gather32 > 0 {
		rows[0] = whole.VsBandwidth("pinned H2D", lim.H2DGBps)
		if ws := Median(work); ws > 0 {
			k := NewResult(c.Name()+": kernels", impl.Name(), items, 0, ws)
			k.Ratio, k.RatioTo = k.OpsPerSec/lim.Gather32, "32 B gathers/s"
			rows = append(rows, k)
		}
	}
	// Inserts timed again into a tree built artSettle before: right after
	// a 100M-key build the insert ran about 20% slower, while the driver
	// cleared the old tree's freed pools beside its uploads, until those
	// pools became the device's spare memory (gpu/spare.go; H200,
	// 2026-11-30, BENCHMARKS.md "Spare device memory"). The row stays to
	// show that both inserts run alike.
	if c.Op == ARTInsert && phaser != nil && lim.Gather32 > 0 && prepare != nil {
		settled := func() error {
			if err := prepare(); err != nil {
				return err
			}
			time.Sleep(artSettle)
			return nil
		}
		ts, err := timeRuns(reps, settled, run, nil)
		if err != nil {
			return nil, *ch, err
		}
		rows = append(rows, NewResult(c.Name()+artSettledRow, impl.Name(), items, up+down, Median(ts)).VsBandwidth("pinned H2D", lim.H2DGBps))
	}
	// Ranges and prefix scans timed without the checksum: the checksum of
	// the last answer, then the calls with it as their own row.
	if answerer != nil {
		ts, err := timeRuns(reps, nil, full, nil)
		if err != nil {
			return nil, *ch, err
		}
		rows = append(rows, NewResult(c.Name()+": call and checksum", impl.Name(), items, up+down, Median(ts)).VsPeer("call", whole))
	}
	// Lookups with 8 lanes per key (the GPU engine's other lookup kernel).
	if ln, ok := impl.(artLanes); ok && lim.Gather32 > 0 && (c.Op == ARTLookup || c.Op == ARTMiss) {
		lr, err := artLanesRows(c, impl.Name(), ln, phaser, run, reps, up+down, whole, lim)
		if err != nil {
			return nil, *ch, err
		}
		rows = append(rows, lr...)
	}
	if sl, ok := impl.(artSlicer); ok && lim.Gather32 > 0 && (c.Op == ARTLookup || c.Op == ARTMiss || c.Op == ARTUpdate) {
		keys := d.Keys.Unpack() // made once, untimed, for both rows
		for _, into := range []bool{false, true} {
			r, err := artSliceRow(c, impl.Name(), sl, d, keys, reps, up+down, lv, lf, into)
			if err != nil {
				return nil, *ch, err
			}
			rows = append(rows, r.VsBandwidth("pinned H2D", lim.H2DGBps))
		}
	}
	if st, ok := impl.(artStager); ok && lim.Gather32 > 0 && (c.Op == ARTLookup || c.Op == ARTMiss) {
		r, err := artStagedRow(c, impl.Name(), st, d, reps, up+down)
		if err != nil {
			return nil, *ch, err
		}
		rows = append(rows, r.VsBandwidth("pinned H2D", lim.H2DGBps))
	}
	if err := artCheckAnswer(c, impl, d, lv, lf, ch); err != nil {
		return nil, *ch, err
	}
	return rows, *ch, nil
}

// artSettle is how long the insert row artSettledRow waits after each
// build before the timed insert, and artSettledRow that row's suffix.
const (
	artSettle     = 20 * time.Millisecond
	artSettledRow = ": into a tree built 20 ms before"
)

// artQueryWarm is how long RunARTCase calls a GPU engine's ranges or
// prefix scans before their warm-up run and timed runs, so that the
// timed calls (about a millisecond each at 100M) run back to back as a
// caller's batch after batch, not right after the build and the garbage
// collection that precede them.
const artQueryWarm = 20 * time.Millisecond

// artQueryRun is the least time a timed run of a GPU engine's ranges or
// prefix scans lasts: a run makes as many calls back to back as fill it
// (at the warm-up's time a call) and counts their mean, so that the
// median of a few runs is the calls' throughput, every call's time
// included, rather than the middle of three single calls of about a
// millisecond, which one late call moves.
const artQueryRun = 10 * time.Millisecond

// warmFor calls run until d has passed (at least once) and returns the
// calls and the time they took. Cost: d, plus the last call.
func warmFor(d time.Duration, run func() error) (int, time.Duration, error) {
	t0 := time.Now()
	for n := 1; ; n++ {
		if err := run(); err != nil {
			return n, time.Since(t0), err
		}
		if el := time.Since(t0); el >= d {
			return n, el, nil
		}
	}
}

// artPointOp reports whether op is a point call that a timed run can
// repeat on the same tree: lookups (present or absent keys) and updates.
func artPointOp(op ARTOp) bool { return op == ARTLookup || op == ARTMiss || op == ARTUpdate }

// callsFor is the calls of time per each that fill d: at least 1.
func callsFor(d, per time.Duration) int {
	if per <= 0 {
		return 1
	}
	return int(max(1, (d+per-1)/per))
}

// artRun is how RunARTCase times one case: prepare before each timed run
// (nil: none), the timed call, and for ranges and prefix scans the call
// with the checksum of its answers (full) and the implementation that
// answers without it (answerer); lookups' answers land in lv and lf.
type artRun struct {
	prepare, run, full func() error
	answerer           artAnswerer
	lv                 []uint64
	lf                 []bool
	ch                 ARTCheck
}

// newARTRun builds the tree a case needs outside the timed region (once,
// or in prepare before each run for inserts and deletes) and the calls
// RunARTCase times.
func newARTRun(c ARTCase, impl ARTImpl, in *ARTInputs, d *ARTData, lim ARTLimits) (*artRun, error) {
	setup := func() error {
		k, v := in.Tree(c.Keys, c.Tree)
		if err := impl.Build(k, v); err != nil {
			return fmt.Errorf("loading a tree of %s keys: %w", SI(float64(c.Tree)), err)
		}
		runtime.GC()
		return nil
	}
	r := &artRun{}
	switch c.Op {
	case ARTBuild:
		r.prepare = func() error { runtime.GC(); return nil }
		r.run = func() error { return impl.Build(d.Keys, d.Values) }
	case ARTInsert:
		r.prepare, r.run = setup, func() error { return impl.Insert(d.Keys, d.Values) }
	case ARTDelete:
		r.prepare, r.run = setup, func() error { return impl.Delete(d.Keys) }
	case ARTUpdate: // the same values every run: the tree is built once
		if err := setup(); err != nil {
			return nil, err
		}
		r.run = func() error { return impl.Update(d.Keys, d.Values) }
	case ARTLookup, ARTMiss:
		if err := setup(); err != nil {
			return nil, err
		}
		r.lv, r.lf = make([]uint64, c.Batch), make([]bool, c.Batch)
		r.run = func() error { return impl.Lookup(d.Keys, r.lv, r.lf) }
	case ARTRanges, ARTPrefix:
		if err := setup(); err != nil {
			return nil, err
		}
		r.full = func() error {
			var err error
			if c.Op == ARTRanges {
				r.ch.Found, r.ch.Sum, err = impl.Ranges(d.Keys, ARTRangeKeys)
			} else {
				r.ch.Found, r.ch.Sum, err = impl.Prefix(d.Keys, ARTPrefixLimit)
			}
			return err
		}
		r.run = r.full
		if an, ok := impl.(artAnswerer); ok && lim.Gather32 > 0 {
			r.answerer = an
			r.run = an.AnswerCall(c.Op, d.Keys, artQueryLimit(c.Op))
		}
	default:
		return nil, fmt.Errorf("bench art: unknown operation %q", c.Op)
	}
	return r, nil
}

// artLanesRows times lookups with 8 lanes per key (the GPU engine's other
// lookup kernel) and returns the whole call's row against the 1-lane call
// (whole) and, with phases, its kernels' row.
func artLanesRows(c ARTCase, name string, ln artLanes, phaser artPhaser, run func() error, reps int, bytes int64, whole Result, lim ARTLimits) ([]Result, error) {
	if err := ln.SetLookupLanes(8); err != nil {
		return nil, err
	}
	items := int64(c.Batch)
	var ts, ws []float64
	for i := range DefaultWarmup + reps {
		t0 := time.Now()
		if err := run(); err != nil {
			return nil, err
		}
		if i >= DefaultWarmup {
			ts = append(ts, time.Since(t0).Seconds())
			if phaser != nil {
				w, _ := phaser.LastBatchTimes()
				ws = append(ws, w.Seconds())
			}
		}
	}
	if err := ln.SetLookupLanes(1); err != nil {
		return nil, err
	}
	rows := []Result{NewResult(c.Name()+": 8 lanes per key", name, items, bytes, Median(ts)).VsPeer("1 lane", whole)}
	if w := Median(ws); w > 0 {
		k := NewResult(c.Name()+": kernels, 8 lanes per key", name, items, 0, w)
		k.Ratio, k.RatioTo = k.OpsPerSec/lim.Gather32, "32 B gathers/s"
		rows = append(rows, k)
	}
	return rows, nil
}

// artCheckAnswer adds to ch the check of the last run's answer: the
// lookups' hits, or for the cases that change the tree a lookup of its
// first 64Ki keys, and the tree's length.
func artCheckAnswer(c ARTCase, impl ARTImpl, d *ARTData, lv []uint64, lf []bool, ch *ARTCheck) error {
	ch.Len = impl.Len()
	switch c.Op {
	case ARTLookup, ARTMiss:
		for i, f := range lf {
			if f {
				ch.Found++
				ch.Sum += ARTMix(d.Keys.At(i), lv[i])
			}
		}
	case ARTBuild, ARTInsert, ARTDelete, ARTUpdate:
		n := min(d.Keys.Len(), 1<<16)
		pk := art.Keys{Data: d.Keys.Data, Offs: d.Keys.Offs[:n+1]}
		pv, pf := make([]uint64, n), make([]bool, n)
		if err := impl.Lookup(pk, pv, pf); err != nil {
			return fmt.Errorf("checking %s: %w", c.Name(), err)
		}
		for i, f := range pf {
			if f {
				ch.Found++
				ch.Sum += ARTMix(pk.At(i), pv[i])
			}
		}
	}
	return nil
}

// artSliceRow times lookups or updates of keys, d's batch as one Go slice
// per key (the GPU engine; made once by the caller, untimed): whole calls timed, median
// of reps after DefaultWarmup, the call moving bytes; a lookup's answers
// must be the packed call's (lv, lf). into times the calls into answers
// made once and reused (GetInto, UpdateInto: the row ": from [][]byte into
// reused answers"); else each call allocates its answers (Get, Update:
// ": from [][]byte").
func artSliceRow(c ARTCase, name string, sl artSlicer, d *ARTData, keys [][]byte, reps int, bytes int64, lv []uint64, lf []bool, into bool) (Result, error) {
	var ts []float64
	var sv []uint64
	var sf []bool
	if into {
		sv, sf = make([]uint64, len(keys)), make([]bool, len(keys))
	}
	for i := range DefaultWarmup + reps {
		runtime.GC()
		t0 := time.Now()
		var err error
		switch {
		case c.Op == ARTUpdate && into:
			err = sl.UpdateSlicesInto(keys, d.Values, sf)
		case c.Op == ARTUpdate:
			err = sl.UpdateSlices(keys, d.Values)
		case into:
			err = sl.GetSlicesInto(keys, sv, sf)
		default:
			sv, sf, err = sl.GetSlices(keys)
		}
		if err != nil {
			return Result{}, err
		}
		if i >= DefaultWarmup {
			ts = append(ts, time.Since(t0).Seconds())
		}
	}
	form := ": from [][]byte"
	if into {
		form += " into reused answers"
	}
	if c.Op != ARTUpdate {
		for i := range sf {
			if sf[i] != lf[i] || sv[i] != lv[i] {
				return Result{}, fmt.Errorf("%s%s, key %d: %d %v, packed %d %v", c.Name(), form, i, sv[i], sf[i], lv[i], lf[i])
			}
		}
	}
	return NewResult(c.Name()+form, name, int64(c.Batch), bytes, Median(ts)), nil
}

// artStagedRow times lookups from pinned staging (the GPU engine): the
// keys written into the engine's pinned buffers once, untimed, then whole
// calls timed, median of reps after DefaultWarmup, the call moving bytes.
func artStagedRow(c ARTCase, name string, st artStager, d *ARTData, reps int, bytes int64) (Result, error) {
	if err := st.Stage(d.Keys); err != nil {
		return Result{}, err
	}
	var ts []float64
	for i := range DefaultWarmup + reps {
		t0 := time.Now()
		if err := st.LookupStaged(); err != nil {
			return Result{}, err
		}
		if i >= DefaultWarmup {
			ts = append(ts, time.Since(t0).Seconds())
		}
	}
	return NewResult(c.Name()+": from pinned staging", name, int64(c.Batch), bytes, Median(ts)), nil
}

// Validate checks what a case's answer must be whatever the
// implementation.
func (c ARTCase) Validate(ch ARTCheck) error {
	bad := func(want string) error { return fmt.Errorf("%s: wrong answer: %v, want %s", c.Name(), ch, want) }
	switch c.Op {
	case ARTBuild:
		if ch.Len != c.Batch {
			return bad(fmt.Sprintf("len %d", c.Batch))
		}
	case ARTLookup:
		if ch.Len != c.Tree || ch.Found != c.Batch {
			return bad(fmt.Sprintf("len %d, found %d", c.Tree, c.Batch))
		}
	case ARTMiss:
		if ch.Found != 0 {
			return bad("found 0")
		}
	case ARTInsert:
		if ch.Len != c.Tree+c.Batch {
			return bad(fmt.Sprintf("len %d", c.Tree+c.Batch))
		}
	case ARTDelete:
		if ch.Len != c.Tree-c.Batch || ch.Found != 0 {
			return bad(fmt.Sprintf("len %d, the deleted keys absent", c.Tree-c.Batch))
		}
	case ARTRanges:
		if ch.Found < c.Batch {
			return bad(fmt.Sprintf("found >= %d", c.Batch))
		}
	}
	return nil
}

// artTransferBytes returns the bytes a call moves from and to the host
// (ranges and prefix scans: down 0, their answers' bytes known only after
// the call; RunARTCase takes them from an artAnswerer).
func artTransferBytes(c ARTCase, d *ARTData) (up, down int64) {
	b := int64(c.Batch)
	keys := int64(len(d.Keys.Data)) + 4*(b+1)
	switch c.Op {
	case ARTBuild, ARTInsert, ARTUpdate:
		return keys + 8*b, 0
	case ARTDelete:
		return keys, 0
	case ARTLookup, ARTMiss:
		return keys, 9 * b
	}
	return keys, 0
}

// artEngine adapts an art.Tree to ARTImpl.
type artEngine struct {
	name string
	t    *art.Tree
	st   *art.Staging // LookupStaged's buffers, grown by Stage
	n    int          // keys staged
	res  *art.Result  // the answers of ranges and prefix scans, reused from call to call (RangesInto; NewResult: pinned on the GPU engine)
	qin  artQueries   // the queries of the last batch of ranges or prefix scans, as the tree takes them
}

// artQueries are a batch of packed keys as the tree's query calls take
// them (range queries from each key, or the keys as prefixes), made once
// per batch and reused while the same batch comes again: the timed calls
// are the engine's, as the point operations' rows from [][]byte make
// their slices once, untimed.
type artQueries struct {
	data []byte   // the batch's key bytes (held, so that no other batch lies there), which the queries view
	offs []uint32 // a copy of its offsets: a batch with other offsets is made again
	qs   []art.Query
	ps   [][]byte
}

// of returns the queries of batch b (ranges from each key when ranges,
// else prefixes), made when b is not the batch of the last call (other
// key bytes, or other offsets). Cost: a comparison of b's offsets for the
// same batch; else one pass making b.Len() slices.
func (q *artQueries) of(b art.Keys, ranges bool) ([]art.Query, [][]byte) {
	same := len(b.Data) == len(q.data) && (len(b.Data) == 0 || &b.Data[0] == &q.data[0]) && slices.Equal(b.Offs, q.offs)
	if !same || (ranges && len(q.qs) != b.Len()) || (!ranges && len(q.ps) != b.Len()) {
		*q = artQueries{data: b.Data, offs: slices.Clone(b.Offs)}
		if ranges {
			q.qs = make([]art.Query, b.Len())
			for i := range q.qs {
				q.qs[i] = art.Query{Lo: b.At(i)}
			}
		} else {
			q.ps = b.Unpack()
		}
	}
	return q.qs, q.ps
}

// Stage copies keys into the tree's pinned staging buffers.
func (e *artEngine) Stage(keys art.Keys) error {
	if e.st == nil || len(e.st.Values) < keys.Len() || len(e.st.Data) < len(keys.Data) {
		if e.st != nil {
			if err := e.st.Free(); err != nil {
				return err
			}
		}
		st, err := e.t.NewStaging(keys.Len(), len(keys.Data))
		if err != nil {
			return err
		}
		e.st = st
	}
	copy(e.st.Data, keys.Data)
	base := keys.Offs[0]
	for i, o := range keys.Offs {
		e.st.Offs[i] = o - base
	}
	e.n = keys.Len()
	return nil
}

// GetSlices looks keys up from one slice per key (art.Tree.Get).
func (e *artEngine) GetSlices(keys [][]byte) ([]uint64, []bool, error) { return e.t.Get(keys) }

// UpdateSlices updates keys from one slice per key (art.Tree.Update).
func (e *artEngine) UpdateSlices(keys [][]byte, values []uint64) error {
	_, err := e.t.Update(keys, values)
	return err
}

// GetSlicesInto looks keys up from one slice per key into the caller's
// answers (art.Tree.GetInto).
func (e *artEngine) GetSlicesInto(keys [][]byte, values []uint64, found []bool) error {
	return e.t.GetInto(keys, values, found)
}

// UpdateSlicesInto updates keys from one slice per key, the found flags
// into the caller's (art.Tree.UpdateInto).
func (e *artEngine) UpdateSlicesInto(keys [][]byte, values []uint64, found []bool) error {
	return e.t.UpdateInto(keys, values, found)
}

// SetLookupLanes sets the tree's lanes per lookup.
func (e *artEngine) SetLookupLanes(n int) error { return e.t.SetLookupLanes(n) }

// LookupStaged looks the staged keys up.
func (e *artEngine) LookupStaged() error { return e.t.LookupStaged(e.st, e.n) }

func (e *artEngine) Name() string { return e.name }
func (e *artEngine) Build(k art.Keys, v []uint64) error {
	return e.t.BuildKeys(k, v)
}
func (e *artEngine) Insert(k art.Keys, v []uint64) error { return e.t.InsertKeys(k, v) }
func (e *artEngine) Update(k art.Keys, v []uint64) error {
	return e.t.UpdateKeys(k, v, make([]bool, k.Len()))
}
func (e *artEngine) Delete(k art.Keys) error { _, err := e.t.DeleteKeys(k); return err }
func (e *artEngine) Lookup(k art.Keys, v []uint64, f []bool) error {
	return e.t.Lookup(k, v, f)
}
func (e *artEngine) Len() int { return e.t.Len() }
func (e *artEngine) Close() error {
	var err error
	if e.st != nil {
		err = e.st.Free()
		e.st = nil
	}
	return errors.Join(err, e.res.Free(), e.t.Close())
}
func (e *artEngine) LastBatchTimes() (time.Duration, time.Duration) {
	tm := e.t.LastBatch()
	return tm.Work, tm.Total
}

func (e *artEngine) Ranges(los art.Keys, limit int) (int, uint64, error) {
	if err := e.Answer(ARTRanges, los, limit); err != nil {
		return 0, 0, err
	}
	return artSum(e.res)
}

func (e *artEngine) Prefix(ps art.Keys, limit int) (int, uint64, error) {
	if err := e.Answer(ARTPrefix, ps, limit); err != nil {
		return 0, 0, err
	}
	return artSum(e.res)
}

// Answer answers range queries from each key of qs (op ARTRanges) or
// prefix scans of them into the engine's reused Result (NewResult: on
// the GPU engine pinned, which the device writes by DMA), what a caller
// running batch after batch does.
func (e *artEngine) Answer(op ARTOp, qs art.Keys, limit int) error {
	return e.AnswerCall(op, qs, limit)()
}

// AnswerCall returns the tree's call answering qs (op ARTRanges: range
// queries from each key; else prefix scans of them) into the engine's
// reused Result, the queries made now: the call a caller makes for a
// batch it holds, without Answer's check, every call, that qs is the
// batch of its queries (a comparison of qs's offsets). Cost: the
// queries' headers, once.
func (e *artEngine) AnswerCall(op ARTOp, qs art.Keys, limit int) func() error {
	if e.res == nil {
		e.res = e.t.NewResult()
	}
	rq, pq := e.qin.of(qs, op == ARTRanges)
	return func() error {
		var r *art.Result
		var err error
		if op == ARTRanges {
			r, err = e.t.RangesInto(e.res, rq, limit)
		} else {
			r, err = e.t.PrefixInto(e.res, pq, limit)
		}
		if err != nil {
			return err
		}
		e.res = r
		return nil
	}
}

// AnswerBytes returns the bytes of the last Answer's Result: key bytes,
// key offsets, values and query offsets.
func (e *artEngine) AnswerBytes() int64 {
	r := e.res
	return int64(len(r.Keys.Data)) + 4*int64(len(r.Keys.Offs)) + 8*int64(len(r.Values)) + 8*int64(len(r.Offsets))
}

// AnswerSum returns the pairs of the last Answer and their checksum.
func (e *artEngine) AnswerSum() (int, uint64) {
	n, s, _ := artSum(e.res)
	return n, s
}

// artSum is the checksum of a batch of queries' pairs, over GOMAXPROCS
// goroutines (as btree's engines do; a peer on one goroutine sums
// inline), so that the host's hashing does not hide the engine's time.
func artSum(r *art.Result) (int, uint64, error) {
	var mu sync.Mutex
	var s uint64
	par.For(len(r.Values), inputGrain, 0, func(lo, hi int) {
		var part uint64
		for i := lo; i < hi; i++ {
			part += ARTMix(r.Keys.At(i), r.Values[i])
		}
		mu.Lock()
		s += part
		mu.Unlock()
	})
	return len(r.Values), s, nil
}

// ARTEngines are warpkv's art engines chosen by a device option: Impls
// ("cpu" and "gpu", as asked and available), Engines (one sentence per
// engine: which and why), GPU (whether a GPU engine is among Impls) and
// the GPU's measured Limits; Close closes the engines, then the device.
type ARTEngines struct {
	engineSet[ARTImpl]
	Limits ARTLimits
}

// ParseARTEngines parses an engines option ("cpu", "gpu", "cpu,gpu"; ""
// is both) into which engines to run.
func ParseARTEngines(s string) (cpu, gpu bool, err error) {
	if strings.TrimSpace(s) == "" {
		return true, true, nil
	}
	for _, name := range strings.Split(s, ",") {
		switch strings.TrimSpace(name) {
		case "cpu":
			cpu = true
		case "gpu":
			gpu = true
		default:
			return false, false, fmt.Errorf("engines %q: unknown engine %q (want cpu, gpu)", s, strings.TrimSpace(name))
		}
	}
	return cpu, gpu, nil
}

// OpenARTEngines returns warpkv's engines that engines names (see
// ParseARTEngines): the CPU engine and, when device resolves to a GPU,
// the GPU engine (with the device's measured limits). Naming the GPU
// engine alone without a usable GPU is an error.
func OpenARTEngines(device, engines string) (*ARTEngines, error) {
	wantCPU, wantGPU, err := ParseARTEngines(engines)
	if err != nil {
		return nil, err
	}
	c, err := gpu.Choose(device)
	if err != nil {
		return nil, err
	}
	if wantGPU && !wantCPU && c.Device == nil {
		return nil, fmt.Errorf("engines %q: no usable GPU: %s", engines, c.Reason)
	}
	if !wantGPU && c.Device != nil {
		if err := c.Device.Close(); err != nil {
			return nil, err
		}
		c.Device, c.Reason = nil, "not asked for (engines "+engines+")"
	}
	e := &ARTEngines{engineSet: engineSet[ARTImpl]{dev: c.Device}}
	if wantCPU {
		ct, err := art.Open(art.Options{Device: "cpu"})
		if err != nil {
			return nil, errors.Join(err, e.Close())
		}
		e.Impls = append(e.Impls, &artEngine{name: "cpu", t: ct})
		e.Engines = append(e.Engines, fmt.Sprintf("cpu: warpkv art CPU engine, %d workers (GOMAXPROCS)", runtime.GOMAXPROCS(0)))
	} else {
		e.Engines = append(e.Engines, "no cpu engine rows: engines "+engines)
	}
	if c.Device == nil {
		e.Engines = append(e.Engines, "no gpu rows: "+c.Reason)
		return e, nil
	}
	lim, err := MeasureLimits(c.Device, nil)
	if err != nil {
		return nil, errors.Join(err, e.Close())
	}
	e.Limits = ARTLimits{Gather32: lim.Gather32, H2DGBps: lim.H2DGBps, D2HGBps: lim.D2HGBps}
	gt, err := art.Open(art.Options{GPU: c.Device})
	if err != nil {
		return nil, errors.Join(err, e.Close())
	}
	e.Impls = append(e.Impls, &artEngine{name: "gpu", t: gt})
	e.GPU = true
	e.Engines = append(e.Engines, fmt.Sprintf("gpu: warpkv art GPU engine, %s; whole calls from Go slices, transfers included; measured on %s: %.3g random 32 B gathers/s, pinned H2D %.1f GB/s",
		c.Reason, lim.Device, lim.Gather32, lim.H2DGBps))
	return e, nil
}

// RunARTCases measures every implementation on every case (in.Data,
// RunARTCase with reps(impl) timed runs; warpkv's GPU engine with the
// limits lim), adding the rows to rep. The first implementation that
// answers a case is the reference: every other's answer must equal it and
// its row carries its ratio to it (GPU rows: to the pinned transfer limit,
// with a kernels row against the gather rate). skip, if not nil, says why
// an implementation does not run a case. Failures become notes and are
// returned together.
func RunARTCases(rep *Report, cases []ARTCase, impls []ARTImpl, reps func(ARTImpl) int, lim ARTLimits, p *Progress,
	skip func(ARTCase, ARTImpl) string) error {
	in := NewARTInputs()
	var d *ARTData
	prepare := func(c ARTCase) error {
		d = in.Data(c)
		return nil
	}
	run := func(c ARTCase, im ARTImpl) ([]Result, ARTCheck, error) {
		l := ARTLimits{}
		if _, ok := im.(*artEngine); ok && im.Name() == "gpu" {
			l = lim
		}
		return RunARTCase(c, im, in, d, reps(im), l)
	}
	return runCases(rep, p, cases, impls, skip, prepare, run)
}

// RunART measures CuART (package art) on the cases of ARTCases with
// largest tree Options.Size (default ARTGPUSize with a GPU, ARTCPUSize
// on the CPU engine alone), on the engines Options.Engines names, and
// sums the rows up against the targets (Report.Summary). Peers (hashicorp/go-immutable-radix,
// tidwall/btree, a Go map) on the same cases: compat/cmd/artbench.
func RunART(o Options) (*Report, error) {
	rep := NewReport("art", o.reps())
	p := NewProgress(o.Progress)
	if o.Size != 0 && o.Size < ARTMinSize {
		return nil, fmt.Errorf("bench art: size %d: want at least %d", o.Size, ARTMinSize)
	}
	eng, err := OpenARTEngines(o.Device, o.Engines)
	if err != nil {
		return nil, fmt.Errorf("bench art: %w", err)
	}
	defer eng.Close()
	size := o.Size
	if size == 0 {
		size = ARTDefaultSize(eng.GPU)
	}
	rep.Engines = append(rep.Engines, eng.Engines...)
	rep.Notes = append(rep.Notes, ARTInputNotes()...)
	err = RunARTCases(rep, ARTCases(size), eng.Impls, func(ARTImpl) int { return o.reps() }, eng.Limits, p, nil)
	rep.Summary, rep.SummaryTitle = ARTSummary(rep.Results, size, "")
	rep.Finish()
	if err != nil {
		return rep, fmt.Errorf("bench art: %w", err)
	}
	return rep, nil
}

// ARTInputNotes describes the inputs, for a report's notes.
func ARTInputNotes() []string {
	return []string{
		fmt.Sprintf("keys: key i of a shape is a bijection of SplitMix64(%#x, i) in its first 8 bytes (16 and 32 B: more random bytes; text: 2 to 12 letters, ':' and i in hex; long: 64 to 256 bytes); a tree of n keys holds keys 0..n-1; absent and inserted keys are keys n, n+1, ...", uint64(ARTSeed)),
		fmt.Sprintf("lookups, updates and range lower bounds: random present keys; deletes: every tree/batch-th key; ranges: the %d keys from a present key; prefix scans: a present key's first bytes shared by ~16 to 4096 keys (text: 3 letters), at most %d keys", ARTRangeKeys, ARTPrefixLimit),
		fmt.Sprintf("ranges, prefix scans, lookups and updates of warpkv's GPU engine (their first row): called back to back for %v first; each timed run is the mean of the calls that fill %v (ranges and prefix scans: the call alone, on queries made once; \": call and checksum\" rows: single calls)", artQueryWarm, artQueryRun),
		"GPU rows: ratio of the whole call = bytes moved (keys, offsets, values, answers) per second over the pinned host-to-device limit; \"kernels\" rows: the engine's work phase alone (art.Tree.LastBatch), ratio = operations per second over the device's random 32-byte gather rate",
	}
}
