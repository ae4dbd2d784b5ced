package btree

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	tbtree "github.com/tidwall/btree"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/enginetest"
	"github.com/warpkv/warpkv/internal/gputest"
)

// The differential tests: random batch sequences (builds, inserts and
// deletes, each followed by lookups and range queries) go to a reference
// model (tidwall/btree), the CPU engine and the GPU engine through
// internal/enginetest; every answer is compared with the model's, every
// tree's invariants are checked after every batch, and the GPU engine's
// node arrays must equal the CPU engine's word for word.

// op is a batch's change to the tree.
type op int

const (
	opBuild op = iota
	opInsert
	opDelete
)

// batch is one step of a sequence: a change, then the reads whose answers
// are compared.
type batch struct {
	op     op
	keys   []uint64
	values []uint64 // build and insert
	gets   []uint64 // keys looked up after the change
	los    []uint64 // range queries after the change
	his    []uint64
	limits []int // each range query is asked with every limit
}

// answer is what a tree says after a batch.
type answer struct {
	n          int
	allK, allV []uint64 // Range over every key
	getV       []uint64
	getF       []bool
	rng        []rangeAnswer // per limit
}

// rangeAnswer is the answer to the batch's range queries with one limit:
// Ranges' result and each query's Range.
type rangeAnswer struct {
	keys, values []uint64
	offsets      []int
	oneK, oneV   [][]uint64
}

// compareAnswers describes how got differs from want ("" when equal).
func compareAnswers(want, got answer) string {
	switch {
	case want.n != got.n:
		return fmt.Sprintf("Len %d, want %d", got.n, want.n)
	case !slices.Equal(want.allK, got.allK) || !slices.Equal(want.allV, got.allV):
		return fmt.Sprintf("contents differ: %d pairs, want %d", len(got.allK), len(want.allK))
	}
	for i := range want.getV {
		if want.getV[i] != got.getV[i] || want.getF[i] != got.getF[i] {
			return fmt.Sprintf("lookup %d: %d, %v; want %d, %v", i, got.getV[i], got.getF[i], want.getV[i], want.getF[i])
		}
	}
	for l := range want.rng {
		w, g := want.rng[l], got.rng[l]
		if !slices.Equal(w.keys, g.keys) || !slices.Equal(w.values, g.values) || !slices.Equal(w.offsets, g.offsets) {
			return fmt.Sprintf("Ranges (limit case %d): %d pairs, want %d (offsets equal %v)", l, len(g.keys), len(w.keys), slices.Equal(w.offsets, g.offsets))
		}
		for i := range w.oneK {
			if !slices.Equal(w.oneK[i], g.oneK[i]) || !slices.Equal(w.oneV[i], g.oneV[i]) {
				return fmt.Sprintf("Range %d (limit case %d): %d pairs, want %d", i, l, len(g.oneK[i]), len(w.oneK[i]))
			}
		}
	}
	return ""
}

// model is the reference: tidwall/btree.
type model struct{ m tbtree.Map[uint64, uint64] }

func (m *model) Apply(b batch) (answer, error) {
	switch b.op {
	case opBuild:
		m.m.Clear()
		fallthrough
	case opInsert:
		for i, k := range b.keys {
			m.m.Set(k, b.values[i])
		}
	case opDelete:
		for _, k := range b.keys {
			m.m.Delete(k)
		}
	}
	a := answer{n: m.m.Len(), allK: m.m.Keys(), allV: m.m.Values()}
	a.getV, a.getF = make([]uint64, len(b.gets)), make([]bool, len(b.gets))
	for i, k := range b.gets {
		a.getV[i], a.getF[i] = m.m.Get(k)
	}
	for _, limit := range b.limits {
		r := rangeAnswer{keys: []uint64{}, values: []uint64{}, offsets: []int{0}}
		for i := range b.los {
			k, v := m.rangeOf(b.los[i], b.his[i], limit)
			r.keys, r.values = append(r.keys, k...), append(r.values, v...)
			r.offsets = append(r.offsets, len(r.keys))
			r.oneK, r.oneV = append(r.oneK, k), append(r.oneV, v)
		}
		a.rng = append(a.rng, r)
	}
	return a, nil
}

