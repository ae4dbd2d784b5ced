package art

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
)

// Query batches reach the device in one DMA from the pool's pinned buffer
// host.q, which the workers pack the bounds into directly (no Go-memory
// batch in between). Its layout, every array starting at a multiple of
// 8 bytes:
//
//	lo offsets (Q+1 uint32) | hi offsets (Q+1 uint32) | has (Q bytes) | lo bytes | hi bytes
//
// and the device buffer q.in holds the same bytes, which the kernels read
// through views.

// queryPackMin is the fewest queries one worker packs.
const queryPackMin = 1 << 12

// queryLayout is where the arrays of a packed batch of Q queries lie.
type queryLayout struct {
	q                                int
	hiOffs, has, loData, hiData, end int // byte offsets (the lo offsets at 0)
}

func align8(n int) int { return (n + 7) &^ 7 }

// layoutQueries places the arrays of Q queries with loBytes and hiBytes
// of bounds.
func layoutQueries(Q, loBytes, hiBytes int) queryLayout {
	l := queryLayout{q: Q}
	l.hiOffs = align8(4 * (Q + 1))
	l.has = l.hiOffs + align8(4*(Q+1))
	l.loData = l.has + align8(Q)
	l.hiData = l.loData + align8(max(1, loBytes))
	l.end = l.hiData + align8(max(1, hiBytes))
	return l
}

// uploadQueries packs qs's bounds into host.q on the workers (a nil Hi
// packs as empty with has 0) and queues their DMA into q.in, returning
// the device views of the lower and upper bounds and the has flags.
// Cost: two parallel passes over the queries (their bounds' lengths,
// then the offsets and bytes) and one DMA.
func (g *gpuEngine) uploadQueries(qs []Query) (lo, hi *devBatch, has *gpu.Buffer[uint8], err error) {
	Q := len(qs)
	parts := par.Parts(Q, queryPackMin, g.workers)
	loAt, hiAt := make([]int, parts+1), make([]int, parts+1)
	par.Ranges(Q, parts, func(p, a, b int) {
		ln, hn := 0, 0
		for _, x := range qs[a:b] {
			ln += len(x.Lo)
			hn += len(x.Hi)
		}
		loAt[p+1], hiAt[p+1] = ln, hn
	})
	for p := range parts {
		loAt[p+1] += loAt[p]
		hiAt[p+1] += hiAt[p]
	}
	if loAt[parts] > math.MaxUint32 || hiAt[parts] > math.MaxUint32 {
		return nil, nil, nil, fmt.Errorf("%d queries with %d and %d bytes of bounds: at most %d each", Q, loAt[parts], hiAt[parts],
			uint64(math.MaxUint32))
	}
	l := layoutQueries(Q, loAt[parts], hiAt[parts])
	h, err := gpu.Host[byte](g.pool, "host.q", l.end)
	if err != nil {
		return nil, nil, nil, err
	}
	loOffs, hiOffs := u32View(h[:l.hiOffs], Q+1), u32View(h[l.hiOffs:l.has], Q+1)
	flags, loData, hiData := h[l.has:l.has+Q], h[l.loData:l.hiData], h[l.hiData:l.end]
	par.Ranges(Q, parts, func(p, a, b int) {
		lo, hi := loAt[p], hiAt[p]
		for i, x := range qs[a:b] {
			loOffs[a+i], hiOffs[a+i] = uint32(lo), uint32(hi)
			lo += copy(loData[lo:], x.Lo)
			hi += copy(hiData[hi:], x.Hi)
			flags[a+i] = 0
			if x.Hi != nil {
				flags[a+i] = 1
			}
		}
	})
	loOffs[Q], hiOffs[Q] = uint32(loAt[parts]), uint32(hiAt[parts])
	if err := g.pool.Reserve(gpu.NeedOf[byte]("q.in", l.end)); err != nil {
		return nil, nil, nil, err
	}
	in := gpu.Take[byte](g.pool, "q.in", l.end)
	if err := in.Write(g.s, 0, h[:l.end]); err != nil {
		return nil, nil, nil, err
	}
	lo = &devBatch{n: Q, data: gpu.View[byte](in, l.loData, max(1, loAt[parts])), offs: gpu.View[uint32](in, 0, Q+1)}
	hi = &devBatch{n: Q, data: gpu.View[byte](in, l.hiData, max(1, hiAt[parts])), offs: gpu.View[uint32](in, l.hiOffs, Q+1)}
	return lo, hi, gpu.View[uint8](in, l.has, Q), nil
}

// u32View views the first 4n bytes of b (8-byte aligned) as n uint32s.
func u32View(b []byte, n int) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}
