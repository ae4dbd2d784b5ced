package gpu

import (
	"sort"

	"github.com/warpkv/warpkv/internal/ntcopy"
	"github.com/warpkv/warpkv/internal/par"
)

// Host packing of batches of byte strings. A batch of keys reaches the
// device as one buffer of bytes and one of uint32 offsets; a caller holds
// it either packed that way in Go memory or as one Go slice per key. The
// engines cut a batch into chunks and pack each chunk straight into pinned
// memory on all cores while the chunks before it are on their way
// (Pipeline.Run), so that the keys cross host memory once. Strings is that
// source in either form; Sizes measures it chunk by chunk (its Layout),
// PackChunk packs one chunk.

// Strings is a batch of byte strings to pack, in one of two forms: packed
// (string i is Data[Offs[i]:Offs[i+1]]; Offs has one more entry than there
// are strings, and its first need not be 0) or, when Slices is not nil,
// one Go slice each. It holds views, never copies.
type Strings struct {
	Data   []byte
	Offs   []uint32
	Slices [][]byte
}

// Len is the number of strings.
func (s Strings) Len() int {
	if s.Slices != nil {
		return len(s.Slices)
	}
	return max(0, len(s.Offs)-1)
}

// packed reports whether s is in the packed form.
func (s Strings) packed() bool { return s.Slices == nil }

// lens returns the lengths of slices [lo, hi) summed and the first over
// maxLen (-1 when none).
func (s Strings) lens(lo, hi, maxLen int) (total, bad int) {
	bad = -1
	for j, k := range s.Slices[lo:hi] {
		if len(k) > maxLen && bad < 0 {
			bad = lo + j
		}
		total += len(k)
	}
	return total, bad
}

// packMinPart is the fewest strings one goroutine of Sizes or PackChunk
// handles: below it a goroutine costs more than the copy it would share.
const packMinPart = 1 << 13

// Layout is how Sizes cut a batch: chunks of Size strings (the last
// shorter), chunk c's bytes at Starts[c]..Starts[c+1] counted from the
// batch's first byte, and, for slices, where the bytes of
// each part PackChunk gives a goroutine start within their chunk.
type Layout struct {
	Size    int
	Starts  []int
	parts   [][]uint32
	workers int
}

// Chunks is the number of chunks.
func (l Layout) Chunks() int { return len(l.Starts) - 1 }

// Bounds returns chunk c's strings [lo, hi) of a batch of n strings.
func (l Layout) Bounds(c, n int) (lo, hi int) { return c * l.Size, min(n, (c+1)*l.Size) }

// Bytes is the total of the batch's bytes.
func (l Layout) Bytes() int { return l.Starts[len(l.Starts)-1] }

// Sizes cuts s into chunks of size strings and returns their Layout and
// the first string longer than maxLen (-1 when none; the Layout is then
// empty). For packed strings it reads the offsets at the chunks' bounds
// only (the caller has checked them); otherwise it reads every string's
// length once, on workers goroutines (<= 0: GOMAXPROCS), one per part of a
// chunk as PackChunk will split it, so that PackChunk need not read them
// again. Cost: O(chunks), or one parallel pass over the strings' headers.
func (s Strings) Sizes(size, maxLen, workers int) (Layout, int) {
	n := s.Len()
	chunks := 0
	if n > 0 {
		chunks = (n + size - 1) / size
	}
	l := Layout{Size: size, Starts: make([]int, chunks+1), workers: workers}
	if s.packed() {
		for c := 1; c <= chunks; c++ {
			l.Starts[c] = int(s.Offs[min(n, c*size)] - s.Offs[0])
		}
		return l, -1
	}
	// One item per part of a chunk; item k is part k-first[c] of chunk c.
	first := make([]int, chunks+1)
	for c := range chunks {
		lo, hi := l.Bounds(c, n)
		first[c+1] = first[c] + par.Parts(hi-lo, packMinPart, workers)
	}
	sums, bads := make([]int, first[chunks]), make([]int, first[chunks])
	chunkOf := func(k int) int {
		c := sort.SearchInts(first, k+1) - 1
		return c
	}
	par.Shared().For(first[chunks], 1, workers, func(klo, khi int) {
		for k := klo; k < khi; k++ {
			c := chunkOf(k)
			lo, hi := l.Bounds(c, n)
			parts := first[c+1] - first[c]
			j := k - first[c]
			sums[k], bads[k] = s.lens(lo+par.Bound(hi-lo, parts, j), lo+par.Bound(hi-lo, parts, j+1), maxLen)
		}
	})
	for _, b := range bads {
		if b >= 0 { // items are in string order: the first with one holds the first
			return Layout{}, b
		}
	}
	l.parts = make([][]uint32, chunks)
	for c := range chunks {
		ps := make([]uint32, first[c+1]-first[c]+1)
		for j := range len(ps) - 1 {
			ps[j+1] = ps[j] + uint32(sums[first[c]+j])
		}
		l.parts[c] = ps
		l.Starts[c+1] = l.Starts[c] + int(ps[len(ps)-1])
	}
	return l, -1
}

