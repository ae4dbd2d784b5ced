package art

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	tbtree "github.com/tidwall/btree"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/enginetest"
	"github.com/warpkv/warpkv/internal/gputest"
)

// The differential tests: batches go to a reference ordered index this
// project did not write (tidwall/btree's Map over string keys) and to the
// CPU and GPU engines; answers, full contents and invariants are compared
// after every batch, and the two engines' layouts word for word.

type opKind uint8

const (
	tBuild opKind = iota
	tInsert
	tUpdate
	tGet
	tDelete
	tRanges
	tRangesDesc
	tPrefix
)

var opNames = [...]string{"build", "insert", "update", "get", "delete", "ranges", "ranges desc", "prefix"}

// batch is one operation of a test sequence.
type batch struct {
	op    opKind
	keys  [][]byte
	vals  []uint64
	qs    []Query
	pfx   [][]byte
	limit int
}

func (b batch) String() string {
	return fmt.Sprintf("%s of %d", opNames[b.op], max(len(b.keys), len(b.qs), len(b.pfx)))
}

// answer is what a batch returns, in a form reflect.DeepEqual compares.
type answer struct {
	Vals  []uint64
	Found []bool
	N     int
	Pairs [][]string // per query: "hexkey=value"
}

// model is the reference: tidwall/btree's ordered map.
type model struct{ m *tbtree.Map[string, uint64] }

func newModel() *model { return &model{m: new(tbtree.Map[string, uint64])} }

func (m *model) Check() error { return nil }
func (m *model) Close() error { return nil }

func pair(k []byte, v uint64) string { return fmt.Sprintf("%x=%d", k, v) }

func (m *model) Apply(b batch) (answer, error) {
	var a answer
	switch b.op {
	case tBuild:
		m.m.Clear()
		fallthrough
	case tInsert:
		for i, k := range b.keys {
			m.m.Set(string(k), b.vals[i])
		}
	case tUpdate:
		a.Found = make([]bool, len(b.keys))
		for i, k := range b.keys {
			if _, ok := m.m.Get(string(k)); ok {
				m.m.Set(string(k), b.vals[i])
				a.Found[i] = true
			}
		}
	case tGet:
		a.Vals, a.Found = make([]uint64, len(b.keys)), make([]bool, len(b.keys))
		for i, k := range b.keys {
			a.Vals[i], a.Found[i] = m.m.Get(string(k))
		}
	case tDelete:
		for _, k := range b.keys {
			if _, ok := m.m.Delete(string(k)); ok {
				a.N++
			}
		}
	case tRanges, tRangesDesc, tPrefix:
		qs := b.qs
		if b.op == tPrefix {
			qs = nil
			for _, p := range b.pfx {
				qs = append(qs, Query{Lo: p, Hi: prefixEnd(p)})
			}
		}
		for _, q := range qs {
			a.Pairs = append(a.Pairs, m.query(q, b.limit, b.op == tRangesDesc))
		}
	}
	return a, nil
}

// query answers one range query from the model.
func (m *model) query(q Query, limit int, desc bool) []string {
	out := []string{}
	in := func(k string) bool {
		return bytes.Compare([]byte(k), q.Lo) >= 0 && (q.Hi == nil || bytes.Compare([]byte(k), q.Hi) < 0)
	}
	full := func() bool { return limit > 0 && len(out) == limit }
	if !desc {
		m.m.Ascend(string(q.Lo), func(k string, v uint64) bool {
			if !in(k) || full() {
				return false
			}
			out = append(out, pair([]byte(k), v))
			return true
		})
		return out
	}
	visit := func(k string, v uint64) bool {
		if !in(k) {
			return bytes.Compare([]byte(k), q.Lo) >= 0 // above hi: keep going down
		}
		if full() {
			return false
		}
		out = append(out, pair([]byte(k), v))
		return true
	}
	if q.Hi == nil {
		m.m.Reverse(visit)
	} else {
		m.m.Descend(string(q.Hi), visit)
	}
	return out
}

