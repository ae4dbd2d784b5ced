package bench

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/warpkv/warpkv/btree"
	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/prim"
)

// Sizes and inputs of the btree suite.
const (
	BTreeGPUSize   = 100_000_000 // largest tree by default when a GPU is used
	BTreeCPUSize   = 10_000_000  // largest tree by default on the CPU engine alone
	BTreeMinSize   = 1000        // smallest accepted Size
	BTreePaperSize = 100_000_000 // the largest tree of the case list as written (the paper's sizes); every size scales by Size/BTreePaperSize
	BTreeSeed      = 0xB7EE_5EED_0005

	// BTreeProbes is the number of keys looked up after a build, insert
	// or delete to check the tree (outside the timed region).
	BTreeProbes = 1 << 16
	// BTreeRangeKeys is the mean number of keys a range query returns.
	BTreeRangeKeys = 16
	// A skewed insert batch puts BTreeSkewHot of every 20 keys into one
	// gap between two adjacent keys of the tree (so into one leaf's key
	// interval) and the others into max(1, Tree/BTreeSkewKeysPerGap)
	// other such gaps.
	BTreeSkewHot         = 17 // of 20: 85%
	BTreeSkewKeysPerGap  = 40_000
	btreeSkewPeriod      = 20
	btreeSeedTreeKeys    = BTreeSeed + 1
	btreeSeedTreeValues  = BTreeSeed + 2
	btreeSeedInsKeys     = BTreeSeed + 3
	btreeSeedInsValues   = BTreeSeed + 4
	btreeSeedSkewGaps    = BTreeSeed + 5
	btreeSeedSkewKeys    = BTreeSeed + 6
	btreeSeedLookup      = BTreeSeed + 7
	btreeSeedAbsent      = BTreeSeed + 8
	btreeSeedRanges      = BTreeSeed + 9
	btreeSeedProbes      = BTreeSeed + 10
	btreeSeedProbeAbsent = BTreeSeed + 11
)

// BTreeOp is the operation of a btree case.
type BTreeOp string

// The operations of the btree cases.
const (
	BTreeBuild  BTreeOp = "build"  // bulk build from unsorted pairs
	BTreeInsert BTreeOp = "insert" // batch insert (upsert) into a built tree
	BTreeDelete BTreeOp = "delete" // batch delete of present keys
	BTreeLookup BTreeOp = "lookup" // point lookups, half present, half absent
	BTreeRanges BTreeOp = "ranges" // batched range queries of ~BTreeRangeKeys keys
)

// BTreeCase is one measured operation of the btree suite, shared with
// compat's peer benchmark (compat/cmd/btreebench) so that both measure
// the same operations on the same data (BTreeInputs).
type BTreeCase struct {
	Op     BTreeOp
	Tree   int  // keys in the tree the operation runs on (0 for a build)
	Batch  int  // keys built, inserted, deleted or looked up; range queries
	Skewed bool // insert: a highly skewed batch (see BTreeSkewHot)
}

// Name is the case's operation column, e.g. "insert 2M skewed into 5M".
func (c BTreeCase) Name() string {
	b, t := SI(float64(c.Batch)), SI(float64(c.Tree))
	switch c.Op {
	case BTreeBuild:
		return "build " + b
	case BTreeInsert:
		dist := "uniform"
		if c.Skewed {
			dist = "skewed"
		}
		return fmt.Sprintf("insert %s %s into %s", b, dist, t)
	case BTreeDelete:
		return fmt.Sprintf("delete %s from %s", b, t)
	case BTreeLookup:
		return fmt.Sprintf("lookup %s in %s, half absent", b, t)
	case BTreeRanges:
		return fmt.Sprintf("ranges %s x ~%d keys in %s", b, BTreeRangeKeys, t)
	}
	return fmt.Sprintf("%s %s in %s", c.Op, b, t)
}

// Size is the larger of the case's tree and batch: what bounds its cost
// on a peer.
func (c BTreeCase) Size() int { return max(c.Tree, c.Batch) }

func (c BTreeCase) opName() string { return string(c.Op) }

// BTreeDefaultSize is the suite's largest tree when Options.Size is 0.
func BTreeDefaultSize(gpu bool) int { return defaultSize(gpu, BTreeGPUSize, BTreeCPUSize) }

