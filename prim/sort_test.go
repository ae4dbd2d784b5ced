package prim

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// sortInput is one kind of key sequence the sort is checked on, with the
// bit range it is sorted by.
type sortInput struct {
	name string
	// keys returns n keys of width bits.
	keys func(r *rand.Rand, n, width int) []uint64
	// bits returns the bit range sorted by; nil: every bit (the host API).
	bits func(width int) (begin, end int)
}

// sortInputs cover: all passes executed; passes skipped because every key
// has the same digit (all, all but one, every other one, leaving an odd
// number executed so the result is copied back); many duplicates; presorted
// input; skewed digits; and sorts by part of the key.
var sortInputs = []sortInput{
	{name: "uniform", keys: sortUniformKeys},
	{name: "six-bit keys", keys: sortMaskedKeys(0x3f)},
	{name: "constant", keys: func(r *rand.Rand, n, width int) []uint64 {
		k := sortUniformKeys(r, 1, width)[0]
		out := make([]uint64, n)
		for i := range out {
			out[i] = k
		}
		return out
	}},
	{name: "ascending", keys: func(r *rand.Rand, n, width int) []uint64 {
		out := sortUniformKeys(r, n, width)
		slices.Sort(out)
		return out
	}},
	{name: "descending", keys: func(r *rand.Rand, n, width int) []uint64 {
		out := sortUniformKeys(r, n, width)
		slices.Sort(out)
		slices.Reverse(out)
		return out
	}},
	{name: "mostly one key", keys: func(r *rand.Rand, n, width int) []uint64 {
		out := sortUniformKeys(r, n, width)
		common := sortUniformKeys(r, 1, width)[0]
		for i := range out {
			if r.IntN(64) != 0 {
				out[i] = common
			}
		}
		return out
	}},
	{name: "every other byte", keys: sortMaskedKeys(0xff00ff00ff00ff00)},
	{name: "three bytes", keys: sortMaskedKeys(0x0000ff0000ff00ff)},
	{name: "bits 5 to 29", keys: sortUniformKeys, bits: func(int) (int, int) { return 5, 29 }},
	{name: "bits 0 to 12 of 14-bit keys", keys: sortMaskedKeys(0x3fff), bits: func(int) (int, int) { return 0, 12 }},
	{name: "top 3 bits", keys: sortUniformKeys, bits: func(w int) (int, int) { return w - 3, w }},
	{name: "one middle bit", keys: sortUniformKeys, bits: func(w int) (int, int) { return w / 2, w/2 + 1 }},
	{name: "empty bit range", keys: sortUniformKeys, bits: func(int) (int, int) { return 7, 7 }},
}

// sortUniformKeys returns n random keys of width bits.
func sortUniformKeys(r *rand.Rand, n, width int) []uint64 {
	return randomWords[uint64](r, n, uint(width))
}

// sortMaskedKeys returns a generator of random keys with only the bits of
// mask (cut to the key width) varying.
func sortMaskedKeys(mask uint64) func(r *rand.Rand, n, width int) []uint64 {
	return func(r *rand.Rand, n, width int) []uint64 {
		out := sortUniformKeys(r, n, width)
		for i := range out {
			out[i] &= mask
		}
		return out
	}
}

// sortCase is one input with its expected result: perm[i] is the index in
// keys of the i-th element of the stable sort by bits [begin, end).
type sortCase[K Key] struct {
	keys       []K
	begin, end int
	hostAPI    bool // sorted by every bit, through SortKeys / SortPairs
	perm       []int
}

// newSortCase draws an input and computes its stable order with the
// standard library: records (key bits, index) are unique, so sorting them
// by (key bits, index) gives the stable order by key bits.
func newSortCase[K Key](r *rand.Rand, in sortInput, n int) *sortCase[K] {
	width := keyBits[K]()
	c := &sortCase[K]{begin: 0, end: width, hostAPI: in.bits == nil}
	if in.bits != nil {
		c.begin, c.end = in.bits(width)
	}
	raw := in.keys(r, n, width)
	c.keys = make([]K, n)
	for i, k := range raw {
		c.keys[i] = K(k)
	}
	mask := uint64(1)<<(c.end-c.begin) - 1
	type rec struct {
		bits uint64
		idx  int
	}
	recs := make([]rec, n)
	for i, k := range c.keys {
		recs[i] = rec{uint64(k) >> c.begin & mask, i}
	}
	slices.SortFunc(recs, func(a, b rec) int {
		return cmp.Or(cmp.Compare(a.bits, b.bits), cmp.Compare(a.idx, b.idx))
	})
	c.perm = make([]int, n)
	for i, x := range recs {
		c.perm[i] = x.idx
	}
	return c
}

