package btree

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPULargeInserts inserts batches large enough for the GPU engine to
// upload their values while it sorts and locates the keys (overlapSort:
// stageMin pairs or more), with keys repeated inside a batch (the last
// occurrence wins), keys already in the tree (new values) and keys past the
// right spine, into trees of orders 8 and 64 built from a batch of the
// same size, traced with the flat merge (bt_stage_old ...) and not traced
// with the warp merge (bt_merge_leaves_E), and compares the node arrays with the CPU
// engine's word for word after every batch, then every key's value.
func TestGPULargeInserts(t *testing.T) {
	d := gputest.Device(t)
	for _, order := range []int{8, 64} {
		for _, traced := range []bool{false, true} {
			g, err := Open(Options{Order: order, GPU: d})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if traced { // and the merge over flattened entries
				g.e.(*gpuTree).trace = &engine.StepTrace{}
				g.e.(*gpuTree).flatMerge = true
			}
			c, err := Open(Options{Order: order, Device: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rng := rand.New(rand.NewPCG(uint64(order), 5))
			n := stageMin + 1234
			var all []uint64
			for round := range 4 {
				keys, vals := make([]uint64, n), make([]uint64, n)
				for i := range keys {
					switch x := rng.IntN(100); {
					case len(all) > 0 && x < 15:
						keys[i] = all[rng.IntN(len(all))]
					case i > 0 && x < 25:
						keys[i] = keys[rng.IntN(i)]
					case round == 2 && x < 60:
						keys[i] = 1<<63 + uint64(i)
					default:
						keys[i] = rng.Uint64() >> 1
					}
					vals[i] = rng.Uint64()
				}
				all = append(all, keys...)
				if err := buildOrInsert(round, keys, vals, g, c); err != nil {
					t.Fatalf("order %d round %d: %v", order, round, err)
				}
				if err := sameNodes(g, c); err != nil {
					t.Fatalf("order %d traced %v round %d: %v", order, traced, round, err)
				}
				if traced {
					if _, err := g.e.(*gpuTree).trace.Steps(); err != nil {
						t.Fatal(err)
					}
				}
			}
			sameValues(t, fmt.Sprintf("order %d", order), g, c, all)
			if err := g.Check(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// buildOrInsert builds the trees from the batch in round 0 and inserts it
// into them in later rounds.
func buildOrInsert(round int, keys, vals []uint64, trees ...*Tree) error {
	for _, tr := range trees {
		op := tr.Insert
		if round == 0 {
			op = tr.Build
		}
		if err := op(keys, vals); err != nil {
			return err
		}
	}
	return nil
}
