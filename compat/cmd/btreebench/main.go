// Command btreebench measures github.com/tidwall/btree and
// github.com/google/btree on the cases of warpkv's `warpkv bench btree`
// suite (the same operations, sizes, seeds and data: bench.BTreeCases and
// bench.BTreeInputs) side by side with warpkv's CPU engine and, when the
// device option resolves to a GPU, its GPU engine, in one run, and prints
// the rows in the suite's table format. Every case's row carries its ratio
// to tidwall/btree on one goroutine on the same case (or, for cases too
// large for the single-goroutine peers, to the first implementation that
// ran it, named in the ratio column).
//
//	cd compat && go run ./cmd/btreebench --size 1000000
//	cd compat && go run ./cmd/btreebench --device gpu --single-max 5000000 --peer-reps 1 --deadline 7m
//
// --single-max bounds the cases the single-goroutine peers run (at 100M
// keys one goroutine takes minutes a case), --single-ops names operations
// they run at every size anyway (lookup,ranges: cheap next to the tree's
// load); --peer-reps sets the peers'
// timed runs apart from warpkv's (--reps); --deadline stops the peers from
// starting cases after that much time, while warpkv's engines still run
// every case. Each of these leaves a note in the output.
//
// Each peer runs twice: on one goroutine, one key at a time (its plain
// use), and in the best parallel use a user could make of it: P =
// GOMAXPROCS independent trees, tree p owning the p-th of P equal slices
// of the key space (range partitioning keeps ordered scans possible);
// batches are split by a parallel stable scatter (timed), then each
// goroutine applies its part to its own tree; lookups and range queries
// are split over P goroutines that read the shared trees. Builds sort the
// pairs (slices.SortFunc; the build inputs have distinct keys) and fill
// an empty tree in ascending order: tidwall's Load (its bulk append of
// sorted items), google's ReplaceOrInsert (it has no bulk load);
// in parallel, each goroutine sorts and fills its own part after the
// scatter. Cases on a tree start from a tree filled the same way from
// sorted pairs, outside the timed region.
//
// Every implementation's answer on a case (tree size and a checksum of 65536
// probe lookups after builds, inserts and deletes; found count and value
// checksum of lookups; pair count and checksum of ranges) must equal the
// first one's: a wrong implementation posts no figure but a FAILED note,
// and the command exits with status 1 after printing the rest.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	gbtree "github.com/google/btree"
	tbtree "github.com/tidwall/btree"

	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/compat/internal/peerbench"
)

