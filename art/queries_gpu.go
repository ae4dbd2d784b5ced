package art

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
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

// queryPackMin is the fewest queries one worker packs (a chunk of 16Ki
// queries of a pipelined call is packed by 16 workers).
const queryPackMin = 1 << 10

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

// queryPack is a batch of queries' packing plan: the layout and, for
// each of parts contiguous parts of the batch, where its bounds' bytes
// start.
type queryPack struct {
	l          queryLayout
	parts      int
	loAt, hiAt []int // parts+1 byte starts of each part's lower and upper bounds
	same       bool  // planned by sameQueries: every bound must have loLen and hiLen bytes
	loLen      int   // with same: each lower bound's length
	hiLen      int   // with same: each upper bound's length (0 for a nil one too)
}

// sameQueries plans qs for one pass, guessing that every query's bounds
// have the first query's lengths (a batch of fixed-size keys); fill then
// checks the guess as it packs. It reports false when the guessed bytes
// do not fit 32-bit offsets. Cost: O(parts).
func sameQueries(qs []Query, workers int) (queryPack, bool) {
	Q := len(qs)
	p := queryPack{parts: par.Parts(Q, queryPackMin, workers), same: true, loLen: len(qs[0].Lo), hiLen: len(qs[0].Hi)}
	if uint64(Q)*uint64(max(p.loLen, p.hiLen)) > math.MaxUint32 {
		return p, false
	}
	p.loAt, p.hiAt = make([]int, p.parts+1), make([]int, p.parts+1)
	for i := range p.parts + 1 {
		b := par.Bound(Q, p.parts, i)
		p.loAt[i], p.hiAt[i] = b*p.loLen, b*p.hiLen
	}
	p.l = layoutQueries(Q, Q*p.loLen, Q*p.hiLen)
	return p, true
}

// packQueries packs qs into pinned memory from host (which returns at
// least n bytes, 8-byte aligned) on the workers and returns the plan and
// the packed bytes: in one pass when every bound has the first query's
// lengths, else (the one pass stopped at the first other length in each
// part) sized, then filled. A query with a bound longer than a key can be
// fails it with a *boundErr naming the first such query. Cost: one
// parallel pass over the queries for fixed-size bounds, else a partial one
// and two.
func packQueries(qs []Query, workers int, host func(n int) ([]byte, error)) (queryPack, []byte, error) {
	if len(qs) == 0 {
		return queryPack{}, nil, errors.New("no queries to pack")
	}
	if p, ok := sameQueries(qs, workers); ok {
		h, err := host(p.l.end)
		if err != nil {
			return p, nil, err
		}
		if p.fill(h, qs) {
			if boundTooLong(&qs[0]) { // every query's bounds are as long as the first's
				return p, nil, &boundErr{0, max(p.loLen, p.hiLen)}
			}
			return p, h, nil
		}
	}
	p, err := planQueries(qs, workers)
	if err != nil {
		return p, nil, err
	}
	h, err := host(p.l.end)
	if err != nil {
		return p, nil, err
	}
	p.fill(h, qs)
	return p, h, nil
}

// planQueries sizes qs's bounds on the workers, failing with a *boundErr
// at the first query with a bound longer than a key can be. Cost: one
// parallel pass over the queries' slice headers.
func planQueries(qs []Query, workers int) (queryPack, error) {
	p, long, err := planParts(len(qs), workers, func(a, b int) (lo, hi, long int) {
		long = -1
		for j := range qs[a:b] {
			x := &qs[a+j]
			lo += len(x.Lo)
			hi += len(x.Hi)
			if long < 0 && boundTooLong(x) {
				long = a + j
			}
		}
		return lo, hi, long
	})
	if long >= 0 {
		return p, &boundErr{long, max(len(qs[long].Lo), len(qs[long].Hi))}
	}
	return p, err
}

// planParts plans a batch of Q queries in parts on the workers (packQueries'
// and packPrefixes' sizing pass): size(a, b) returns the lower and upper
// bounds' bytes of queries [a, b) and the first of them with a bound
// longer than a key can be (-1: none). It returns the plan, the first such
// query of the batch (-1: none; the plan is then not laid out), and an
// error when the bounds do not fit 32-bit offsets. Cost: one parallel pass
// of size over the batch.
func planParts(Q, workers int, size func(a, b int) (lo, hi, long int)) (queryPack, int, error) {
	p := queryPack{parts: par.Parts(Q, queryPackMin, workers)}
	p.loAt, p.hiAt = make([]int, p.parts+1), make([]int, p.parts+1)
	long := make([]int, p.parts) // each part's first query with a bound too long (-1: none)
	par.Shared().Ranges(Q, p.parts, func(i, a, b int) {
		p.loAt[i+1], p.hiAt[i+1], long[i] = size(a, b)
	})
	for _, j := range long {
		if j >= 0 {
			return p, j, nil
		}
	}
	for i := range p.parts {
		p.loAt[i+1] += p.loAt[i]
		p.hiAt[i+1] += p.hiAt[i]
	}
	lo, hi := p.loAt[p.parts], p.hiAt[p.parts]
	if lo > math.MaxUint32 || hi > math.MaxUint32 {
		return p, -1, fmt.Errorf("%d queries with %d and %d bytes of bounds: at most %d each", Q, lo, hi, uint64(math.MaxUint32))
	}
	p.l = layoutQueries(Q, lo, hi)
	return p, -1, nil
}