// rangeOf is the model's answer to one half-open range query [lo, hi).
func (m *model) rangeOf(lo, hi uint64, limit int) (keys, vals []uint64) {
	if lo >= hi {
		return nil, nil
	}
	m.m.Ascend(lo, func(k, v uint64) bool {
		if k >= hi || (limit > 0 && len(keys) == limit) {
			return false
		}
		keys, vals = append(keys, k), append(vals, v)
		return true
	})
	return keys, vals
}

func (m *model) Check() error { return nil }
func (m *model) Close() error { return nil }

// subject is a Tree under test; res is the Result from its NewResult
// (pinned on the GPU engine) that every batch's ranges are answered into
// again (RangesInto), reused from batch to batch.
type subject struct {
	t   *Tree
	res *Result
	st  *Staging // the batch's lookups again through LookupStaged (pinned on the GPU engine)
}

// lookupStaged looks keys up through s's Staging, grown when short, and
// fails unless it answers as Lookup did (values, found).
func (s *subject) lookupStaged(keys, values []uint64, found []bool) error {
	if s.st == nil || len(s.st.Keys) < len(keys) {
		if err := s.st.Free(); err != nil {
			return err
		}
		st, err := s.t.NewStaging(2 * len(keys))
		if err != nil {
			return err
		}
		s.st = st
	}
	copy(s.st.Keys, keys)
	if err := s.t.LookupStaged(s.st, len(keys)); err != nil {
		return err
	}
	for i := range keys {
		if s.st.Values[i] != values[i] || (s.st.Found[i] == 1) != found[i] || s.st.Found[i] > 1 {
			return fmt.Errorf("staged lookup of key %d (%d): %d %d, Lookup: %d %v", i, keys[i], s.st.Values[i], s.st.Found[i], values[i], found[i])
		}
	}
	return nil
}

func (s *subject) Apply(b batch) (answer, error) {
	var err error
	switch b.op {
	case opBuild:
		err = s.t.Build(b.keys, b.values)
	case opInsert:
		err = s.t.Insert(b.keys, b.values)
	case opDelete:
		_, err = s.t.Delete(b.keys)
	}
	if err != nil {
		return answer{}, err
	}
	a := answer{n: s.t.Len()}
	for k, v := range s.t.All() {
		a.allK, a.allV = append(a.allK, k), append(a.allV, v)
	}
	a.getV, a.getF = make([]uint64, len(b.gets)), make([]bool, len(b.gets))
	if err := s.t.Lookup(b.gets, a.getV, a.getF); err != nil {
		return answer{}, err
	}
	if err := s.lookupStaged(b.gets, a.getV, a.getF); err != nil {
		return answer{}, err
	}
	for _, limit := range b.limits {
		var r rangeAnswer
		if r.keys, r.values, r.offsets, err = s.t.Ranges(b.los, b.his, limit); err != nil {
			return answer{}, err
		}
		into, err := s.t.RangesInto(s.res, b.los, b.his, limit)
		if err != nil {
			return answer{}, err
		}
		if into != s.res || !slices.Equal(into.Keys, r.keys) || !slices.Equal(into.Values, r.values) || !slices.Equal(into.Offsets, r.offsets) {
			return answer{}, fmt.Errorf("ranges into a reused Result (pinned %v) differ from Ranges", s.res.pinned())
		}
		for i := range b.los {
			k, v, err := s.t.Range(b.los[i], b.his[i], limit)
			if err != nil {
				return answer{}, err
			}
			r.oneK, r.oneV = append(r.oneK, k), append(r.oneV, v)
		}
		a.rng = append(a.rng, r)
	}
	return a, nil
}

func (s *subject) Check() error { return s.t.Check() }
func (s *subject) Close() error { return errors.Join(s.res.Free(), s.st.Free(), s.t.Close()) }

