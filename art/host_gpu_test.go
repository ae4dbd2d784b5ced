package art

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/enginetest"
	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/internal/workload"
)

// TestHostPacking runs lookups and updates whose keys the GPU engine's
// host packs chunk by chunk into pinned memory (gpu.Strings), from Go
// slices (Get, Update) and from packed batches (Lookup, UpdateKeys), with
// chunks of 7 keys (many chunks a batch, the slots of the ring reused)
// and of 20000 keys (several goroutines a chunk), on ragged keys: empty,
// one byte, the leaf classes' bounds, and long keys of up to 3000 bytes,
// many sharing prefixes. Every answer is compared with the model and the
// CPU engine's, and the layouts with the CPU engine's after every batch.
func TestHostPacking(t *testing.T) {
	ragged := func(r *rand.Rand) []byte {
		l := []int{0, 1, 8, 16, 17, 33, 300, 3000}[r.IntN(8)]
		if r.IntN(2) == 0 {
			return randomBytes(r, l, l, []byte("ab"))
		}
		return randomBytes(r, 0, l, nil)
	}
	points := mix{build: 1, insert: 8, update: 12, get: 14, del: 3, ranges: 1, prefix: 1}
	gpuChunks := func(name string, chunk int, packed bool) enginetest.Target[batch, answer] {
		return enginetest.Target[batch, answer]{Name: name, GPU: true, Open: func(_ testing.TB, d *gpu.Device) (enginetest.Subject[batch, answer], error) {
			tr, err := Open(Options{GPU: d})
			if err == nil {
				tr.eng.(*gpuEngine).chunkMin = chunk
			}
			return &subject{t: tr, packed: packed}, err
		}}
	}
	s := suite()
	s.Targets = []enginetest.Target[batch, answer]{
		s.Targets[0], // the CPU engine
		gpuChunks("gpu, chunks of 7 keys, from [][]byte", 7, false),
		gpuChunks("gpu, chunks of 7 keys, packed", 7, true),
		gpuChunks("gpu, chunks of 20000 keys, from [][]byte", 20000, false),
		gpuChunks("gpu, chunks of 20000 keys, packed", 20000, true),
	}
	batches := 16
	if testing.Short() {
		batches = 6
	}
	enginetest.Run(t, s,
		artCase{Name: "ragged keys, small batches", Batches: batches, Gen: randomBatches(ragged, 300, points)},
		artCase{Name: "ragged keys, batches of up to 50000", Batches: batches / 2, Gen: randomBatches(ragged, 50000, points)},
	)
}