// BTreeCases returns the cases of the btree suite with largest tree max.
// As written, for max = BTreePaperSize (100M), they are the paper's
// experiments plus lookups, ranges and deletes: bulk build of 5M, 10M,
// 20M and 100M keys; batch insert of 2M, 5M and 10M keys, uniform and
// highly skewed, into trees of 5M and 10M keys; delete 2M from 10M;
// insert 10M (uniform) into 100M; lookup 10M keys (half absent) in 100M;
// 1M range queries of ~16 keys in 100M; delete 10M from 100M. Every size
// is scaled by max/BTreePaperSize (at least 1); cases that coincide after
// rounding are listed once. Cases on the same tree are consecutive, trees
// in increasing size, builds first.
func BTreeCases(maxTree int) []BTreeCase {
	const M = 1_000_000
	s := func(n int) int { return scaleSize(n, maxTree, BTreePaperSize) }
	var out []BTreeCase
	add := func(c BTreeCase) {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	for _, n := range []int{5 * M, 10 * M, 20 * M, 100 * M} {
		add(BTreeCase{Op: BTreeBuild, Batch: s(n)})
	}
	for _, t := range []int{5 * M, 10 * M} {
		for _, skewed := range []bool{false, true} {
			for _, b := range []int{2 * M, 5 * M, 10 * M} {
				add(BTreeCase{Op: BTreeInsert, Tree: s(t), Batch: s(b), Skewed: skewed})
			}
		}
	}
	add(BTreeCase{Op: BTreeDelete, Tree: s(10 * M), Batch: s(2 * M)})
	add(BTreeCase{Op: BTreeInsert, Tree: s(100 * M), Batch: s(10 * M)})
	add(BTreeCase{Op: BTreeLookup, Tree: s(100 * M), Batch: s(10 * M)})
	add(BTreeCase{Op: BTreeRanges, Tree: s(100 * M), Batch: s(1 * M)})
	add(BTreeCase{Op: BTreeDelete, Tree: s(100 * M), Batch: s(10 * M)})
	return out
}

// BTreeInputNotes describes the inputs of the cases, for a report's notes.
func BTreeInputNotes() []string {
	return []string{
		fmt.Sprintf("inputs: SplitMix64 with seeds from %#x; a tree of n keys holds keys SplitMix64(seed, i) for i < n (distinct, uniform over uint64), unsorted; builds build such a tree, every other case starts from one loaded outside the timed region", uint64(BTreeSeed)),
		"uniform inserts: random uint64 keys; deletes: present keys of the tree; lookups: half present keys, half random (absent); ranges: lo a present key, hi = lo + 15 average key gaps",
		fmt.Sprintf("skewed inserts: %d of every %d keys fall in the gap between two adjacent keys of the tree (one leaf's key interval), the rest at random positions in max(1, tree/%d) other such gaps, so at most 1 + max(1, tree/%d) leaves are touched (under 5%% of the leaves of a tree of 100k keys or more built with node order up to 1024)",
			BTreeSkewHot, btreeSkewPeriod, BTreeSkewKeysPerGap, BTreeSkewKeysPerGap),
	}
}

// BTreeTreeKey returns key i of the btree cases' trees: a tree of n keys
// holds keys 0 to n-1. Distinct i give distinct keys (SplitMix64 is a
// bijection of i).
func BTreeTreeKey(i int) uint64 { return prim.SplitMix64(btreeSeedTreeKeys, uint64(i)) }

// BTreeTreePairs returns the pairs of a tree of n keys, unsorted: key i is
// BTreeTreeKey(i), value i is random. Cost: O(n) over GOMAXPROCS
// goroutines.
func BTreeTreePairs(n int) (keys, values []uint64) {
	keys, values = make([]uint64, n), make([]uint64, n)
	par.For(n, inputGrain, 0, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			keys[i], values[i] = BTreeTreeKey(i), prim.SplitMix64(btreeSeedTreeValues, uint64(i))
		}
	})
	return keys, values
}

// BTreeMix is the checksum term of a found pair.
func BTreeMix(k, v uint64) uint64 { return prim.SplitMix64(k, v) }

// BTreeData is the input of one case.
type BTreeData struct {
	// Keys and Values: a build's pairs (unsorted) or an insert's batch;
	// Keys alone: a delete's keys or the keys looked up.
	Keys, Values []uint64
	// Los and His: the half-open range queries, lo <= key < hi.
	Los, His []uint64
	// Probes: after a build, insert or delete, these keys are looked up
	// to check the tree: a third present before the operation, a third
	// from the batch, a third random.
	Probes []uint64
}

// BTreeInputs generates the cases' inputs and keeps the sorted pairs of
// the last tree asked for (the setup of consecutive cases on one tree).
// Not safe for concurrent use.
type BTreeInputs struct {
	eng     *prim.Engine
	n       int
	sk, sv  []uint64
	hasTree bool
}

// NewBTreeInputs returns an empty input cache; close it when done.
func NewBTreeInputs() *BTreeInputs { return &BTreeInputs{eng: prim.NewCPU(0)} }

// Release drops the cached tree pairs.
func (in *BTreeInputs) Release() { in.sk, in.sv, in.n, in.hasTree = nil, nil, 0, false }

// Close releases the cache.
func (in *BTreeInputs) Close() error {
	in.Release()
	return in.eng.Close()
}

