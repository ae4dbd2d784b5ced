// Command artbench measures Go ordered indexes users know on the cases of
// warpkv's `warpkv bench art` suite (the same operations, sizes, seeds
// and data: bench.ARTCases and bench.ARTInputs) side by side with
// warpkv's CPU engine and, when the device option resolves to a GPU, its
// GPU engine, in one run, and prints the rows in the suite's table format.
//
//	cd compat && go run ./cmd/artbench --size 1000000
//	cd compat && go run ./cmd/artbench --device gpu --size 100000000 --single-max 10000000 --peer-reps 1
//	cd compat && go run ./cmd/artbench --device gpu --size 100000000 --engines gpu --peers ""
//	cd compat && go run ./cmd/artbench --device gpu --size 100000000 --cases '16 B keys, in 100M$' --single-max 100000000
//
// Peers: hashicorp/go-immutable-radix v2 (a radix tree; batches of writes
// in one transaction), tidwall/btree's Map over string keys, and a Go map
// (point operations only). Each runs on one goroutine, and for lookups,
// ranges and prefix scans also with GOMAXPROCS concurrent readers of the
// same index ("P readers"). github.com/plar/go-adaptive-radix-tree, the
// issue's first choice of peer, is not served by the Go module proxy this
// project builds with (a note in the output says so).
//
// Every case's row carries its ratio to the first implementation that
// answered it (go-immutable-radix on one goroutine where it runs; GPU
// rows: to the pinned transfer limit, with a kernels row against the
// random gather rate). Every implementation's answer (tree size, found
// count and checksum) must equal the first one's: a wrong one posts no
// figure but a FAILED note, and the command exits with status 1. --cases
// keeps the cases whose name matches a regular expression (one tree shape
// at 100M keys, for example, instead of six). A short
// table last sums the rows up against the targets (bench.ARTSummary:
// the GPU engine's rows, the GPU engine against go-immutable-radix on one
// goroutine, the CPU engine's lookups against it per core).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unsafe"

	iradix "github.com/hashicorp/go-immutable-radix/v2"
	tbtree "github.com/tidwall/btree"

	"github.com/warpkv/warpkv/art"
	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/compat/internal/peerbench"
	"github.com/warpkv/warpkv/internal/par"
)

func main() {
	f := peerbench.Register(flag.CommandLine, peerbench.Help{
		Size:      "largest tree in keys (0: as warpkv bench art: 100M with a GPU, else 1M)",
		SingleMax: "largest case (tree or batch, in keys) the peers run",
		Peers:     "iradix,tidwall,map",
		PeerNames: "iradix, tidwall, map",
	})
	engines := flag.String("engines", "", "warpkv engines to run, comma-separated: cpu, gpu (default: every one the device allows)")
	cases := flag.String("cases", "", "run only the cases whose name matches this `REGEXP` (e.g. '16 B keys, in' for the 16-byte tree; default: all)")
	flag.Parse()
	if !f.Check(flag.CommandLine) {
		flag.Usage()
		os.Exit(2)
	}
	match, err := regexp.Compile(*cases)
	if err != nil {
		fmt.Fprintf(os.Stderr, "artbench: --cases %q: %v\n", *cases, err)
		os.Exit(2)
	}
	rep, err := run(config{size: f.Size, reps: f.Reps, peerReps: f.PeerReps, device: f.Device, engines: *engines, singleMax: f.SingleMax, peers: f.Peers, cases: match}, f.Progress())
	if rep != nil {
		header := fmt.Sprintf("median of %d runs after a warm-up run; ratio: throughput relative to the named reference", rep.Reps)
		if perr := peerbench.Print(os.Stdout, rep, header, f.JSON); perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "artbench:", err)
		os.Exit(1)
	}
}

type config struct {
	size, reps, peerReps int
	device, engines      string
	singleMax            int
	peers                string
	cases                *regexp.Regexp // the cases run, by name
}

