package btree

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestInsertStaged inserts batches from a Staging with InsertStaged (on
// the GPU engine by DMA from its pinned arrays: a batch in two halves, one
// whose values upload during the sort, a small one and an empty one; keys
// repeated in a batch and keys already in the tree) and compares the node
// arrays with the CPU engine's Insert of the same pairs word for word
// after every batch; on the CPU engine InsertStaged is Insert. On the GPU
// engine a batch whose values upload during the sort must have had its
// values read by the merge from the upload (the trace's step). It also
// checks that a count past the staging is refused.
func TestInsertStaged(t *testing.T) {
	for _, gpuEngine := range []bool{false, true} {
		t.Run(fmt.Sprintf("gpu=%v", gpuEngine), func(t *testing.T) {
			o := Options{Device: "cpu"}
			if gpuEngine {
				o = Options{GPU: gputest.Device(t)}
			}
			s, err := Open(o)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var trace *engine.StepTrace
			if gpuEngine {
				trace = &engine.StepTrace{}
				s.e.(*gpuTree).trace = trace
			}
			c, err := Open(Options{Device: "cpu"})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rng := rand.New(rand.NewPCG(22, 3))
			var all []uint64
			sizes := []int{3*stageMin + 999, stageMin + 17, 3*stageMin + 999, 300, 0}
			st, err := s.NewStaging(sizes[0])
			if err != nil {
				t.Fatal(err)
			}
			defer st.Free()
			if err := s.InsertStaged(st, sizes[0]+1); err == nil {
				t.Fatal("InsertStaged of more pairs than the staging holds succeeded")
			}
			for round, n := range sizes {
				for i := range n {
					switch x := rng.IntN(100); {
					case len(all) > 0 && x < 15:
						st.Keys[i] = all[rng.IntN(len(all))]
					case i > 0 && x < 25:
						st.Keys[i] = st.Keys[rng.IntN(i)]
					default:
						st.Keys[i] = rng.Uint64() >> 1
					}
					st.Values[i] = rng.Uint64()
				}
				all = append(all, st.Keys[:n]...)
				if round == 0 { // a tree to insert into
					for _, tr := range []*Tree{s, c} {
						if err := tr.Build(st.Keys[:n], st.Values[:n]); err != nil {
							t.Fatal(err)
						}
					}
					continue
				}
				if err := s.InsertStaged(st, n); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				if err := c.Insert(st.Keys[:n], st.Values[:n]); err != nil {
					t.Fatal(err)
				}
				if err := sameNodes(s, c); err != nil {
					t.Fatalf("round %d (%d pairs): %v", round, n, err)
				}
				if trace != nil && overlapSort(n) {
					steps, err := trace.Steps()
					if err != nil {
						t.Fatal(err)
					}
					if !slices.ContainsFunc(steps, func(s engine.Step) bool { return s.Name == stepValuesWait }) {
						t.Fatalf("round %d: no step %q among %v", round, stepValuesWait, steps)
					}
				}
			}
			if err := s.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
