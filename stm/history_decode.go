package stm

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/hugepages"
	"github.com/warpkv/warpkv/internal/par"
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

// historyStride is how many records apart the header pass notes where a
// record starts: the records between two notes are one worker's piece of
// the decoding.
const historyStride = 1 << 12

// historyPiece is up to historyStride consecutive records of one cut.
type historyPiece struct {
	at    int64 // its first record's first word in the region
	first int   // that record's index in the output
	n     int   // its records
	slab  int   // that record's first access in the slab
}

// historyCut is a range of whole records of one region, at most a chunk
// long, and its pieces.
type historyCut struct {
	region int
	wordRange
	pieces []historyPiece
}

// streamFunc brings ranges of region's words to fn in order, each valid
// during its call only (see historyStreamer.stream).
type streamFunc func(region int, ranges []wordRange, fn func(k int, words []uint64) error) error

// decodeHistory decodes the recorded regions (see stm_record) into one
// slice, region after region. A record is 4 words (kind and cause,
// reads << 32 | writes, timestamp, snapshot) and then an (item, value)
// word pair per read and per write. A first pass over the regions in
// chunks of chunk words reads the headers: it checks that every record
// fits, counts records and accesses, and cuts the regions into ranges of
// whole records of at most chunk words, noting where every
// historyStride-th record starts. Then the cuts come again, and each
// one's pieces are decoded on all cores into one slice of Records whose
// accesses are capacity-limited windows of one pointer-free slab: two
// allocations in all, not two per record. Regions with words are read
// in place; others through stream. Cost: O(words), the header pass
// serial (it follows the records' lengths). When every region has its
// marks, decodeMarked cuts them on all cores instead and brings each
// region once.
func decodeHistory(regions []historyRegion, chunk int, stream streamFunc) ([]Record, error) {
	chunk = max(chunk, 2)
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
	marked := true
	for _, rg := range regions {
		marked = marked && (rg.n == 0 || int64(len(rg.marks)) >= markWords(rg.n))
	}
	if marked {
		return decodeMarked(regions, chunk, each)
	}
	var cuts []historyCut
	records, accesses := 0, 0
	for ri, rg := range regions {
		// Chunks of the header pass overlap by a word, so that a header
		// that starts in one is read whole there.
		var ranges []wordRange
		for lo := int64(0); lo < rg.n; lo += int64(chunk) {
			ranges = append(ranges, wordRange{lo, min(lo+int64(chunk)+1, rg.n)})
		}
		k := 0        // records of this region so far
		i := int64(0) // the next record's first word
		err := each(ri, ranges, func(c int, words []uint64) error {
			lo := ranges[c].lo
			end := min(lo+int64(chunk), rg.n)
			for i < end {
				if i+4 > rg.n {
					return fmt.Errorf("history: truncated record at word %d", i)
				}
				w0, w1 := words[i-lo], words[i+1-lo]
				kind, nr, nw := w0&0xFF, w1>>32, uint64(uint32(w1))
				if kind > 2 || nr+nw > uint64(rg.n-i-4)/2 {
					return fmt.Errorf("history: bad record at word %d", i)
				}
				size := 4 + 2*int64(nr+nw)
				if len(cuts) == 0 || cuts[len(cuts)-1].region != ri || i+size > cuts[len(cuts)-1].lo+int64(chunk) {
					cuts = append(cuts, historyCut{region: ri, wordRange: wordRange{i, i}})
				}
				cut := &cuts[len(cuts)-1]
				if len(cut.pieces) == 0 || cut.pieces[len(cut.pieces)-1].n == historyStride {
					cut.pieces = append(cut.pieces, historyPiece{at: i, first: records + k, slab: accesses})
				}
				cut.pieces[len(cut.pieces)-1].n++
				cut.hi = i + size
				accesses += int(nr + nw)
				k++
				i += size
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		records += k
	}
	out := make([]Record, records)
	slab := make([]Access, accesses)
	// Both are filled once, on all cores: huge pages take a fault per
	// 2 MiB instead of per 4 KiB.
	hugepages.Advise(out)
	hugepages.Advise(slab)
	for ri := range regions {
		var mine []historyCut
		var ranges []wordRange
		for _, c := range cuts {
			if c.region == ri {
				mine = append(mine, c)
				ranges = append(ranges, c.wordRange)
			}
		}
		err := each(ri, ranges, func(c int, words []uint64) error {
			cut := mine[c]
			par.For(len(cut.pieces), 1, 0, func(lo, hi int) {
				for _, pc := range cut.pieces[lo:hi] {
					decodePiece(out[pc.first:pc.first+pc.n], slab, pc.slab, words[pc.at-cut.lo:])
				}
			})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
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