func main() {
	f := peerbench.Register(flag.CommandLine, peerbench.Help{
		Size:      "largest tree in keys (0: as warpkv bench btree: 100M with a GPU, else 10M)",
		SingleMax: "largest case (tree or batch, in keys) the single-goroutine peers run",
		Peers:     "tidwall,google",
		PeerNames: "tidwall, google",
	})
	deadline := flag.Duration("deadline", 0, "peers start no case after this much time (0: no limit); warpkv's engines run every case")
	singleOps := flag.String("single-ops", "", "operations the single-goroutine peers run at any size, comma-separated (build, insert, delete, lookup, ranges)")
	flag.Parse()
	if !f.Check(flag.CommandLine) || *deadline < 0 {
		flag.Usage()
		os.Exit(2)
	}
	rep, err := run(config{size: f.Size, reps: f.Reps, peerReps: f.PeerReps, device: f.Device, singleMax: f.SingleMax,
		singleOps: *singleOps, peers: f.Peers, deadline: *deadline}, f.Progress())
	if rep != nil {
		header := fmt.Sprintf("median of %d runs after a warm-up run; ratio: throughput relative to the named reference", rep.Reps)
		if perr := peerbench.Print(os.Stdout, rep, header, f.JSON); perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "btreebench:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	size, reps, peerReps int
	device               string
	singleMax            int
	singleOps            string // operations the single-goroutine peers run at any size
	peers                string
	deadline             time.Duration // peers start no case after it; 0: none
}

// run measures every implementation on every case.
func run(cfg config, p *bench.Progress) (*bench.Report, error) {
	start := time.Now()
	rep := bench.NewReport("btree-peers", cfg.reps)
	if cfg.size != 0 && cfg.size < bench.BTreeMinSize {
		return nil, fmt.Errorf("size %d: want at least %d", cfg.size, bench.BTreeMinSize)
	}
	eng, err := bench.OpenBTreeEngines(cfg.device)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	size := cfg.size
	if size == 0 {
		size = bench.BTreeDefaultSize(eng.GPU)
	}
	P := runtime.GOMAXPROCS(0)
	var impls []bench.BTreeImpl
	for _, name := range strings.Split(cfg.peers, ",") {
		name = strings.TrimSpace(name)
		var mk func() omap
		switch name {
		case "":
			continue
		case "tidwall":
			mk = newTidwall
			rep.Engines = append(rep.Engines, fmt.Sprintf("tidwall: github.com/tidwall/btree %s, Map[uint64, uint64] (degree 32: up to 63 items a node); Set, Delete, Get, Ascend one key at a time; builds: sort, then Load (bulk append of sorted items)", modVersion("github.com/tidwall/btree")))
		case "google":
			mk = newGoogle
			rep.Engines = append(rep.Engines, fmt.Sprintf("google: github.com/google/btree %s, BTreeG[pair] (degree 32: up to 63 items a node); ReplaceOrInsert, Delete, Get, AscendGreaterOrEqual one key at a time; builds: sort, then ReplaceOrInsert in ascending order (no bulk load)", modVersion("github.com/google/btree")))
		default:
			return nil, fmt.Errorf("unknown peer %q (want tidwall, google)", name)
		}
		impls = append(impls,
			&single{name: name + ", 1 goroutine", mk: mk},
			&parallel{name: fmt.Sprintf("%s, %d goroutines", name, P), mk: mk, p: P})
	}
	if len(impls) > 0 {
		rep.Engines = append(rep.Engines, fmt.Sprintf("PEER, %d goroutines: %d trees of the peer, tree i owning the i-th 1/%d of the key space; batches split by a parallel stable scatter (timed), one goroutine per tree; lookups and ranges split over %d goroutines reading the shared trees", P, P, P, P))
	}
	rep.Engines = append(rep.Engines, eng.Engines...)
	impls = append(impls, eng.Impls...)
	rep.Notes = append(rep.Notes, bench.BTreeInputNotes()...)
	rep.Notes = append(rep.Notes,
		"rows \"CASE: PHASE\": warpkv's own phase times of the same runs (btree.Tree.LastBatch), ratio = the phase's rate over the whole call's")
	isPeer := func(im bench.BTreeImpl) bool {
		switch im.(type) {
		case *single, *parallel:
			return true
		}
		return false
	}
	if cfg.peerReps == 0 {
		cfg.peerReps = cfg.reps
	}
	if cfg.peerReps != cfg.reps {
		rep.Notes = append(rep.Notes, fmt.Sprintf("peers: median of %d runs after a warm-up run (warpkv's engines: %d)", cfg.peerReps, cfg.reps))
	}
	reps := func(im bench.BTreeImpl) int {
		if isPeer(im) {
			return cfg.peerReps
		}
		return cfg.reps
	}
	var anySize []string
	for _, op := range strings.Split(cfg.singleOps, ",") {
		switch op = strings.TrimSpace(op); bench.BTreeOp(op) {
		case "":
		case bench.BTreeBuild, bench.BTreeInsert, bench.BTreeDelete, bench.BTreeLookup, bench.BTreeRanges:
			anySize = append(anySize, op)
		default:
			return nil, fmt.Errorf("unknown operation %q in --single-ops", op)
		}
	}
	if len(anySize) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("single-goroutine peers run the %s cases at every size (--single-ops)", strings.Join(anySize, ", ")))
	}
	skip := func(c bench.BTreeCase, im bench.BTreeImpl) string {
		if isPeer(im) && cfg.deadline > 0 && time.Since(start) > cfg.deadline {
			return fmt.Sprintf("peers started no case after %v (--deadline): their rows of the later cases are missing", cfg.deadline)
		}
		if _, ok := im.(*single); ok && c.Size() > cfg.singleMax && !slices.Contains(anySize, string(c.Op)) {
			return fmt.Sprintf("single-goroutine peers run only cases of at most %s keys (--single-max); larger cases' ratios are to the first implementation that ran them", bench.SI(float64(cfg.singleMax)))
		}
		return ""
	}
	err = bench.RunBTreeCases(rep, bench.BTreeCases(size), impls, reps, p, skip)
	if err == nil {
		rep.Notes = append(rep.Notes, "every implementation's answer on every case it ran (tree size and checksum of 65536 probe lookups; lookup found count and value checksum; range pair count and checksum) equals the first one's")
	}
	rep.Finish()
	return rep, err
}

// modVersion returns the version of a module the binary was built with.
func modVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return "(version unknown)"
}