// fill packs qs into h (at least p.l.end bytes, 8-byte aligned) on the
// workers, a part each. A plan of sameQueries reports false when a bound
// has another length than the plan's (h is then not a packed batch; each
// part stops at its first such query). Cost: one parallel pass copying
// the bounds.
func (p queryPack) fill(h []byte, qs []Query) bool {
	Q, l := len(qs), p.l
	loOffs, hiOffs := u32View(h[:l.hiOffs], Q+1), u32View(h[l.hiOffs:l.has], Q+1)
	flags, loData, hiData := h[l.has:l.has+Q], h[l.loData:l.hiData], h[l.hiData:l.end]
	loLen, hiLen := -1, -1 // no check of the lengths
	if p.same {
		loLen, hiLen = p.loLen, p.hiLen
	}
	var other atomic.Bool
	par.Shared().Ranges(Q, p.parts, func(i, a, b int) {
		if !fillPart(qs[a:b], loOffs[a:b], hiOffs[a:b], flags[a:b], loData[p.loAt[i]:p.loAt[i+1]], hiData[p.hiAt[i]:p.hiAt[i+1]],
			uint32(p.loAt[i]), uint32(p.hiAt[i]), loLen, hiLen) {
			other.Store(true)
		}
	})
	loOffs[Q], hiOffs[Q] = uint32(p.loAt[p.parts]), uint32(p.hiAt[p.parts])
	return !other.Load()
}

// fillPart packs one part's queries: their offsets (from lo0 and hi0),
// flags and bound bytes (loData and hiData, exactly their size). With
// loLen >= 0 it reports false at the first query whose bounds do not have
// loLen and hiLen bytes (a nil upper bound has 0), packing no further.
func fillPart(qs []Query, loOffs, hiOffs []uint32, flags, loData, hiData []byte, lo0, hi0 uint32, loLen, hiLen int) bool {
	lo, hi := 0, 0
	loOffs, hiOffs, flags = loOffs[:len(qs)], hiOffs[:len(qs)], flags[:len(qs)]
	for j := range qs {
		x := &qs[j]
		if loLen >= 0 && (len(x.Lo) != loLen || len(x.Hi) != hiLen) {
			return false
		}
		loOffs[j], hiOffs[j] = lo0+uint32(lo), hi0+uint32(hi)
		lo += putBound(loData[lo:], x.Lo)
		var f byte
		if x.Hi != nil {
			f = 1
			hi += putBound(hiData[hi:], x.Hi)
		}
		flags[j] = f
	}
	return true
}

// putBound copies bound b to the front of dst and returns its length:
// bounds of 8 and 16 bytes (the common fixed-size keys) as 8-byte words,
// inline, others by copy (a call of runtime.memmove, which dominated the
// packing loop at 16 bytes a bound).
func putBound(dst, b []byte) int {
	switch len(b) {
	case 16:
		d, s := dst[:16:16], b[:16:16]
		binary.LittleEndian.PutUint64(d[:8], binary.LittleEndian.Uint64(s[:8]))
		binary.LittleEndian.PutUint64(d[8:], binary.LittleEndian.Uint64(s[8:]))
		return 16
	case 8:
		binary.LittleEndian.PutUint64(dst[:8], binary.LittleEndian.Uint64(b))
		return 8
	}
	return copy(dst, b)
}

// uploadBatch packs b's bounds into host.q on the workers (a nil Hi
// packs as empty with has 0) and queues their DMA into q.in, returning
// the device views of the lower and upper bounds and the has flags.
// Cost: b's packing (for ranges packQueries: one parallel pass over the
// queries when their bounds have one length each, else up to three; for
// prefix scans packPrefixes: two) and one DMA.
func (g *gpuEngine) uploadBatch(b queryBatch) (lo, hi *devBatch, has *gpu.Buffer[uint8], err error) {
	Q := b.n
	p, h, err := b.pack(0, Q, g.workers, func(n int) ([]byte, error) { return gpu.Host[byte](g.pool, "host.q", n) })
	if err != nil {
		return nil, nil, nil, err
	}
	l := p.l
	if err := g.pool.Reserve(gpu.NeedOf[byte]("q.in", l.end)); err != nil {
		return nil, nil, nil, err
	}
	in := gpu.Take[byte](g.pool, "q.in", l.end)
	if err := in.Write(g.s, 0, h[:l.end]); err != nil {
		return nil, nil, nil, err
	}
	lo, hi, has = p.views(in)
	return lo, hi, has, nil
}

// views returns the device views of the lower and upper bounds and the
// has flags of a batch packed by p and uploaded into in.
func (p queryPack) views(in *gpu.Buffer[byte]) (lo, hi *devBatch, has *gpu.Buffer[uint8]) {
	l, Q := p.l, p.l.q
	loBytes, hiBytes := p.loAt[p.parts], p.hiAt[p.parts]
	lo = &devBatch{n: Q, data: gpu.View[byte](in, l.loData, max(1, loBytes)), offs: gpu.View[uint32](in, 0, Q+1)}
	hi = &devBatch{n: Q, data: gpu.View[byte](in, l.hiData, max(1, hiBytes)), offs: gpu.View[uint32](in, l.hiOffs, Q+1)}
	return lo, hi, gpu.View[uint8](in, l.has, Q)
}

// u32View views the first 4n bytes of b (8-byte aligned) as n uint32s.
func u32View(b []byte, n int) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}
