package btree

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPUInsertReadbacks counts the readbacks (host synchronizations
// before the trace's last mark, "done"; the call's final synchronization
// comes after it) of traced GPU inserts into trees of one level (the root
// a leaf) and of several levels (order 8: six levels for 100k keys), with
// keys repeated in a batch and keys already in the tree: an insert into a
// non-empty tree reads back once before it changes the leaves (the kept
// keys, the touched leaves and their totals) and once after its parent
// levels (whose counts stay on the device) when there are any; a growth
// of the node arrays (the "reserve" step) may add its own. After every
// batch the node arrays must equal the CPU engine's word for word.
func TestGPUInsertReadbacks(t *testing.T) {
	d := gputest.Device(t)
	for _, c := range []struct {
		order, build, batch, rounds int
		want                        int
	}{{8, 5, 2, 1, 1}, {8, 100_000, 3_000, 3, 2}, {64, 200_000, stageMin + 77, 2, 2}} {
		t.Run(fmt.Sprintf("order%d/build%d/batch%d", c.order, c.build, c.batch), func(t *testing.T) {
			g, err := Open(Options{Order: c.order, GPU: d})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			cpu, err := Open(Options{Order: c.order, Device: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			defer cpu.Close()
			rng := rand.New(rand.NewPCG(uint64(c.order), uint64(c.batch)))
			var all []uint64
			batch := func(n int) ([]uint64, []uint64) {
				k, v := make([]uint64, n), make([]uint64, n)
				for i := range k {
					switch x := rng.IntN(100); {
					case len(all) > 0 && x < 10:
						k[i] = all[rng.IntN(len(all))]
					case i > 0 && x < 20:
						k[i] = k[rng.IntN(i)]
					default:
						k[i] = rng.Uint64()
					}
					v[i] = rng.Uint64()
				}
				all = append(all, k...)
				return k, v
			}
			k, v := batch(c.build)
			if err := buildOrInsert(0, k, v, g, cpu); err != nil {
				t.Fatal(err)
			}
			gt := g.e.(*gpuTree)
			gt.trace = &engine.StepTrace{}
			for round := 1; round <= c.rounds; round++ {
				k, v := batch(c.batch)
				if err := buildOrInsert(round, k, v, g, cpu); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if err := sameNodes(g, cpu); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				steps, err := gt.trace.Steps()
				if err != nil {
					t.Fatal(err)
				}
				syncs := 0
				for _, s := range steps {
					if s.Name != "reserve" {
						syncs += s.Syncs
					}
				}
				if syncs != c.want {
					t.Errorf("round %d (height %d): %d readbacks outside the reserve step, want %d:\n%s",
						round, gt.height, syncs, c.want, engine.FormatSteps(steps))
				}
			}
			sameValues(t, fmt.Sprintf("order %d", c.order), g, cpu, all)
			if err := g.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