// subject is a Tree under test; staged sends its lookups through
// LookupStaged.
type subject struct {
	t      *Tree
	staged bool // lookups through a Staging
	packed bool // lookups and updates of packed batches (Lookup, UpdateKeys) instead of Get and Update
	reuse  bool // answers into memory reused from batch to batch: queries into one Result (RangesInto, ...), lookups and updates of Go slices into one set of answers (GetInto, UpdateInto)
	pinned bool // that Result made by NewResult (pinned on the GPU engine)
	res    *Result
	vals   []uint64 // the reused answers of GetInto and UpdateInto
	found  []bool
}

// answers returns n of the subject's reused answers, holding whatever the
// batches before left in them (GetInto and UpdateInto must overwrite
// every one): values of 1<<63 and flags true where nothing was written
// yet.
func (s *subject) answers(n int) ([]uint64, []bool) {
	for len(s.vals) < n {
		s.vals, s.found = append(s.vals, 1<<63), append(s.found, true)
	}
	return s.vals[:n], s.found[:n]
}

// getStaged is Get through a Staging.
func (s *subject) getStaged(keys [][]byte) ([]uint64, []bool, error) {
	kb := Pack(keys)
	st, err := s.t.NewStaging(len(keys), len(kb.Data))
	if err != nil {
		return nil, nil, err
	}
	defer st.Free()
	copy(st.Data, kb.Data)
	copy(st.Offs, kb.Offs)
	if err := s.t.LookupStaged(st, len(keys)); err != nil {
		return nil, nil, err
	}
	found := make([]bool, len(keys))
	for i, f := range st.Found[:len(keys)] {
		found[i] = f == 1
	}
	return slices.Clone(st.Values[:len(keys)]), found, nil
}

func (s *subject) Check() error { return s.t.Check() }
func (s *subject) Close() error { return errors.Join(s.res.Free(), s.t.Close()) }

func (s *subject) Apply(b batch) (answer, error) {
	var a answer
	var err error
	t := s.t
	switch b.op {
	case tBuild:
		err = t.Build(b.keys, b.vals)
	case tInsert:
		err = t.Insert(b.keys, b.vals)
	case tUpdate:
		switch {
		case s.packed:
			a.Found = make([]bool, len(b.keys))
			err = t.UpdateKeys(Pack(b.keys), b.vals, a.Found)
		case s.reuse:
			_, f := s.answers(len(b.keys))
			err = t.UpdateInto(b.keys, b.vals, f)
			a.Found = slices.Clone(f)
		default:
			a.Found, err = t.Update(b.keys, b.vals)
		}
	case tGet:
		switch {
		case s.staged:
			a.Vals, a.Found, err = s.getStaged(b.keys)
		case s.packed:
			a.Vals, a.Found = make([]uint64, len(b.keys)), make([]bool, len(b.keys))
			err = t.Lookup(Pack(b.keys), a.Vals, a.Found)
		case s.reuse:
			v, f := s.answers(len(b.keys))
			err = t.GetInto(b.keys, v, f)
			a.Vals, a.Found = slices.Clone(v), slices.Clone(f)
		default:
			a.Vals, a.Found, err = t.Get(b.keys)
		}
	case tDelete:
		a.N, err = t.Delete(b.keys)
	case tRanges, tRangesDesc, tPrefix:
		var r *Result
		if s.pinned && s.res == nil {
			s.res = t.NewResult()
		}
		switch {
		case s.reuse && b.op == tRanges:
			r, err = t.RangesInto(s.res, b.qs, b.limit)
		case s.reuse && b.op == tRangesDesc:
			r, err = t.RangesDescInto(s.res, b.qs, b.limit)
		case s.reuse:
			r, err = t.PrefixInto(s.res, b.pfx, b.limit)
		case b.op == tRanges:
			r, err = t.Ranges(b.qs, b.limit)
		case b.op == tRangesDesc:
			r, err = t.RangesDesc(b.qs, b.limit)
		default:
			r, err = t.Prefix(b.pfx, b.limit)
		}
		if err != nil {
			return a, err
		}
		if s.reuse {
			if s.res != nil && r != s.res {
				return a, fmt.Errorf("answered into a new Result, not the one given")
			}
			s.res = r
		}
		for i := range len(r.Offsets) - 1 {
			ks, vs := r.Query(i)
			ps := []string{}
			for j := range ks {
				ps = append(ps, pair(ks[j], vs[j]))
			}
			a.Pairs = append(a.Pairs, ps)
		}
	}
	return a, err
}

