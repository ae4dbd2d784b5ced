package btree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPUWarpMergeOrders inserts batches merged by the warp merge
// (bt_merge_leaves_E) into trees of the orders at and around each class
// boundary (E = 1, 2, 4, 8 entries a lane: orders up to 32, 64, 128, 256),
// in batches large enough to upload their keys in two halves (the first
// sorted during the second's copy, then merged: uploadSortHalves; keys
// repeated across the halves) and their values during the merge (odd
// rounds scatter them last, bt_scatter_values; even ones let the merge
// read them once their copy has queued), with clusters of up to 300
// consecutive keys in one leaf (groups of more than one chunk of 32 batch
// keys), keys already in the tree (the batch's value wins) and keys
// repeated in a batch. It checks that the halves, the one-pass merge and
// the scatter (or the wait for the values) ran (the step trace) and compares the node arrays with the
// CPU engine's word for word after every batch, then every key's value.
func TestGPUWarpMergeOrders(t *testing.T) {
	d := gputest.Device(t)
	for _, order := range []int{8, 32, 33, 64, 65, 128, 129, 256} {
		t.Run(fmt.Sprintf("order=%d", order), func(t *testing.T) {
			g, err := Open(Options{Order: order, GPU: d})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			gt := g.e.(*gpuTree)
			gt.trace = &engine.StepTrace{}
			c, err := Open(Options{Order: order, Device: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rng := rand.New(rand.NewPCG(uint64(order), 22))
			var all []uint64
			for round := range 4 {
				// Odd rounds scatter the values last (lateValues); even
				// ones merge them in when their copy has queued by then.
				gt.lateValues = round%2 == 1
				keys, vals := clusteredBatch(rng, all, 3*stageMin+4321, round > 0)
				all = append(all, keys...)
				if err := buildOrInsert(round, keys, vals, g, c); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if err := sameNodes(g, c); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if round == 0 {
					continue
				}
				steps, err := gt.trace.Steps()
				if err != nil {
					t.Fatal(err)
				}
				has := func(name string) bool {
					return slices.ContainsFunc(steps, func(s engine.Step) bool { return s.Name == name })
				}
				for _, name := range []string{stepHalves, stepWarpMerge} {
					if !has(name) {
						t.Fatalf("round %d: no step %q among %v", round, name, steps)
					}
				}
				if gt.lateValues && !has(stepScatter) || !gt.lateValues && !has(stepScatter) && !has(stepValuesWait) {
					t.Fatalf("round %d (lateValues %v): no step %q or %q among %v", round, gt.lateValues, stepScatter, stepValuesWait, steps)
				}
			}
			sameValues(t, fmt.Sprintf("order %d", order), g, c, all)
			if err := g.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// sameValues checks that every key of all is in g and c with the same
// value (what names the case in a failure).
func sameValues(t *testing.T, what string, g, c *Tree, all []uint64) {
	t.Helper()
	gv, gf, err := g.Get(all)
	if err != nil {
		t.Fatal(err)
	}
	cv, cf, err := c.Get(all)
	if err != nil {
		t.Fatal(err)
	}
	for i := range all {
		if gv[i] != cv[i] || gf[i] != cf[i] || !gf[i] {
			t.Fatalf("%s key %d: GPU %d %v, CPU %d %v", what, all[i], gv[i], gf[i], cv[i], cf[i])
		}
	}
}

// clusteredBatch returns n pairs: random keys below 2^62 and, with
// clusters, runs of 1 to 300 consecutive keys starting at a key of old
// (so that one leaf gets them: the key itself is an update), some keys of
// old and some repeats of the batch's own keys.
func clusteredBatch(rng *rand.Rand, old []uint64, n int, clusters bool) ([]uint64, []uint64) {
	keys, vals := make([]uint64, 0, n), make([]uint64, 0, n)
	for len(keys) < n {
		x := rng.IntN(1000)
		switch {
		case clusters && len(old) > 0 && x < 3:
			k := old[rng.IntN(len(old))]
			for i := range uint64(1 + rng.IntN(300)) {
				if len(keys) == n {
					break
				}
				keys = append(keys, k+i)
			}
		case len(old) > 0 && x < 150:
			keys = append(keys, old[rng.IntN(len(old))])
		case len(keys) > 0 && x < 250:
			keys = append(keys, keys[rng.IntN(len(keys))])
		default:
			keys = append(keys, rng.Uint64()>>2)
		}
	}
	for range keys {
		vals = append(vals, rng.Uint64())
	}
	rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys, vals
}
