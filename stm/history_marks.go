package stm

import (
	"fmt"
	"math/bits"

	"github.com/warpkv/warpkv/internal/hugepages"
	"github.com/warpkv/warpkv/internal/par"
)

// decodeMarked is decodeHistory's work, for regions whose records' starts
// are marked (historyRegion.marks, set by stm_record): nothing reads the
// records in order to find where they start. Each region is cut into
// chunks of whole records (each cut ends at a mark, at most chunk words
// after its start unless one record is longer), and each cut into pieces
// of historyStride records, by counting marks on all cores; the words then
// come once, cut by cut, and each cut's pieces are decoded on all cores.
// Every record is checked against the marks: its header must say the
// distance to the next mark (or to the region's end), so a record that
// does not is an error naming its first word ("bad record", or "truncated
// record" at the region's end); of several, the first in region order.
// Cost: O(words) on all cores, plus O(words/64) for the marks.
func decodeMarked(regions []historyRegion, chunk int, each func(ri int, ranges []wordRange, fn func(k int, words []uint64) error) error) ([]Record, error) {
	cutsOf := make([][]historyCut, len(regions))
	records, accesses := 0, 0
	var cutErr error // a region that could not be cut; the regions before it are decoded first
	for ri, rg := range regions {
		if rg.n == 0 {
			continue
		}
		cuts, err := markedCuts(rg.marks, rg.n, int64(chunk))
		if err != nil {
			cutErr = err
			break
		}
		par.For(len(cuts), 1, 0, func(lo, hi int) {
			for c := lo; c < hi; c++ {
				cuts[c].pieces = markedPieces(rg.marks, cuts[c].wordRange)
			}
		})
		// Each piece's first record and first access: a record is 4
		// words and two a read or write, so a piece's accesses follow
		// from its words and records (a piece whose records disagree
		// with its marks fails in its decoding before it writes).
		for c := range cuts {
			ps := cuts[c].pieces
			for p := range ps {
				end := cuts[c].hi
				if p+1 < len(ps) {
					end = ps[p+1].at
				}
				ps[p].first, ps[p].slab = records, accesses
				records += ps[p].n
				accesses += int(max(end-ps[p].at-4*int64(ps[p].n), 0) / 2)
			}
		}
		cutsOf[ri] = cuts
	}
	out := make([]Record, records)
	slab := make([]Access, accesses)
	// Both are filled once, on all cores: huge pages take a fault per
	// 2 MiB instead of per 4 KiB, and the faults are taken first, on all
	// cores (on the H200 host, the docs' 34.4M records decoded in 2.8-3.0 s
	// with the faults taken by the decoding, in 1.45-1.5 s with them taken
	// first: 0.63-0.67 s of that).
	hugepages.Advise(out)
	hugepages.Advise(slab)
	hugepages.Touch(out, par.Workers(0))
	hugepages.Touch(slab, par.Workers(0))
	for ri, rg := range regions {
		cuts := cutsOf[ri]
		if len(cuts) == 0 {
			continue
		}
		ranges := make([]wordRange, len(cuts))
		pieceAt := make([]int, len(cuts)+1) // cut c's pieces are the region's pieceAt[c]...
		for c, cut := range cuts {
			ranges[c] = cut.wordRange
			pieceAt[c+1] = pieceAt[c] + len(cut.pieces)
		}
		bad := make([]badRecord, pieceAt[len(cuts)]) // one a piece, in the region's order
		err := each(ri, ranges, func(c int, words []uint64) error {
			cut := &cuts[c]
			par.For(len(cut.pieces), 1, 0, func(lo, hi int) {
				for p := lo; p < hi; p++ {
					pc := cut.pieces[p]
					bad[pieceAt[c]+p] = decodeMarkedPiece(out[pc.first:pc.first+pc.n], slab, pc.slab,
						words[pc.at-cut.lo:], pc.at, rg.marks, rg.n)
				}
			})
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, b := range bad {
			if b.err != "" {
				return nil, fmt.Errorf("history: %s at word %d", b.err, b.at)
			}
		}
	}
	if cutErr != nil {
		return nil, cutErr
	}
	return out, nil
}

// badRecord is a piece's first record that disagrees with the marks: what
// is wrong ("truncated record", "bad record") and its first word; err is
// empty when the piece decoded whole.
type badRecord struct {
	err string
	at  int64
}

// markedCuts cuts a region of n > 0 words into ranges of whole records of
// at most chunk words: each ends at the last mark at most chunk words
// after its start, or at n (a record longer than chunk words is a range
// of its own). Cost: O(cuts) plus the marks scanned back from each cut's
// end to its last mark.
func markedCuts(marks []uint64, n, chunk int64) ([]historyCut, error) {
	if marks[0]&1 == 0 {
		return nil, fmt.Errorf("history: bad record at word 0")
	}
	var cuts []historyCut
	for s := int64(0); s < n; {
		e := n
		if n-s > chunk {
			if e = lastMark(marks, s+1, s+chunk); e < 0 {
				e = nextMark(marks, s+1, n)
			}
		}
		cuts = append(cuts, historyCut{wordRange: wordRange{s, e}})
		s = e
	}
	return cuts, nil
}

// lastMark returns the highest marked word in [lo, hi], or -1.
func lastMark(marks []uint64, lo, hi int64) int64 {
	for w := hi >> 6; w >= lo>>6; w-- {
		m := marks[w]
		if w == hi>>6 && hi&63 != 63 {
			m &= 1<<(hi&63+1) - 1
		}
		if w == lo>>6 {
			m &^= 1<<(lo&63) - 1
		}
		if m != 0 {
			return w<<6 + 63 - int64(bits.LeadingZeros64(m))
		}
	}
	return -1
}

// nextMark returns the lowest marked word in [lo, n), or n.
func nextMark(marks []uint64, lo, n int64) int64 {
	for w := lo >> 6; w<<6 < n; w++ {
		m := marks[w]
		if w == lo>>6 {
			m &^= 1<<(lo&63) - 1
		}
		if m != 0 {
			return min(w<<6+int64(bits.TrailingZeros64(m)), n)
		}
	}
	return n
}

// markedPieces returns the pieces of the records marked in words r: one
// every historyStride records, with its first word and record count
// (first and slab left for the caller). Cost: O(r's words/64), and
// O(1) a piece.
func markedPieces(marks []uint64, r wordRange) []historyPiece {
	var ps []historyPiece
	count := 0
	for w := r.lo >> 6; w<<6 < r.hi; w++ {
		m := marks[w]
		if w == r.lo>>6 {
			m &^= 1<<(r.lo&63) - 1
		}
		if end := r.hi - w<<6; end < 64 {
			m &= 1<<end - 1
		}
		k := bits.OnesCount64(m)
		if k == 0 {
			continue
		}
		// No piece starts in this word: add its records to the last.
		if in := count % historyStride; in != 0 && in+k <= historyStride {
			ps[len(ps)-1].n += k
			count += k
			continue
		}
		for ; m != 0; m &= m - 1 {
			if count%historyStride == 0 {
				ps = append(ps, historyPiece{at: w<<6 + int64(bits.TrailingZeros64(m))})
			}
			ps[len(ps)-1].n++
			count++
		}
	}
	return ps
}

// decodeMarkedPiece decodes len(out) records from words (which start at
// the first one, word at of a region of n words, and run to the end of
// its cut), their accesses into slab from a on. It first checks every
// header against the marks (each record ends at the next mark or at n)
// and returns the first that disagrees, writing nothing; a piece whose
// records all agree has exactly the accesses decodeMarked counted for it.
func decodeMarkedPiece(out []Record, slab []Access, a int, words []uint64, at int64, marks []uint64, n int64) badRecord {
	pos := at
	for range out {
		end := nextMark(marks, pos+1, n)
		size := end - pos
		if size < 4 {
			if end == n {
				return badRecord{"truncated record", pos}
			}
			return badRecord{"bad record", pos}
		}
		h := words[pos-at : pos-at+2]
		if kind, nr, nw := h[0]&0xFF, h[1]>>32, uint64(uint32(h[1])); kind > 2 || (size-4)%2 != 0 || nr+nw != uint64(size-4)/2 {
			return badRecord{"bad record", pos}
		}
		pos = end
	}
	decodePiece(out, slab, a, words)
	return badRecord{}
}
