package stm

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
)

// historyChunkBytes is the pinned chunk of readHistory's downloads.
const historyChunkBytes = 64 << 20

// readHistory reads the history regions the kernels filled (the committed
// records, then the aborted attempts kept) and decodes them. The regions
// come down through a ring of pinned chunks, each unpacked into Go memory
// on all cores while the next one's DMA runs: a copy straight into
// pageable memory ran at 1.2 GB/s on the H200 host (5.3 GB in 4.6 s).
func (g *gpuEngine) readHistory(pl *runPlan, m *runMemory, dc []uint64) ([]Record, error) {
	xfer := gpu.NewPipeline(g.dev, gpu.PipelineConfig{ChunkBytes: historyChunkBytes, Chunks: 3})
	defer xfer.Close()
	var regions [][]uint64
	for _, region := range []struct {
		buf  *gpu.Buffer[uint64]
		used int64
	}{{m.hist, min(int64(dc[dctlHistOff]), pl.histWords)}, {m.histAb, min(int64(dc[dctlHistAbEnd]), pl.abWords)}} {
		words := make([]uint64, region.used)
		if err := gpu.DownloadStaged(xfer, g.sCli, region.buf, 0, words); err != nil {
			xfer.Discard()
			return nil, fmt.Errorf("history: read %d words: %w", region.used, err)
		}
		regions = append(regions, words)
	}
	if err := xfer.Drain(); err != nil {
		return nil, fmt.Errorf("history: read: %w", err)
	}
	if err := g.sCli.Synchronize(); err != nil {
		return nil, fmt.Errorf("history: read: %w", err)
	}
	return parseHistory(regions...)
}

// historyStride is how many records apart parseHistory's header pass
// notes where a record starts: the records between two notes are one
// worker's piece of the decoding.
const historyStride = 1 << 12

// parseHistory decodes the history the kernels wrote (see stm_record),
// region after region, into one slice. A record is 4 words (kind and
// cause, reads << 32 | writes, timestamp, snapshot) and then an (item,
// value) word pair per read and per write. One pass over the headers
// checks that every record fits and notes where every historyStride-th
// starts; then the pieces between those notes are decoded on all cores
// into one slice of Records whose accesses are capacity-limited windows of
// one pointer-free slab: two allocations in all, not two per record. (A
// checked "warpkv stm run" decodes tens of millions of records: on the
// H200 host, 34M of them took 7.0 s with a slice of every record's start,
// which this pass no longer keeps; before that, an allocation per record
// and per access list took longer still.) Cost: O(words), the header pass
// serial (it follows the records' lengths).
func parseHistory(regions ...[]uint64) ([]Record, error) {
	type piece struct {
		words []uint64 // the region
		at    int      // the piece's first record's first word in it
		first int      // that record's index in the output
		n     int      // the piece's records
		slab  int      // that record's first access in the slab
	}
	var pieces []piece
	records, accesses := 0, 0
	for _, words := range regions {
		k := 0 // records of this region so far
		for i := 0; i < len(words); k++ {
			if i+4 > len(words) {
				return nil, fmt.Errorf("history: truncated record at word %d", i)
			}
			kind, nr, nw := words[i]&0xFF, words[i+1]>>32, uint64(uint32(words[i+1]))
			if kind > 2 || nr+nw > uint64(len(words)-i-4)/2 {
				return nil, fmt.Errorf("history: bad record at word %d", i)
			}
			if k%historyStride == 0 {
				pieces = append(pieces, piece{words: words, at: i, first: records + k, slab: accesses})
			}
			pieces[len(pieces)-1].n++
			accesses += int(nr + nw)
			i += 4 + 2*int(nr+nw)
		}
		records += k
	}
	out := make([]Record, records)
	slab := make([]Access, accesses)
	par.For(len(pieces), 1, 0, func(lo, hi int) {
		for _, pc := range pieces[lo:hi] {
			i, a := pc.at, pc.slab
			for r := out[pc.first : pc.first+pc.n]; len(r) > 0; r = r[1:] {
				w := pc.words[i : i+4]
				kind, cause := w[0]&0xFF, (w[0]>>8)&0xFF
				nr, nw := int(w[1]>>32), int(uint32(w[1]))
				rec := &r[0]
				*rec = Record{TS: w[2], Snapshot: w[3], ReadOnly: kind == 1, Aborted: kind == 2, Cause: Cause(cause),
					Reads: slab[a : a+nr : a+nr]}
				decodeAccesses(rec.Reads, pc.words[i+4:])
				if nw > 0 {
					rec.Writes = slab[a+nr : a+nr+nw : a+nr+nw]
					decodeAccesses(rec.Writes, pc.words[i+4+2*nr:])
				}
				i += 4 + 2*(nr+nw)
				a += nr + nw
			}
		}
	})
	return out, nil
}

// decodeAccesses fills as from the (item, value) word pairs at the start
// of words.
func decodeAccesses(as []Access, words []uint64) {
	words = words[:2*len(as)]
	for j := range as {
		as[j] = Access{Item: uint32(words[2*j]), Value: words[2*j+1]}
	}
}
