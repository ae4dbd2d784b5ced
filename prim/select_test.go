package prim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
)

// selectRef is the sequential reference select.
func selectRef[T Word](in []T, flags []uint8) []T {
	var out []T
	for i, f := range flags {
		if f != 0 {
			out = append(out, in[i])
		}
	}
	return out
}

// reduceByKeyRef is the sequential reference reduce-by-key; vals nil means
// every value is 1 (run-length encoding).
func reduceByKeyRef[K Key, V Word](keys []K, vals []V) ([]K, []V) {
	var uniq []K
	var sums []V
	for i, k := range keys {
		v := V(1)
		if vals != nil {
			v = vals[i]
		}
		if i == 0 || k != keys[i-1] {
			uniq = append(uniq, k)
			sums = append(sums, v)
		} else {
			sums[len(sums)-1] += v
		}
	}
	return uniq, sums
}

// randomFlags returns n flags, each nonzero (a random nonzero byte) with
// probability density.
func randomFlags(r *rand.Rand, n int, density float64) []uint8 {
	f := make([]uint8, n)
	for i := range f {
		if r.Float64() < density {
			f[i] = uint8(1 + r.IntN(255))
		}
	}
	return f
}

// keyPatterns are the key sequences run-length encoding and reduce-by-key
// are checked on: runs shorter and longer than a tile or a CPU chunk, one
// run over everything, and unsorted keys that repeat without being adjacent.
func keyPatterns[K Key](r *rand.Rand) []struct {
	name string
	gen  func(n int) []K
} {
	return []struct {
		name string
		gen  func(n int) []K
	}{
		{"all distinct", func(n int) []K { return runKeys[K](r, n, 1) }},
		{"short runs", func(n int) []K { return runKeys[K](r, n, 4) }},
		{"long runs", func(n int) []K { return runKeys[K](r, n, 20000) }},
		{"one run", func(n int) []K { return runKeys[K](r, n, n+1) }},
		{"random 1-bit keys", func(n int) []K { return randomWords[K](r, n, 1) }},
	}
}

// runKeys returns n keys in runs of random lengths in [1, maxRun] (exactly 1
// when maxRun is 1); each run's key differs from the last run's.
func runKeys[K Key](r *rand.Rand, n, maxRun int) []K {
	keys := make([]K, n)
	k := K(r.Uint64())
	for i := 0; i < n; {
		for l := 1 + r.IntN(maxRun); l > 0 && i < n; l-- {
			keys[i] = k
			i++
		}
		k += K(1 + r.IntN(3))
	}
	return keys
}

func TestSelectMatchesSequentialReference(t *testing.T) {
	for _, e := range testEngines(t) {
		t.Run(e.Name(), func(t *testing.T) {
			t.Run("uint32", func(t *testing.T) { testSelect[uint32](t, e) })
			t.Run("uint64", func(t *testing.T) { testSelect[uint64](t, e) })
		})
	}
}

func testSelect[T Word](t *testing.T, e *Engine) {
	r := newRand(t)
	for _, n := range testSizes(e) {
		for _, density := range []float64{0, 0.01, 0.5, 1} {
			name := fmt.Sprintf("n=%d/density=%v", n, density)
			in := randomWords[T](r, n, 64)
			flags := randomFlags(r, n, density)
			want := selectRef(in, flags)
			out := make([]T, n)
			poison(out)
			kept, err := Select(e, in, flags, out)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if kept != len(want) {
				t.Fatalf("%s: kept %d, want %d", name, kept, len(want))
			}
			if i := scanFirstDiff(out[:kept], want); i >= 0 {
				t.Fatalf("%s: out[%d] = %#x, want %#x", name, i, out[i], want[i])
			}
			rest := make([]T, n-kept)
			poison(rest)
			if !slices.Equal(out[kept:], rest) {
				t.Fatalf("%s: wrote past the kept elements", name)
			}
		}
	}
}

func TestSelectRejectsBadLengths(t *testing.T) {
	for _, e := range testEngines(t) {
		in := []uint32{1, 2, 3, 4}
		kept, err := Select(e, in, []uint8{1, 0, 1, 1}, make([]uint32, 2))
		if err == nil || kept != 3 {
			t.Errorf("%s: select of 3 into 2: kept %d, error %v; want 3 and an error", e.Name(), kept, err)
		}
		if _, err := Select(e, in, []uint8{1, 0, 1}, make([]uint32, 4)); err == nil {
			t.Errorf("%s: select with 3 flags for 4 elements: no error", e.Name())
		}
	}
}

func TestRunLengthEncodeMatchesSequentialReference(t *testing.T) {
	for _, e := range testEngines(t) {
		t.Run(e.Name(), func(t *testing.T) {
			t.Run("uint32", func(t *testing.T) { testRunLengthEncode[uint32](t, e) })
			t.Run("uint64", func(t *testing.T) { testRunLengthEncode[uint64](t, e) })
		})
	}
}