// Sorted returns the pairs of a tree of n keys (BTreeTreePairs) sorted by
// key. The slices are shared: do not modify them. Asking for another n
// drops the previous tree's pairs. Cost: the first time for n, a parallel
// radix sort of n pairs.
func (in *BTreeInputs) Sorted(n int) (keys, values []uint64, err error) {
	if in.hasTree && in.n == n {
		return in.sk, in.sv, nil
	}
	in.Release()
	runtime.GC()
	k, v := BTreeTreePairs(n)
	if err := prim.SortPairs(in.eng, k, v); err != nil {
		return nil, nil, fmt.Errorf("bench btree: sorting a tree of %d keys: %w", n, err)
	}
	in.n, in.sk, in.sv, in.hasTree = n, k, v, true
	return k, v, nil
}

// Data returns the input of case c. For cases on a tree it loads (and
// keeps) the tree's sorted pairs; for a build it drops them. Cost: O(batch)
// over GOMAXPROCS goroutines, plus Sorted's.
func (in *BTreeInputs) Data(c BTreeCase) (*BTreeData, error) {
	d := &BTreeData{}
	if c.Op == BTreeBuild {
		in.Release()
		d.Keys, d.Values = BTreeTreePairs(c.Batch)
		d.Probes = btreeProbes(c.Batch, d.Keys)
		return d, nil
	}
	sk, _, err := in.Sorted(c.Tree)
	if err != nil {
		return nil, err
	}
	b, t := c.Batch, uint64(c.Tree)
	switch c.Op {
	case BTreeInsert:
		if c.Skewed {
			d.Keys, d.Values = btreeSkewed(sk, b)
		} else {
			d.Keys, d.Values = make([]uint64, b), make([]uint64, b)
			par.For(b, inputGrain, 0, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					d.Keys[i] = prim.SplitMix64(btreeSeedInsKeys, uint64(i))
					d.Values[i] = prim.SplitMix64(btreeSeedInsValues, uint64(i))
				}
			})
		}
	case BTreeDelete:
		if b > c.Tree {
			return nil, fmt.Errorf("bench btree: %s: deletes more keys than the tree holds", c.Name())
		}
		d.Keys = make([]uint64, b)
		par.For(b, inputGrain, 0, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				d.Keys[i] = BTreeTreeKey(i)
			}
		})
	case BTreeLookup:
		d.Keys = make([]uint64, b)
		par.For(b, inputGrain, 0, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				if i%2 == 0 {
					d.Keys[i] = BTreeTreeKey(int(prim.SplitMix64(btreeSeedLookup, uint64(i)) % t))
				} else {
					d.Keys[i] = prim.SplitMix64(btreeSeedAbsent, uint64(i))
				}
			}
		})
	case BTreeRanges:
		width := (BTreeRangeKeys - 1) * (math.MaxUint64 / t)
		d.Los, d.His = make([]uint64, b), make([]uint64, b)
		par.For(b, inputGrain, 0, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				l := BTreeTreeKey(int(prim.SplitMix64(btreeSeedRanges, uint64(i)) % t))
				h := l + width
				if h < l {
					h = math.MaxUint64
				}
				d.Los[i], d.His[i] = l, h
			}
		})
	default:
		return nil, fmt.Errorf("bench btree: unknown operation %q", c.Op)
	}
	if c.Op == BTreeInsert || c.Op == BTreeDelete {
		d.Probes = btreeProbes(c.Tree, d.Keys)
	}
	return d, nil
}

// btreeProbes returns the keys looked up to check a tree of tree keys
// after an operation with batch keys: in turn a tree key, a batch key and
// a random key, at random positions.
func btreeProbes(tree int, batch []uint64) []uint64 {
	n := min(BTreeProbes, 3*max(tree, len(batch)))
	out := make([]uint64, n)
	for i := range out {
		h := prim.SplitMix64(btreeSeedProbes, uint64(i))
		switch {
		case i%3 == 0 && tree > 0:
			out[i] = BTreeTreeKey(int(h % uint64(tree)))
		case i%3 == 1 && len(batch) > 0:
			out[i] = batch[h%uint64(len(batch))]
		default:
			out[i] = prim.SplitMix64(btreeSeedProbeAbsent, uint64(i))
		}
	}
	return out
}