// compareAnswers names the first difference.
func compareAnswers(want, got answer) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	if len(want.Vals) != len(got.Vals) || len(want.Found) != len(got.Found) || want.N != got.N || len(want.Pairs) != len(got.Pairs) {
		return fmt.Sprintf("shapes differ: want %d values, %d flags, n %d, %d queries; got %d, %d, %d, %d",
			len(want.Vals), len(want.Found), want.N, len(want.Pairs), len(got.Vals), len(got.Found), got.N, len(got.Pairs))
	}
	for i := range want.Found {
		if want.Found[i] != got.Found[i] || (want.Vals != nil && want.Vals[i] != got.Vals[i]) {
			return fmt.Sprintf("key %d: want found %v", i, want.Found[i])
		}
	}
	for i := range want.Pairs {
		if !slices.Equal(want.Pairs[i], got.Pairs[i]) {
			return fmt.Sprintf("query %d: want %d pairs %s; got %d pairs %s", i, len(want.Pairs[i]), short(want.Pairs[i]), len(got.Pairs[i]), short(got.Pairs[i]))
		}
	}
	return "values differ"
}

func short(p []string) string {
	if len(p) > 8 {
		return strings.Join(p[:8], " ") + " ..."
	}
	return strings.Join(p, " ")
}

// sameContents compares a tree's full contents (ascending and, through
// the iterator, descending) and length with the model's.
func sameContents(m *model, sub enginetest.Subject[batch, answer]) error {
	t := sub.(*subject).t
	want := m.query(Query{}, 0, false)
	r, err := t.Ranges([]Query{{}}, 0)
	if err != nil {
		return err
	}
	got := []string{}
	ks, vs := r.Query(0)
	for i := range ks {
		got = append(got, pair(ks[i], vs[i]))
	}
	if !slices.Equal(want, got) {
		return fmt.Errorf("contents differ: model %d keys %s, tree %d keys %s", len(want), short(want), len(got), short(got))
	}
	if t.Len() != m.m.Len() {
		return fmt.Errorf("Len %d, model %d", t.Len(), m.m.Len())
	}
	return nil
}

// targets are the CPU engine (two workers, so that the parallel phases
// interleave) and the GPU engine, with one thread and with 8 lanes per
// lookup, and with lookups and updates pipelined in chunks of a few keys
// (lookups from pinned staging, and from Go slices with 8 lanes), and
// both engines answering queries into one Result reused from batch to
// batch (on the GPU engine also into a pinned one from NewResult).
func targets() []enginetest.Target[batch, answer] {
	return []enginetest.Target[batch, answer]{
		{Name: "cpu", Open: func(_ testing.TB, _ *gpu.Device) (enginetest.Subject[batch, answer], error) {
			t, err := Open(Options{Device: "cpu", Workers: 2})
			return &subject{t: t}, err
		}},
		{Name: "gpu", GPU: true, Open: func(_ testing.TB, d *gpu.Device) (enginetest.Subject[batch, answer], error) {
			t, err := Open(Options{GPU: d})
			return &subject{t: t}, err
		}},
		{Name: "gpu, 8 lanes per lookup", GPU: true, Open: func(_ testing.TB, d *gpu.Device) (enginetest.Subject[batch, answer], error) {
			t, err := Open(Options{GPU: d, LookupLanes: 8})
			return &subject{t: t}, err
		}},
		{Name: "gpu, chunks of 5 keys, staged lookups", GPU: true, Open: func(_ testing.TB, d *gpu.Device) (enginetest.Subject[batch, answer], error) {
			t, err := Open(Options{GPU: d})
			if err == nil {
				t.eng.(*gpuEngine).chunkMin = 5
			}
			return &subject{t: t, staged: true}, err
		}},
		{Name: "gpu, chunks of 3 keys, 8 lanes per lookup", GPU: true, Open: func(_ testing.TB, d *gpu.Device) (enginetest.Subject[batch, answer], error) {
			t, err := Open(Options{GPU: d, LookupLanes: 8})
			if err == nil {
				t.eng.(*gpuEngine).chunkMin = 3
			}
			return &subject{t: t}, err
		}},
		{Name: "cpu, answers into one reused Result", Open: func(_ testing.TB, _ *gpu.Device) (enginetest.Subject[batch, answer], error) {
			t, err := Open(Options{Device: "cpu", Workers: 2})
			return &subject{t: t, reuse: true}, err
		}},
		{Name: "gpu, answers into one reused Result", GPU: true, Open: func(_ testing.TB, d *gpu.Device) (enginetest.Subject[batch, answer], error) {
			t, err := Open(Options{GPU: d})
			return &subject{t: t, reuse: true}, err
		}},
		{Name: "gpu, answers into one pinned Result", GPU: true, Open: func(_ testing.TB, d *gpu.Device) (enginetest.Subject[batch, answer], error) {
			t, err := Open(Options{GPU: d})
			return &subject{t: t, reuse: true, pinned: true}, err
		}},
		{Name: "cpu, answers into one Result from NewResult", Open: func(_ testing.TB, _ *gpu.Device) (enginetest.Subject[batch, answer], error) {
			t, err := Open(Options{Device: "cpu", Workers: 2})
			return &subject{t: t, reuse: true, pinned: true}, err
		}},
	}
}