func testRunLengthEncode[K Key](t *testing.T, e *Engine) {
	r := newRand(t)
	for _, n := range testSizes(e) {
		for _, p := range keyPatterns[K](r) {
			name := fmt.Sprintf("n=%d/%s", n, p.name)
			keys := p.gen(n)
			wantUniq, wantCounts := reduceByKeyRef[K, uint32](keys, nil)
			uniq := make([]K, n)
			counts := make([]uint32, n)
			poison(uniq)
			poison(counts)
			runs, err := RunLengthEncode(e, keys, uniq, counts)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			checkRuns(t, name, runs, uniq, counts, wantUniq, wantCounts)
		}
	}
}

func TestReduceByKeyMatchesSequentialReference(t *testing.T) {
	for _, e := range testEngines(t) {
		t.Run(e.Name(), func(t *testing.T) {
			t.Run("uint32 keys, uint32 values", func(t *testing.T) { testReduceByKey[uint32, uint32](t, e) })
			t.Run("uint32 keys, uint64 values", func(t *testing.T) { testReduceByKey[uint32, uint64](t, e) })
			t.Run("uint64 keys, uint32 values", func(t *testing.T) { testReduceByKey[uint64, uint32](t, e) })
			t.Run("uint64 keys, uint64 values", func(t *testing.T) { testReduceByKey[uint64, uint64](t, e) })
		})
	}
}

func testReduceByKey[K Key, V Word](t *testing.T, e *Engine) {
	r := newRand(t)
	for _, n := range testSizes(e) {
		for _, p := range keyPatterns[K](r) {
			name := fmt.Sprintf("n=%d/%s", n, p.name)
			keys := p.gen(n)
			vals := randomWords[V](r, n, 64)
			wantUniq, wantSums := reduceByKeyRef(keys, vals)
			uniq := make([]K, n)
			sums := make([]V, n)
			poison(uniq)
			poison(sums)
			runs, err := ReduceByKey(e, keys, vals, uniq, sums)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			checkRuns(t, name, runs, uniq, sums, wantUniq, wantSums)
		}
	}
}

// checkRuns compares a run-length or reduce-by-key result with the
// reference, and checks that nothing past the runs was written.
func checkRuns[K Key, V Word](t *testing.T, name string, runs int, uniq []K, sums []V, wantUniq []K, wantSums []V) {
	t.Helper()
	if runs != len(wantUniq) {
		t.Fatalf("%s: %d runs, want %d", name, runs, len(wantUniq))
	}
	if i := scanFirstDiff(uniq[:runs], wantUniq); i >= 0 {
		t.Fatalf("%s: uniq[%d] = %#x, want %#x", name, i, uniq[i], wantUniq[i])
	}
	if i := scanFirstDiff(sums[:runs], wantSums); i >= 0 {
		t.Fatalf("%s: sum or count of run %d = %#x, want %#x", name, i, sums[i], wantSums[i])
	}
	restK := make([]K, len(uniq)-runs)
	restV := make([]V, len(sums)-runs)
	poison(restK)
	poison(restV)
	if !slices.Equal(uniq[runs:], restK) || !slices.Equal(sums[runs:], restV) {
		t.Fatalf("%s: wrote past the runs", name)
	}
}

func TestRunsRejectBadLengths(t *testing.T) {
	keys := []uint64{5, 5, 7, 9, 9, 9}
	for _, e := range testEngines(t) {
		runs, err := RunLengthEncode(e, keys, make([]uint64, 2), make([]uint32, 3))
		if err == nil || runs != 3 {
			t.Errorf("%s: run-length encode of 3 runs into 2: runs %d, error %v; want 3 and an error", e.Name(), runs, err)
		}
		runs, err = ReduceByKey(e, keys, make([]uint32, 6), make([]uint64, 3), make([]uint32, 1))
		if err == nil || runs != 3 {
			t.Errorf("%s: reduce by key of 3 runs into 1 sum: runs %d, error %v; want 3 and an error", e.Name(), runs, err)
		}
		if _, err := ReduceByKey(e, keys, make([]uint32, 5), make([]uint64, 6), make([]uint32, 6)); err == nil {
			t.Errorf("%s: reduce by key with 5 values for 6 keys: no error", e.Name())
		}
	}
}

func TestDevSelectAndRunsNeedTheGPUEngine(t *testing.T) {
	e := NewCPU(1)
	if err := DevSelect[uint32](e, nil, nil, nil, 0, nil); err == nil {
		t.Error("DevSelect on the CPU engine: no error")
	}
	if err := DevRunLengthEncode[uint32](e, nil, nil, nil, 0, nil); err == nil {
		t.Error("DevRunLengthEncode on the CPU engine: no error")
	}
	if err := DevReduceByKey[uint32, uint32](e, nil, nil, nil, nil, 0, nil); err == nil {
		t.Error("DevReduceByKey on the CPU engine: no error")
	}
}