// btreeSkewed returns a highly skewed batch of b pairs for the tree whose
// sorted keys are sk (at least 2): of every btreeSkewPeriod keys,
// BTreeSkewHot fall in one gap between adjacent tree keys, the others in
// one of max(1, len(sk)/BTreeSkewKeysPerGap) other gaps; positions inside a
// gap are random (so a batch may repeat a key: the last occurrence wins).
func btreeSkewed(sk []uint64, b int) (keys, values []uint64) {
	t := len(sk)
	gaps := 1 + max(1, t/BTreeSkewKeysPerGap) // gap 0 is the hot one
	lo, width := make([]uint64, gaps), make([]uint64, gaps)
	for g := range gaps {
		j := int(prim.SplitMix64(btreeSeedSkewGaps, uint64(g)) % uint64(t-1))
		for range t { // a gap with room for a key; random keys leave plenty
			if sk[j+1]-sk[j] >= 2 {
				break
			}
			j = (j + 1) % (t - 1)
		}
		lo[g], width[g] = sk[j]+1, max(sk[j+1]-sk[j]-1, 1)
	}
	keys, values = make([]uint64, b), make([]uint64, b)
	par.For(b, inputGrain, 0, func(a, e int) {
		for i := a; i < e; i++ {
			h := prim.SplitMix64(btreeSeedSkewKeys, uint64(i))
			g := 0
			if i%btreeSkewPeriod >= BTreeSkewHot {
				g = 1 + int((h>>32)%uint64(gaps-1))
			}
			keys[i] = lo[g] + prim.SplitMix64(btreeSeedSkewKeys+1, uint64(i))%width[g]
			values[i] = prim.SplitMix64(btreeSeedInsValues, uint64(i))
		}
	})
	return keys, values
}

// BTreeImpl is an ordered map of uint64 keys to uint64 values measured by
// the btree cases: warpkv's engines (BTreeEngine) and, in
// compat/cmd/btreebench, other B-trees.
type BTreeImpl interface {
	// Name is the engine column of its rows.
	Name() string
	// Load replaces the contents with strictly increasing keys and their
	// values (the untimed setup of the cases on a tree); empty input
	// leaves an empty map.
	Load(keys, values []uint64) error
	// Build replaces the contents with unsorted pairs (the last
	// occurrence of a key wins), in the implementation's fastest way,
	// sorting included.
	Build(keys, values []uint64) error
	// Insert upserts the pairs in order (the last occurrence wins).
	Insert(keys, values []uint64) error
	// Delete removes the keys; absent keys are ignored.
	Delete(keys []uint64) error
	// Lookup sets values[i] and found[i] for keys[i] (values[i] = 0 when
	// not found).
	Lookup(keys, values []uint64, found []bool) error
	// Ranges answers the half-open range queries lo <= key < hi and
	// returns the
	// number of pairs found and the sum of BTreeMix over them.
	Ranges(los, his []uint64) (pairs int, sum uint64, err error)
	// Len is the number of keys.
	Len() int
	// Close releases the map.
	Close() error
}

// BTreeCheck summarizes an implementation's answer on a case, so that
// answers can be compared across implementations.
type BTreeCheck struct {
	Len   int    // keys in the map after the operation
	Found int    // lookup: keys found; ranges: pairs returned; others: probes found
	Sum   uint64 // sum of BTreeMix over what was found
}

func (c BTreeCheck) String() string {
	return fmt.Sprintf("len %d, found %d, checksum %#x", c.Len, c.Found, c.Sum)
}

// Validate checks what case c's answer must satisfy whatever the
// implementation: a build holds all its (distinct) keys, a delete of
// present distinct keys removes them all, half the lookups are present
// keys, every range query returns at least its (present) lower bound.
func (c BTreeCase) Validate(ch BTreeCheck) error {
	bad := func(want string) error {
		return fmt.Errorf("%s: wrong answer: %v, want %s", c.Name(), ch, want)
	}
	switch c.Op {
	case BTreeBuild:
		if ch.Len != c.Batch {
			return bad(fmt.Sprintf("len %d", c.Batch))
		}
	case BTreeInsert:
		if ch.Len < c.Tree || ch.Len > c.Tree+c.Batch {
			return bad(fmt.Sprintf("len in [%d, %d]", c.Tree, c.Tree+c.Batch))
		}
	case BTreeDelete:
		if ch.Len != c.Tree-c.Batch {
			return bad(fmt.Sprintf("len %d", c.Tree-c.Batch))
		}
	case BTreeLookup:
		if ch.Len != c.Tree || ch.Found < (c.Batch+1)/2 {
			return bad(fmt.Sprintf("len %d, found >= %d", c.Tree, (c.Batch+1)/2))
		}
	case BTreeRanges:
		if ch.Len != c.Tree || ch.Found < c.Batch {
			return bad(fmt.Sprintf("len %d, found >= %d", c.Tree, c.Batch))
		}
	}
	return nil
}

// btreePhaser is an implementation that reports the phases of its last
// batch (warpkv's trees).
type btreePhaser interface {
	LastBatch() engine.Timings
}