// eachTarget runs fn as a subtest on a fresh tree of every target
// (skipped, or failed under WARPKV_REQUIRE_GPU, where a GPU target has
// no device), closing the tree after it.
func eachTarget(t *testing.T, fn func(t *testing.T, tr *Tree)) {
	for _, tg := range targets() {
		t.Run(tg.Name, func(t *testing.T) {
			var dev *gpu.Device
			if tg.GPU {
				dev = gputest.Device(t)
			}
			sub, err := tg.Open(t, dev)
			if err != nil {
				t.Fatal(err)
			}
			tr := sub.(*subject).t
			defer tr.Close()
			fn(t, tr)
		})
	}
}

// agree compares the layouts of the CPU and GPU engines word for word.
func agree(subs []enginetest.Subject[batch, answer]) error {
	if len(subs) < 2 || subs[0] == nil || subs[1] == nil {
		return nil
	}
	a, err := subs[0].(*subject).t.eng.snapshot()
	if err != nil {
		return err
	}
	b, err := subs[1].(*subject).t.eng.snapshot()
	if err != nil {
		return err
	}
	return equalStores(a, b)
}

// equalStores compares two layouts: pools up to their high-water marks,
// free stacks, arena, root array and counters. Records on a free stack are
// not compared: their words are unspecified (a rolled-back insert may have
// built fresh records in them before it failed; the stack itself is
// restored).
func equalStores(a, b *store) error {
	if a.width != b.width || a.n != b.n || a.arenaLive != b.arenaLive || len(a.arena) != len(b.arena) {
		return fmt.Errorf("counters: width %d/%d, keys %d/%d, arena live %d/%d, arena %d/%d bytes",
			a.width, b.width, a.n, b.n, a.arenaLive, b.arenaLive, len(a.arena), len(b.arena))
	}
	if i := firstDiff(a.root, b.root); i >= 0 {
		return fmt.Errorf("root slot %d: %#x vs %#x", i, a.root[i], b.root[i])
	}
	if !bytes.Equal(a.arena, b.arena) {
		return fmt.Errorf("arena bytes differ")
	}
	for k := kindN4; k <= kindLV; k++ {
		pa, pb := &a.pools[k], &b.pools[k]
		if pa.hwm != pb.hwm || !slices.Equal(pa.free, pb.free) {
			return fmt.Errorf("kind %d: hwm %d/%d, free stacks %v/%v", k, pa.hwm, pb.hwm, len(pa.free), len(pb.free))
		}
		w, freed := kindWords[k], make(map[uint32]bool, len(pa.free))
		for _, r := range pa.free {
			freed[r] = true
		}
		for r := range pa.hwm {
			if freed[uint32(r)] {
				continue
			}
			ra, rb := pa.words[int(r)*w:int(r+1)*w], pb.words[int(r)*w:int(r+1)*w]
			if i := firstDiff(ra, rb); i >= 0 {
				return fmt.Errorf("kind %d record %d word %d: %#x vs %#x", k, r, i, ra[i], rb[i])
			}
		}
	}
	return nil
}

