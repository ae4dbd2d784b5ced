package stm

import (
	"math/rand/v2"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestHistoryStreamsFromTheDevice decodes two regions of recorded words
// from device memory through the history's ring (historyPipeline,
// streamWords), with pinned chunks and with the direct copies into Go
// memory it falls back on, in chunks from a little more than the longest
// record to readHistory's own.
func TestHistoryStreamsFromTheDevice(t *testing.T) {
	dev := gputest.Device(t)
	s := gputest.Stream(t, dev)
	rng := rand.New(rand.NewPCG(11, 12))
	c := randomHistory(rng, 3*historyStride+5, 8, 4)
	a := randomHistory(rng, 700, 8, 4)
	want := append(append([]Record{}, c...), a...)
	var regions []historyRegion
	for _, recs := range [][]Record{c, a} {
		words := encodeHistory(recs)
		buf, err := gpu.Upload(dev, words)
		if err != nil {
			t.Fatal(err)
		}
		defer buf.Free()
		regions = append(regions, historyRegion{buf: buf, n: int64(len(words)), marks: markHistory(words)})
	}
	for _, direct := range []bool{false, true} {
		for _, chunk := range []int{30, 4096, historyChunkWords} {
			st := historyPipeline(dev, chunk, direct)
			got, err := decodeHistory(regions, chunk, func(region int, ranges []wordRange, fn func(k int, words []uint64) error) error {
				return streamWords(st, s, regions[region].buf, ranges, fn)
			})
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
			if err != nil {
				t.Fatalf("direct %v, chunks of %d words: %v", direct, chunk, err)
			}
			checkDecoded(t, chunk, got, want)
		}
	}
}
