package btree

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPURangeKernels compares the GPU engine's three forms of range
// kernels (rangeForm: bt_range_start and bt_range_copy, the default;
// bt_range, one thread per query; bt_range_warp, one warp per query), in
// both directions, with the CPU engine's Ranges and RangesDesc on trees of
// small orders (walks across many leaves), the default order and an order
// above the warp's linear node scan (WARP_SCAN_MAX, binary search), for
// random, empty, reversed, single-key and unbounded ranges and limits of
// none, 1, 5 and 100; the default form also in chunks of 777 queries
// (rangesBatch's pipeline) into Go memory, and every form into a pinned
// Result (its pairs downloaded into it).
func TestGPURangeKernels(t *testing.T) {
	d := gputest.Device(t)
	for _, order := range []int{4, 7, DefaultOrder, 1024} {
		t.Run(fmt.Sprintf("order=%d", order), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(order), 22))
			n := 20000
			keys, vals := make([]uint64, n), make([]uint64, n)
			for i := range keys {
				keys[i], vals[i] = r.Uint64N(1<<20)*4096, r.Uint64()
			}
			keys[0] = math.MaxUint64
			c, g := builtPair(t, Options{Order: order}, d, keys, vals)
			q := 5000
			los, his := make([]uint64, q), make([]uint64, q)
			for i := range los {
				los[i] = r.Uint64N(1<<20) * 4096
				switch i % 5 {
				case 0:
					his[i] = los[i] + r.Uint64N(1<<16)
				case 1:
					his[i] = los[i] + r.Uint64N(1<<26)
				case 2:
					his[i] = los[i] - 1 // reversed: empty (or unbounded when lo is 0)
				case 3:
					his[i] = los[i]
				default:
					his[i] = math.MaxUint64
				}
				if his[i] < los[i] && i%5 != 2 {
					his[i] = math.MaxUint64
				}
			}
			gt := g.e.(*gpuTree)
			for _, dir := range rangeDirs() {
				for _, limit := range []int{0, 1, 5, 100} {
					name := fmt.Sprintf("%s, limit %d", dir.name, limit)
					want, err := dir.into(c, nil, los, his, limit)
					if err != nil {
						t.Fatal(err)
					}
					check := func(how string, got *Result, err error) {
						t.Helper()
						if err != nil {
							t.Fatalf("%s, %s: %v", name, how, err)
						}
						if !slices.Equal(got.Keys, want.Keys) || !slices.Equal(got.Values, want.Values) || !slices.Equal(got.Offsets, want.Offsets) {
							t.Fatalf("%s, %s: %d pairs, want %d (offsets equal %v)", name, how, len(got.Keys), len(want.Keys), slices.Equal(got.Offsets, want.Offsets))
						}
					}
					for _, form := range []rangeForm{rangeOneDescent, rangeThread, rangeWarp} {
						gt.rangeForm = form
						got, err := dir.into(g, nil, los, his, limit)
						check(fmt.Sprintf("form %d", form), got, err)
					}
					gt.rangeForm = rangeOneDescent
					// The default form in chunks of 777 queries (7 of them,
					// the last shorter), into Go memory and into a pinned
					// Result: each chunk counted after its own upload and its
					// answers fetched after its own write.
					gt.rangeChunkSize = 777
					got, err := dir.into(g, nil, los, his, limit)
					check("chunks", got, err)
					// Into a pinned Result (downloaded into it), each form.
					for _, form := range []rangeForm{rangeOneDescent, rangeThread, rangeWarp} {
						gt.rangeForm = form
						pr := g.NewResult()
						for range 2 { // the second call reuses the pinned arrays
							got, err := dir.into(g, pr, los, his, limit)
							check(fmt.Sprintf("chunks, pinned, form %d", form), got, err)
						}
						if err := pr.Free(); err != nil {
							t.Fatal(err)
						}
					}
					gt.rangeForm, gt.rangeChunkSize = rangeOneDescent, 0
				}
			}
		})
	}
}

// rangeDir is one direction of a tree's ranges: its name and its
// RangesInto or RangesDescInto.
type rangeDir struct {
	name string
	into func(tr *Tree, r *Result, los, his []uint64, limit int) (*Result, error)
}

// rangeDirs returns both directions of ranges.
func rangeDirs() []rangeDir {
	return []rangeDir{{"ascending", (*Tree).RangesInto}, {"descending", (*Tree).RangesDescInto}}
}

// builtPair opens a tree with o on the CPU engine and one on d, builds
// both from keys and vals, and closes them when t ends.
func builtPair(t *testing.T, o Options, d *gpu.Device, keys, vals []uint64) (cpu, dev *Tree) {
	t.Helper()
	co, gd := o, o
	co.Device = "cpu"
	gd.GPU = d
	c, err := Open(co)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	g, err := Open(gd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	for _, tr := range []*Tree{c, g} {
		if err := tr.Build(keys, vals); err != nil {
			t.Fatal(err)
		}
	}
	return c, g
}
