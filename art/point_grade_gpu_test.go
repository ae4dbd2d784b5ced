package art

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPUPointChunkings runs lookups and updates on the GPU engine in
// graded chunks (pointGroups: ramps from 1 unit up to 2, 4 or 8 units a
// chunk and down to 1) and in flat ones, their chunks queued on a
// goroutine of their own (runBeside) or on the caller (gpu.Pipeline.Run),
// with small chunks (chunkMin 16 and 1000: many units a call), host
// fan-outs of one to two parts a worker, the answers' pages touched
// beside the call or not and the host's workers woken for a staged call's
// check or not (pointTuning), from a
// packed batch, from Go slices and, for lookups, from pinned staging, on
// ragged keys half of them present, and compares every answer and the
// values after the updates with the CPU engine's.
func TestGPUPointChunkings(t *testing.T) {
	dev := gputest.Device(t)
	gt, ct := openTwins(t, dev)
	g := gt.eng.(*gpuEngine)
	r := rand.New(rand.NewPCG(22, 7))
	const tree = 30000
	keys := make([][]byte, 0, tree)
	seen := map[string]bool{}
	for len(keys) < tree {
		k := randomBytes(r, 0, []int{8, 16, 40, 300}[r.IntN(4)], nil)
		if !seen[string(k)] {
			seen[string(k)] = true
			keys = append(keys, k)
		}
	}
	vals := make([]uint64, tree)
	for i := range vals {
		vals[i] = r.Uint64()
	}
	for _, tr := range []*Tree{gt, ct} {
		if err := tr.Insert(keys, vals); err != nil {
			t.Fatal(err)
		}
	}
	// Half the probes present, half absent; some present twice (an
	// update's last occurrence wins).
	probe := func(n int) [][]byte {
		q := make([][]byte, n)
		for i := range q {
			if r.IntN(2) == 0 {
				q[i] = keys[r.IntN(tree)]
			} else {
				q[i] = randomBytes(r, 0, 20, nil)
			}
		}
		return q
	}
	st, err := gt.NewStaging(20000, 20000*300)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Free()
	for _, chunkMin := range []int{16, 1000} {
		for _, units := range []int{1, 2, 4, 8} {
			for _, n := range []int{1, 17, 100, 5000, 20000} {
				onCaller := n%3 == 2 // 17, 5000: chunks queued between the packing (gpu.Pipeline.Run)
				tune := pointTuning{packSplit: units % 3, touchAnswers: chunkMin == 1000, hugeAnswers: units >= 4, wakeForCheck: n%2 == 1}
				name := fmt.Sprintf("chunkMin=%d,units=%d,onCaller=%v,tune=%+v,n=%d", chunkMin, units, onCaller, tune, n)
				g.chunkMin, g.chunkUnits, g.queueOnCaller, g.pointTune = chunkMin, units, onCaller, tune
				q := probe(n)
				wv, wf, err := ct.Get(q)
				if err != nil {
					t.Fatal(err)
				}
				gv, gf, err := gt.Get(q)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(gv, wv) || !slices.Equal(gf, wf) {
					t.Fatalf("%s: Get differs from the CPU engine", name)
				}
				kb := Pack(q)
				pv, pf := make([]uint64, n), make([]bool, n)
				if err := gt.Lookup(kb, pv, pf); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(pv, wv) || !slices.Equal(pf, wf) {
					t.Fatalf("%s: Lookup differs from the CPU engine", name)
				}
				copy(st.Data, kb.Data)
				copy(st.Offs, kb.Offs)
				if err := gt.LookupStaged(st, n); err != nil {
					t.Fatal(err)
				}
				for i := range n {
					if st.Values[i] != wv[i] || (st.Found[i] == 1) != wf[i] {
						t.Fatalf("%s: LookupStaged key %d differs from the CPU engine", name, i)
					}
				}
				nv := make([]uint64, n)
				for i := range nv {
					nv[i] = r.Uint64()
				}
				wu, err := ct.Update(q, nv)
				if err != nil {
					t.Fatal(err)
				}
				var gu []bool
				if n%2 == 0 {
					gu, err = gt.Update(q, nv)
				} else {
					gu = make([]bool, n)
					err = gt.UpdateKeys(kb, nv, gu)
				}
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(gu, wu) {
					t.Fatalf("%s: Update's found flags differ from the CPU engine", name)
				}
			}
		}
	}
	g.chunkMin, g.chunkUnits, g.queueOnCaller, g.pointTune = pointChunkMin, 0, false, pointTuning{}
	wv, wf, err := ct.Get(keys)
	if err != nil {
		t.Fatal(err)
	}
	gv, gf, err := gt.Get(keys)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gv, wv) || !slices.Equal(gf, wf) {
		t.Fatal("the trees' values differ after the updates")
	}
}
