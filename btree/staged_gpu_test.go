package btree

import (
	"math/rand/v2"
	"testing"
)

// TestLookupStagedChunks looks up a batch of more than two lookup chunks
// (so that the GPU engine pipelines it over both streams, by DMA from and
// into the pinned Staging) with half the keys absent, and compares every
// answer with the CPU engine's Lookup on the same pairs; then a batch of
// a few keys from the same Staging, and one of none.
func TestLookupStagedChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	g, c, keys := gpuAndCPUTrees(t, rng, 200_000)
	n := 2*lookupChunk + 12345
	st, err := g.NewStaging(n)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Free()
	for i := range n {
		st.Keys[i] = rng.Uint64()
		if i%2 == 0 {
			st.Keys[i] = keys[rng.IntN(len(keys))]
		}
		st.Values[i], st.Found[i] = 7, 7 // overwritten by every lookup
	}
	for _, m := range []int{n, 5, 0} {
		if err := g.LookupStaged(st, m); err != nil {
			t.Fatal(err)
		}
		want, found, err := c.Get(st.Keys[:m])
		if err != nil {
			t.Fatal(err)
		}
		for i := range m {
			if st.Values[i] != want[i] || (st.Found[i] == 1) != found[i] || st.Found[i] > 1 {
				t.Fatalf("batch of %d, key %d (%d): staged %d %d, CPU engine %d %v", m, i, st.Keys[i], st.Values[i], st.Found[i], want[i], found[i])
			}
		}
	}
	if err := g.LookupStaged(st, n+1); err == nil {
		t.Fatal("a batch larger than the staging was accepted")
	}
}