// sortTestValues returns n values whose low 32 bits are their index, so
// any misplaced value shows, and whose high bits (for 64-bit V) are random,
// so the high halves must move too.
func sortTestValues[V Word](r *rand.Rand, n int) []V {
	out := randomWords[V](r, n, 64)
	for i := range out {
		out[i] = V(uint64(out[i])&^0xffffffff | uint64(i))
	}
	return out
}

// TestSortMatchesStableReference checks SortKeys, SortPairs (every key and
// value type) and DevSortKeys, DevSortPairs and DevSortPairsBits against the
// stable sort of the standard library, on every engine, every test size and
// every sortInputs input.
func TestSortMatchesStableReference(t *testing.T) {
	engines := testEngines(t)
	t.Run("u32 keys", func(t *testing.T) { testSortKeyType[uint32](t, engines) })
	t.Run("u64 keys", func(t *testing.T) { testSortKeyType[uint64](t, engines) })
}

func testSortKeyType[K Key](t *testing.T, engines []*Engine) {
	var sizes []int
	for _, e := range engines {
		for _, n := range testSizes(e) {
			if !slices.Contains(sizes, n) {
				sizes = append(sizes, n)
			}
		}
	}
	for _, in := range sortInputs {
		t.Run(in.name, func(t *testing.T) {
			t.Parallel() // the references of large inputs take seconds each
			r := newRand(t)
			for _, n := range sizes {
				c := newSortCase[K](r, in, n)
				for _, e := range engines {
					if !slices.Contains(testSizes(e), n) {
						continue
					}
					t.Run(fmt.Sprintf("%s/n=%d", e.Name(), n), func(t *testing.T) {
						checkSort[K, uint32](t, e, r, c, false)
						checkSort[K, uint32](t, e, r, c, true)
						checkSort[K, uint64](t, e, r, c, true)
					})
				}
			}
		})
	}
}