// TestPinnedResult answers batches of ranges and prefix scans of growing
// and shrinking sizes into one Result from NewResult (pinned arrays that
// the device writes into, grown when a batch needs more) and compares
// each with the same batch answered into a new Result; after Free the
// Result answers into Go memory.
func TestPinnedResult(t *testing.T) {
	d := gputest.Device(t)
	tr, err := Open(Options{GPU: d})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	rng := rand.New(rand.NewPCG(3, 5))
	keys := make([][]byte, 20000)
	vals := make([]uint64, len(keys))
	for i := range keys {
		keys[i] = randomBytes(rng, 1, 40, []byte("abc"))
		vals[i] = rng.Uint64()
	}
	if err := tr.Build(keys, vals); err != nil {
		t.Fatal(err)
	}
	r := tr.NewResult()
	if !r.pinned() {
		t.Fatal("NewResult on the GPU engine is not pinned")
	}
	same := func(what string, got, want *Result) {
		t.Helper()
		if !slices.Equal(got.Offsets, want.Offsets) || !slices.Equal(got.Values, want.Values) ||
			string(got.Keys.Data) != string(want.Keys.Data) || !slices.Equal(got.Keys.Offs, want.Keys.Offs) {
			t.Fatalf("%s: pinned answers differ from a new Result's", what)
		}
	}
	for step, n := range []int{10, 3000, 1, 9000, 200, 0, 5000} {
		qs := make([]Query, n)
		pre := make([][]byte, n)
		for i := range qs {
			qs[i] = Query{Lo: keys[rng.IntN(len(keys))], Hi: keys[rng.IntN(len(keys))]}
			if rng.IntN(4) == 0 {
				qs[i].Hi = nil
			}
			pre[i] = keys[rng.IntN(len(keys))][:1]
		}
		limit := []int{16, 0, 5, 64}[step%4]
		want, err := tr.Ranges(qs, limit)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tr.RangesInto(r, qs, limit)
		if err != nil || got != r {
			t.Fatalf("step %d: RangesInto: %v (same Result %v)", step, err, got == r)
		}
		same(fmt.Sprintf("step %d, %d ranges, limit %d", step, n, limit), got, want)
		if want, err = tr.Prefix(pre, limit); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.PrefixInto(r, pre, limit); err != nil {
			t.Fatal(err)
		}
		same(fmt.Sprintf("step %d, %d prefix scans, limit %d", step, n, limit), r, want)
	}
	if err := r.Free(); err != nil {
		t.Fatal(err)
	}
	if r.pinned() {
		t.Fatal("pinned after Free")
	}
	qs := []Query{{Lo: []byte("a")}}
	want, err := tr.Ranges(qs, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.RangesInto(r, qs, 10); err != nil {
		t.Fatal(err)
	}
	same("after Free", r, want)
}

// benchPointTree opens a GPU tree of 16Mi 16-byte keys (or
// WARPKV_ART_BENCH_KEYS keys, e.g. 100000000 for the tree) for
// the point-call benchmarks (closed when b ends) and returns it with its
// keys' values, the first 1Mi keys as a packed batch and as Go slices,
// and answer slices of that size.
func benchPointTree(b *testing.B) (t *Tree, vals []uint64, probe Keys, slices [][]byte, out []uint64, found []bool) {
	d := gputest.Device(b)
	const n = 1 << 20
	size := 1 << 24
	if s := os.Getenv("WARPKV_ART_BENCH_KEYS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < n {
			b.Fatalf("WARPKV_ART_BENCH_KEYS=%q: want a number of keys >= %d", s, n)
		}
		size = v
	}
	var kb Keys
	if size == 1<<24 {
		kb, vals, _ = benchKeys(size, 16)
	} else {
		kb, vals = benchKeysPar(size)
	}
	t, err := Open(Options{GPU: d})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { t.Close() })
	if err := t.BuildKeys(kb, vals); err != nil {
		b.Fatal(err)
	}
	probe = Keys{Data: kb.Data[:16*n], Offs: kb.Offs[:n+1]}
	return t, vals, probe, probe.Unpack(), make([]uint64, n), make([]bool, n)
}

// benchKeysPar returns n distinct 16-byte keys (benchKeys' shape: key i
// starts with i*0x9E3779B97F4A7C15 ^ 0x5555 big-endian, then 8 random
// bytes of a splitmix64 hash of i) and the values 0..n-1, made on all
// cores (the same keys on any number): the trees of 100M keys of the
// benchmarks.
func benchKeysPar(n int) (Keys, []uint64) {
	data, offs, vals := workload.WeylKeys16(n)
	return Keys{Data: data, Offs: offs}, vals
}

