package stm

import (
	"cmp"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestWriteIndexHoldsEveryItemsWritesInOrder checks newWriteIndex against
// a plain model (each item's committed writes, stably sorted by
// timestamp; the update transactions' stamps stably sorted) on random
// histories: empty ones, read-only ones, items with no writes before and
// after the written ones, records out of timestamp order, duplicate
// timestamps, and enough records to be cut into many parts.
func TestWriteIndexHoldsEveryItemsWritesInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, c := range []struct {
		name           string
		records, items int
		updates        float64 // share of update transactions
		shuffle        bool
	}{
		{"empty", 0, 5, 0.5, false},
		{"read-only", 100, 5, 0, false},
		{"one item", 300, 1, 0.5, true},
		{"few items in order", 1000, 3, 0.5, false},
		{"few items shuffled", 1000, 3, 0.5, true},
		{"many parts in order", 50_000, 1000, 0.3, false},
		{"many parts shuffled", 50_000, 1000, 0.3, true},
		{"items above the written ones", 20_000, 1 << 16, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			initial := make([]uint64, c.items)
			h := make([]Record, c.records)
			for i := range h {
				ts := uint64(i / 2) // pairs share a timestamp: duplicates too
				r := Record{TS: ts, Snapshot: ts}
				switch {
				case rng.Float64() >= c.updates:
					r.ReadOnly = true
				case rng.IntN(10) == 0:
					r.Aborted = true
				}
				limit := c.items
				if c.name == "items above the written ones" {
					limit = 100 // items 100 and up are never written
				}
				for range rng.IntN(4) {
					r.Writes = append(r.Writes, Access{uint32(rng.IntN(limit)), rng.Uint64()})
				}
				h[i] = r
			}
			if c.shuffle {
				for i := range h {
					j := min(len(h)-1, i+rng.IntN(64))
					h[i], h[j] = h[j], h[i]
				}
			}
			x, stamps, err := newWriteIndex(initial, h, true)
			if err != nil {
				t.Fatal(err)
			}
			want := make([][]itemWrite, c.items)
			var wantStamps []stamp
			for i, r := range h {
				if r.Aborted || r.ReadOnly {
					continue
				}
				wantStamps = append(wantStamps, stamp{r.TS, i})
				for _, a := range r.Writes {
					want[a.Item] = append(want[a.Item], itemWrite{r.TS, a.Value})
				}
			}
			slices.SortStableFunc(wantStamps, func(a, b stamp) int { return cmp.Compare(a.ts, b.ts) })
			if !slices.Equal(stamps, wantStamps) {
				t.Fatalf("stamps: %d, want %d (or the order differs)", len(stamps), len(wantStamps))
			}
			if len(x.start) != c.items+1 || x.start[0] != 0 || x.start[c.items] != len(x.w) {
				t.Fatalf("start has %d entries from %d to %d, want %d from 0 to %d", len(x.start), x.start[0], x.start[len(x.start)-1], c.items+1, len(x.w))
			}
			for it := range c.items {
				slices.SortStableFunc(want[it], byTS)
				if got := x.w[x.start[it]:x.start[it+1]]; !slices.Equal(got, want[it]) {
					t.Fatalf("item %d: writes %v, want %v", it, got, want[it])
				}
			}
		})
	}
}

// docShapedHistory returns a valid history of n records shaped like the
// package docs' CUDA body's (90% read-only sums of a block of 8 items, the
// rest transfers within a block) over items items, the records each up
// to 256 places from their timestamp's order as the GPU engine records
// them, with the store before and after.
func docShapedHistory(n, items int) (initial []uint64, h []Record, final []uint64) {
	rng := rand.New(rand.NewPCG(9, 10))
	initial = make([]uint64, items)
	for i := range initial {
		initial[i] = 100
	}
	cur := slices.Clone(initial)
	h = make([]Record, 0, n)
	slab := make([]Access, 0, n*8)
	var ts uint64
	for len(h) < n {
		base := uint32(rng.IntN(items/8)) * 8
		if rng.IntN(10) == 0 {
			a, c := base+uint32(rng.IntN(8)), base+uint32(rng.IntN(8))
			if a == c {
				continue
			}
			k := len(slab)
			slab = append(slab, Access{a, cur[a]}, Access{c, cur[c]})
			cur[a]--
			cur[c]++
			slab = append(slab, Access{a, cur[a]}, Access{c, cur[c]})
			ts++
			h = append(h, Record{TS: ts, Snapshot: ts - 1, Reads: slab[k : k+2 : k+2], Writes: slab[k+2 : k+4 : k+4]})
			continue
		}
		k := len(slab)
		for j := range 8 {
			slab = append(slab, Access{base + uint32(j), cur[base+uint32(j)]})
		}
		h = append(h, Record{TS: ts, Snapshot: ts, ReadOnly: true, Reads: slab[k : k+8 : k+8]})
	}
	for i := range h {
		j := min(len(h)-1, i+rng.IntN(256))
		h[i], h[j] = h[j], h[i]
	}
	return initial, h, cur
}

// BenchmarkWriteIndex builds the checks' write index of 8Mi doc-shaped
// records over 1Mi items (0.84M update transactions, 1.7M writes), and
// runs both checks on them.
func BenchmarkWriteIndex(b *testing.B) {
	initial, h, final := docShapedHistory(8<<20, 1<<20)
	b.Run("index", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := newWriteIndex(initial, h, true); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("both checks", func(b *testing.B) {
		for b.Loop() {
			if err := errors.Join(CheckHistoryAndOpacity(initial, h, final)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