// pair is a key and its value.
type pair struct{ k, v uint64 }

func comparePairs(a, b pair) int { return cmp.Compare(a.k, b.k) }

// omap is one tree of a peer library.
type omap interface {
	set(k, v uint64)
	get(k uint64) (uint64, bool)
	del(k uint64)
	// fill appends a key greater than every key in the tree: the
	// library's fastest way to fill a tree from sorted pairs.
	fill(k, v uint64)
	// ascend calls fn on the pairs with lo <= key <= hi in key order.
	ascend(lo, hi uint64, fn func(k, v uint64))
	len() int
}

type tidwallMap struct{ m *tbtree.Map[uint64, uint64] }

func newTidwall() omap { return tidwallMap{tbtree.NewMap[uint64, uint64](32)} }

func (t tidwallMap) set(k, v uint64)             { t.m.Set(k, v) }
func (t tidwallMap) get(k uint64) (uint64, bool) { return t.m.Get(k) }
func (t tidwallMap) del(k uint64)                { t.m.Delete(k) }
func (t tidwallMap) fill(k, v uint64)            { t.m.Load(k, v) }
func (t tidwallMap) len() int                    { return t.m.Len() }
func (t tidwallMap) ascend(lo, hi uint64, fn func(k, v uint64)) {
	t.m.Ascend(lo, func(k, v uint64) bool {
		if k > hi {
			return false
		}
		fn(k, v)
		return true
	})
}

type googleMap struct{ t *gbtree.BTreeG[pair] }

func newGoogle() omap {
	return googleMap{gbtree.NewG(32, func(a, b pair) bool { return a.k < b.k })}
}

func (g googleMap) set(k, v uint64) { g.t.ReplaceOrInsert(pair{k, v}) }
func (g googleMap) get(k uint64) (uint64, bool) {
	p, ok := g.t.Get(pair{k: k})
	return p.v, ok
}
func (g googleMap) del(k uint64)     { g.t.Delete(pair{k: k}) }
func (g googleMap) fill(k, v uint64) { g.t.ReplaceOrInsert(pair{k, v}) }
func (g googleMap) len() int         { return g.t.Len() }
func (g googleMap) ascend(lo, hi uint64, fn func(k, v uint64)) {
	g.t.AscendGreaterOrEqual(pair{k: lo}, func(p pair) bool {
		if p.k > hi {
			return false
		}
		fn(p.k, p.v)
		return true
	})
}

// single is a peer on one goroutine.
type single struct {
	name string
	mk   func() omap
	m    omap
}

func (s *single) Name() string { return s.name }
func (s *single) Close() error { s.m = nil; return nil }

func (s *single) Len() int {
	if s.m == nil {
		return 0
	}
	return s.m.len()
}

func (s *single) Load(keys, values []uint64) error {
	s.m = nil // garbage before the new tree is made
	s.m = s.mk()
	for i, k := range keys {
		s.m.fill(k, values[i])
	}
	return nil
}

func (s *single) Build(keys, values []uint64) error {
	ps := make([]pair, len(keys))
	for i, k := range keys {
		ps[i] = pair{k, values[i]}
	}
	slices.SortFunc(ps, comparePairs)
	s.m = s.mk()
	for _, p := range ps {
		s.m.fill(p.k, p.v)
	}
	return nil
}

func (s *single) Insert(keys, values []uint64) error {
	for i, k := range keys {
		s.m.set(k, values[i])
	}
	return nil
}

func (s *single) Delete(keys []uint64) error {
	for _, k := range keys {
		s.m.del(k)
	}
	return nil
}

func (s *single) Lookup(keys, values []uint64, found []bool) error {
	for i, k := range keys {
		values[i], found[i] = s.m.get(k)
	}
	return nil
}

func (s *single) Ranges(los, his []uint64) (int, uint64, error) {
	n, sum := 0, uint64(0)
	for i, lo := range los {
		if his[i] <= lo { // half-open: empty
			continue
		}
		s.m.ascend(lo, his[i]-1, func(k, v uint64) {
			n++
			sum += bench.BTreeMix(k, v)
		})
	}
	return n, sum, nil
}

// parallel is a peer as P trees, tree i owning the keys k with
// part(k) = floor(k * P / 2^64) = i, used by P goroutines.
type parallel struct {
	name  string
	mk    func() omap
	p     int
	parts []omap
}

func (t *parallel) Name() string { return t.name }
func (t *parallel) Close() error { t.parts = nil; return nil }

