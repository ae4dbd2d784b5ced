package gpu

import (
	"fmt"
	"testing"
)

// TestRampChunks checks the chunk sizes of a staged upload: they cover the
// transfer exactly, never exceed a chunk, stay aligned but for the last,
// and with a ramp start at the ramp, end within twice it, and keep whole
// chunks in the middle of a large transfer.
func TestRampChunks(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct{ total, chunk, ramp, align int }{
		{50_000_000, 16 * mib, 0, 8}, {50_000_000, 16 * mib, mib, 8}, {30_000_000, 16 * mib, mib, 8},
		{80_000_000, 16 * mib, mib, 8}, {80_000_000, 8 * mib, mib / 2, 8}, {mib / 2, 16 * mib, mib, 8},
		{3 * mib, 16 * mib, mib, 8}, {1000, 64, 8, 4}, {7, 16, 4, 1}, {16 * mib, 16 * mib, 16 * mib, 8},
	} {
		name := fmt.Sprintf("total=%d chunk=%d ramp=%d", c.total, c.chunk, c.ramp)
		sizes := rampChunks(c.total, c.chunk, c.ramp, c.align)
		t.Logf("%s: %v", name, sizes)
		sum := 0
		for i, s := range sizes {
			if s <= 0 || s > c.chunk || (i < len(sizes)-1 && s%c.align != 0) {
				t.Fatalf("%s: chunk %d of %d bytes in %v", name, i, s, sizes)
			}
			sum += s
		}
		if sum != c.total {
			t.Fatalf("%s: chunks sum to %d: %v", name, sum, sizes)
		}
		if c.ramp <= 0 || c.ramp >= c.chunk {
			if want := (c.total + c.chunk - 1) / c.chunk; len(sizes) != want {
				t.Fatalf("%s: %d chunks, want %d: %v", name, len(sizes), want, sizes)
			}
			continue
		}
		if sizes[0] > c.ramp && c.total >= 2*c.ramp {
			t.Fatalf("%s: first chunk %d above the ramp: %v", name, sizes[0], sizes)
		}
		if last := sizes[len(sizes)-1]; last >= 2*c.ramp {
			t.Fatalf("%s: last chunk %d not under twice the ramp: %v", name, last, sizes)
		}
		if c.total >= 4*c.chunk {
			full := 0
			for _, s := range sizes {
				if s == c.chunk {
					full++
				}
			}
			if full == 0 {
				t.Fatalf("%s: no whole chunk: %v", name, sizes)
			}
		}
	}
}
