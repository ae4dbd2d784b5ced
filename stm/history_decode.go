package stm

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// historyRegion is one region of recorded words: n words of buf (or of
// words, for a history already in host memory), and, when set, its marks:
// bit i%64 of marks[i/64] is set where a record starts (stm_record sets
// them), at least markWords(n) words.
type historyRegion struct {
	buf   *gpu.Buffer[uint64]
	words []uint64
	n     int64
	marks []uint64
}

// markWords is how many words hold the marks of a region of n words.
func markWords(n int64) int64 { return (n + 63) / 64 }

// wordRange is words [lo, hi) of a region.
type wordRange struct{ lo, hi int64 }

// historyStride is how many records one piece of the decoding holds: the
// pieces of a cut are decoded on all cores.
const historyStride = 1 << 12

// historyPiece is up to historyStride consecutive records of one cut.
type historyPiece struct {
	at    int64 // its first record's first word in the region
	first int   // that record's index in the output
	n     int   // its records
	slab  int   // that record's first access in the slab
}

// historyCut is a range of whole records of one region, at most a chunk
// long unless one record is longer, and its pieces.
type historyCut struct {
	wordRange
	pieces []historyPiece
}

// streamFunc brings ranges of region's words to fn in order, each valid
// during its call only (see streamWords).
type streamFunc func(region int, ranges []wordRange, fn func(k int, words []uint64) error) error

// decodeHistory decodes the recorded regions (see stm_record) into one
// slice, region after region. A record is 4 words (kind and cause,
// reads << 32 | writes, timestamp, snapshot) and then an (item, value)
// word pair per read and per write; a region's marks say where each
// record starts (decodeMarked reads the regions with them). Regions with
// words are read in place; others through stream, in chunks of chunk
// words. A non-empty region without its marks is an error.
func decodeHistory(regions []historyRegion, chunk int, stream streamFunc) ([]Record, error) {
	// each brings a region's ranges to fn, from host words or the device.
	each := func(ri int, ranges []wordRange, fn func(k int, words []uint64) error) error {
		rg := regions[ri]
		if rg.words != nil || rg.n == 0 {
			for k, r := range ranges {
				if err := fn(k, rg.words[r.lo:r.hi]); err != nil {
					return err
				}
			}
			return nil
		}
		return stream(ri, ranges, fn)
	}
	for ri, rg := range regions {
		if rg.n > 0 && int64(len(rg.marks)) < markWords(rg.n) {
			return nil, fmt.Errorf("history: region %d of %d words has %d words of marks, want %d", ri, rg.n, len(rg.marks), markWords(rg.n))
		}
	}
	return decodeMarked(regions, max(chunk, 2), each)
}

// decodePiece decodes len(out) consecutive records from words, their
// accesses into slab from a on.
func decodePiece(out []Record, slab []Access, a int, words []uint64) {
	i := 0
	for k := range out {
		w := words[i : i+4]
		kind, cause := w[0]&0xFF, (w[0]>>8)&0xFF
		nr, nw := int(w[1]>>32), int(uint32(w[1]))
		r := &out[k]
		*r = Record{TS: w[2], Snapshot: w[3], ReadOnly: kind == 1, Aborted: kind == 2, Cause: Cause(cause),
			Reads: slab[a : a+nr : a+nr]}
		decodeAccesses(r.Reads, words[i+4:])
		if nw > 0 {
			r.Writes = slab[a+nr : a+nr+nw : a+nr+nw]
			decodeAccesses(r.Writes, words[i+4+2*nr:])
		}
		i += 4 + 2*(nr+nw)
		a += nr + nw
	}
}

// decodeAccesses fills as from the (item, value) word pairs at the start
// of words.
func decodeAccesses(as []Access, words []uint64) {
	words = words[:2*len(as)]
	for j := range as {
		as[j] = Access{Item: uint32(words[2*j]), Value: words[2*j+1]}
	}
}