// run measures the peers and warpkv's engines on the suite's cases.
func run(cfg config, p *bench.Progress) (*bench.Report, error) {
	eng, err := bench.OpenARTEngines(cfg.device, cfg.engines)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	size := cfg.size
	if size == 0 {
		size = bench.ARTDefaultSize(eng.GPU)
	}
	readers := runtime.GOMAXPROCS(0)
	var impls []bench.ARTImpl
	for _, name := range strings.Split(cfg.peers, ",") {
		switch name = strings.TrimSpace(name); name {
		case "":
		case "iradix":
			impls = append(impls, &radixImpl{readers: 1}, &radixImpl{readers: readers})
		case "tidwall":
			impls = append(impls, &btreeImpl{readers: 1}, &btreeImpl{readers: readers})
		case "map":
			impls = append(impls, &mapImpl{readers: 1}, &mapImpl{readers: readers})
		default:
			return nil, fmt.Errorf("unknown peer %q (want iradix, tidwall, map)", name)
		}
	}
	impls = append(impls, eng.Impls...)
	rep := bench.NewReport("art-peers", cfg.reps)
	rep.Engines = append(rep.Engines, eng.Engines...)
	rep.Engines = append(rep.Engines,
		"iradix: github.com/hashicorp/go-immutable-radix/v2 (a batch of writes in one transaction)",
		"tidwall: github.com/tidwall/btree Map[string]uint64 (Load of sorted pairs for builds)",
		"map: Go map[string]uint64 (point operations only)",
		fmt.Sprintf("P readers: lookups, ranges and prefix scans split over %d goroutines reading one index", readers))
	rep.Notes = append(rep.Notes, bench.ARTInputNotes()...)
	rep.Notes = append(rep.Notes, "github.com/plar/go-adaptive-radix-tree: not served by the Go module proxy used to build this project, so no plar rows; go-immutable-radix stands in as the radix tree peer")
	skip := func(c bench.ARTCase, im bench.ARTImpl) string {
		var readers int
		switch x := im.(type) {
		case *radixImpl:
			readers = x.readers
		case *btreeImpl:
			readers = x.readers
		case *mapImpl:
			readers = x.readers
			if c.Op == bench.ARTRanges || c.Op == bench.ARTPrefix {
				return "map: no ordered operations (ranges, prefix scans)"
			}
		default:
			return ""
		}
		if readers > 1 && c.Op != bench.ARTLookup && c.Op != bench.ARTMiss && c.Op != bench.ARTRanges && c.Op != bench.ARTPrefix {
			return "P readers: read-only cases only"
		}
		if max(c.Tree, c.Batch) > cfg.singleMax {
			return fmt.Sprintf("peers: no cases above %s keys (--single-max)", bench.SI(float64(cfg.singleMax)))
		}
		return ""
	}
	reps := func(im bench.ARTImpl) int {
		switch im.(type) {
		case *radixImpl, *btreeImpl, *mapImpl:
			return cfg.peerReps
		}
		return cfg.reps
	}
	var cases []bench.ARTCase
	for _, c := range bench.ARTCases(size) {
		if cfg.cases == nil || cfg.cases.MatchString(c.Name()) {
			cases = append(cases, c)
		}
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("no case matches --cases %q", cfg.cases)
	}
	if cfg.cases != nil && cfg.cases.String() != "" {
		rep.Notes = append(rep.Notes, fmt.Sprintf("only the cases matching %q (--cases)", cfg.cases))
	}
	err = bench.RunARTCases(rep, cases, impls, reps, eng.Limits, p, skip)
	peer := ""
	if slices.ContainsFunc(impls, func(im bench.ARTImpl) bool { return im.Name() == "iradix, 1 goroutine" }) {
		peer = "iradix, 1 goroutine"
	}
	rep.Summary, rep.SummaryTitle = bench.ARTSummary(rep.Results, size, peer)
	rep.Finish()
	return rep, err
}

// sortedPairs returns the pairs' indices in key order.
func sortedPairs(keys art.Keys) []int {
	idx := make([]int, keys.Len())
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return bytes.Compare(keys.At(a), keys.At(b)) })
	return idx
}

