package gpu

import (
	"math"

	"github.com/warpkv/warpkv/internal/par"
)

// Host packing of batches of byte strings. A batch of keys reaches the
// device as one buffer of bytes and one of uint32 offsets; a caller holds
// it either packed that way in Go memory or as one Go slice per key. The
// engines cut a batch into chunks and pack each chunk straight into pinned
// memory on all cores while the chunks before it are on their way
// (Pipeline.Run), so that the keys cross host memory once. Strings is that
// source in either form; Sizes measures it chunk by chunk, PackChunk packs
// one chunk, CopyPar copies fixed-size answers out.

// Strings is a batch of byte strings to pack, in one of three forms:
// packed (string i is Data[Offs[i]:Offs[i+1]]; Offs has one more entry
// than there are strings, and its first need not be 0); when Slices is not
// nil, one Go slice each; when At is not nil, N strings At(i) (a field of
// the caller's records, say; At is called twice per string, from several
// goroutines at once). It holds views, never copies.
type Strings struct {
	Data   []byte
	Offs   []uint32
	Slices [][]byte
	N      int
	At     func(i int) []byte
}

// Len is the number of strings.
func (s Strings) Len() int {
	switch {
	case s.Slices != nil:
		return len(s.Slices)
	case s.At != nil:
		return s.N
	}
	return max(0, len(s.Offs)-1)
}

// packed reports whether s is in the packed form.
func (s Strings) packed() bool { return s.Slices == nil && s.At == nil }

// lens returns the lengths of strings [lo, hi) summed and the first over
// maxLen (-1 when none).
func (s Strings) lens(lo, hi, maxLen int) (total, bad int) {
	bad = -1
	if s.Slices != nil {
		for j, k := range s.Slices[lo:hi] {
			if len(k) > maxLen && bad < 0 {
				bad = lo + j
			}
			total += len(k)
		}
		return total, bad
	}
	for i := lo; i < hi; i++ {
		l := len(s.At(i))
		if l > maxLen && bad < 0 {
			bad = i
		}
		total += l
	}
	return total, bad
}

// packMinPart is the fewest strings one goroutine of Sizes or PackChunk
// handles: below it a goroutine costs more than the copy it would share.
const packMinPart = 1 << 13

// Sizes returns the byte starts of the chunks of size strings of s
// (starts[c] is where chunk c's bytes begin, counted from the first
// string's; starts[chunks] is the total) and the first string longer than
// maxLen (-1 when none; the starts are then undefined). For packed strings
// it reads the offsets at the chunks' bounds only (the caller has checked
// them); otherwise it reads every string's length once, on workers
// goroutines (<= 0: GOMAXPROCS). Cost: O(chunks), or one parallel pass over
// the slice headers.
func (s Strings) Sizes(size, maxLen, workers int) (starts []int, bad int) {
	n := s.Len()
	chunks := 0
	if n > 0 {
		chunks = (n + size - 1) / size
	}
	starts = make([]int, chunks+1)
	if s.packed() {
		for c := 1; c <= chunks; c++ {
			starts[c] = int(s.Offs[min(n, c*size)] - s.Offs[0])
		}
		return starts, -1
	}
	parts := par.Parts(n, packMinPart, workers)
	sums := make([]int, chunks)
	bads := make([]int, parts)
	// Each part sums its strings' lengths per chunk into a local count,
	// then the parts' counts are added up per chunk.
	per := make([][]int, parts)
	par.Ranges(n, parts, func(p, lo, hi int) {
		bads[p] = -1
		local := make([]int, (hi-1)/size-lo/size+1)
		first := lo / size
		for i := lo; i < hi; {
			c := i / size
			end := min(hi, (c+1)*size)
			t, b := s.lens(i, end, maxLen)
			if b >= 0 && bads[p] < 0 {
				bads[p] = b
			}
			local[c-first] += t
			i = end
		}
		per[p] = local
	})
	for _, b := range bads {
		if b >= 0 { // the first part with one holds the first
			return nil, b
		}
	}
	for p := range parts {
		first := par.Bound(n, parts, p) / size
		for j, t := range per[p] {
			sums[first+j] += t
		}
	}
	for c := range chunks {
		starts[c+1] = starts[c] + sums[c]
	}
	return starts, -1
}

// PackChunk packs strings [lo, hi) of s: their bytes, in order, into data
// (exactly their total length) and their offsets into offs (hi-lo+1
// entries): offs[j] = at + the bytes of strings lo..lo+j-1, so that offs
// continue the offsets of the chunks before (at is where this chunk's
// bytes start in the batch). It runs on workers goroutines (<= 0:
// GOMAXPROCS), each on a contiguous part: from packed strings each part
// copies its bytes and rebases its offsets; from slices each part sums its
// lengths, the parts' starts are added up, then each part writes its
// offsets and bytes (its slice headers still in its core's cache). Cost:
// one parallel copy of the chunk's bytes and offsets.
func (s Strings) PackChunk(data []byte, offs []uint32, lo, hi int, at uint32, workers int) {
	m := hi - lo
	parts := par.Parts(m, packMinPart, workers)
	if s.packed() {
		a := s.Offs[lo]
		par.Ranges(m, parts, func(_, plo, phi int) {
			src := s.Offs[lo+plo : lo+phi+1]
			copy(data[src[0]-a:src[len(src)-1]-a], s.Data[src[0]:src[len(src)-1]])
			dst := offs[plo:phi]
			d := at - a
			for i := range dst {
				dst[i] = src[i] + d
			}
		})
		offs[m] = at + (s.Offs[hi] - a)
		return
	}
	starts := make([]uint32, parts+1)
	if parts > 1 {
		par.Ranges(m, parts, func(p, plo, phi int) {
			t, _ := s.lens(lo+plo, lo+phi, math.MaxInt)
			starts[p+1] = uint32(t)
		})
		for p := range parts {
			starts[p+1] += starts[p]
		}
	}
	par.Ranges(m, parts, func(p, plo, phi int) {
		o := starts[p]
		dst := offs[plo:phi]
		if s.Slices != nil {
			for i, k := range s.Slices[lo+plo : lo+phi] {
				dst[i] = at + o
				o += uint32(copy(data[o:], k))
			}
		} else {
			for i := range dst {
				dst[i] = at + o
				o += uint32(copy(data[o:], s.At(lo+plo+i)))
			}
		}
		if p == parts-1 {
			offs[m] = at + o
		}
	})
}

// CopyPar copies src into dst (the shorter length) on workers goroutines
// (<= 0: GOMAXPROCS), at least minPer elements each: the unpacking of a
// chunk's answers out of pinned memory. Cost: one parallel copy.
func CopyPar[T any](dst, src []T, minPer, workers int) {
	n := min(len(dst), len(src))
	par.Ranges(n, par.Parts(n, minPer, workers), func(_, lo, hi int) { copy(dst[lo:hi], src[lo:hi]) })
}
