package prim

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
)

func TestMerge(t *testing.T) {
	t.Run("u32 keys u32 values", testMerge[uint32, uint32](true))
	t.Run("u32 keys u64 values", testMerge[uint32, uint64](true))
	t.Run("u64 keys u32 values", testMerge[uint64, uint32](true))
	t.Run("u64 keys u64 values", testMerge[uint64, uint64](true))
	t.Run("u32 keys only", testMerge[uint32, uint32](false))
	t.Run("u64 keys only", testMerge[uint64, uint64](false))
}

// mergeSplits are the shares of the n inputs that go to run a.
var mergeSplits = []struct {
	name     string
	num, den int
}{
	{"a empty", 0, 1},
	{"a third", 1, 3},
	{"a half", 1, 2},
	{"b empty", 1, 1},
}

// testMerge checks Merge on every engine against mergeRef, on runs of every
// test size split unevenly between a and b, with keys spread over the whole
// key range and with keys full of ties within and across the runs. Values
// record their run and index, so outV shows any break of stability.
func testMerge[K Key, V Word](withValues bool) func(*testing.T) {
	return func(t *testing.T) {
		for _, e := range testEngines(t) {
			r := newRand(t)
			sizes := testSizes(e)
			for _, n := range sizes {
				for _, sp := range mergeSplits {
					if n == sizes[len(sizes)-1] && sp.num*3 != sp.den {
						continue // the largest size, to keep the run short, only with the uneven split
					}
					for _, ties := range []bool{false, true} {
						shape := "spread keys"
						if ties {
							shape = "tied keys"
						}
						na := n * sp.num / sp.den
						nb := n - na
						t.Run(fmt.Sprintf("%s/n=%d/%s/%s", e.Name(), n, sp.name, shape), func(t *testing.T) {
							ak, bk := sortedKeys[K](r, na, ties), sortedKeys[K](r, nb, ties)
							var av, bv, outV []V
							if withValues {
								av, bv = sourceValues[V](na, false), sourceValues[V](nb, true)
								outV = make([]V, n)
								poison(outV)
							}
							outK := make([]K, n)
							poison(outK)
							if err := Merge(e, ak, av, bk, bv, outK, outV); err != nil {
								t.Fatal(err)
							}
							wantK, wantV := mergeRef(ak, av, bk, bv)
							if i := firstDiff(outK, wantK); i >= 0 {
								t.Fatalf("outK[%d] = %#x, want %#x", i, outK[i], wantK[i])
							}
							if i := firstDiff(outV, wantV); i >= 0 {
								t.Fatalf("outV[%d] = %#x, want %#x (key %#x)", i, outV[i], wantV[i], wantK[i])
							}
						})
					}
				}
			}
		}
	}
}

// sortedKeys returns n ascending keys. Spread keys climb by random gaps to
// near the top of K's range; tied keys start at 0 and climb by gaps of 0 or
// 1, so two runs made this way share many equal keys.
func sortedKeys[K Key](r *rand.Rand, n int, ties bool) []K {
	out := make([]K, n)
	if n == 0 {
		return out
	}
	gap := uint64(2)
	if !ties {
		gap = uint64(^K(0))/uint64(n+1) + 1 // n gaps of at most gap-1 stay in range
	}
	var k uint64
	for i := range out {
		k += r.Uint64N(gap)
		out[i] = K(k)
	}
	return out
}

// sourceValues returns values that record their index, with the top bit set
// for run b.
func sourceValues[V Word](n int, fromB bool) []V {
	out := make([]V, n)
	var mark V
	if fromB {
		mark = V(1) << (8*unsafe.Sizeof(mark) - 1)
	}
	for i := range out {
		out[i] = V(i) | mark
	}
	return out
}

// mergeRef is the sequential stable merge: a's element first on equal keys.
// av nil: keys only (the returned values are nil).
func mergeRef[K Key, V Word](ak []K, av []V, bk []K, bv []V) ([]K, []V) {
	outK := make([]K, 0, len(ak)+len(bk))
	var outV []V
	if av != nil {
		outV = make([]V, 0, len(ak)+len(bk))
	}
	i, j := 0, 0
	for i < len(ak) || j < len(bk) {
		if j == len(bk) || (i < len(ak) && ak[i] <= bk[j]) {
			outK = append(outK, ak[i])
			if av != nil {
				outV = append(outV, av[i])
			}
			i++
		} else {
			outK = append(outK, bk[j])
			if av != nil {
				outV = append(outV, bv[j])
			}
			j++
		}
	}
	return outK, outV
}

// firstDiff returns the first index where got and want differ, or -1 when
// they are equal; a length mismatch counts at the shorter length.
func firstDiff[T comparable](got, want []T) int {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return i
		}
	}
	if len(got) != len(want) {
		return min(len(got), len(want))
	}
	return -1
}

// TestMergeCPUWorkerCounts checks the CPU twin's chunking with worker
// counts that cut the output at many odd places.
func TestMergeCPUWorkerCounts(t *testing.T) {
	r := newRand(t)
	const n = 1<<18 + 3
	for _, workers := range []int{3, 13, 64} {
		for _, ties := range []bool{false, true} {
			t.Run(fmt.Sprintf("workers=%d/ties=%v", workers, ties), func(t *testing.T) {
				na := n / 3
				ak, bk := sortedKeys[uint32](r, na, ties), sortedKeys[uint32](r, n-na, ties)
				av, bv := sourceValues[uint32](na, false), sourceValues[uint32](n-na, true)
				outK, outV := make([]uint32, n), make([]uint32, n)
				poison(outK)
				poison(outV)
				if err := Merge(NewCPU(workers), ak, av, bk, bv, outK, outV); err != nil {
					t.Fatal(err)
				}
				wantK, wantV := mergeRef(ak, av, bk, bv)
				if i := firstDiff(outK, wantK); i >= 0 {
					t.Fatalf("outK[%d] = %#x, want %#x", i, outK[i], wantK[i])
				}
				if i := firstDiff(outV, wantV); i >= 0 {
					t.Fatalf("outV[%d] = %#x, want %#x", i, outV[i], wantV[i])
				}
			})
		}
	}
}