// TestDevSelectAndRunsOnUnalignedViews runs the device functions on views
// one element into their buffers, which defeats the vector loads, and on
// empty input, which must still write a zero count.
func TestDevSelectAndRunsOnUnalignedViews(t *testing.T) {
	e := testGPUEngine(t)
	if e == nil {
		t.Skip("no GPU engine")
	}
	t.Run("select uint32", func(t *testing.T) { testDevSelectViews[uint32](t, e) })
	t.Run("select uint64", func(t *testing.T) { testDevSelectViews[uint64](t, e) })
	t.Run("reduce by key uint32 uint64", func(t *testing.T) { testDevReduceByKeyViews[uint32, uint64](t, e) })
	t.Run("reduce by key uint64 uint32", func(t *testing.T) { testDevReduceByKeyViews[uint64, uint32](t, e) })
}

// uploadAt returns a view of n+1 elements at element off of a new buffer
// holding src at off, and the buffer (to free).
func uploadAt[T any](t *testing.T, e *Engine, src []T, off int) (*gpu.Buffer[T], *gpu.Buffer[T]) {
	t.Helper()
	all, err := gpu.Alloc[T](e.Device(), off+len(src)+1)
	if err != nil {
		t.Fatal(err)
	}
	if err := all.Write(nil, off, src); err != nil {
		t.Fatal(err)
	}
	return gpu.View[T](all, off*int(unsafe.Sizeof(*new(T))), len(src)+1), all
}

func testDevSelectViews[T Word](t *testing.T, e *Engine) {
	r := newRand(t)
	for _, n := range []int{0, 1000, 1<<20 + 7} {
		for _, off := range []int{0, 1} {
			name := fmt.Sprintf("n=%d/offset=%d", n, off)
			in := randomWords[T](r, n, 64)
			flags := randomFlags(r, n, 0.5)
			want := selectRef(in, flags)
			bin, fin := uploadAt(t, e, in, off)
			bflags, fflags := uploadAt(t, e, flags, off)
			poisoned := make([]T, n)
			poison(poisoned)
			bout, fout := uploadAt(t, e, poisoned, off)
			bcount, fcount := uploadAt(t, e, []uint32{0xDEADBEEF}, 0)
			if err := DevSelect(e, bin, bflags, bout, n, bcount); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// Dev* calls are queued on the engine's stream, which does not
			// order with the default stream Download copies on.
			if err := e.Synchronize(); err != nil {
				t.Fatal(err)
			}
			got, err := fout.Download()
			if err != nil {
				t.Fatal(err)
			}
			count, err := fcount.Download()
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range []interface{ Free() error }{fin, fflags, fout, fcount} {
				b.Free()
			}
			if int(count[0]) != len(want) {
				t.Fatalf("%s: count %d, want %d", name, count[0], len(want))
			}
			if i := scanFirstDiff(got[off:off+len(want)], want); i >= 0 {
				t.Fatalf("%s: out[%d] = %#x, want %#x", name, i, got[off+i], want[i])
			}
		}
	}
}

func testDevReduceByKeyViews[K Key, V Word](t *testing.T, e *Engine) {
	r := newRand(t)
	for _, n := range []int{0, 1000, 1<<20 + 7} {
		for _, off := range []int{0, 1} {
			name := fmt.Sprintf("n=%d/offset=%d", n, off)
			keys := runKeys[K](r, n, 9)
			vals := randomWords[V](r, n, 64)
			wantUniq, wantSums := reduceByKeyRef(keys, vals)
			_, wantCounts := reduceByKeyRef[K, uint32](keys, nil)
			pk, pv, pc := make([]K, n), make([]V, n), make([]uint32, n)
			poison(pk)
			poison(pv)
			poison(pc)
			bkeys, fkeys := uploadAt(t, e, keys, off)
			bvals, fvals := uploadAt(t, e, vals, off)
			buniq, funiq := uploadAt(t, e, pk, off)
			bsums, fsums := uploadAt(t, e, pv, off)
			bcounts, fcounts := uploadAt(t, e, pc, off)
			bruns, fruns := uploadAt(t, e, []uint32{0xDEADBEEF, 0xDEADBEEF}, 0)
			if err := DevReduceByKey(e, bkeys, bvals, buniq, bsums, n, bruns); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := DevRunLengthEncode(e, bkeys, buniq, bcounts, n, gpu.View[uint32](bruns, 4, 1)); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := e.Synchronize(); err != nil {
				t.Fatal(err)
			}
			uniq, err1 := funiq.Download()
			sums, err2 := fsums.Download()
			counts, err3 := fcounts.Download()
			runs, err4 := fruns.Download()
			for _, err := range []error{err1, err2, err3, err4} {
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, b := range []interface{ Free() error }{fkeys, fvals, funiq, fsums, fcounts, fruns} {
				b.Free()
			}
			if int(runs[0]) != len(wantUniq) || int(runs[1]) != len(wantUniq) {
				t.Fatalf("%s: runs %d (reduce by key), %d (run-length), want %d", name, runs[0], runs[1], len(wantUniq))
			}
			checkRuns(t, name+"/reduce by key", len(wantUniq), uniq[off:off+len(wantUniq)], sums[off:off+len(wantUniq)], wantUniq, wantSums)
			checkRuns(t, name+"/run-length", len(wantUniq), uniq[off:off+len(wantUniq)], counts[off:off+len(wantUniq)], wantUniq, wantCounts)
		}
	}
}