// sameNodes fails unless two trees hold the same bookkeeping and node
// arrays word for word.
func sameNodes(a, b *Tree) error {
	sa, sb := a.e.state(), b.e.state()
	if sa != sb {
		return fmt.Errorf("bookkeeping %+v and %+v", sa, sb)
	}
	x, err := a.e.snapshot()
	if err != nil {
		return err
	}
	y, err := b.e.snapshot()
	if err != nil {
		return err
	}
	if x.n != y.n {
		return fmt.Errorf("%d and %d nodes", x.n, y.n)
	}
	for id := uint32(0); int(id) < x.n; id++ {
		if !slices.Equal(x.keys(id), y.keys(id)) || !slices.Equal(x.slots(id), y.slots(id)) ||
			x.count(id) != y.count(id) || x.kind(id) != y.kind(id) || x.parent(id) != y.parent(id) ||
			x.next(id) != y.next(id) || x.prev(id) != y.prev(id) {
			return fmt.Errorf("node %d differs: kind %d count %d parent %d next %d prev %d, and %d %d %d %d %d",
				id, x.kind(id), x.count(id), x.parent(id), x.next(id), x.prev(id),
				y.kind(id), y.count(id), y.parent(id), y.next(id), y.prev(id))
		}
	}
	return nil
}

// suite returns the harness's suite for trees of the given order and
// workers: the CPU engine and the GPU engine, whose node arrays must
// agree after every batch.
func suite(order, workers int) enginetest.Suite[batch, answer, *model] {
	open := func(dev *gpu.Device) (enginetest.Subject[batch, answer], error) {
		o := Options{Order: order, Workers: workers, Device: "cpu"}
		if dev != nil {
			o.GPU = dev
		}
		t, err := Open(o)
		if err != nil {
			return nil, err
		}
		return &subject{t: t, res: t.NewResult()}, nil
	}
	return enginetest.Suite[batch, answer, *model]{
		NewModel: func() *model { return &model{} },
		Targets: []enginetest.Target[batch, answer]{
			{Name: "cpu", Open: func(_ testing.TB, _ *gpu.Device) (enginetest.Subject[batch, answer], error) { return open(nil) }},
			{Name: "gpu", GPU: true, Open: func(_ testing.TB, d *gpu.Device) (enginetest.Subject[batch, answer], error) { return open(d) }},
		},
		Compare: compareAnswers,
		Agree: func(s []enginetest.Subject[batch, answer]) error {
			if s[0] == nil || s[1] == nil {
				return nil
			}
			return sameNodes(s[1].(*subject).t, s[0].(*subject).t)
		},
	}
}

// keyGen draws the keys of a batch.
type keyGen func(r *rand.Rand, ref *tbtree.Map[uint64, uint64], n int) []uint64

// existing returns a random key of ref, or a random key when ref is empty.
func existing(r *rand.Rand, ref *tbtree.Map[uint64, uint64]) uint64 {
	if ref.Len() == 0 {
		return r.Uint64()
	}
	k, _, _ := ref.GetAt(r.IntN(ref.Len()))
	return k
}

// anyKey is a uniform key, an existing key, or one of the extremes.
func anyKey(r *rand.Rand, ref *tbtree.Map[uint64, uint64]) uint64 {
	switch x := r.IntN(100); {
	case x < 2:
		return 0
	case x < 4:
		return math.MaxUint64
	case x < 30:
		return existing(r, ref)
	default:
		return r.Uint64()
	}
}

func uniformKeys(r *rand.Rand, ref *tbtree.Map[uint64, uint64], n int) []uint64 {
	k := make([]uint64, n)
	for i := range k {
		k[i] = anyKey(r, ref)
	}
	return k
}

// skewedKeys sends 85% of the batch just above one existing key (into one
// leaf; past the right spine when that key is the max), the rest anywhere.
func skewedKeys(r *rand.Rand, ref *tbtree.Map[uint64, uint64], n int) []uint64 {
	base := existing(r, ref)
	if r.IntN(3) == 0 {
		if m, _, ok := ref.Max(); ok {
			base = m
		}
	}
	base = min(base, math.MaxUint64-1<<21)
	k := make([]uint64, n)
	for i := range k {
		if r.IntN(100) < 85 {
			k[i] = base + 1 + r.Uint64N(1<<20)
		} else {
			k[i] = anyKey(r, ref)
		}
	}
	return k
}