// RunBTreeCase measures impl on case c with its input d (in.Data(c)),
// median of reps timed runs after DefaultWarmup, wall clock around the
// call. Cases on a tree start from in.Sorted(c.Tree) given to impl.Load
// outside the timed region: before every run for insert and delete, once
// for lookup and ranges. It returns the case's row (items: keys, or
// queries for ranges) and, for an implementation that reports its phases
// (LastBatch) and has at least two phases that took 1% of the call or
// more, one row per such phase ("build 5M: sort"),
// medians of the same runs, with the ratio of the phase's rate to the
// whole call's; then the check of the last run's answer. An error of impl
// is returned wrapped.
func RunBTreeCase(c BTreeCase, impl BTreeImpl, in *BTreeInputs, d *BTreeData, reps int) ([]Result, BTreeCheck, error) {
	if reps < 1 {
		return nil, BTreeCheck{}, fmt.Errorf("bench btree: %d timed repetitions", reps)
	}
	setup := func() error {
		k, v, err := in.Sorted(c.Tree)
		if err != nil {
			return err
		}
		if err := impl.Load(k, v); err != nil {
			return fmt.Errorf("loading a tree of %s keys: %w", SI(float64(c.Tree)), err)
		}
		runtime.GC()
		return nil
	}
	var (
		prepare, run func() error
		ch           BTreeCheck
		lv           []uint64
		lf           []bool
	)
	switch c.Op {
	case BTreeBuild:
		prepare = func() error { // the previous tree is not this run's garbage
			if err := impl.Load(nil, nil); err != nil {
				return err
			}
			runtime.GC()
			return nil
		}
		run = func() error { return impl.Build(d.Keys, d.Values) }
	case BTreeInsert:
		prepare, run = setup, func() error { return impl.Insert(d.Keys, d.Values) }
	case BTreeDelete:
		prepare, run = setup, func() error { return impl.Delete(d.Keys) }
	case BTreeLookup:
		if err := setup(); err != nil {
			return nil, ch, err
		}
		lv, lf = make([]uint64, len(d.Keys)), make([]bool, len(d.Keys))
		run = func() error { return impl.Lookup(d.Keys, lv, lf) }
	case BTreeRanges:
		if err := setup(); err != nil {
			return nil, ch, err
		}
		run = func() error {
			n, s, err := impl.Ranges(d.Los, d.His)
			ch.Found, ch.Sum = n, s
			return err
		}
	default:
		return nil, ch, fmt.Errorf("bench btree: unknown operation %q", c.Op)
	}
	phaser, _ := impl.(btreePhaser)
	var ph [5][]float64 // upload, sort, work, download, total
	wall, err := timeRuns(reps, prepare, run, func() {
		if phaser == nil {
			return
		}
		if bt := phaser.LastBatch(); bt.Op == string(c.Op) || (c.Op == BTreeRanges && strings.HasPrefix(bt.Op, "range")) {
			for j, t := range []time.Duration{bt.Upload, bt.Sort, bt.Work, bt.Download, bt.Total} {
				ph[j] = append(ph[j], t.Seconds())
			}
		}
	})
	if err != nil {
		return nil, ch, err
	}
	items := int64(c.Batch)
	whole := NewResult(c.Name(), impl.Name(), items, 0, Median(wall))
	rows := []Result{whole}
	// A phase under 1% of the call says nothing (an empty phase on the GPU
	// is two events back to back, microseconds).
	shown := func(sec float64) bool { return sec > 0 && sec >= whole.Seconds/100 }
	phases := 0
	for j := range 4 {
		if shown(Median(ph[j])) {
			phases++
		}
	}
	if len(ph[0]) == reps && phases >= 2 { // one phase would repeat the case's row
		up, down := btreeTransferBytes(c)
		for j, name := range []string{"upload", "sort", "work", "download"} {
			sec := Median(ph[j])
			if !shown(sec) {
				continue
			}
			var bytes int64
			switch j {
			case 0:
				bytes = up
			case 3:
				bytes = down
			}
			rows = append(rows, NewResult(c.Name()+": "+name, impl.Name(), items, bytes, sec).VsPeer("whole call", whole))
		}
	}
	if st, ok := impl.(btreeStager); ok && c.Op == BTreeLookup {
		r, ok, err := btreeStagedRow(c, impl.Name(), st, d, reps, lv, lf)
		if err != nil {
			return nil, ch, err
		}
		if ok {
			rows = append(rows, r.VsPeer("whole call", whole))
		}
	}
	// The check of the last run's answer.
	ch.Len = impl.Len()
	switch c.Op {
	case BTreeLookup:
		for i, f := range lf {
			if f {
				ch.Found++
				ch.Sum += BTreeMix(d.Keys[i], lv[i])
			} else if lv[i] != 0 {
				return nil, ch, fmt.Errorf("%s: key %#x not found but value %#x", c.Name(), d.Keys[i], lv[i])
			}
		}
	case BTreeBuild, BTreeInsert, BTreeDelete:
		if ch.Found, ch.Sum, err = btreeProbe(impl, d); err != nil {
			return nil, ch, fmt.Errorf("checking %s: %w", c.Name(), err)
		}
	}
	if st, ok := impl.(btreeInsertStager); ok && c.Op == BTreeInsert {
		r, ok, err := btreeStagedInsertRow(c, impl, st, d, reps, prepare, ch)
		if err != nil {
			return nil, ch, err
		}
		if ok {
			rows = append(rows, r.VsPeer("whole call", whole))
		}
	}
	return rows, ch, nil
}

