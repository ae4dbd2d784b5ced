package prim

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestSegmentedMax(t *testing.T) {
	t.Run("u32", testSegmentedMax[uint32])
	t.Run("u64", testSegmentedMax[uint64])
}

// segmaxLayouts are the segmentations of n values the tests use; each
// returns the offsets.
var segmaxLayouts = []struct {
	name    string
	offsets func(r *rand.Rand, n int) []uint32
}{
	{"all empty", func(r *rand.Rand, n int) []uint32 {
		off := make([]uint32, n/4+2)
		for i := range off {
			off[i] = uint32(n / 2)
		}
		return off
	}},
	{"length one", func(r *rand.Rand, n int) []uint32 {
		off := make([]uint32, n+1)
		for i := range off {
			off[i] = uint32(i)
		}
		return off
	}},
	{"random lengths with empties", func(r *rand.Rand, n int) []uint32 {
		return appendRandomSegments(r, []uint32{0}, n, 40)
	}},
	{"long random lengths", func(r *rand.Rand, n int) []uint32 {
		return appendRandomSegments(r, []uint32{0}, n, 5000)
	}},
	{"one huge", func(r *rand.Rand, n int) []uint32 {
		return []uint32{0, uint32(n)}
	}},
	{"huge among small", func(r *rand.Rand, n int) []uint32 {
		off := appendRandomSegments(r, []uint32{0}, n/4, 8)
		off = append(off, uint32(n/4), uint32(n/4)) // two empty segments
		off = append(off, uint32(3*n/4))            // the huge one
		return appendRandomSegments(r, off, n, 8)
	}},
	{"window inside values", func(r *rand.Rand, n int) []uint32 {
		return appendRandomSegments(r, []uint32{uint32(n / 8)}, n-n/8, 100)
	}},
}

// appendRandomSegments appends offsets of segments of random lengths in
// [0, maxLen) until the last offset is end.
func appendRandomSegments(r *rand.Rand, off []uint32, end, maxLen int) []uint32 {
	for cur := int(off[len(off)-1]); cur < end; {
		cur = min(cur+r.IntN(maxLen), end)
		off = append(off, uint32(cur))
	}
	return off
}

// testSegmentedMax checks SegmentedMax on every engine against segmaxRef,
// for every layout at every test size, with random values over T's range
// and a poisoned output.
func testSegmentedMax[T Word](t *testing.T) {
	for _, e := range testEngines(t) {
		r := newRand(t)
		for _, n := range testSizes(e) {
			for _, l := range segmaxLayouts {
				t.Run(fmt.Sprintf("%s/n=%d/%s", e.Name(), n, l.name), func(t *testing.T) {
					vals := randomWords[T](r, n, 64)
					offsets := l.offsets(r, n)
					out := make([]T, len(offsets)-1)
					poison(out)
					if err := SegmentedMax(e, vals, offsets, out); err != nil {
						t.Fatal(err)
					}
					want := segmaxRef(vals, offsets)
					if s := firstDiff(out, want); s >= 0 {
						t.Fatalf("out[%d] = %#x, want %#x (segment [%d,%d) of %d)",
							s, out[s], want[s], offsets[s], offsets[s+1], len(out))
					}
				})
			}
		}
	}
}

// TestSegmentedMaxCPUWorkerCounts checks the CPU twin's split of the events
// with worker counts that cut segments at many odd places.
func TestSegmentedMaxCPUWorkerCounts(t *testing.T) {
	r := newRand(t)
	const n = 1<<18 + 3
	for _, workers := range []int{3, 13, 64} {
		for _, l := range segmaxLayouts {
			t.Run(fmt.Sprintf("workers=%d/%s", workers, l.name), func(t *testing.T) {
				vals := randomWords[uint32](r, n, 64)
				offsets := l.offsets(r, n)
				out := make([]uint32, len(offsets)-1)
				poison(out)
				if err := SegmentedMax(NewCPU(workers), vals, offsets, out); err != nil {
					t.Fatal(err)
				}
				want := segmaxRef(vals, offsets)
				if s := firstDiff(out, want); s >= 0 {
					t.Fatalf("out[%d] = %#x, want %#x", s, out[s], want[s])
				}
			})
		}
	}
}

// segmaxRef is the sequential segmented max.
func segmaxRef[T Word](vals []T, offsets []uint32) []T {
	out := make([]T, len(offsets)-1)
	for s := range out {
		for _, v := range vals[offsets[s]:offsets[s+1]] {
			out[s] = max(out[s], v)
		}
	}
	return out
}