func firstDiff(a, b []uint64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// suite is the differential suite.
func suite() enginetest.Suite[batch, answer, *model] {
	return enginetest.Suite[batch, answer, *model]{
		NewModel: newModel,
		Targets:  targets(),
		Compare:  compareAnswers,
		Agree:    agree,
		After:    sameContents,
	}
}

// keyGen draws one key.
type keyGen func(r *rand.Rand) []byte

// present returns a random key of the model, or a fresh one when empty.
func present(r *rand.Rand, m *model, g keyGen) []byte {
	if m.m.Len() == 0 {
		return g(r)
	}
	k, _, _ := m.m.GetAt(r.IntN(m.m.Len()))
	return []byte(k)
}

// mix is the share (in percent) of each operation in a random sequence.
type mix struct{ build, insert, update, get, del, ranges, desc, prefix int }

var defaultMix = mix{build: 3, insert: 40, update: 10, get: 12, del: 20, ranges: 6, desc: 4, prefix: 5}

// randomBatches returns a Gen of random batches of up to maxBatch
// operations with keys from g (a third of the point operations on present
// keys).
func randomBatches(g keyGen, maxBatch int, mx mix) func(*rand.Rand, int, *model) batch {
	return func(r *rand.Rand, step int, m *model) batch {
		n := 1 + r.IntN(maxBatch)
		key := func() []byte {
			if r.IntN(3) == 0 {
				return present(r, m, g)
			}
			return g(r)
		}
		keys := func() [][]byte {
			ks := make([][]byte, n)
			for i := range ks {
				ks[i] = key()
			}
			return ks
		}
		vals := func() []uint64 {
			vs := make([]uint64, n)
			for i := range vs {
				vs[i] = r.Uint64()
			}
			return vs
		}
		x := r.IntN(mx.build + mx.insert + mx.update + mx.get + mx.del + mx.ranges + mx.desc + mx.prefix)
		switch {
		case step == 0 || x < mx.build:
			return batch{op: tBuild, keys: keys(), vals: vals()}
		case x < mx.build+mx.insert:
			return batch{op: tInsert, keys: keys(), vals: vals()}
		case x < mx.build+mx.insert+mx.update:
			return batch{op: tUpdate, keys: keys(), vals: vals()}
		case x < mx.build+mx.insert+mx.update+mx.get:
			return batch{op: tGet, keys: keys()}
		case x < mx.build+mx.insert+mx.update+mx.get+mx.del:
			return batch{op: tDelete, keys: keys()}
		}
		q := 1 + r.IntN(64)
		limit := []int{0, 1, 3, 16, 100, -1}[r.IntN(6)] // -1: no limit, as 0
		if x >= mx.build+mx.insert+mx.update+mx.get+mx.del+mx.ranges+mx.desc {
			pfx := make([][]byte, q)
			for i := range pfx {
				k := key()
				pfx[i] = k[:r.IntN(len(k)+1)]
			}
			return batch{op: tPrefix, pfx: pfx, limit: limit}
		}
		qs := make([]Query, q)
		for i := range qs {
			lo, hi := key(), key()
			switch r.IntN(6) {
			case 0:
				hi = nil
			case 1:
				lo = nil
			case 2:
				lo, hi = hi, lo // often empty
			}
			if bytes.Compare(lo, hi) > 0 && hi != nil && r.IntN(2) == 0 {
				lo, hi = hi, lo
			}
			qs[i] = Query{Lo: lo, Hi: hi}
		}
		op := tRanges
		if x >= mx.build+mx.insert+mx.update+mx.get+mx.del+mx.ranges {
			op = tRangesDesc
		}
		return batch{op: op, qs: qs, limit: limit}
	}
}

// randomBytes returns a key of lo to hi bytes over the alphabet.
func randomBytes(r *rand.Rand, lo, hi int, alphabet []byte) []byte {
	b := make([]byte, lo+r.IntN(hi-lo+1))
	for i := range b {
		if alphabet == nil {
			b[i] = byte(r.UintN(256))
		} else {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
	}
	return b
}
