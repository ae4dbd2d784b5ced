package art

import (
	"fmt"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPURangesDirect checks the calls with direct answers where their
// guesses fail: a tree of 8-byte keys ("a" and 7 bytes) and 9-byte keys
// ("b" and 8 bytes), queried so that chunk 0 answers only 8-byte keys and
// the later chunks 9-byte ones or both (the key offsets guessed from
// chunk 0 are wrong and written again), only 9-byte keys (guessed right),
// or nothing in chunk 0 (no guess); and keys of 40 bytes (more than the
// 16 a slot a fresh Result's keys first hold: the call is answered again
// with a host turn a chunk, and the Result keeps the room, so that the
// next call has direct answers). Every answer is compared with the CPU
// engine's, ascending, descending and prefixes, in 1 to 4 chunks.
func TestGPURangesDirect(t *testing.T) {
	dev := gputest.Device(t)
	gt, ct := openTwins(t, dev)
	var keys [][]byte
	var vals []uint64
	for i := range 3000 {
		keys = append(keys, fmt.Appendf(nil, "a%07d", i), fmt.Appendf(nil, "b%08d", i))
		vals = append(vals, uint64(i), uint64(i)<<20)
	}
	for i := range 500 {
		keys = append(keys, fmt.Appendf(nil, "c%039d", i))
		vals = append(vals, uint64(i)<<40)
	}
	for _, tr := range []*Tree{gt, ct} {
		if err := tr.Build(keys, vals); err != nil {
			t.Fatal(err)
		}
	}
	g := gt.eng.(*gpuEngine)
	defer func(p rangePipe) { g.pipe.chunks, g.pipe.chunkMin, g.pipe.direct = p.chunks, p.chunkMin, p.direct }(g.pipe)
	g.pipe.chunkMin, g.pipe.direct = 10, true
	const Q = 400
	batch := func(first, rest func(i int) ([]byte, []byte)) ([]Query, [][]byte) {
		qs, ps := make([]Query, Q), make([][]byte, Q)
		for i := range qs {
			f := rest
			if i < Q/4 {
				f = first
			}
			lo, hi := f(i)
			qs[i] = Query{Lo: lo, Hi: hi}
			ps[i] = lo[:min(len(lo), 5)]
		}
		return qs, ps
	}
	a := func(i int) ([]byte, []byte) { return fmt.Appendf(nil, "a%07d", i*7), fmt.Appendf(nil, "a%07d", i*7+30) }
	b := func(i int) ([]byte, []byte) { return fmt.Appendf(nil, "b%08d", i*7), nil }
	ab := func(i int) ([]byte, []byte) {
		return fmt.Appendf(nil, "a%07d", 2990+i%10), fmt.Appendf(nil, "b%08d", 5)
	}
	none := func(i int) ([]byte, []byte) { return []byte("a0000001x"), []byte("a0000002") }
	c := func(i int) ([]byte, []byte) { return fmt.Appendf(nil, "c%039d", i), nil }
	for _, tc := range []struct {
		name        string
		first, rest func(i int) ([]byte, []byte)
	}{{"8 then 9 bytes", a, b}, {"8 then both", a, ab}, {"9 bytes", b, b}, {"empty chunk 0", none, b}, {"40 bytes", c, c}} {
		qs, ps := batch(tc.first, tc.rest)
		for _, op := range intoOps() {
			for _, limit := range []int{1, 7, 64} {
				want, err := op.f(ct, nil, qs, ps, limit)
				if err != nil {
					t.Fatal(err)
				}
				for _, chunks := range []int{1, 2, 4} {
					g.pipe.chunks = chunks
					r := gt.NewResult()
					for call := range 2 { // the second call into the same Result: room kept
						name := fmt.Sprintf("%s, %s, limit %d, %d chunks, call %d", tc.name, op.name, limit, chunks, call)
						got, err := op.f(gt, r, qs, ps, limit)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						sameResult(t, name, got, want)
					}
					if err := r.Free(); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
	}
}