func TestSegmentedMaxRejectsBadOffsets(t *testing.T) {
	cases := []struct {
		name    string
		nvals   int
		offsets []uint32
		nout    int
	}{
		{"no offsets", 4, nil, 0},
		{"out too short", 4, []uint32{0, 2, 4}, 1},
		{"out too long", 4, []uint32{0, 2, 4}, 3},
		{"offsets decrease", 4, []uint32{0, 3, 2, 4}, 3},
		{"offsets past values", 4, []uint32{0, 2, 5}, 2},
	}
	for _, e := range testEngines(t) {
		for _, c := range cases {
			t.Run(e.Name()+"/"+c.name, func(t *testing.T) {
				if err := SegmentedMax(e, make([]uint32, c.nvals), c.offsets, make([]uint32, c.nout)); err == nil {
					t.Fatal("no error")
				}
			})
		}
	}
}

func TestDevSegmentedMaxNeedsGPUEngine(t *testing.T) {
	if err := DevSegmentedMax[uint64](NewCPU(1), nil, nil, 0, nil); err == nil {
		t.Fatal("DevSegmentedMax on the CPU engine: no error")
	}
}

// TestDevSegmentedMaxWritesOnlyItsOutputs runs on device buffers larger
// than the segments need and checks the output past nseg is untouched.
func TestDevSegmentedMaxWritesOnlyItsOutputs(t *testing.T) {
	e := testGPUEngine(t)
	if e == nil {
		t.Skip("no GPU engine")
	}
	r := newRand(t)
	const n, extra = 100_000, 333
	vals := randomWords[uint64](r, n, 64)
	offsets := appendRandomSegments(r, []uint32{10}, n-10, 300)
	nseg := len(offsets) - 1
	offsets = append(offsets, n, n, n) // entries past nseg+1 are ignored
	out := make([]uint64, nseg+extra)
	poison(out)
	var st deviceStaging
	defer st.finish(e)
	dvals, err := stageOnDevice(e, &st, vals, n)
	if err != nil {
		t.Fatal(err)
	}
	doff, err := stageOnDevice(e, &st, offsets, len(offsets))
	if err != nil {
		t.Fatal(err)
	}
	dout, err := stageOnDevice(e, &st, out, len(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := DevSegmentedMax(e, dvals, doff, nseg, dout); err != nil {
		t.Fatal(err)
	}
	if err := dout.Read(e.Stream(), 0, out); err != nil {
		t.Fatal(err)
	}
	if err := e.Synchronize(); err != nil {
		t.Fatal(err)
	}
	tail := make([]uint64, extra)
	poison(tail)
	want := append(segmaxRef(vals, offsets[:nseg+1]), tail...)
	if s := firstDiff(out, want); s >= 0 {
		t.Fatalf("out[%d] = %#x, want %#x", s, out[s], want[s])
	}
}

// TestDevSegmentedMaxBadOffsetsStayInBounds gives the device offsets that
// decrease and pass the values: the result is unspecified, but the kernels
// must not fault, and the engine must still compute correctly afterwards.
func TestDevSegmentedMaxBadOffsetsStayInBounds(t *testing.T) {
	e := testGPUEngine(t)
	if e == nil {
		t.Skip("no GPU engine")
	}
	r := newRand(t)
	const n = 10_000
	vals := randomWords[uint32](r, n, 32)
	bad := make([]uint32, 3000)
	for i := range bad {
		bad[i] = uint32(r.IntN(3 * n))
	}
	bad[0], bad[len(bad)-1] = 2*n, n/2
	var st deviceStaging
	defer st.finish(e)
	dvals, err := stageOnDevice(e, &st, vals, n)
	if err != nil {
		t.Fatal(err)
	}
	doff, err := stageOnDevice(e, &st, bad, len(bad))
	if err != nil {
		t.Fatal(err)
	}
	dout, err := stageOnDevice[uint32](e, &st, nil, len(bad)-1)
	if err != nil {
		t.Fatal(err)
	}
	if err := DevSegmentedMax(e, dvals, doff, len(bad)-1, dout); err != nil {
		t.Fatal(err)
	}
	if err := e.Synchronize(); err != nil {
		t.Fatalf("bad offsets: %v", err)
	}
	offsets := appendRandomSegments(r, []uint32{0}, n, 50)
	out := make([]uint32, len(offsets)-1)
	poison(out)
	if err := SegmentedMax(e, vals, offsets, out); err != nil {
		t.Fatalf("good offsets after bad ones: %v", err)
	}
	want := segmaxRef(vals, offsets)
	if s := firstDiff(out, want); s >= 0 {
		t.Fatalf("after bad offsets: out[%d] = %#x, want %#x", s, out[s], want[s])
	}
}