// queries answers read-only queries over readers goroutines and sums the
// pairs and checksums.
func queries(readers, n int, one func(i int) (int, uint64)) (int, uint64) {
	var mu sync.Mutex
	total, sum := 0, uint64(0)
	par.Ranges(n, par.Parts(n, 1024, readers), func(_, lo, hi int) {
		c, s := 0, uint64(0)
		for i := lo; i < hi; i++ {
			a, b := one(i)
			c += a
			s += b
		}
		mu.Lock()
		total, sum = total+c, sum+s
		mu.Unlock()
	})
	return total, sum
}

func readerName(base string, readers int) string {
	if readers == 1 {
		return base + ", 1 goroutine"
	}
	return fmt.Sprintf("%s, %d readers", base, readers)
}

// radixImpl is hashicorp/go-immutable-radix.
type radixImpl struct {
	readers int
	t       *iradix.Tree[uint64]
}

func (r *radixImpl) Name() string { return readerName("iradix", r.readers) }
func (r *radixImpl) Len() int {
	if r.t == nil {
		return 0
	}
	return r.t.Len()
}
func (r *radixImpl) Close() error { r.t = nil; return nil }
func (r *radixImpl) Build(keys art.Keys, values []uint64) error {
	r.t = nil
	runtime.GC()
	txn := iradix.New[uint64]().Txn()
	for _, i := range sortedPairs(keys) {
		txn.Insert(slices.Clone(keys.At(i)), values[i])
	}
	r.t = txn.Commit()
	return nil
}
func (r *radixImpl) Insert(keys art.Keys, values []uint64) error {
	txn := r.t.Txn()
	for i := range keys.Len() {
		txn.Insert(slices.Clone(keys.At(i)), values[i])
	}
	r.t = txn.Commit()
	return nil
}
func (r *radixImpl) Update(keys art.Keys, values []uint64) error {
	txn := r.t.Txn()
	for i := range keys.Len() {
		if _, ok := txn.Get(keys.At(i)); ok {
			txn.Insert(slices.Clone(keys.At(i)), values[i])
		}
	}
	r.t = txn.Commit()
	return nil
}
func (r *radixImpl) Delete(keys art.Keys) error {
	txn := r.t.Txn()
	for i := range keys.Len() {
		txn.Delete(keys.At(i))
	}
	r.t = txn.Commit()
	return nil
}
func (r *radixImpl) Lookup(keys art.Keys, values []uint64, found []bool) error {
	t := r.t
	par.Ranges(keys.Len(), par.Parts(keys.Len(), 1024, r.readers), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			values[i], found[i] = t.Get(keys.At(i))
		}
	})
	return nil
}
func (r *radixImpl) Ranges(los art.Keys, limit int) (int, uint64, error) {
	return r.scan(los, limit, (*iradix.Iterator[uint64]).SeekLowerBound)
}
func (r *radixImpl) Prefix(ps art.Keys, limit int) (int, uint64, error) {
	return r.scan(ps, limit, (*iradix.Iterator[uint64]).SeekPrefix)
}

// scan answers one query a key of qs: the count and checksum of the first
// limit pairs of an iterator that seek places at the query (its lower
// bound, or its prefix).
func (r *radixImpl) scan(qs art.Keys, limit int, seek func(*iradix.Iterator[uint64], []byte)) (int, uint64, error) {
	c, s := queries(r.readers, qs.Len(), func(i int) (int, uint64) {
		it := r.t.Root().Iterator()
		seek(it, qs.At(i))
		n, sum := 0, uint64(0)
		for n < limit {
			k, v, ok := it.Next()
			if !ok {
				break
			}
			n, sum = n+1, sum+bench.ARTMix(k, v)
		}
		return n, sum
	})
	return c, s, nil
}

// btreeImpl is tidwall/btree's Map over string keys.
type btreeImpl struct {
	readers int
	m       *tbtree.Map[string, uint64]
}

