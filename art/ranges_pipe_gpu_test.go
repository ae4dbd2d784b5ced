package art

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPURangesPiped answers range queries (ascending and descending)
// and prefix scans into pinned Results with the pipelined call
// (rangesPiped) cut into 1 (one piece) to 7 chunks of at least 50 queries
// (chunk 0 as large as the others, half or a third of them; each chunk's
// pairs queued behind its walk into the least key room, so that chunks
// of longer keys run their pairs again), and
// compares every array of each answer (query offsets, key bytes, key
// offsets, values) with the CPU engine's. The trees: keys of 0 to 40 bytes over a
// small alphabet with some of up to 300 bytes (arena keys, answers of
// mixed key lengths: key offsets downloaded), and 16-byte keys (one key
// length: key offsets written on the host). The batches: random queries;
// batches whose first chunk (or a middle one) answers nothing (empty
// chunks) and whose later chunks answer many pairs (the Result's keys
// grown after earlier chunks' downloads, keeping them); sizes not a
// multiple of the chunks (chunk edges). Each batch runs into a fresh
// pinned Result and into one reused across the whole test. A batch with a
// bound longer than a key can be fails with the CPU engine's error.
func TestGPURangesPiped(t *testing.T) {
	dev := gputest.Device(t)
	r := rand.New(rand.NewPCG(22, 64))
	alpha := []byte("abcdefgh\x00\xff")
	trees := []struct {
		name string
		key  func() []byte
	}{
		{"mixed lengths", func() []byte {
			if r.IntN(40) == 0 {
				return randomBytes(r, 33, 300, alpha)
			}
			return randomBytes(r, 0, 40, alpha)
		}},
		{"16 bytes", func() []byte { return randomBytes(r, 16, 16, nil) }},
	}
	reused := (*Result)(nil)
	for _, tc := range trees {
		gt, ct := openTwins(t, dev)
		if reused == nil {
			reused = gt.NewResult()
			defer reused.Free()
		}
		n := 20000
		keys, vals := make([][]byte, n), make([]uint64, n)
		for i := range keys {
			keys[i], vals[i] = tc.key(), r.Uint64()
		}
		for _, tr := range []*Tree{gt, ct} {
			if err := tr.Build(keys, vals); err != nil {
				t.Fatal(err)
			}
		}
		g := gt.eng.(*gpuEngine)
		keepPipeForm(t, g)
		g.pipe.chunkMin = 50
		const Q = 1001
		random := func() ([]Query, [][]byte) {
			qs, ps := make([]Query, Q), make([][]byte, Q)
			for i := range qs {
				lo, hi := keys[r.IntN(n)], keys[r.IntN(n)]
				switch i % 5 {
				case 0:
					lo = nil
				case 1:
					hi = nil
				case 2:
					lo = tc.key() // a bound that may not be a key
				}
				qs[i] = Query{Lo: lo, Hi: hi}
				p := keys[r.IntN(n)]
				ps[i] = p[:r.IntN(min(len(p), 3)+1)]
			}
			return qs, ps
		}
		// emptyFirst: the first 400 queries answer nothing (an empty
		// range, a prefix no key has), the rest many pairs.
		emptyFirst := func(from, to int) func() ([]Query, [][]byte) {
			return func() ([]Query, [][]byte) {
				qs, ps := random()
				for i := from; i < to; i++ {
					k := keys[r.IntN(n)]
					qs[i] = Query{Lo: k, Hi: k}
					ps[i] = append(slices.Clone(k), "\x01\x02\x03\x04\x05\x06\x07\x08\x09"...)
				}
				for i := to; i < Q; i++ {
					qs[i].Hi = nil
				}
				return qs, ps
			}
		}
		batches := []struct {
			name string
			make func() ([]Query, [][]byte)
		}{{"random", random}, {"empty first chunks", emptyFirst(0, 400)}, {"empty middle", emptyFirst(450, 600)}}
		ops := intoOps()
		// A bound longer than a key can be fails the call on both engines
		// with the same error, whichever chunk it is in.
		qs, ps := random()
		qs[700].Lo, ps[700] = make([]byte, MaxKeyLen+1), make([]byte, MaxKeyLen+1)
		for _, op := range ops {
			_, werr := op.f(ct, nil, qs, ps, 16)
			for _, chunks := range []int{1, 4} {
				g.pipe.chunks = chunks
				if _, err := op.f(gt, reused, qs, ps, 16); err == nil || werr == nil || err.Error() != werr.Error() {
					t.Fatalf("%s, %s, %d chunks, a bound too long: %v, want %v", tc.name, op.name, chunks, err, werr)
				}
			}
		}
		for _, b := range batches {
			qs, ps := b.make()
			for _, limit := range []int{1, 16, 33, 100} {
				for _, op := range ops {
					want, err := op.f(ct, nil, qs, ps, limit)
					if err != nil {
						t.Fatal(err)
					}
					for _, chunks := range []int{1, 2, 3, 4, 5, 7} {
						// Chunk 0 as large as the others, half, a third;
						// the early pairs from the least key room.
						g.pipe.chunks, g.pipe.firstDiv, g.pipe.keySlot = chunks, 1+chunks%3, 0
						fresh := gt.NewResult()
						for _, into := range []*Result{fresh, reused} {
							name := fmt.Sprintf("%s, %s, %s, limit %d, %d chunks (first 1:%d), reused %v",
								tc.name, b.name, op.name, limit, chunks, g.pipe.firstDiv, into == reused)
							got, err := op.f(gt, into, qs, ps, limit)
							if err != nil {
								t.Fatalf("%s: %v", name, err)
							}
							sameResult(t, name, got, want)
						}
						if err := fresh.Free(); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	}
}

// sameResult fails the test unless got's arrays equal want's: the query
// offsets, the key bytes, the key offsets and the values.
func sameResult(t *testing.T, name string, got, want *Result) {
	t.Helper()
	if q := firstQueryDiff(got, want); q >= 0 {
		gp, wp := resultPairs(got), resultPairs(want)
		if q < len(gp) && q < len(wp) {
			t.Fatalf("%s: query %d: %d pairs %.3q, want %d %.3q", name, q, len(gp[q]), gp[q], len(wp[q]), wp[q])
		}
		t.Fatalf("%s: %d queries, want %d", name, len(got.Offsets)-1, len(want.Offsets)-1)
	}
	switch {
	case !slices.Equal(got.Offsets, want.Offsets):
		t.Fatalf("%s: query offsets differ", name)
	case !slices.Equal(got.Values, want.Values):
		t.Fatalf("%s: %d values, want %d", name, len(got.Values), len(want.Values))
	case !slices.Equal(got.Keys.Offs, want.Keys.Offs):
		t.Fatalf("%s: %d key offsets, want %d", name, len(got.Keys.Offs), len(want.Keys.Offs))
	case !slices.Equal(got.Keys.Data, want.Keys.Data):
		t.Fatalf("%s: %d key bytes, want %d", name, len(got.Keys.Data), len(want.Keys.Data))
	}
}

// TestRangePipeCount checks the chunks of a pipelined call: at most the
// setting's (when 0: one per rangeChunkSlots answer slots, 2 to
// rangeChunksMax), each of at least chunkMin queries, one piece below two
// chunks' worth.
func TestRangePipeCount(t *testing.T) {
	for _, c := range []struct{ chunks, chunkMin, q, limit, want int }{
		{0, 0, 1 << 16, 16, 4}, // 64Ki ranges of 16: 1Mi slots
		{0, 0, 1 << 16, 64, 8}, // 64Ki prefix scans of 64: 4Mi slots, 16 capped
		{0, 0, 1 << 16, 1, 2},  // few slots: still two chunks
		{0, 0, 1 << 16, 0, 2},  // no limit counts as 1
		{0, 0, 1 << 20, 64, 8}, // rangeChunksMax
		{0, 0, 3 << 14, 64, 6}, // 48Ki queries: 6 chunks of chunkMin
		{0, 0, 2*rangeChunkMin - 1, 64, 1},
		{0, 0, 2 * rangeChunkMin, 64, 2},
		{3, 0, 1 << 16, 64, 3},
		{1, 0, 1 << 16, 16, 1},
		{7, 50, 1001, 16, 7},
		{7, 50, 120, 16, 2},
		{4, 50, 99, 16, 1},
	} {
		p := rangePipe{chunks: c.chunks, chunkMin: c.chunkMin}
		if got := p.count(c.q, c.limit); got != c.want {
			t.Errorf("rangePipe{%d, %d}.count(%d, %d) = %d, want %d", c.chunks, c.chunkMin, c.q, c.limit, got, c.want)
		}
	}
}

// TestRangePipeBound checks the chunks' bounds: from 0 to Q in order,
// equal chunks by default, chunk 0 of 1/firstDiv of the others' size.
func TestRangePipeBound(t *testing.T) {
	for _, c := range []struct {
		firstDiv, q, chunks int
		want                []int
	}{
		{0, 100, 4, []int{0, 25, 50, 75, 100}},
		{1, 100, 4, []int{0, 25, 50, 75, 100}},
		{2, 70, 4, []int{0, 10, 30, 50, 70}},
		{4, 130, 4, []int{0, 10, 50, 90, 130}},
		{2, 7, 1, []int{0, 7}},
		{3, 65536, 2, []int{0, 16384, 65536}},
	} {
		p := rangePipe{firstDiv: c.firstDiv}
		var got []int
		for k := range c.chunks + 1 {
			got = append(got, p.bound(c.q, c.chunks, k))
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("firstDiv %d, %d queries in %d chunks: bounds %v, want %v", c.firstDiv, c.q, c.chunks, got, c.want)
		}
	}
}

// TestSpanUnion checks the device time of a pipelined call's kernels:
// the union of their spans, overlapping or not, in any order.
func TestSpanUnion(t *testing.T) {
	for _, c := range []struct {
		spans [][2]time.Duration
		want  time.Duration
	}{
		{nil, 0},
		{[][2]time.Duration{{0, 10}}, 10},
		{[][2]time.Duration{{20, 30}, {0, 10}}, 20},
		{[][2]time.Duration{{0, 10}, {5, 15}}, 15},
		{[][2]time.Duration{{0, 30}, {5, 15}, {20, 25}}, 30},
		{[][2]time.Duration{{5, 15}, {0, 10}, {40, 50}, {12, 20}}, 30},
	} {
		if got := spanUnion(slices.Clone(c.spans)); got != c.want {
			t.Errorf("spanUnion(%v) = %v, want %v", c.spans, got, c.want)
		}
	}
}

// TestFillKeyFills checks the key offsets of a pipelined call's chunks of
// one key length written in one job: each fill's pairs get its base plus
// i times its key length, across parts that cut fills anywhere, with
// empty fills and gaps (chunks of mixed lengths) left alone.
func TestFillKeyFills(t *testing.T) {
	const gap = ^uint32(0)
	for _, c := range []struct {
		name  string
		fills []keyFill
	}{
		{"none", nil},
		{"one small", []keyFill{{0, 5, 0, 16}}},
		{"three chunks of 16-byte keys", []keyFill{{0, 349525, 0, 16}, {349525, 349525, 349525 * 16, 16}, {699050, 349526, 699050 * 16, 16}}},
		{"empty and mixed chunks between", []keyFill{{0, 0, 0, 8}, {10, keyFillGrain + 3, 100, 8}, {10 + keyFillGrain + 3, 0, 7, 3},
			{keyFillGrain + 20, 2*keyFillGrain - 1, 4000000, 1}, {3*keyFillGrain + 30, 77, 9, 0}}},
	} {
		n := 0
		for _, f := range c.fills {
			n = max(n, f.at+f.n+5)
		}
		offs := make([]uint32, n)
		for i := range offs {
			offs[i] = gap
		}
		want := slices.Clone(offs)
		for _, f := range c.fills {
			for i := range f.n {
				want[f.at+i] = f.base + uint32(i*f.keyLen)
			}
		}
		fillKeyFills(offs, c.fills)
		if !slices.Equal(offs, want) {
			for i := range offs {
				if offs[i] != want[i] {
					t.Fatalf("%s: offs[%d] = %d, want %d", c.name, i, offs[i], want[i])
				}
			}
		}
	}
}

// TestGPUPipedTimings checks LastBatch after a pipelined call, whose
// phases are read from the events only when LastBatch asks (finishLazy):
// the call's op, queries, total and kernels' time, the same when read
// again, for two calls in a row; and after a later batch, that batch's
// timings, not the pipelined call's.
func TestGPUPipedTimings(t *testing.T) {
	dev := gputest.Device(t)
	r := rand.New(rand.NewPCG(7, 22))
	gt, _ := openTwins(t, dev)
	keys, vals := make([][]byte, 30000), make([]uint64, 30000)
	for i := range keys {
		keys[i], vals[i] = randomBytes(r, 16, 16, nil), uint64(i)
	}
	if err := gt.Build(keys, vals); err != nil {
		t.Fatal(err)
	}
	g := gt.eng.(*gpuEngine)
	keepPipeForm(t, g)
	g.pipe.chunks, g.pipe.chunkMin = 3, 50
	const Q = 2000
	qs := make([]Query, Q)
	for i := range qs {
		qs[i] = Query{Lo: keys[r.IntN(len(keys))]}
	}
	res := gt.NewResult()
	defer res.Free()
	for call := range 2 {
		if _, err := gt.RangesInto(res, qs, 16); err != nil {
			t.Fatal(err)
		}
		tm := gt.LastBatch()
		if tm.Op != "ranges" || tm.Items != Q || tm.Total <= 0 || tm.Work <= 0 || tm.Work > tm.Total {
			t.Fatalf("call %d: LastBatch after a pipelined call: %v (work %v), want op ranges, %d items, 0 < work <= total", call, tm, tm.Work, Q)
		}
		if again := gt.LastBatch(); again != tm {
			t.Fatalf("call %d: LastBatch read twice: %v, then %v", call, tm, again)
		}
	}
	if _, err := gt.RangesInto(res, qs, 16); err != nil {
		t.Fatal(err)
	}
	if _, _, err := gt.Get(keys[:100]); err != nil {
		t.Fatal(err)
	}
	if tm := gt.LastBatch(); tm.Op == "ranges" {
		t.Fatalf("LastBatch after a lookup that followed a pipelined call: %v, want the lookup's", tm)
	}
}

// keepPipeForm restores g's pipelined-call settings (chunks, chunkMin,
// firstDiv, keySlot), which tests and benchmarks set, when tb ends.
func keepPipeForm(tb testing.TB, g *gpuEngine) {
	p := &g.pipe
	chunks, chunkMin, firstDiv, keySlot := p.chunks, p.chunkMin, p.firstDiv, p.keySlot
	tb.Cleanup(func() { p.chunks, p.chunkMin, p.firstDiv, p.keySlot = chunks, chunkMin, firstDiv, keySlot })
}