// denseKeys draws from a small key space: many duplicates in a batch.
func denseKeys(r *rand.Rand, _ *tbtree.Map[uint64, uint64], n int) []uint64 {
	k := make([]uint64, n)
	for i := range k {
		k[i] = r.Uint64N(512)
	}
	if n > 0 {
		k[0] = math.MaxUint64
	}
	return k
}

func randVals(r *rand.Rand, n int) []uint64 {
	v := make([]uint64, n)
	for i := range v {
		v[i] = r.Uint64()
	}
	return v
}

// randomBatch draws a build (1 in 10), an insert (5 in 10) or a delete of
// up to maxN keys from gen (1 in 10 empty, 1 in 8 larger than the tree),
// then 200 lookups (a quarter of them of the batch's keys) and 20 range
// queries (whole range, single keys, lo > hi, wide) with one limit.
func randomBatch(r *rand.Rand, ref *tbtree.Map[uint64, uint64], gen keyGen, maxN int) batch {
	n := r.IntN(maxN + 1)
	if r.IntN(10) == 0 {
		n = 0
	} else if r.IntN(8) == 0 {
		n = 2*ref.Len() + 1
	}
	b := batch{keys: gen(r, ref, n)}
	switch x := r.IntN(10); {
	case x == 0:
		b.op = opBuild
	case x < 6:
		b.op = opInsert
	default:
		b.op = opDelete
	}
	if b.op != opDelete {
		b.values = randVals(r, n)
	}
	b.gets = gen(r, ref, 150)
	for range 50 {
		if n > 0 {
			b.gets = append(b.gets, b.keys[r.IntN(n)])
		}
	}
	q := 20
	b.los, b.his = make([]uint64, q), make([]uint64, q)
	for i := range q {
		b.los[i] = anyKey(r, ref)
		switch r.IntN(4) {
		case 0:
			b.his[i] = math.MaxUint64
		case 1:
			b.his[i] = b.los[i] + min(1, math.MaxUint64-b.los[i]) // single key or nothing
		case 2:
			b.his[i] = r.Uint64() // often below lo: empty
		default:
			b.his[i] = b.los[i] + min(r.Uint64N(1<<60), math.MaxUint64-b.los[i])
		}
	}
	b.limits = []int{[]int{0, 1, 7, -1}[r.IntN(4)]}
	return b
}

// TestDifferential runs random batch sequences of every key pattern on
// trees of several orders and worker counts.
func TestDifferential(t *testing.T) {
	configs := []struct {
		name           string
		order, workers int
		gen            keyGen
		maxN           int
	}{
		{"uniform/order4", 4, 3, uniformKeys, 300},
		{"uniform/order5/w1", 5, 1, uniformKeys, 200},
		{"uniform/order16", 16, 4, uniformKeys, 3000},
		{"uniform/default", 0, 0, uniformKeys, 8000},
		{"skewed/order4", 4, 2, skewedKeys, 300},
		{"skewed/order16", 16, 3, skewedKeys, 3000},
		{"skewed/default", 0, 0, skewedKeys, 8000},
		{"dense/order4", 4, 2, denseKeys, 600},
		{"dense/default", 0, 3, denseKeys, 2000},
	}
	steps := 100
	if raceEnabled {
		steps = 30
	}
	for _, c := range configs {
		enginetest.Run(t, suite(c.order, c.workers), enginetest.Case[batch, *model]{
			Name: c.name, Batches: steps,
			Gen: func(r *rand.Rand, _ int, m *model) batch { return randomBatch(r, &m.m, c.gen, c.maxN) },
		})
	}
}

// gpuInputs are named key generators for n keys: uniform, skewed (most
// keys in a narrow band, the rest spread), duplicate-heavy (a few distinct
// keys, 0 and 2^64-1 among them).
var gpuInputs = []struct {
	name string
	gen  func(r *rand.Rand, n int) []uint64
}{
	{"uniform", func(r *rand.Rand, n int) []uint64 {
		k := make([]uint64, n)
		for i := range k {
			k[i] = r.Uint64()
		}
		return k
	}},
	{"skewed", func(r *rand.Rand, n int) []uint64 {
		k := make([]uint64, n)
		for i := range k {
			if r.IntN(10) < 8 {
				k[i] = 1<<40 + r.Uint64N(uint64(n)/4+1)
			} else {
				k[i] = r.Uint64()
			}
		}
		return k
	}},
	{"duplicates", func(r *rand.Rand, n int) []uint64 {
		k := make([]uint64, n)
		distinct := uint64(n/16 + 2)
		for i := range k {
			switch x := r.Uint64N(distinct); x {
			case 0:
				k[i] = 0
			case 1:
				k[i] = ^uint64(0)
			default:
				k[i] = x * 0x9e3779b97f4a7c15
			}
		}
		return k
	}},
}

