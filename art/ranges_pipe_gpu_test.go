package art

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/internal/par"
)

// TestQueryChunks checks, without a GPU, the cut of a pipelined call:
// the chunks cover the queries in order, none empty, at most
// queryChunksMax, each at least queryChunk queries (but for the rounding
// of the balance); chunkBounds' lead chunk and the rest; and that
// packChunk packs a chunk into a room large enough as planQueries and fill
// pack it, and writes nothing into a room too small.
func TestQueryChunks(t *testing.T) {
	g := &gpuEngine{}
	for _, c := range []struct{ chunk, q int }{{0, 100000}, {100, 199}, {100, 200}, {100, 1000}, {1000, 1 << 16}, {8192, 1 << 16},
		{8192, 1<<20 + 3}, {7, 7*queryChunksMax + 1}} {
		g.queryChunk = c.chunk
		size, chunks := g.queryChunks(c.q)
		if c.chunk <= 0 || c.q < 2*c.chunk {
			if chunks != 1 {
				t.Errorf("chunk %d, %d queries: %d chunks, want 1", c.chunk, c.q, chunks)
			}
			continue
		}
		if chunks < 2 || chunks > queryChunksMax || (chunks-1)*size >= c.q || chunks*size < c.q || size < c.chunk/2 {
			t.Errorf("chunk %d, %d queries: %d chunks of %d", c.chunk, c.q, chunks, size)
		}
	}
	r := rand.New(rand.NewPCG(4, 4))
	qs := make([]Query, 6000)
	for i := range qs {
		qs[i] = Query{Lo: randomBytes(r, 0, 20, nil)}
		if i%3 != 0 {
			qs[i].Hi = randomBytes(r, 0, 20, nil)
		}
	}
	for _, c := range []struct{ q, size, chunks int }{{1000, 128, 8}, {1000, 500, 2}, {3, 1, 3}, {1 << 16, 4096, 16}, {1<<16 + 5, 8192, 9}} {
		b := chunkBounds(c.q, c.size, c.chunks)
		if b[0] != 0 || b[len(b)-1] != c.q || len(b)-1 < c.chunks || len(b)-1 > c.chunks+1 {
			t.Fatalf("%+v: bounds %v", c, b)
		}
		for i := 1; i < len(b); i++ {
			if b[i] <= b[i-1] || b[i]-b[i-1] > c.size {
				t.Fatalf("%+v: bounds %v: chunk %d", c, b, i-1)
			}
		}
	}
	bounds := chunkBounds(len(qs), 4000, 2) // 4000 and 2000 queries: 3 and 1 parts of queryPipePart on 3 workers
	for c := range len(bounds) - 1 {
		lo, hi := bounds[c], bounds[c+1]
		want, err := planQueries(qs[lo:hi], 1)
		if err != nil {
			t.Fatal(err)
		}
		w := make([]byte, want.l.end)
		want.fill(w, qs[lo:hi])
		for _, room := range []int{want.l.end, want.l.end + 64, want.l.end - 8, 0} {
			h := make([]byte, room)
			ch := packChunk(qs, lo, hi, h, 3)
			if ch.err == nil && ch.pack.parts != min(3, (hi-lo)/queryPipePart) {
				t.Fatalf("chunk %d: %d parts", c, ch.pack.parts)
			}
			if ch.err != nil || ch.lo != lo || ch.hi != hi || ch.pack.l != want.l {
				t.Fatalf("chunk %d, room %d: %+v", c, room, ch)
			}
			if ch.fits != (room >= want.l.end) {
				t.Fatalf("chunk %d: layout of %d bytes, room %d: fits %v", c, want.l.end, room, ch.fits)
			}
			if ch.fits && string(h[:want.l.end]) != string(w) {
				t.Fatalf("chunk %d packs differently from planQueries and fill of its queries", c)
			}
			if !ch.fits && string(h) != string(make([]byte, room)) {
				t.Fatalf("chunk %d: written into a room of %d bytes too small for it", c, room)
			}
		}
	}
}