// PackChunk packs chunk c of s as l (Sizes of s) cuts it: its strings'
// bytes, in order, into data (exactly their total length) and their
// offsets into offs (one more than its strings): offs[j] = l.Starts[c] +
// the bytes of the chunk's strings before string j, so that offs continue
// the offsets of the chunks before. It runs on the Layout's workers of
// par.Shared, each on a contiguous part: from packed strings each part
// copies its bytes (non-temporal stores, ntcopy: data is staging for a
// DMA) and rebases its offsets; otherwise each part writes its
// offsets and bytes from where Sizes found its bytes start. Cost: one
// parallel copy of the chunk's bytes and offsets, one fan-out.
func (s Strings) PackChunk(l Layout, c int, data []byte, offs []uint32) {
	s.PackChunkAnd(l, c, data, offs, nil)
}

// PackChunkAnd is PackChunk that also calls also(lo, hi) (when not nil)
// on the worker that packs the chunk's strings [lo, hi) (counted from the
// chunk's first), once per part: the copy of per-string arrays (an
// update's values) in the same fan-out. Cost: PackChunk's plus the calls.
func (s Strings) PackChunkAnd(l Layout, c int, data []byte, offs []uint32, also func(lo, hi int)) {
	lo, hi := l.Bounds(c, s.Len())
	m := hi - lo
	at := uint32(l.Starts[c])
	if s.packed() {
		a := s.Offs[lo]
		par.Shared().Ranges(m, par.Parts(m, packMinPart, l.workers), func(_, plo, phi int) {
			src := s.Offs[lo+plo : lo+phi+1]
			ntcopy.Bytes(data[src[0]-a:src[len(src)-1]-a], s.Data[src[0]:src[len(src)-1]])
			rebase(offs[plo:phi], src, at-a)
			if also != nil {
				also(plo, phi)
			}
		})
		offs[m] = at + (s.Offs[hi] - a)
		return
	}
	starts := l.parts[c]
	parts := len(starts) - 1
	par.Shared().Ranges(m, parts, func(p, plo, phi int) {
		packSlices(data, offs[plo:phi], s.Slices[lo+plo:lo+phi], at, starts[p])
		if also != nil {
			also(plo, phi)
		}
	})
	offs[m] = at + starts[parts]
}

// rebase writes dst[i] = src[i] + d (len(src) >= len(dst)), eight
// offsets a step: the loop of one element a step ran at half speed or
// full speed on the development VM depending only on where the linker
// placed it (a 64-byte line boundary inside its 27 bytes).
func rebase(dst, src []uint32, d uint32) {
	src = src[:len(dst)]
	i := 0
	for ; i+8 <= len(dst); i += 8 {
		s, t := (*[8]uint32)(src[i:]), (*[8]uint32)(dst[i:])
		t[0], t[1], t[2], t[3] = s[0]+d, s[1]+d, s[2]+d, s[3]+d
		t[4], t[5], t[6], t[7] = s[4]+d, s[5]+d, s[6]+d, s[7]+d
	}
	for ; i < len(dst); i++ {
		dst[i] = src[i] + d
	}
}

// packSlices copies keys one after another into data from byte o (data
// holds them) and writes offs[i] = at + where key i starts. Keys of 8 to
// 32 bytes are moved with two fixed-size moves each (overlapping for
// lengths between), the rest with copy; the moves are written in the loop
// itself, not in a function per key, which the compiler does not inline:
// with the call, one core packed 256Ki 16-byte keys in 1.5-1.9 ms on the
// development VM, without it in 0.66-0.74 ms.
func packSlices(data []byte, offs []uint32, keys [][]byte, at, o uint32) {
	for i, k := range keys {
		offs[i] = at + o
		d := data[o:]
		switch n := len(k); {
		case n == 16:
			*(*[16]byte)(d) = *(*[16]byte)(k)
		case n >= 8 && n < 16:
			*(*[8]byte)(d) = *(*[8]byte)(k)
			*(*[8]byte)(d[n-8:]) = *(*[8]byte)(k[n-8:])
		case n > 16 && n <= 32:
			*(*[16]byte)(d) = *(*[16]byte)(k)
			*(*[16]byte)(d[n-16:]) = *(*[16]byte)(k[n-16:])
		default:
			copy(d, k)
		}
		o += uint32(len(k))
	}
}