// btreeProbe looks d's probes up in impl and returns how many were found
// and the mix of their values (BTreeCheck's Found and Sum).
func btreeProbe(impl BTreeImpl, d *BTreeData) (found int, sum uint64, err error) {
	pv, pf := make([]uint64, len(d.Probes)), make([]bool, len(d.Probes))
	if err := impl.Lookup(d.Probes, pv, pf); err != nil {
		return 0, 0, err
	}
	for i, f := range pf {
		if f {
			found++
			sum += BTreeMix(d.Probes[i], pv[i])
		}
	}
	return found, sum, nil
}

// btreeInsertStager is an implementation that inserts pairs from pinned
// staging (the GPU engine; the CPU engine's staging is ordinary memory, no
// row).
type btreeInsertStager interface {
	// StagePairs copies keys and values into the staging buffers, untimed.
	StagePairs(keys, values []uint64) (pinned bool, err error)
	// InsertStaged inserts the staged pairs.
	InsertStaged() error
}

// btreeStagedInsertRow times inserts from pinned staging: the pairs staged
// once, untimed, then whole calls timed, each on a tree prepared as the
// whole call's (prepare), median of reps after DefaultWarmup. The probes
// of impl after the last must find what they found after the whole call
// (ch). No row (ok false) when the staging is not pinned. Its bytes are
// the pairs' (16 a key), all of which move by DMA.
func btreeStagedInsertRow(c BTreeCase, impl BTreeImpl, st btreeInsertStager, d *BTreeData, reps int, prepare func() error, ch BTreeCheck) (r Result, ok bool, err error) {
	pinned, err := st.StagePairs(d.Keys, d.Values)
	if err != nil || !pinned {
		return Result{}, false, err
	}
	wall, err := timeRuns(reps, prepare, st.InsertStaged, nil)
	if err != nil {
		return Result{}, false, err
	}
	found, sum, err := btreeProbe(impl, d)
	if err != nil {
		return Result{}, false, fmt.Errorf("checking %s from pinned staging: %w", c.Name(), err)
	}
	if found != ch.Found || sum != ch.Sum {
		return Result{}, false, fmt.Errorf("%s: from pinned staging the probes found %d (mix %#x), after the whole call %d (mix %#x)", c.Name(), found, sum, ch.Found, ch.Sum)
	}
	return NewResult(c.Name()+": from pinned staging", impl.Name(), int64(c.Batch), 16*int64(c.Batch), Median(wall)), true, nil
}

// btreeStager is an implementation that looks keys up from pinned staging
// (the GPU engine; the CPU engine's staging is ordinary memory, no row).
type btreeStager interface {
	// Stage copies keys into the staging buffers, untimed.
	Stage(keys []uint64) (pinned bool, err error)
	// LookupStaged looks the staged keys up; the answers stay staged.
	LookupStaged() error
	// Staged returns the last staged lookup's answers.
	Staged() (values []uint64, found []uint8)
}

// btreeStagedRow times lookups from pinned staging: the keys staged once,
// untimed, then whole calls timed, median of reps after DefaultWarmup.
// The answers must equal the whole call's (lv, lf). No row (ok false)
// when the staging is not pinned.
func btreeStagedRow(c BTreeCase, name string, st btreeStager, d *BTreeData, reps int, lv []uint64, lf []bool) (r Result, ok bool, err error) {
	pinned, err := st.Stage(d.Keys)
	if err != nil || !pinned {
		return Result{}, false, err
	}
	var ts []float64
	for i := range DefaultWarmup + reps {
		t0 := time.Now()
		if err := st.LookupStaged(); err != nil {
			return Result{}, false, err
		}
		if i >= DefaultWarmup {
			ts = append(ts, time.Since(t0).Seconds())
		}
	}
	vals, found := st.Staged()
	for i := range lv {
		if vals[i] != lv[i] || (found[i] == 1) != lf[i] {
			return Result{}, false, fmt.Errorf("%s: from pinned staging, key %#x: %#x %d, whole call %#x %v", c.Name(), d.Keys[i], vals[i], found[i], lv[i], lf[i])
		}
	}
	up, down := btreeTransferBytes(c)
	return NewResult(c.Name()+": from pinned staging", name, int64(c.Batch), up+down, Median(ts)), true, nil
}

// btreeTransferBytes returns the bytes of a case's Go slices that a GPU
// call's upload and download phases copy (keys, and back for lookups
// values and found flags); 0 where unknown (ranges). Builds and inserts
// count the keys only: the GPU engine uploads the values while it sorts,
// in the sort phase.
func btreeTransferBytes(c BTreeCase) (in, out int64) {
	b := int64(c.Batch)
	switch c.Op {
	case BTreeBuild, BTreeInsert:
		return 8 * b, 0
	case BTreeDelete:
		return 8 * b, 0
	case BTreeLookup:
		return 8 * b, 9 * b
	case BTreeRanges:
		return 16 * b, 0
	}
	return 0, 0
}