// TestBuildSizes builds trees of sizes around the order and up to a
// million keys from every input on both engines (beside a GPU only),
// with lookups of every key, as many misses, 0 and 2^64-1, and range
// queries of about 16 keys with limits 0, 1 and 10.
func TestBuildSizes(t *testing.T) {
	for _, order := range []int{8, 64} {
		sizes := []int{0, 1, order - 1, order, order + 1, 1000, 100_000}
		if order == DefaultOrder {
			sizes = append(sizes, 1<<20+3)
		}
		var cases []enginetest.Case[batch, *model]
		for _, in := range gpuInputs {
			cases = append(cases, enginetest.Case[batch, *model]{
				Name: fmt.Sprintf("order%d/%s", order, in.name), Batches: len(sizes), NeedsGPU: true,
				Gen: func(r *rand.Rand, step int, _ *model) batch {
					n := sizes[step]
					b := batch{op: opBuild, keys: in.gen(r, n), values: randVals(r, n), limits: []int{0, 1, 10}}
					b.gets = append(slices.Clone(b.keys), 0, ^uint64(0))
					for range n + 2 {
						b.gets = append(b.gets, r.Uint64())
					}
					nq := min(n+3, 2000)
					b.los, b.his = make([]uint64, nq), make([]uint64, nq)
					span := ^uint64(0) / uint64(n+1) * 16 // about 16 keys of a uniform input
					for i := range nq {
						lo := r.Uint64()
						if n > 0 && i%2 == 0 {
							lo = b.keys[r.IntN(n)]
						}
						hi := lo + r.Uint64N(span) // wraps now and then: lo > hi, empty
						switch {
						case i == 0:
							lo, hi = 0, ^uint64(0)
						case i%5 == 0:
							lo, hi = max(lo, hi), min(lo, hi) // lo > hi: empty
						}
						b.los[i], b.his[i] = lo, hi
					}
					return b
				},
			})
		}
		enginetest.Run(t, suite(order, 0), cases...)
	}
}

// TestLargeInsertDelete runs large insert and delete batches on both
// engines (beside a GPU only): a build of 200k keys, then rounds of 50k
// inserts (uniform, skewed into one leaf, past the right spine) and 60k
// deletes (mostly present, a quarter misses, runs of whole leaves), then
// everything deleted and inserted again, down to underfull.
func TestLargeInsertDelete(t *testing.T) {
	for _, order := range []int{8, 64} {
		var keys []uint64 // every key inserted so far
		gen := func(r *rand.Rand, step int, _ *model) batch {
			var b batch
			switch {
			case step == 0:
				n := 200_000
				b = batch{op: opBuild, keys: make([]uint64, n), values: make([]uint64, n)}
				for i := range n {
					b.keys[i], b.values[i] = r.Uint64()>>1, r.Uint64()
				}
			case step <= 8 && step%2 == 1: // rounds 0-3: insert
				round, m := step/2, 50_000
				b = batch{op: opInsert, keys: make([]uint64, m), values: make([]uint64, m)}
				base := keys[r.IntN(len(keys))]
				for i := range m {
					switch x := r.IntN(100); {
					case round == 1 && x < 85: // skewed: one leaf
						b.keys[i] = base + 1 + uint64(r.IntN(1<<16))
					case round == 2 && x < 50: // past the right spine
						b.keys[i] = 1<<63 + uint64(i)
					case x < 20: // existing: new value
						b.keys[i] = keys[r.IntN(len(keys))]
					default:
						b.keys[i] = r.Uint64() >> 1
					}
					b.values[i] = r.Uint64()
				}
				b.keys[0], b.keys[1] = 0, ^uint64(0)
			case step <= 8: // rounds 0-3: delete
				b = batch{op: opDelete, keys: make([]uint64, 60_000)}
				for i := range b.keys {
					if i%4 == 3 {
						b.keys[i] = r.Uint64() // mostly misses
					} else {
						b.keys[i] = keys[r.IntN(len(keys))]
					}
				}
				if step == 8 { // a run of whole leaves
					b.keys = append(b.keys, keys[:20_000]...)
					sorted := slices.Clone(keys)
					slices.Sort(sorted)
					b.keys = append(b.keys, sorted[1000:9000]...)
				}
			case step == 9:
				b = batch{op: opDelete, keys: slices.Clone(keys)}
			case step == 10:
				b = batch{op: opInsert, keys: slices.Clone(keys[:1000]), values: randVals(r, 1000)}
			default:
				b = batch{op: opDelete, keys: slices.Clone(keys[:900])}
			}
			if b.op != opDelete {
				keys = append(keys, b.keys...)
			}
			b.gets = append(slices.Clone(keys[:min(len(keys), 5000)]), 0, ^uint64(0), r.Uint64())
			b.los = []uint64{0, keys[0], 1 << 62}
			b.his = []uint64{^uint64(0), keys[0] + 1<<50, 1<<62 + 1<<55}
			b.limits = []int{0}
			return b
		}
		enginetest.Run(t, suite(order, 0), enginetest.Case[batch, *model]{
			Name: fmt.Sprintf("order%d", order), Batches: 12, NeedsGPU: true, Gen: gen,
		})
	}
}

