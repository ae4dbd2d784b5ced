package art

import (
	"bytes"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/gpu"
)

// TestPointPlanOnTheHost runs a pipelined point call's host side (packing,
// the transfers in, answers out, unpacking) against host arrays standing
// for the device, in the order gpu.Pipeline.Run gives with pointLag (each
// transfer done at once), with a stand-in kernel that reads every key
// through the device offsets the way ag_get does, chunk by chunk: the
// device image must be the batch rebased to its first offset, every key
// read by its chunk must be right when only the chunks up to it have
// arrived, and every answer must land at its key, also in answer slices
// allocated beside the call (pendingAnswers) that exist only once the
// first chunk's answers are copied out.
func TestPointPlanOnTheHost(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := range 200 {
		n := 1 + r.IntN(300)
		pre := r.IntN(5) // a batch viewed from a larger one: Offs[0] > 0
		all := make([][]byte, pre+n)
		for i := range all {
			all[i] = randomBytes(r, 0, 40, nil)
		}
		kb := Pack(all)
		staged := trial%3 == 0
		if !staged {
			kb.Offs = kb.Offs[pre:]
		} else {
			kb = Pack(all[pre:])
		}
		update := trial%2 == 0
		pc := &pointCall{op: "test", found: make([]uint8, n), staged: staged, check: func() error { return nil }}
		switch {
		case staged:
			pc.kb = kb
		case trial%3 == 1: // from Go slices
			pc.src = gpu.Strings{Slices: all[pre:]}
		default:
			pc.src = stringsOf(kb)
		}
		if update {
			pc.vals = make([]uint64, n)
			for i := range pc.vals {
				pc.vals[i] = r.Uint64()
			}
		} else {
			pc.out = make([]uint64, n)
		}
		if later := !staged && trial%5 < 2; later { // answers allocated beside the call, as Get and Update do
			pc.out, pc.found, pc.later = nil, nil, allocAnswers(n, !update, n%2 == 0, n%3 == 0)
		}
		size := 1 + r.IntN(40)
		src := pc.src
		if staged {
			src = stringsOf(kb)
		}
		cut, _ := src.Sizes(size, MaxKeyLen, 1+r.IntN(3))
		// Units grouped into chunks: one a chunk, pointGroups graded or
		// flat, or runs of random lengths.
		var unitAt []int
		switch units := cut.Chunks(); trial % 4 {
		case 1:
			unitAt = pointGroups(units, 1+r.IntN(9))
		case 2:
			unitAt = pointGroups(units, 1)
		case 3:
			unitAt = []int{0}
			for u := 0; u < units; {
				u = min(units, u+1+r.IntN(5))
				unitAt = append(unitAt, u)
			}
		}
		p := newPointPlan(pc, cut, unitAt, 2)
		if !staged {
			p.pin = make([]byte, p.pinBytes())
		}
		base := kb.Offs[0]
		devData := make([]byte, kb.Offs[n]-base)
		devOffs := make([]uint32, n+1)
		devVals := make([]uint64, n)
		devOut, devFound := make([]uint64, n), make([]uint8, n)
		for i := range devOffs {
			devOffs[i] = 0xdeadbeef // not yet arrived
		}
		answer := func(k []byte, i int) (uint64, uint8) {
			h := fnv.New64a()
			h.Write(k)
			v := h.Sum64()
			if update {
				v ^= devVals[i]
			}
			return v, uint8(len(k) % 2)
		}
		done := 0
		for c := range p.chunks {
			if !staged {
				p.pack(c)
			}
			cp := p.in(c)
			copy(devData[cp.dataAt:], cp.data)
			copy(devOffs[cp.offsAt:], cp.offs)
			if cp.vals != nil {
				copy(devVals[cp.valsAt:], cp.vals)
			}
			lo, hi := p.bounds(c)
			for i := lo; i < hi; i++ { // the chunk's kernel
				a, b := devOffs[i], devOffs[i+1]
				if a > b || int(b) > len(devData) {
					t.Fatalf("trial %d chunk %d key %d: device offsets %#x..%#x", trial, c, i, a, b)
				}
				devOut[i], devFound[i] = answer(devData[a:b], i)
			}
			o, f := p.outs(c)
			if o != nil {
				copy(o, devOut[lo:hi])
			}
			copy(f, devFound[lo:hi])
			for ; !staged && done <= c-pointLag; done++ {
				p.unpack(done)
			}
		}
		for ; !staged && done < p.chunks; done++ {
			p.unpack(done)
		}
		if !bytes.Equal(devData, kb.Data[base:kb.Offs[n]]) {
			t.Fatalf("trial %d: device keys differ from the batch", trial)
		}
		for i := range n {
			if devOffs[i] != kb.Offs[i]-base {
				t.Fatalf("trial %d: device offset %d is %d, want %d", trial, i, devOffs[i], kb.Offs[i]-base)
			}
			if update && devVals[i] != pc.vals[i] {
				t.Fatalf("trial %d: device value %d differs", trial, i)
			}
			wv, wf := answer(kb.At(i), i)
			if pc.found[i] != wf || (!update && pc.out[i] != wv) {
				t.Fatalf("trial %d (%d keys, chunks of %d, staged %v): answer %d wrong", trial, n, size, staged, i)
			}
		}
	}
}