// checkSort sorts a copy of c's keys (with values when withVals) on e and
// compares with the reference order.
func checkSort[K Key, V Word](t *testing.T, e *Engine, r *rand.Rand, c *sortCase[K], withVals bool) {
	t.Helper()
	what := "keys only"
	if withVals {
		var v V
		what = fmt.Sprintf("%T values", v)
	}
	keys := slices.Clone(c.keys)
	var vals0, vals []V
	if withVals {
		vals0 = sortTestValues[V](r, len(keys))
		vals = slices.Clone(vals0)
	}
	var err error
	switch {
	case e.Backend() == gpu.BackendGPU:
		err = devSortGuarded(e, keys, vals, c.begin, c.end, c.hostAPI)
	case c.hostAPI && withVals:
		err = SortPairs(e, keys, vals)
	case c.hostAPI:
		err = SortKeys(e, keys)
	default:
		err = sortBits(e, keys, vals, c.begin, c.end)
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	for i, p := range c.perm {
		if keys[i] != c.keys[p] {
			t.Fatalf("%s, bits [%d,%d): key[%d] = %#x, want %#x", what, c.begin, c.end, i, keys[i], c.keys[p])
		}
		if withVals && vals[i] != vals0[p] {
			t.Fatalf("%s, bits [%d,%d): val[%d] = %#x, want %#x (from index %d; key %#x)",
				what, c.begin, c.end, i, vals[i], vals0[p], p, keys[i])
		}
	}
}

// sortGuard is the number of poisoned elements after the n that a device
// sort is given, to catch writes past n.
const sortGuard = 1000

// devSortGuarded sorts keys (and vals) through the device-level API: with
// every bit, DevSortKeys or DevSortPairs, else DevSortPairsBits. The device
// buffers extend past n with poison that must survive, and the sort's
// scratch is poisoned first so that unwritten elements cannot look right.
func devSortGuarded[K Key, V Word](e *Engine, keys []K, vals []V, begin, end int, allBits bool) error {
	n := len(keys)
	e.mu.Lock()
	for _, purpose := range []string{sortScratchKeys, sortScratchVals} {
		if b := e.pool.Held(purpose); b != nil {
			if err := b.FillBytes(e.stream, 0xA5); err != nil {
				e.mu.Unlock()
				return err
			}
		}
	}
	e.mu.Unlock()
	kb, err := uploadGuarded(e, keys)
	if err != nil {
		return err
	}
	defer kb.Free()
	var vb *gpu.Buffer[V]
	if vals != nil {
		if vb, err = uploadGuarded(e, vals); err != nil {
			return err
		}
		defer vb.Free()
	}
	switch {
	case allBits && vals == nil:
		err = DevSortKeys(e, kb, n)
	case allBits:
		err = DevSortPairs(e, kb, vb, n)
	default:
		err = DevSortPairsBits(e, kb, vb, n, begin, end)
	}
	if err != nil {
		return err
	}
	if err := e.Synchronize(); err != nil {
		return err
	}
	if err := downloadGuarded(kb, keys); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	if vals != nil {
		if err := downloadGuarded(vb, vals); err != nil {
			return fmt.Errorf("values: %w", err)
		}
	}
	return nil
}

// uploadGuarded returns a device copy of s followed by sortGuard poisoned
// elements.
func uploadGuarded[T Word](e *Engine, s []T) (*gpu.Buffer[T], error) {
	guard := make([]T, sortGuard)
	poison(guard)
	return gpu.Upload(e.Device(), append(slices.Clone(s), guard...))
}

// downloadGuarded copies the first len(s) elements of b into s and checks
// that the guard after them is still poisoned.
func downloadGuarded[T Word](b *gpu.Buffer[T], s []T) error {
	all, err := b.Download()
	if err != nil {
		return err
	}
	want := make([]T, sortGuard)
	poison(want)
	if i := slices.IndexFunc(all[len(s):], func(v T) bool { return v != want[0] }); i >= 0 {
		return fmt.Errorf("element %d past n=%d overwritten with %#x", i, len(s), all[len(s)+i])
	}
	copy(s, all)
	return nil
}

// TestSortHostAPIOnEveryEngine checks that SortKeys and SortPairs copy in,
// sort and copy out on every engine (the GPU engine's copies are not covered
// by TestSortMatchesStableReference, which uses the device API there).
func TestSortHostAPIOnEveryEngine(t *testing.T) {
	for _, e := range testEngines(t) {
		r := newRand(t)
		for _, n := range []int{0, 1, 2, 4097, 100_003} {
			t.Run(fmt.Sprintf("%s/n=%d", e.Name(), n), func(t *testing.T) {
				c := newSortCase[uint64](r, sortInputs[0], n)
				keys := slices.Clone(c.keys)
				if err := SortKeys(e, keys); err != nil {
					t.Fatal(err)
				}
				for i, p := range c.perm {
					if keys[i] != c.keys[p] {
						t.Fatalf("SortKeys: key[%d] = %#x, want %#x", i, keys[i], c.keys[p])
					}
				}
				keys = slices.Clone(c.keys)
				vals0 := sortTestValues[uint32](r, n)
				vals := slices.Clone(vals0)
				if err := SortPairs(e, keys, vals); err != nil {
					t.Fatal(err)
				}
				for i, p := range c.perm {
					if keys[i] != c.keys[p] || vals[i] != vals0[p] {
						t.Fatalf("SortPairs: pair %d = (%#x, %#x), want (%#x, %#x)", i, keys[i], vals[i], c.keys[p], vals0[p])
					}
				}
			})
		}
	}
}

// TestSortRejectsBadArguments checks the errors for mismatched lengths, bit
// ranges outside the key, device calls on the CPU engine and short buffers.
func TestSortRejectsBadArguments(t *testing.T) {
	cpu := NewCPU(0)
	if err := SortPairs(cpu, make([]uint64, 3), make([]uint32, 2)); err == nil {
		t.Error("SortPairs with 3 keys and 2 values: no error")
	}
	if err := sortBits[uint32, uint32](cpu, make([]uint32, 3), nil, 0, 33); err == nil {
		t.Error("sort of 32-bit keys by bits [0,33): no error")
	}
	if err := DevSortKeys[uint64](cpu, nil, 0); err == nil {
		t.Error("DevSortKeys on the CPU engine: no error")
	}
	e := testGPUEngine(t)
	if e == nil {
		return
	}
	kb, err := gpu.Alloc[uint32](e.Device(), 10)
	if err != nil {
		t.Fatal(err)
	}
	defer kb.Free()
	vb, err := gpu.Alloc[uint64](e.Device(), 5)
	if err != nil {
		t.Fatal(err)
	}
	defer vb.Free()
	for name, err := range map[string]error{
		"11 keys in a buffer of 10":  DevSortKeys(e, kb, 11),
		"10 values in a buffer of 5": DevSortPairs(e, kb, vb, 10),
		"nil values":                 DevSortPairs[uint32, uint64](e, kb, nil, 10),
		"bits [-1,8)":                DevSortPairsBits(e, kb, vb, 5, -1, 8),
		"bits [9,8)":                 DevSortPairsBits(e, kb, vb, 5, 9, 8),
		"bits [0,40) of u32 keys":    DevSortPairsBits(e, kb, vb, 5, 0, 40),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// BenchmarkSortPairs64x32 sorts 2^22 random uint64 keys with uint32 values
// on the CPU engine; pairs/s is the throughput.
func BenchmarkSortPairs64x32(b *testing.B) {
	const n = 1 << 22
	e := NewCPU(0)
	r := rand.New(rand.NewPCG(1, 2))
	keys0, vals0 := randomWords[uint64](r, n, 64), randomWords[uint32](r, n, 32)
	keys, vals := make([]uint64, n), make([]uint32, n)
	var sorting time.Duration
	for b.Loop() {
		copy(keys, keys0)
		copy(vals, vals0)
		start := time.Now()
		if err := SortPairs(e, keys, vals); err != nil {
			b.Fatal(err)
		}
		sorting += time.Since(start)
	}
	b.ReportMetric(float64(n)*float64(b.N)/sorting.Seconds(), "pairs/s")
}

// BenchmarkDevSortPairs64x32 sorts 2^27 random uint64 keys with uint32
// values already on the device; pairs/s is the throughput, timed with
// device events around the sort alone (the target on an H100 is 2e9; one
// run measured 5.3e9).
func BenchmarkDevSortPairs64x32(b *testing.B) {
	const n = 1 << 27
	d := gputest.Device(b)
	e, err := NewGPU(d)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	r := rand.New(rand.NewPCG(1, 2))
	keys0, err := gpu.Upload(d, randomWords[uint64](r, n, 64))
	if err != nil {
		b.Fatal(err)
	}
	defer keys0.Free()
	vals0, err := gpu.Upload(d, randomWords[uint32](r, n, 32))
	if err != nil {
		b.Fatal(err)
	}
	defer vals0.Free()
	keys, err := gpu.Alloc[uint64](d, n)
	if err != nil {
		b.Fatal(err)
	}
	defer keys.Free()
	vals, err := gpu.Alloc[uint32](d, n)
	if err != nil {
		b.Fatal(err)
	}
	defer vals.Free()
	start, err := d.NewEvent()
	if err != nil {
		b.Fatal(err)
	}
	defer start.Close()
	end, err := d.NewEvent()
	if err != nil {
		b.Fatal(err)
	}
	defer end.Close()

	// Warm up: compile and load the kernels, size the scratch.
	if err := DevSortPairs(e, keys, vals, n); err != nil {
		b.Fatal(err)
	}
	if err := e.Synchronize(); err != nil {
		b.Fatal(err)
	}
	var sorting time.Duration
	for b.Loop() {
		s := e.Stream()
		if err := keys.CopyFrom(s, 0, keys0, 0, n); err != nil {
			b.Fatal(err)
		}
		if err := vals.CopyFrom(s, 0, vals0, 0, n); err != nil {
			b.Fatal(err)
		}
		start.Record(s)
		if err := DevSortPairs(e, keys, vals, n); err != nil {
			b.Fatal(err)
		}
		end.Record(s)
		if err := end.Synchronize(); err != nil {
			b.Fatal(err)
		}
		dt, err := gpu.Elapsed(start, end)
		if err != nil {
			b.Fatal(err)
		}
		sorting += dt
	}
	b.ReportMetric(float64(n)*float64(b.N)/sorting.Seconds(), "pairs/s")
}