// BenchmarkGPUWholeCalls measures the GPU engine's whole calls on 16-byte
// keys in a tree of 16Mi keys (WARPKV_ART_BENCH_KEYS: benchPointTree), with the host's share of each: lookups and
// updates of 1Mi keys from a packed batch in Go memory (Lookup,
// UpdateKeys, for several smallest chunk sizes), from Go slices (Get,
// Update) and from pinned staging, and 64Ki ranges of 16 keys and prefix
// scans of 64 (and those into a pinned Result with each walk of
// rangesCands, sorted by start key or not). Metrics: keys (or queries) per second of the whole call,
// and of the last call its time packing into pinned slots (pack-ms),
// copying answers out (unpack-ms), the kernels (work-ms) and in all
// (total-ms).
func BenchmarkGPUWholeCalls(b *testing.B) {
	t, vals, probe, slices, out, found := benchPointTree(b)
	n := len(slices)
	g := t.eng.(*gpuEngine)
	report := func(b *testing.B, items int) {
		b.ReportMetric(float64(items)*float64(b.N)/b.Elapsed().Seconds()/1e6, "M/s")
		tm := t.LastBatch()
		b.ReportMetric(tm.Upload.Seconds()*1e3, "pack-ms")
		b.ReportMetric(tm.Download.Seconds()*1e3, "unpack-ms")
		b.ReportMetric(tm.Work.Seconds()*1e3, "work-ms")
		b.ReportMetric(tm.Total.Seconds()*1e3, "total-ms")
	}
	for _, cm := range []int{1 << 14, 1 << 16, pointChunkMin} {
		b.Run(fmt.Sprintf("lookup/packed/chunkMin=%d", cm), func(b *testing.B) {
			g.chunkMin = cm
			defer func() { g.chunkMin = pointChunkMin }()
			for b.Loop() {
				if err := t.Lookup(probe, out, found); err != nil {
					b.Fatal(err)
				}
			}
			report(b, n)
		})
	}
	b.Run("lookup/slices", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := t.Get(slices); err != nil {
				b.Fatal(err)
			}
		}
		report(b, n)
	})
	b.Run("lookup/pinned", func(b *testing.B) {
		st, err := t.NewStaging(n, len(probe.Data))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Free()
		copy(st.Data, probe.Data)
		copy(st.Offs, probe.Offs)
		for b.Loop() {
			if err := t.LookupStaged(st, n); err != nil {
				b.Fatal(err)
			}
		}
		report(b, n)
	})
	b.Run("update/packed", func(b *testing.B) {
		for b.Loop() {
			if err := t.UpdateKeys(probe, vals[:n], found); err != nil {
				b.Fatal(err)
			}
		}
		report(b, n)
	})
	b.Run("update/slices", func(b *testing.B) {
		for b.Loop() {
			if _, err := t.Update(slices, vals[:n]); err != nil {
				b.Fatal(err)
			}
		}
		report(b, n)
	})
	const Q = 1 << 16
	qs := make([]Query, Q)
	pre := make([][]byte, Q)
	for i := range qs {
		qs[i] = Query{Lo: slices[i]}
		pre[i] = slices[i][:2]
	}
	// Each query batch answered into a new Result every call, into one
	// reused Result in Go memory, and into one from NewResult (pinned);
	// the reused ones are sized before the timing.
	batches := []struct {
		name string
		into func(r *Result) (*Result, error)
	}{
		{"ranges16", func(r *Result) (*Result, error) { return t.RangesInto(r, qs, 16) }},
		{"prefix64", func(r *Result) (*Result, error) { return t.PrefixInto(r, pre, 64) }},
	}
	for _, q := range batches {
		for _, form := range []string{"", "/into", "/pinned"} {
			b.Run(q.name+form, func(b *testing.B) {
				var r *Result
				if form == "/pinned" {
					r = t.NewResult()
					defer r.Free()
				}
				if form != "" {
					var err error
					if r, err = q.into(r); err != nil {
						b.Fatal(err)
					}
				}
				for b.Loop() {
					got, err := q.into(r)
					if err != nil {
						b.Fatal(err)
					}
					if form != "" {
						r = got
					}
				}
				report(b, Q)
			})
		}
	}
	// The walks of rangesCands (walkKernel) against each other, in the
	// batch order and sorted by start key (queryOrder), into a pinned
	// Result.
	for _, q := range batches {
		for _, sorted := range []bool{false, true} {
			for _, lanes := range []int{1, 8, 16, 32} {
				b.Run(fmt.Sprintf("%s/pinned/lanes=%d,sorted=%v", q.name, lanes, sorted), func(b *testing.B) {
					defer func(s bool, w int) { g.sortQueries, g.walkLanes = s, w }(g.sortQueries, g.walkLanes)
					g.sortQueries, g.walkLanes = sorted, lanes
					r := t.NewResult()
					defer r.Free()
					r, err := q.into(r)
					if err != nil {
						b.Fatal(err)
					}
					for b.Loop() {
						if r, err = q.into(r); err != nil {
							b.Fatal(err)
						}
					}
					report(b, Q)
				})
			}
		}
	}
	// The host's share of a ranges call: sizing its Result, new and
	// reused.
	b.Run("ranges16/newResult", func(b *testing.B) {
		for b.Loop() {
			_, _ = sizeResult(nil, Q, 16*Q, 16*16*Q)
		}
		b.ReportMetric(float64(Q)*float64(b.N)/b.Elapsed().Seconds()/1e6, "M/s")
	})
}
