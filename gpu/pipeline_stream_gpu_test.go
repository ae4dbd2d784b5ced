package gpu_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestStreamOutReadsEverySpan streams spans of a device buffer (empty,
// one element, a whole chunk, overlapping, out of order) through rings
// of one to three chunks, staged, direct by size, and with a download
// pending before the stream: each call gets exactly its span's words.
// A span larger than a chunk, one outside the buffer, and fn's error
// stop the stream with an error that says so.
func TestStreamOutReadsEverySpan(t *testing.T) {
	d := gputest.Device(t)
	s := gputest.Stream(t, d)
	const n = 10_000
	words := make([]uint64, n)
	for i := range words {
		words[i] = rand.Uint64()
	}
	buf, err := gpu.Alloc[uint64](d, n)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Free()
	if err := errors.Join(buf.Write(s, 0, words), s.Synchronize()); err != nil {
		t.Fatal(err)
	}
	spans := [][2]int{{0, 0}, {5, 6}, {0, 512}, {100, 612}, {9_488, 10_000}, {3, 300}, {7_000, 7_001}, {511, 1_023}}
	span := func(k int) (int, int) { return spans[k][0], spans[k][1] }
	for _, cfg := range []gpu.PipelineConfig{
		{ChunkBytes: 4096, Chunks: 1},
		{ChunkBytes: 4096, Chunks: 2},
		{ChunkBytes: 4096, Chunks: 3, Direct: 1024}, // spans under 128 words read directly
	} {
		for _, pending := range []bool{false, true} {
			name := fmt.Sprintf("config %+v, pending download %v", cfg, pending)
			p := gpu.NewPipeline(d, cfg)
			defer p.Close()
			var early []uint64
			if pending {
				early = make([]uint64, 1000)
				if err := gpu.DownloadStaged(p, s, buf, 17, early); err != nil {
					t.Fatal(err)
				}
			}
			var got []int
			err := gpu.StreamOut(p, s, buf, len(spans), span, func(k int, w []uint64) error {
				lo, hi := span(k)
				if !slices.Equal(w, words[lo:hi]) {
					return fmt.Errorf("span %d [%d,%d): words differ", k, lo, hi)
				}
				got = append(got, k)
				return nil
			})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(got) != len(spans) {
				t.Fatalf("%s: fn called for spans %v", name, got)
			}
			if pending && !slices.Equal(early, words[17:1017]) {
				t.Fatalf("%s: the pending download was not completed", name)
			}
		}
	}
	p := gpu.NewPipeline(d, gpu.PipelineConfig{ChunkBytes: 4096, Chunks: 2})
	defer p.Close()
	for _, c := range []struct {
		name string
		span [2]int
	}{{"larger than a chunk", [2]int{0, 513}}, {"outside the buffer", [2]int{9_999, 10_001}}} {
		err := gpu.StreamOut(p, s, buf, 2, func(k int) (int, int) {
			if k == 1 {
				return c.span[0], c.span[1]
			}
			return 0, 8
		}, func(int, []uint64) error { return nil })
		if err == nil || !strings.Contains(err.Error(), "span 1") {
			t.Fatalf("a span %s: got %v, want an error naming span 1", c.name, err)
		}
	}
	stop := errors.New("stop")
	if err := gpu.StreamOut(p, s, buf, 3, span, func(k int, _ []uint64) error {
		if k == 1 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) {
		t.Fatalf("fn's error: got %v", err)
	}
}