// TestDeviceOption checks the engine selection that runs without a GPU:
// no option follows WARPKV_DEVICE, a bad option is an error naming it.
func TestDeviceOption(t *testing.T) {
	t.Setenv(gpu.EnvDevice, "cpu")
	tr, err := Open(Options{})
	if err != nil || tr.Backend() != gpu.BackendCPU || tr.Reason() == "" {
		t.Fatalf("WARPKV_DEVICE=cpu, no option: %v, %v", tr, err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Device: "bogus"}); err == nil {
		t.Fatal("Device bogus: no error")
	}
	if ok, _ := gpu.Available(); !ok {
		if _, err := Open(Options{Device: "gpu"}); err == nil {
			t.Fatal("Device gpu without a GPU: no error")
		}
	}
}

// TestLastBatchPhases checks the time breakdown each batch reports on
// both engines: the batch's operation and size, a total, and on the GPU
// engine an upload and device work.
func TestLastBatchPhases(t *testing.T) {
	for _, dev := range []string{"cpu", "gpu"} {
		t.Run(dev, func(t *testing.T) {
			o := Options{Device: "cpu"}
			if dev == "gpu" {
				o.GPU = gputest.Device(t)
			}
			tr, err := Open(o)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			r := rand.New(rand.NewPCG(1, 2))
			n := 300_000
			k, v := randVals(r, n), randVals(r, n)
			if err := tr.Build(k, v); err != nil {
				t.Fatal(err)
			}
			lb := tr.LastBatch()
			if lb.Op != "build" || lb.Items != n || lb.Total <= 0 || lb.Work <= 0 || (dev == "gpu" && lb.Upload <= 0) {
				t.Fatalf("LastBatch after build: %+v", lb)
			}
			if err := tr.Insert(k[:50_000], v[:50_000]); err != nil {
				t.Fatal(err)
			}
			if lb := tr.LastBatch(); lb.Op != "insert" || lb.Items != 50_000 || lb.Sort <= 0 || lb.Work <= 0 {
				t.Fatalf("LastBatch after insert: %+v", lb)
			}
			if _, f, err := tr.Get(k[:1000]); err != nil || !f[0] {
				t.Fatal("a built key is missing")
			}
			if lb := tr.LastBatch(); lb.Op != "lookup" || lb.Items != 1000 || lb.Total <= 0 {
				t.Fatalf("LastBatch after lookup: %+v", lb)
			}
			if err := tr.Close(); err != nil || !errors.Is(tr.Insert(k[:1], v[:1]), engine.ErrClosed) {
				t.Fatalf("close: %v", err)
			}
		})
	}
}