// rangeTrees returns a GPU and a CPU tree (the GPU one closed at the end
// of the test) built from the same 30,000 keys drawn from r: keys of 0 to
// 40 bytes over the returned small alphabet (prefixes of each other,
// shared paths) and every 50th of 33 to 300 bytes (arena keys).
func rangeTrees(t *testing.T, r *rand.Rand) (gt, ct *Tree, alpha []byte) {
	t.Helper()
	dev := gputest.Device(t)
	gt, err := Open(Options{GPU: dev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gt.Close() })
	ct, _ = Open(Options{Device: "cpu"})
	alpha = []byte("abcdefgh\x00\xff")
	n := 30000
	keys, vals := make([][]byte, n), make([]uint64, n)
	for i := range keys {
		keys[i], vals[i] = randomBytes(r, 0, 40, alpha), r.Uint64()
		if i%50 == 0 {
			keys[i] = randomBytes(r, 33, 300, alpha)
		}
	}
	for _, tr := range []*Tree{gt, ct} {
		if err := tr.Build(keys, vals); err != nil {
			t.Fatal(err)
		}
	}
	return gt, ct, alpha
}

// TestPipedRanges answers bounded range and prefix queries, ascending and
// descending, into one pinned Result through the pipelined call
// (rangesPiped) with chunks of 100 and 1000 queries and the default, and
// compares every array of the Result with the same batch answered in one
// piece into a new Result, and each query's pairs with the CPU engine's.
// The batches grow from step to step and their first chunks answer
// nothing (empty ranges) while the later ones answer up to the limit, so
// that the Result's pinned arrays and the device's key buffers grow in the
// middle of a call, keeping the answers before; chunks larger than the
// packing room of the calls before are packed by the launcher, the others
// by the workers, and both happen.
func TestPipedRanges(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 9))
	gt, ct, alpha := rangeTrees(t, r)
	g := gt.eng.(*gpuEngine)
	defer func(c int) { g.queryChunk = c }(g.queryChunk)
	batch := func(Q int) ([]Query, [][]byte) {
		qs, ps := make([]Query, Q), make([][]byte, Q)
		for i := range qs {
			lo := randomBytes(r, 0, 12, alpha)
			var hi []byte
			switch {
			case i < Q/3:
				hi = lo // empty: lo <= key < lo
			case i%4 == 0:
				hi = nil
			case i%4 == 1:
				hi = append(append([]byte{}, lo...), 'c')
			default:
				hi = randomBytes(r, 0, 12, alpha)
			}
			qs[i] = Query{Lo: lo, Hi: hi}
			ps[i] = randomBytes(r, 0, 3, alpha)
			if i < Q/3 {
				ps[i] = append([]byte("zz"), ps[i]...) // no key starts with z
			}
		}
		return qs, ps
	}
	ops := []struct {
		name string
		f    func(tr *Tree, into *Result, qs []Query, ps [][]byte, limit int) (*Result, error)
	}{
		{"ranges", func(tr *Tree, into *Result, qs []Query, _ [][]byte, limit int) (*Result, error) {
			return tr.RangesInto(into, qs, limit)
		}},
		{"rangesDesc", func(tr *Tree, into *Result, qs []Query, _ [][]byte, limit int) (*Result, error) {
			return tr.RangesDescInto(into, qs, limit)
		}},
		{"prefix", func(tr *Tree, into *Result, _ []Query, ps [][]byte, limit int) (*Result, error) {
			return tr.PrefixInto(into, ps, limit)
		}},
	}
	fit, unfit := 0, 0 // chunks packed by the workers into their room, and by the launcher
	for _, chunk := range []int{100, 1000, queryChunkDefault} {
		for _, op := range ops {
			pinned := gt.NewResult()
			for step, Q := range []int{250, 3000, 2*queryChunkDefault + 77, 900, 5000} {
				limit := []int{16, 1, 33, 64, 5}[step]
				qs, ps := batch(Q)
				name := fmt.Sprintf("chunks of %d, %s, step %d: %d queries, limit %d", chunk, op.name, step, Q, limit)
				g.queryChunk = 0
				whole, err := op.f(gt, nil, qs, ps, limit)
				if err != nil {
					t.Fatalf("%s: one piece: %v", name, err)
				}
				g.queryChunk, g.pipeStats = chunk, queryPipeStats{}
				got, err := op.f(gt, pinned, qs, ps, limit)
				if err != nil || got != pinned {
					t.Fatalf("%s: %v (same Result %v)", name, err, got == pinned)
				}
				if size, chunks := g.queryChunks(Q); chunks > 1 {
					if want := len(chunkBounds(Q, size, chunks)) - 1; g.pipeStats.Chunks != want {
						t.Fatalf("%s: %d chunks expected, the last pipelined call had %d", name, want, g.pipeStats.Chunks)
					}
					unfit += g.pipeStats.Unfit
					fit += g.pipeStats.Chunks - g.pipeStats.Unfit
				}
				if !slices.Equal(got.Offsets, whole.Offsets) || !slices.Equal(got.Values, whole.Values) ||
					string(got.Keys.Data) != string(whole.Keys.Data) || !slices.Equal(got.Keys.Offs, whole.Keys.Offs) {
					t.Fatalf("%s: the pipelined answers differ from one piece's (%d/%d pairs, %d/%d key bytes)", name,
						len(got.Values), len(whole.Values), len(got.Keys.Data), len(whole.Keys.Data))
				}
				want, err := op.f(ct, nil, qs, ps, limit)
				if err != nil {
					t.Fatal(err)
				}
				gp, wp := resultPairs(got), resultPairs(want)
				for q := range wp {
					if !slices.Equal(gp[q], wp[q]) {
						t.Fatalf("%s, query %d %q: %d pairs %.3q, want %d %.3q", name, q, qs[q], len(gp[q]), gp[q], len(wp[q]), wp[q])
					}
				}
			}
			if err := pinned.Free(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if fit == 0 || unfit == 0 {
		t.Fatalf("%d chunks packed by the workers, %d by the launcher: want both", fit, unfit)
	}
}

// BenchmarkGPURangeCalls measures whole calls of 64Ki bounded range
// queries (16 keys each, ascending and descending) and prefix scans (64
// keys each) on a tree of 16Mi 16-byte keys, answered into a pinned Result
// (NewResult), in one piece (chunk=0) and pipelined with chunks of at
// least 8192, 16384 and 32768 queries. Metrics: queries per second, the
// answers' bytes per second over the whole call (answer-GB/s, to compare
// with the link's rate), and of the last call: the host's packing until
// the last chunk (pack-ms), the launcher's waits for packed chunks and for
// totals, the chunks and those packed by the launcher (unfit), the
// kernels' and the transfers' device time (work-ms, down-ms) and the whole
// call (total-ms).
func BenchmarkGPURangeCalls(b *testing.B) {
	d := gputest.Device(b)
	const size, Q = 1 << 24, 1 << 16
	kb, vals, probe := benchKeys(size, 16)
	t, err := Open(Options{GPU: d})
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	if err := t.BuildKeys(kb, vals); err != nil {
		b.Fatal(err)
	}
	g := t.eng.(*gpuEngine)
	defer func(c int) { g.queryChunk = c }(g.queryChunk)
	qs := make([]Query, Q)
	pre := make([][]byte, Q)
	for i := range qs {
		qs[i] = Query{Lo: probe.At(i)}
		pre[i] = probe.At(i)[:2]
	}
	calls := []struct {
		name string
		f    func(r *Result) (*Result, error)
	}{
		{"ranges16", func(r *Result) (*Result, error) { return t.RangesInto(r, qs, 16) }},
		{"rangesDesc16", func(r *Result) (*Result, error) { return t.RangesDescInto(r, qs, 16) }},
		{"prefix64", func(r *Result) (*Result, error) { return t.PrefixInto(r, pre, 64) }},
	}
	for _, c := range calls {
		for _, chunk := range []int{0, 8192, 16384, 32768} {
			b.Run(fmt.Sprintf("%s/chunk=%d", c.name, chunk), func(b *testing.B) {
				g.queryChunk = chunk
				r := t.NewResult()
				defer r.Free()
				if _, err := c.f(r); err != nil { // sizes the pinned arrays and the pool
					b.Fatal(err)
				}
				for b.Loop() {
					if _, err := c.f(r); err != nil {
						b.Fatal(err)
					}
				}
				ans := len(r.Keys.Data) + 4*len(r.Keys.Offs) + 8*len(r.Values) + 8*len(r.Offsets)
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(float64(Q)/sec/1e6, "M/s")
				b.ReportMetric(float64(ans)/sec/1e9, "answer-GB/s")
				tm := t.LastBatch()
				ms := func(x interface{ Seconds() float64 }) float64 { return x.Seconds() * 1e3 }
				b.ReportMetric(ms(tm.Upload), "pack-ms")
				b.ReportMetric(ms(tm.Work), "work-ms")
				b.ReportMetric(ms(tm.Download), "down-ms")
				b.ReportMetric(ms(tm.Total), "total-ms")
				if chunk > 0 {
					st := g.pipeStats
					b.ReportMetric(float64(st.Unfit), "unfit")
					b.ReportMetric(ms(st.PackWait), "packwait-ms")
					b.ReportMetric(ms(st.TotWait), "totwait-ms")
					b.ReportMetric(float64(st.Chunks), "chunks")
				}
			})
		}
	}
}

// BenchmarkQueryPacking times, on the host alone, what packing a batch of
// 64Ki range queries (16-byte lower bounds, no upper bound) into pinned
// layout costs: sizing the bounds (planQueries) and copying them (fill)
// on 1 and on GOMAXPROCS workers, an empty fan-out over GOMAXPROCS
// goroutines (par.Ranges, the floor of every parallel pass), and the
// pipelined call's sizing and packing of one chunk of 8192 queries on one
// goroutine (packChunk); and turning 64Ki 2-byte prefixes into queries
// (prefixQueries) on one goroutine and in parts of 8192, 4096 and 2048.
func BenchmarkQueryPacking(b *testing.B) {
	const Q = 1 << 16
	kb, _, _ := benchKeys(Q, 16)
	qs := make([]Query, Q)
	for i := range qs {
		qs[i] = Query{Lo: kb.At(i)}
	}
	workers := par.Workers(0)
	for _, w := range []int{1, workers} {
		p, err := planQueries(qs, w)
		if err != nil {
			b.Fatal(err)
		}
		h := make([]byte, p.l.end)
		b.Run(fmt.Sprintf("plan/workers=%d", w), func(b *testing.B) {
			for b.Loop() {
				_, _ = planQueries(qs, w)
			}
		})
		b.Run(fmt.Sprintf("fill/workers=%d", w), func(b *testing.B) {
			for b.Loop() {
				p.fill(h, qs)
			}
		})
	}
	b.Run(fmt.Sprintf("fanout/parts=%d", workers), func(b *testing.B) {
		for b.Loop() {
			par.Ranges(Q, workers, func(int, int, int) {})
		}
	})
	pre := make([][]byte, Q)
	for i := range pre {
		pre[i] = kb.At(i)[:2]
	}
	for _, m := range []int{Q, 8192, 4096, 2048} {
		b.Run(fmt.Sprintf("prefixQueries/minPer=%d", m), func(b *testing.B) {
			for b.Loop() {
				_ = prefixQueriesBy(pre, m)
			}
		})
	}
	room := make([]byte, 1<<20)
	b.Run("chunks/pack8192", func(b *testing.B) {
		for b.Loop() {
			if ch := packChunk(qs, 8192, 16384, room, 1); !ch.fits {
				b.Fatal("no room")
			}
		}
	})
}