// view is a key as a string without a copy (for reads that keep nothing).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func (b *btreeImpl) Name() string { return readerName("tidwall", b.readers) }
func (b *btreeImpl) Len() int {
	if b.m == nil {
		return 0
	}
	return b.m.Len()
}
func (b *btreeImpl) Close() error { b.m = nil; return nil }
func (b *btreeImpl) Build(keys art.Keys, values []uint64) error {
	b.m = nil
	runtime.GC()
	b.m = new(tbtree.Map[string, uint64])
	for _, i := range sortedPairs(keys) {
		b.m.Load(string(keys.At(i)), values[i])
	}
	return nil
}
func (b *btreeImpl) Insert(keys art.Keys, values []uint64) error {
	for i := range keys.Len() {
		b.m.Set(string(keys.At(i)), values[i])
	}
	return nil
}
func (b *btreeImpl) Update(keys art.Keys, values []uint64) error {
	for i := range keys.Len() {
		if _, ok := b.m.Get(view(keys.At(i))); ok {
			b.m.Set(string(keys.At(i)), values[i])
		}
	}
	return nil
}
func (b *btreeImpl) Delete(keys art.Keys) error {
	for i := range keys.Len() {
		b.m.Delete(view(keys.At(i)))
	}
	return nil
}
func (b *btreeImpl) Lookup(keys art.Keys, values []uint64, found []bool) error {
	par.Ranges(keys.Len(), par.Parts(keys.Len(), 1024, b.readers), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			values[i], found[i] = b.m.Get(view(keys.At(i)))
		}
	})
	return nil
}
func (b *btreeImpl) Ranges(los art.Keys, limit int) (int, uint64, error) {
	return b.scan(los, limit, false)
}
func (b *btreeImpl) Prefix(ps art.Keys, limit int) (int, uint64, error) {
	return b.scan(ps, limit, true)
}

// scan answers one query a key of qs: the count and checksum of the first
// limit pairs from the query on, those that start with it if prefix.
func (b *btreeImpl) scan(qs art.Keys, limit int, prefix bool) (int, uint64, error) {
	c, s := queries(b.readers, qs.Len(), func(i int) (int, uint64) {
		q := view(qs.At(i))
		n, sum := 0, uint64(0)
		b.m.Ascend(q, func(k string, v uint64) bool {
			if n == limit || (prefix && !strings.HasPrefix(k, q)) {
				return false
			}
			n, sum = n+1, sum+bench.ARTMix([]byte(k), v)
			return true
		})
		return n, sum
	})
	return c, s, nil
}

// mapImpl is a Go map.
type mapImpl struct {
	readers int
	m       map[string]uint64
}

func (m *mapImpl) Name() string { return readerName("map", m.readers) }
func (m *mapImpl) Len() int     { return len(m.m) }
func (m *mapImpl) Close() error { m.m = nil; return nil }
func (m *mapImpl) Build(keys art.Keys, values []uint64) error {
	m.m = nil
	runtime.GC()
	m.m = make(map[string]uint64, keys.Len())
	return m.Insert(keys, values)
}
func (m *mapImpl) Insert(keys art.Keys, values []uint64) error {
	for i := range keys.Len() {
		m.m[string(keys.At(i))] = values[i]
	}
	return nil
}
func (m *mapImpl) Update(keys art.Keys, values []uint64) error {
	for i := range keys.Len() {
		if _, ok := m.m[string(keys.At(i))]; ok {
			m.m[string(keys.At(i))] = values[i]
		}
	}
	return nil
}
func (m *mapImpl) Delete(keys art.Keys) error {
	for i := range keys.Len() {
		delete(m.m, string(keys.At(i)))
	}
	return nil
}
func (m *mapImpl) Lookup(keys art.Keys, values []uint64, found []bool) error {
	par.Ranges(keys.Len(), par.Parts(keys.Len(), 1024, m.readers), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			values[i], found[i] = m.m[string(keys.At(i))]
		}
	})
	return nil
}
func (m *mapImpl) Ranges(art.Keys, int) (int, uint64, error) {
	return 0, 0, fmt.Errorf("map: no ranges")
}
func (m *mapImpl) Prefix(art.Keys, int) (int, uint64, error) {
	return 0, 0, fmt.Errorf("map: no prefix scans")
}
