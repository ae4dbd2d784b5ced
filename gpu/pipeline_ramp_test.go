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

// TestStreamPlan checks UploadStreamed's schedule without a GPU: the
// pieces cover every chunk exactly, in order, none longer than a piece or
// crossing a chunk, each chunk counting its pieces, and chunk k in ring
// slot (next+k) mod slots.
func TestStreamPlan(t *testing.T) {
	for _, c := range []struct{ total, chunk, ramp, piece, slots, next int }{
		{50_000_000, 16 << 20, 1 << 20, 128 << 10, 4, 0}, {50_000_000, 16 << 20, 0, 128 << 10, 4, 3},
		{1000, 64, 8, 16, 3, 1}, {7, 16, 0, 4, 2, 1}, {1 << 20, 1 << 20, 0, 1 << 20, 4, 2},
	} {
		name := fmt.Sprintf("%+v", c)
		sizes := rampChunks(c.total, c.chunk, c.ramp, 1)
		pl := newStreamPlan(sizes, c.piece, c.slots, c.next)
		if len(pl.chunks) != len(sizes) {
			t.Fatalf("%s: %d chunks, want %d", name, len(pl.chunks), len(sizes))
		}
		at, pi := 0, 0
		for k := range pl.chunks {
			ch := &pl.chunks[k]
			if ch.at != at || ch.bytes != sizes[k] || ch.slot != (c.next+k)%c.slots {
				t.Fatalf("%s: chunk %d at %d, %d bytes, slot %d", name, k, ch.at, ch.bytes, ch.slot)
			}
			n := 0
			for lo := at; lo < at+ch.bytes; n++ {
				pc := pl.pieces[pi]
				if int(pc.chunk) != k || pc.lo != lo || pc.hi <= pc.lo || pc.hi-pc.lo > c.piece || pc.hi > at+ch.bytes {
					t.Fatalf("%s: piece %d is %+v in chunk %d at %d", name, pi, pc, k, lo)
				}
				lo, pi = pc.hi, pi+1
			}
			if int(ch.left.Load()) != n {
				t.Fatalf("%s: chunk %d counts %d pieces, has %d", name, k, ch.left.Load(), n)
			}
			at += ch.bytes
		}
		if at != c.total || pi != len(pl.pieces) {
			t.Fatalf("%s: plan covers %d bytes in %d of %d pieces", name, at, pi, len(pl.pieces))
		}
	}
}