// btreeEngine adapts a warpkv btree.Tree to BTreeImpl.
type btreeEngine struct {
	name string
	t    *btree.Tree
	res  *btree.Result  // the ranges' answers, reused from call to call (NewResult: pinned on the GPU engine)
	st   *btree.Staging // LookupStaged's buffers, grown by Stage
	n    int            // keys staged
}

// Stage copies keys into the tree's staging buffers (pinned on the GPU
// engine), grown when short.
func (e *btreeEngine) Stage(keys []uint64) (bool, error) {
	if e.st == nil || len(e.st.Keys) < len(keys) {
		if err := e.st.Free(); err != nil {
			return false, err
		}
		st, err := e.t.NewStaging(len(keys))
		if err != nil {
			return false, err
		}
		e.st = st
	}
	copy(e.st.Keys, keys)
	e.n = len(keys)
	return e.t.Backend() == gpu.BackendGPU, nil
}

// LookupStaged looks the staged keys up.
func (e *btreeEngine) LookupStaged() error { return e.t.LookupStaged(e.st, e.n) }

// StagePairs copies keys and values into the tree's staging buffers
// (pinned on the GPU engine), grown when short.
func (e *btreeEngine) StagePairs(keys, values []uint64) (bool, error) {
	pinned, err := e.Stage(keys)
	if err != nil {
		return false, err
	}
	copy(e.st.Values, values)
	return pinned, nil
}

// InsertStaged inserts the staged pairs.
func (e *btreeEngine) InsertStaged() error { return e.t.InsertStaged(e.st, e.n) }

// Staged returns the staged lookups' answers.
func (e *btreeEngine) Staged() ([]uint64, []uint8) { return e.st.Values[:e.n], e.st.Found[:e.n] }

func (e *btreeEngine) Name() string                       { return e.name }
func (e *btreeEngine) Load(keys, values []uint64) error   { return e.t.Build(keys, values) }
func (e *btreeEngine) Build(keys, values []uint64) error  { return e.t.Build(keys, values) }
func (e *btreeEngine) Insert(keys, values []uint64) error { return e.t.Insert(keys, values) }
func (e *btreeEngine) Delete(keys []uint64) error         { _, err := e.t.Delete(keys); return err }
func (e *btreeEngine) Len() int                           { return e.t.Len() }
func (e *btreeEngine) Close() error                       { return errors.Join(e.res.Free(), e.st.Free(), e.t.Close()) }
func (e *btreeEngine) LastBatch() engine.Timings          { return e.t.LastBatch() }

func (e *btreeEngine) Lookup(keys, values []uint64, found []bool) error {
	return e.t.Lookup(keys, values, found)
}

func (e *btreeEngine) Ranges(los, his []uint64) (int, uint64, error) {
	if e.res == nil {
		e.res = e.t.NewResult()
	}
	r, err := e.t.RangesInto(e.res, los, his, 0)
	if err != nil {
		return 0, 0, err
	}
	k, v := r.Keys, r.Values
	// The checksum (the peers compute theirs inline, the parallel ones on
	// every goroutine) runs over GOMAXPROCS goroutines.
	var mu sync.Mutex
	var s uint64
	par.For(len(k), inputGrain, 0, func(lo, hi int) {
		var part uint64
		for i := lo; i < hi; i++ {
			part += BTreeMix(k[i], v[i])
		}
		mu.Lock()
		s += part
		mu.Unlock()
	})
	return len(k), s, nil
}

// BTreeEngines are warpkv's btree engines chosen by a device option:
// Impls ("cpu", then "gpu" when a GPU is used), Engines (one sentence per
// engine: which and why), GPU (whether a GPU engine is among Impls); Close
// closes the engines, then the device.
type BTreeEngines struct {
	engineSet[BTreeImpl]
}

// OpenBTreeEngines returns the CPU engine (GOMAXPROCS workers, default
// order) and, when device resolves to a GPU (auto with a usable GPU, gpu,
// gpu:N), the GPU engine on it. Close them when done.
func OpenBTreeEngines(device string) (*BTreeEngines, error) {
	c, err := gpu.Choose(device)
	if err != nil {
		return nil, err
	}
	e := &BTreeEngines{engineSet[BTreeImpl]{dev: c.Device}}
	ct, err := btree.Open(btree.Options{Device: "cpu"})
	if err != nil {
		e.Close()
		return nil, err
	}
	e.Impls = append(e.Impls, &btreeEngine{name: "cpu", t: ct})
	e.Engines = append(e.Engines, fmt.Sprintf("cpu: warpkv btree CPU engine, order %d, %d workers (GOMAXPROCS)", ct.Order(), runtime.GOMAXPROCS(0)))
	if c.Device == nil {
		e.Engines = append(e.Engines, "no gpu rows: "+c.Reason)
		return e, nil
	}
	gt, err := btree.Open(btree.Options{GPU: c.Device})
	if err != nil {
		e.Close()
		return nil, err
	}
	e.Impls = append(e.Impls, &btreeEngine{name: "gpu", t: gt})
	e.GPU = true
	e.Engines = append(e.Engines, fmt.Sprintf("gpu: warpkv btree GPU engine, order %d, %s; host-level calls from Go slices, transfers included", gt.Order(), c.Reason))
	return e, nil
}

