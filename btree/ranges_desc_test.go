package btree

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// descModel returns the pairs of sorted (and their values, key ^ 0xabc)
// with lo <= key < hi, largest first, at most limit (limit <= 0: all).
func descModel(sorted []uint64, lo, hi uint64, limit int) (keys, vals []uint64) {
	for i := len(sorted) - 1; i >= 0; i-- {
		k := sorted[i]
		if k < lo || k >= hi {
			continue
		}
		if limit > 0 && len(keys) == limit {
			break
		}
		keys, vals = append(keys, k), append(vals, k^0xabc)
	}
	return keys, vals
}

// TestRangesDesc checks RangesDesc and RangesDescInto on the CPU engine and,
// where one is usable, the GPU engine against a model: the half-open
// [lo, hi) of Ranges, largest key first, a limit keeping the largest keys
// and 0 or less meaning none; empty and reversed ranges, the ends of the
// key space (math.MaxUint64 lies beyond every half-open range), queries
// across many leaves (order 4 and 64), an empty tree, changes between
// calls, and answers into a reused and a pinned Result.
func TestRangesDesc(t *testing.T) {
	base := []uint64{0, 1, 2, 3, 5, 8, 13, math.MaxUint64 - 1, math.MaxUint64}
	for i := uint64(100); i < 3100; i += 3 {
		base = append(base, i)
	}
	fixed := []struct{ lo, hi uint64 }{
		{0, math.MaxUint64}, {1, 3}, {3, 3}, {5, 2}, {0, 1}, {4, 9}, {9, 13}, {9, 14}, {99, 1000},
		{math.MaxUint64 - 1, math.MaxUint64}, {math.MaxUint64, math.MaxUint64}, {3100, math.MaxUint64 - 1}, {0, 0},
	}
	for _, gpuEngine := range []bool{false, true} {
		for _, order := range []int{4, 64} {
			t.Run(fmt.Sprintf("gpu=%v/order=%d", gpuEngine, order), func(t *testing.T) {
				o := Options{Device: "cpu", Order: order, Workers: 2}
				if gpuEngine {
					o = Options{GPU: gputest.Device(t), Order: order}
				}
				tr, err := Open(o)
				if err != nil {
					t.Fatal(err)
				}
				defer tr.Close()
				if k, v, off, err := tr.RangesDesc([]uint64{0}, []uint64{math.MaxUint64}, 0); err != nil || len(k) != 0 || len(v) != 0 || !slices.Equal(off, []int{0, 0}) {
					t.Fatalf("empty tree: %v %v %v %v", k, v, off, err)
				}
				r := rand.New(rand.NewPCG(7, uint64(order)))
				keys := slices.Clone(base)
				pinned := tr.NewResult()
				defer pinned.Free()
				var reused *Result
				for round := range 3 {
					if round > 0 { // change the tree between rounds: new keys, some deleted
						var add, del []uint64
						for range 200 {
							add = append(add, r.Uint64N(4000))
							del = append(del, keys[r.IntN(len(keys))])
						}
						vals := make([]uint64, len(add))
						for i, k := range add {
							vals[i] = k ^ 0xabc
						}
						if _, err := tr.Delete(del); err != nil {
							t.Fatal(err)
						}
						if err := tr.Insert(add, vals); err != nil {
							t.Fatal(err)
						}
						keys = slices.DeleteFunc(keys, func(k uint64) bool { return slices.Contains(del, k) })
						keys = append(keys, add...)
					} else {
						vals := make([]uint64, len(keys))
						for i, k := range keys {
							vals[i] = k ^ 0xabc
						}
						if err := tr.Build(keys, vals); err != nil {
							t.Fatal(err)
						}
					}
					slices.Sort(keys)
					keys = slices.Compact(keys)
					var los, his []uint64
					for _, q := range fixed {
						los, his = append(los, q.lo), append(his, q.hi)
					}
					for range 300 {
						lo := r.Uint64N(4100)
						los, his = append(los, lo), append(his, lo+r.Uint64N(200)-20) // some reversed
					}
					for _, limit := range []int{0, -1, 1, 3, 40} {
						k, v, off, err := tr.RangesDesc(los, his, limit)
						if err != nil {
							t.Fatal(err)
						}
						if reused, err = tr.RangesDescInto(reused, los, his, limit); err != nil {
							t.Fatal(err)
						}
						if _, err = tr.RangesDescInto(pinned, los, his, limit); err != nil {
							t.Fatal(err)
						}
						for i := range los {
							wk, wv := descModel(keys, los[i], his[i], limit)
							for _, got := range []struct {
								name string
								k, v []uint64
							}{
								{"RangesDesc", k[off[i]:off[i+1]], v[off[i]:off[i+1]]},
								{"RangesDescInto (reused)", reused.Keys[reused.Offsets[i]:reused.Offsets[i+1]], reused.Values[reused.Offsets[i]:reused.Offsets[i+1]]},
								{"RangesDescInto (pinned)", pinned.Keys[pinned.Offsets[i]:pinned.Offsets[i+1]], pinned.Values[pinned.Offsets[i]:pinned.Offsets[i+1]]},
							} {
								if !slices.Equal(got.k, wk) || !slices.Equal(got.v, wv) {
									t.Fatalf("round %d, %s([%d, %d), limit %d) = %v, want %v", round, got.name, los[i], his[i], limit, got.k, wk)
								}
							}
						}
					}
				}
				if err := tr.Check(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestRangesDescMatchesRanges: a descending query's pairs are the
// ascending query's in reverse, and with a limit the largest ones.
func TestRangesDescMatchesRanges(t *testing.T) {
	tr, err := Open(Options{Device: "cpu", Order: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	r := rand.New(rand.NewPCG(3, 4))
	keys := make([]uint64, 5000)
	for i := range keys {
		keys[i] = r.Uint64N(1 << 20)
	}
	if err := tr.Build(keys, keys); err != nil {
		t.Fatal(err)
	}
	los, his := make([]uint64, 500), make([]uint64, 500)
	for i := range los {
		los[i] = r.Uint64N(1 << 20)
		his[i] = los[i] + r.Uint64N(1<<14)
	}
	ak, _, aoff, err := tr.Ranges(los, his, 0)
	if err != nil {
		t.Fatal(err)
	}
	dk, _, doff, err := tr.RangesDesc(los, his, 0)
	if err != nil {
		t.Fatal(err)
	}
	lk, _, loff, err := tr.RangesDesc(los, his, 7)
	if err != nil {
		t.Fatal(err)
	}
	for i := range los {
		asc := slices.Clone(ak[aoff[i]:aoff[i+1]])
		slices.Reverse(asc)
		if !slices.Equal(dk[doff[i]:doff[i+1]], asc) {
			t.Fatalf("query %d: descending %v, ascending reversed %v", i, dk[doff[i]:doff[i+1]], asc)
		}
		if want := asc[:min(7, len(asc))]; !slices.Equal(lk[loff[i]:loff[i+1]], want) {
			t.Fatalf("query %d, limit 7: %v, want %v", i, lk[loff[i]:loff[i+1]], want)
		}
	}
}