// part returns the tree owning key k.
func (t *parallel) part(k uint64) int {
	hi, _ := bits.Mul64(k, uint64(t.p))
	return int(hi)
}

func (t *parallel) Len() int {
	n := 0
	for _, m := range t.parts {
		n += m.len()
	}
	return n
}

// each runs fn(i) for i in [0, n) on n goroutines and waits.
func each(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}

// chunk returns the i-th of p contiguous chunks of [0, n).
func chunk(n, p, i int) (lo, hi int) { return n * i / p, n * (i + 1) / p }

func (t *parallel) Load(keys, values []uint64) error {
	t.parts = nil
	t.parts = make([]omap, t.p)
	each(t.p, func(i int) {
		lo := sort.Search(len(keys), func(j int) bool { return t.part(keys[j]) >= i })
		hi := sort.Search(len(keys), func(j int) bool { return t.part(keys[j]) > i })
		m := t.mk()
		for j := lo; j < hi; j++ {
			m.fill(keys[j], values[j])
		}
		t.parts[i] = m
	})
	return nil
}

// scatter splits the pairs by part, keeping their order within a part
// (so that the last occurrence of a key is applied last): a count pass
// and a write pass over P chunks, P goroutines each.
func (t *parallel) scatter(keys, values []uint64) [][]pair {
	n, P := len(keys), t.p
	counts := make([][]int, P)
	each(P, func(c int) {
		cnt := make([]int, P)
		lo, hi := chunk(n, P, c)
		for _, k := range keys[lo:hi] {
			cnt[t.part(k)]++
		}
		counts[c] = cnt
	})
	starts := make([]int, P+1)
	pos := make([][]int, P)
	for c := range P {
		pos[c] = make([]int, P)
	}
	at := 0
	for q := range P {
		starts[q] = at
		for c := range P {
			pos[c][q] = at
			at += counts[c][q]
		}
	}
	starts[P] = at
	out := make([]pair, n)
	each(P, func(c int) {
		w := pos[c]
		lo, hi := chunk(n, P, c)
		for i := lo; i < hi; i++ {
			q := t.part(keys[i])
			var v uint64
			if values != nil {
				v = values[i]
			}
			out[w[q]] = pair{keys[i], v}
			w[q]++
		}
	})
	parts := make([][]pair, P)
	for q := range P {
		parts[q] = out[starts[q]:starts[q+1]]
	}
	return parts
}

func (t *parallel) Build(keys, values []uint64) error {
	parts := t.scatter(keys, values)
	t.parts = make([]omap, t.p)
	each(t.p, func(i int) {
		ps := parts[i]
		slices.SortFunc(ps, comparePairs)
		m := t.mk()
		for _, p := range ps {
			m.fill(p.k, p.v)
		}
		t.parts[i] = m
	})
	return nil
}

func (t *parallel) Insert(keys, values []uint64) error {
	parts := t.scatter(keys, values)
	each(t.p, func(i int) {
		m := t.parts[i]
		for _, p := range parts[i] {
			m.set(p.k, p.v)
		}
	})
	return nil
}

func (t *parallel) Delete(keys []uint64) error {
	parts := t.scatter(keys, nil)
	each(t.p, func(i int) {
		m := t.parts[i]
		for _, p := range parts[i] {
			m.del(p.k)
		}
	})
	return nil
}

func (t *parallel) Lookup(keys, values []uint64, found []bool) error {
	each(t.p, func(c int) {
		lo, hi := chunk(len(keys), t.p, c)
		for i := lo; i < hi; i++ {
			values[i], found[i] = t.parts[t.part(keys[i])].get(keys[i])
		}
	})
	return nil
}

func (t *parallel) Ranges(los, his []uint64) (int, uint64, error) {
	ns, sums := make([]int, t.p), make([]uint64, t.p)
	each(t.p, func(c int) {
		n, sum := 0, uint64(0)
		fn := func(k, v uint64) {
			n++
			sum += bench.BTreeMix(k, v)
		}
		lo, hi := chunk(len(los), t.p, c)
		for i := lo; i < hi; i++ {
			if his[i] <= los[i] { // half-open: empty
				continue
			}
			for q := t.part(los[i]); q <= t.part(his[i]-1); q++ {
				t.parts[q].ascend(los[i], his[i]-1, fn)
			}
		}
		ns[c], sums[c] = n, sum
	})
	n, sum := 0, uint64(0)
	for c := range t.p {
		n += ns[c]
		sum += sums[c]
	}
	return n, sum, nil
}