// TestPointChunks checks the chunking of point calls: over chunkMin/2
// keys a chunk (balanced), at most pointChunksMax chunks, none empty, sizes balanced.
func TestPointChunks(t *testing.T) {
	g := &gpuEngine{chunkMin: pointChunkMin}
	for _, n := range []int{1, 1000, pointChunkMin, pointChunkMin + 1, 1 << 20, 16 << 20, 100_000_000} {
		size, chunks := g.pointChunks(n)
		if chunks < 1 || (chunks-1)*size >= n || chunks*size < n {
			t.Fatalf("%d keys: %d chunks of %d", n, chunks, size)
		}
		if chunks > 1 && (2*size <= pointChunkMin || chunks > pointChunksMax) {
			t.Fatalf("%d keys: %d chunks of %d", n, chunks, size)
		}
	}
	if _, c := g.pointChunks(1 << 20); !slices.Contains([]int{4}, c) {
		t.Fatalf("1Mi keys in %d chunks, want 4", c)
	}
}

// TestPointGroups checks the grouping of a point call's units into
// chunks: every unit in exactly one chunk, in order, none empty, none over
// per units; graded calls (per >= 2, enough units) ramp up from 1 unit,
// doubling, and down to 1 again; the others are chunks of per units.
func TestPointGroups(t *testing.T) {
	for units := 1; units < 200; units++ {
		for per := 1; per <= 9; per++ {
			at := pointGroups(units, per)
			if at[0] != 0 || at[len(at)-1] != units {
				t.Fatalf("%d units, per %d: %v", units, per, at)
			}
			var sizes []int
			for c := 0; c+1 < len(at); c++ {
				if at[c+1] <= at[c] || at[c+1]-at[c] > per {
					t.Fatalf("%d units, per %d: %v", units, per, at)
				}
				sizes = append(sizes, at[c+1]-at[c])
			}
			var ramp []int
			sum := 0
			for r := 1; r < per; r *= 2 {
				ramp, sum = append(ramp, r), sum+r
			}
			if per >= 2 && units >= 2*sum+1 {
				last := len(sizes) - 1
				for i, r := range ramp {
					if sizes[i] != r || sizes[last-i] != r {
						t.Fatalf("%d units, per %d: chunks of %v units", units, per, sizes)
					}
				}
				continue
			}
			for c, n := range sizes {
				if n != per && c != len(sizes)-1 {
					t.Fatalf("%d units, per %d: chunks of %v units", units, per, sizes)
				}
			}
		}
	}
	if got := pointGroups(16, 4); !slices.Equal(got, []int{0, 1, 3, 6, 9, 13, 15, 16}) {
		t.Fatalf("16 units, 4 a chunk: %v", got)
	}
}

// BenchmarkPointPack measures packing a chunk of 2^18 16-byte keys into a
// pinned slot and copying its answers out (the host work of a pipelined
// lookup from Go slices; here into ordinary memory).
func BenchmarkPointPack(b *testing.B) {
	kb, _, _ := benchKeys(1<<20, 16)
	pc := &pointCall{op: "lookup", src: stringsOf(kb), out: make([]uint64, kb.Len()), found: make([]uint8, kb.Len())}
	cut, _ := pc.src.Sizes(pointChunkMin, MaxKeyLen, 0)
	p := newPointPlan(pc, cut, nil, 0)
	p.pin = make([]byte, p.pinBytes())
	b.SetBytes(int64(len(kb.Data) + 4*kb.Len() + 9*kb.Len()))
	for b.Loop() {
		for c := range p.chunks {
			p.pack(c)
			p.unpack(c)
		}
	}
}
