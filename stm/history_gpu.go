package stm

import (
	"errors"
	"fmt"
	"math"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/hugepages"
)

// historyChunkWords is how many words of a history region readHistory
// brings to the host at a time, into each of its two pinned buffers.
const historyChunkWords = 8 << 20 // 64 MiB

// readHistory reads the history regions the kernels filled (the committed
// records, then the aborted attempts kept) and decodes them, streaming
// through two pinned buffers (a chunk's DMA runs while the other is
// read): first each region's marks of where its records start, then, in
// chunks cut at records, the records themselves, decoded on all cores
// (decodeMarked). The record words never sit whole in host memory: the
// host needs room for the marks and the decoded records only. (On the
// H200 host a copy of 5.3 GB of record words into fresh pageable memory
// ran at 1.2 GB/s.)
func (g *gpuEngine) readHistory(pl *runPlan, m *runMemory, dc []uint64) ([]Record, error) {
	regions := []historyRegion{
		{buf: m.hist, n: min(int64(dc[dctlHistOff]), pl.histWords)},
		{buf: m.histAb, n: min(int64(dc[dctlHistAbEnd]), pl.abWords)},
	}
	// A chunk holds the longest record the run's read and write sets
	// allow, so every cut of whole records fits a pinned buffer.
	chunk := max(historyChunkWords, 4+2*(pl.sh.r+pl.sh.w))
	st := historyPipeline(g.dev, chunk, false)
	// Close waits for the DMAs, which may still run after an error; its
	// own error is dropped: the history was decoded, or its error is
	// returned.
	defer st.Close()
	// The records' marks (a 64th of the words) come first, through the
	// same buffers: with them the regions are cut on all cores and their
	// words come once (decodeMarked).
	for i, marks := range []*gpu.Buffer[uint64]{m.histMarks, m.histAbMarks} {
		rg := &regions[i]
		if rg.n == 0 {
			continue
		}
		rg.marks = make([]uint64, markWords(rg.n))
		hugepages.Advise(rg.marks)
		if err := errors.Join(gpu.DownloadStaged(st, g.sCli, marks, 0, rg.marks), st.Drain(), g.sCli.Synchronize()); err != nil {
			return nil, fmt.Errorf("history: reading the records' marks: %w", err)
		}
	}
	return decodeHistory(regions, chunk, func(region int, ranges []wordRange, fn func(k int, words []uint64) error) error {
		return streamWords(st, g.sCli, regions[region].buf, ranges, fn)
	})
}

// historyPipeline returns a ring of two pinned chunks of words+1 words
// for streaming a history region's ranges (streamWords): a chunk's DMA
// runs while the other is read. direct makes every range a synchronous
// copy into one Go buffer, as where memory cannot be pinned. Nothing is
// pinned until the first stream. Cost: O(1).
func historyPipeline(d *gpu.Device, words int, direct bool) *gpu.Pipeline {
	cfg := gpu.PipelineConfig{ChunkBytes: 8 * (words + 1), Chunks: 2}
	if direct {
		cfg.Direct = math.MaxInt
	}
	return gpu.NewPipeline(d, cfg)
}

// streamWords calls fn on each range of buf in order, with the range's
// words in host memory (valid during the call only), through p on s
// (gpu.StreamOut).
func streamWords(p *gpu.Pipeline, s *gpu.Stream, buf *gpu.Buffer[uint64], ranges []wordRange, fn func(k int, words []uint64) error) error {
	return gpu.StreamOut(p, s, buf, len(ranges), func(k int) (int, int) { return int(ranges[k].lo), int(ranges[k].hi) }, fn)
}
