package btree

import (
	"math/rand/v2"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestLookupPipelinedFromGoSlices looks up batches of two and more than
// three lookup chunks from Go slices (so that the GPU engine pipelines
// them over both streams through its staging rings), half the keys
// absent, into slices holding other answers, and compares every answer
// with the CPU engine's.
func TestLookupPipelinedFromGoSlices(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	g, c, keys := gpuAndCPUTrees(t, rng, 300_000)
	for _, n := range []int{2 * lookupChunk, 3*lookupChunk + 777} {
		q := make([]uint64, n)
		for i := range q {
			q[i] = rng.Uint64()
			if i%2 == 0 {
				q[i] = keys[rng.IntN(len(keys))]
			}
		}
		want, wantFound, err := c.Get(q)
		if err != nil {
			t.Fatal(err)
		}
		got, found := make([]uint64, n), make([]bool, n)
		for i := range got {
			got[i], found[i] = 7, true // overwritten by the lookup
		}
		if err := g.Lookup(q, got, found); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if got[i] != want[i] || found[i] != wantFound[i] {
				t.Fatalf("%d keys, key %d (%d): GPU %d %v, CPU engine %d %v", n, i, q[i], got[i], found[i], want[i], wantFound[i])
			}
		}
	}
}

// gpuAndCPUTrees builds a GPU tree on the tests' device and a CPU tree of
// the same n random pairs drawn from rng (builtPair), closed when the
// test ends, and returns them with the keys.
func gpuAndCPUTrees(t *testing.T, rng *rand.Rand, n int) (g, c *Tree, keys []uint64) {
	t.Helper()
	d := gputest.Device(t)
	keys, vals := make([]uint64, n), make([]uint64, n)
	for i := range keys {
		keys[i], vals[i] = rng.Uint64(), rng.Uint64()
	}
	c, g = builtPair(t, Options{}, d, keys, vals)
	return g, c, keys
}