// RunBTree measures CUBPT (package btree) on the cases of BTreeCases with
// largest tree Options.Size (default BTreeGPUSize with a GPU,
// BTreeCPUSize on the CPU engine alone): the CPU engine and, when the
// device option resolves to a GPU, the GPU engine, or those of them that
// Options.Engines names (the GPU engine alone without a GPU is an error);
// GPU rows carry their ratio to the CPU engine's. Each case's row is a host-level call from Go
// slices timed by wall clock (on the GPU, transfers included), followed
// by one row per phase the tree reports (btree.Tree.LastBatch: upload,
// sort, work, download). An engine operation that says it is not
// implemented (errors.ErrUnsupported, or "not implemented") is skipped
// with a note. Every answer is checked
// (BTreeCase.Validate) and the engines' answers must be equal. Peers
// (tidwall/btree, google/btree) on the same cases: compat/cmd/btreebench.
// Memory: at Size n, about 40n bytes of inputs at the peak (16n of sorted
// tree pairs, 16n of a build's pairs) plus the tree (about 20n bytes).
func RunBTree(o Options) (*Report, error) {
	rep := NewReport("btree", o.reps())
	p := NewProgress(o.Progress)
	if o.Size != 0 && o.Size < BTreeMinSize {
		return nil, fmt.Errorf("bench btree: size %d: want at least %d", o.Size, BTreeMinSize)
	}
	eng, err := OpenBTreeEngines(o.Device)
	if err != nil {
		return nil, fmt.Errorf("bench btree: %w", err)
	}
	defer eng.Close()
	if err := keepEngines(&eng.engineSet, o.Engines, noGPUReason(eng.Engines)); err != nil {
		return nil, fmt.Errorf("bench btree: %w", err)
	}
	size := o.Size
	if size == 0 {
		size = BTreeDefaultSize(eng.GPU)
	}
	rep.Engines = append(rep.Engines, eng.Engines...)
	rep.Notes = append(rep.Notes, BTreeInputNotes()...)
	rep.Notes = append(rep.Notes,
		"rows \"CASE: PHASE\": the engine's own phase times of the same runs (btree.Tree.LastBatch), ratio = the phase's rate over the whole call's (the call's time over the phase's)",
		"tidwall/btree and google/btree on the same cases: cd compat && go run ./cmd/btreebench (same table, ratios to tidwall/btree on one goroutine)")
	reps := func(BTreeImpl) int { return o.reps() }
	err = RunBTreeCases(rep, BTreeCases(size), eng.Impls, reps, p, nil)
	rep.Finish()
	if err != nil {
		return rep, fmt.Errorf("bench btree: %w", err)
	}
	return rep, nil
}

// RunBTreeCases measures every implementation on every case (in.Data,
// RunBTreeCase with reps(impl) timed runs), adding the rows to rep; after
// its case an implementation is emptied (Load of nothing), so that only
// one tree at a time is alive. The first implementation that answers a
// case is the reference: every other's answer must equal its answer, and
// every other's case row carries its ratio to the reference's (named by
// the reference's Name). skip, if not nil, returns why an implementation
// does not run a case ("" to run it); a skip and an operation an
// implementation does not implement become notes (one per reason). An
// implementation that fails a case (an error, an answer that Validate
// rejects or that differs from the reference's) gets no row but a note,
// and the run goes on; the failures are returned together at the end. An
// error making the inputs stops the run.
func RunBTreeCases(rep *Report, cases []BTreeCase, impls []BTreeImpl, reps func(BTreeImpl) int, p *Progress, skip func(BTreeCase, BTreeImpl) string) error {
	in := NewBTreeInputs()
	defer in.Close()
	lastTree := -1
	var d *BTreeData
	prepare := func(c BTreeCase) (err error) {
		runtime.GC() // the last case's tree and inputs
		if c.Op == BTreeBuild || c.Tree != lastTree {
			p.Printf("inputs: %s", c.Name())
			lastTree = c.Tree
		}
		d, err = in.Data(c)
		return err
	}
	run := func(c BTreeCase, im BTreeImpl) ([]Result, BTreeCheck, error) {
		rows, ch, err := RunBTreeCase(c, im, in, d, reps(im))
		if lerr := im.Load(nil, nil); err == nil {
			err = lerr
		}
		return rows, ch, err
	}
	return runCases(rep, p, cases, impls, skip, prepare, run)
}