// TestMergeOfUnsortedRunsStaysInBounds merges runs that are not ascending:
// the order is unspecified, but no engine may fail or fault, and each must
// still merge correctly afterwards.
func TestMergeOfUnsortedRunsStaysInBounds(t *testing.T) {
	r := newRand(t)
	for _, e := range testEngines(t) {
		t.Run(e.Name(), func(t *testing.T) {
			const n = 1<<18 + 5
			ak, bk := randomWords[uint32](r, n/3, 32), randomWords[uint32](r, n-n/3, 32)
			av, bv := sourceValues[uint64](n/3, false), sourceValues[uint64](n-n/3, true)
			outK, outV := make([]uint32, n), make([]uint64, n)
			if err := Merge(e, ak, av, bk, bv, outK, outV); err != nil {
				t.Fatalf("unsorted runs: %v", err)
			}
			ak, bk = sortedKeys[uint32](r, 1000, true), sortedKeys[uint32](r, 2000, true)
			outK = make([]uint32, 3000)
			if err := Merge[uint32, uint32](e, ak, nil, bk, nil, outK, nil); err != nil {
				t.Fatalf("sorted runs after unsorted ones: %v", err)
			}
			wantK, _ := mergeRef[uint32, uint32](ak, nil, bk, nil)
			if i := firstDiff(outK, wantK); i >= 0 {
				t.Fatalf("after unsorted runs: outK[%d] = %#x, want %#x", i, outK[i], wantK[i])
			}
		})
	}
}

func TestMergeRejectsBadLengths(t *testing.T) {
	w := func(n int) []uint32 { return make([]uint32, n) }
	cases := []struct {
		name                       string
		ak, av, bk, bv, outK, outV []uint32
	}{
		{"outK too short", w(3), nil, w(2), nil, w(4), nil},
		{"outK too long", w(3), nil, w(2), nil, w(6), nil},
		{"values without outV", w(3), w(3), w(2), w(2), w(5), nil},
		{"av shorter than ak", w(3), w(2), w(2), w(2), w(5), w(5)},
		{"bv longer than bk", w(3), w(3), w(2), w(3), w(5), w(5)},
		{"outV shorter than outK", w(3), w(3), w(2), w(2), w(5), w(4)},
		{"av missing", w(3), nil, w(2), w(2), w(5), w(5)},
	}
	for _, e := range testEngines(t) {
		for _, c := range cases {
			t.Run(e.Name()+"/"+c.name, func(t *testing.T) {
				if err := Merge(e, c.ak, c.av, c.bk, c.bv, c.outK, c.outV); err == nil {
					t.Fatal("no error")
				}
			})
		}
	}
}

func TestDevMergeNeedsGPUEngine(t *testing.T) {
	if err := DevMerge[uint32, uint32](NewCPU(1), nil, nil, 0, nil, nil, 0, nil, nil); err == nil {
		t.Fatal("DevMerge on the CPU engine: no error")
	}
}

// TestDevMergeWritesOnlyItsOutputs merges the leading parts of larger
// device buffers and checks the output buffer past na+nb is untouched.
func TestDevMergeWritesOnlyItsOutputs(t *testing.T) {
	e := testGPUEngine(t)
	if e == nil {
		t.Skip("no GPU engine")
	}
	r := newRand(t)
	const na, nb, extra = 5000, 3001, 777
	ak, bk := sortedKeys[uint64](r, na+extra, true), sortedKeys[uint64](r, nb+extra, true)
	av, bv := sourceValues[uint32](na+extra, false), sourceValues[uint32](nb+extra, true)
	outK, outV := make([]uint64, na+nb+extra), make([]uint32, na+nb+extra)
	poison(outK)
	poison(outV)
	var st deviceStaging
	defer st.finish(e)
	keys := func(src []uint64) *gpu.Buffer[uint64] {
		b, err := stageOnDevice(e, &st, src, len(src))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	vals := func(src []uint32) *gpu.Buffer[uint32] {
		b, err := stageOnDevice(e, &st, src, len(src))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	dak, dav, dbk, dbv := keys(ak), vals(av), keys(bk), vals(bv)
	dok, dov := keys(outK), vals(outV)
	if err := DevMerge(e, dak, dav, na, dbk, dbv, nb, dok, dov); err != nil {
		t.Fatal(err)
	}
	if err := dok.Read(e.Stream(), 0, outK); err != nil {
		t.Fatal(err)
	}
	if err := dov.Read(e.Stream(), 0, outV); err != nil {
		t.Fatal(err)
	}
	if err := e.Synchronize(); err != nil {
		t.Fatal(err)
	}
	wantK, wantV := mergeRef(ak[:na], av[:na], bk[:nb], bv[:nb])
	poisonK, poisonV := make([]uint64, extra), make([]uint32, extra)
	poison(poisonK)
	poison(poisonV)
	wantK, wantV = append(wantK, poisonK...), append(wantV, poisonV...)
	if i := firstDiff(outK, wantK); i >= 0 {
		t.Fatalf("outK[%d] = %#x, want %#x", i, outK[i], wantK[i])
	}
	if i := firstDiff(outV, wantV); i >= 0 {
		t.Fatalf("outV[%d] = %#x, want %#x", i, outV[i], wantV[i])
	}
}
