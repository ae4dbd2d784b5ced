package stm

import (
	"fmt"

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
	st, err := newHistoryStreamer(g.dev, g.sCli, chunk, true)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer st.close()
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
		var ranges []wordRange
		for lo := int64(0); lo < int64(len(rg.marks)); lo += int64(chunk) {
			ranges = append(ranges, wordRange{lo, min(lo+int64(chunk), int64(len(rg.marks)))})
		}
		if err := st.stream(marks, ranges, func(k int, words []uint64) error {
			copy(rg.marks[ranges[k].lo:], words)
			return nil
		}); err != nil {
			return nil, fmt.Errorf("history: reading the records' marks: %w", err)
		}
	}
	return decodeHistory(regions, chunk, func(region int, ranges []wordRange, fn func(k int, words []uint64) error) error {
		return st.stream(regions[region].buf, ranges, fn)
	})
}

// historyStreamer brings ranges of device words to the host through two
// pinned buffers on one stream, or, where memory cannot be pinned,
// through one Go buffer, one synchronous copy at a time.
type historyStreamer struct {
	s     *gpu.Stream
	pin   [2]*gpu.HostBuffer[uint64]
	ev    [2]*gpu.Event
	plain []uint64 // the Go buffer, when pinning failed
}

// newHistoryStreamer returns a streamer of ranges of up to words+1 words,
// through pinned buffers unless pin is false or pinning fails.
func newHistoryStreamer(d *gpu.Device, s *gpu.Stream, words int, pin bool) (*historyStreamer, error) {
	st := &historyStreamer{s: s}
	for i := range st.pin {
		if !pin {
			break
		}
		var err error
		if st.pin[i], err = gpu.AllocHost[uint64](d, words+1); err != nil {
			break
		}
		if st.ev[i], err = d.NewEvent(); err != nil {
			st.close()
			return nil, err
		}
	}
	if st.pin[1] == nil {
		st.close()
		st = &historyStreamer{s: s, plain: make([]uint64, words+1)}
	}
	return st, nil
}

// buffer returns the host buffer of range k.
func (st *historyStreamer) buffer(k int) []uint64 {
	if st.plain != nil {
		return st.plain
	}
	return st.pin[k%2].Slice()
}

// stream calls fn on each range of buf in order, with the range's words
// in host memory (valid during the call only); with pinned buffers the
// next range's DMA runs during fn.
func (st *historyStreamer) stream(buf *gpu.Buffer[uint64], ranges []wordRange, fn func(k int, words []uint64) error) error {
	queue := func(k int) error {
		r := ranges[k]
		if st.plain != nil {
			return nil // read synchronously in turn
		}
		if err := buf.Read(st.s, int(r.lo), st.buffer(k)[:r.hi-r.lo]); err != nil {
			return err
		}
		return st.ev[k%2].Record(st.s)
	}
	if len(ranges) == 0 {
		return nil
	}
	if err := queue(0); err != nil {
		return err
	}
	for k, r := range ranges {
		words := st.buffer(k)[:r.hi-r.lo]
		if st.plain != nil {
			if err := buf.Read(nil, int(r.lo), words); err != nil {
				return err
			}
		} else {
			if k+1 < len(ranges) {
				if err := queue(k + 1); err != nil {
					return err
				}
			}
			if err := st.ev[k%2].Synchronize(); err != nil {
				return err
			}
		}
		if err := fn(k, words); err != nil {
			return err
		}
	}
	return nil
}

// close waits for the DMAs, which may still run after an error, and
// frees the buffers and events. Its errors are dropped: the history was
// decoded, or its own error is returned.
func (st *historyStreamer) close() {
	st.s.Synchronize()
	for i := range st.pin {
		if st.ev[i] != nil {
			st.ev[i].Close()
		}
		st.pin[i].Free()
	}
}
