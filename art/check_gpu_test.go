package art

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestGPUBadBatchLeavesTreeUnchanged builds, inserts and deletes batches
// with bad offsets (a key whose end is before its start, offsets past the
// data, a key longer than MaxKeyLen) into trees of 5000 keys, on the GPU
// engine (keys in two parts) and the CPU engine: each call must fail with
// the error that names the batch's first bad key, and leave each tree's
// keys and layout as they were, word for word. Most bad batches keep the
// ends of a batch of one length, so that the GPU engine's insert checks
// them beside its work (check_later_gpu.go) and fails before the node
// round; "too long, all after" moves the ends (checked before the call).
// Good batches whose ends say one length but whose keys have two, and
// batches of one length, then insert as on the CPU engine.
func TestGPUBadBatchLeavesTreeUnchanged(t *testing.T) {
	gt, ct, g := gpuAndCPU(t)
	g.bu.partsMin = 2
	rng := rand.New(rand.NewPCG(29, 11))
	base := Pack(partKeys(rng, 5000, 16, 0))
	for _, tr := range []*Tree{gt, ct} {
		if err := tr.BuildKeys(base, seqVals(base.Len(), 1)); err != nil {
			t.Fatal(err)
		}
	}
	// corrupt returns a fresh batch of n 16-byte keys with key i spoiled
	// in one of the ways (1 <= i < n-1, i+1 not n/2: the ends stay).
	corrupt := func(how string, n, i int) Keys {
		kb := Pack(partKeys(rng, n, 16, 0))
		switch how {
		case "decreasing":
			kb.Offs[i+1] = kb.Offs[i] - 3
		case "past the data":
			kb.Offs[i+1] = uint32(len(kb.Data)) + 5
		case "too long":
			kb.Data = append(kb.Data, make([]byte, MaxKeyLen+1)...)
			kb.Offs[i+1] = kb.Offs[i] + MaxKeyLen + 1
		case "too long, all after":
			kb.Data = append(kb.Data, make([]byte, MaxKeyLen)...)
			for j := i + 1; j < len(kb.Offs); j++ {
				kb.Offs[j] += MaxKeyLen
			}
		case "good, two lengths":
			kb.Offs[i+1]++
		}
		return kb
	}
	snap := func(tr *Tree) *store {
		s, err := tr.eng.snapshot()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, how := range []string{"decreasing", "past the data", "too long", "too long, all after", "good, two lengths", "good"} {
		for _, op := range []string{"build", "insert", "delete"} {
			n := 3000
			i := 1 + rng.IntN(n-2)
			if i+1 == n/2 {
				i++
			}
			kb := corrupt(how, n, i)
			vals := seqVals(n, 10_000)
			call := map[string]func(tr *Tree) error{
				"build":  func(tr *Tree) error { return tr.BuildKeys(kb, vals) },
				"insert": func(tr *Tree) error { return tr.InsertKeys(kb, vals) },
				"delete": func(tr *Tree) error { _, err := tr.DeleteKeys(kb); return err },
			}[op]
			what := fmt.Sprintf("%s of %d keys, key %d %s", op, n, i, how)
			good := strings.HasPrefix(how, "good")
			if good && op != "insert" {
				continue
			}
			if _, ends := oneLengthEnds(kb, n); ends != (how != "too long, all after") || !g.checkLater(kb) {
				t.Fatalf("%s: the ends of one length %v, the engine checks later %v", what, ends, g.checkLater(kb))
			}
			want := kb.firstBad(op)
			if (want == nil) != good {
				t.Fatalf("%s: the sequential check says %v", what, want)
			}
			beforeG, beforeC := snap(gt), snap(ct)
			lenG, lenC := gt.Len(), ct.Len()
			errG, errC := call(gt), call(ct)
			if good {
				if errG != nil || errC != nil {
					t.Fatalf("%s: gpu %v, cpu %v", what, errG, errC)
				}
				if err := equalStores(snap(ct), snap(gt)); err != nil {
					t.Fatalf("%s: layouts differ (cpu, gpu): %v", what, err)
				}
				continue
			}
			for name, err := range map[string]error{"gpu": errG, "cpu": errC} {
				if err == nil || err.Error() != want.Error() {
					t.Fatalf("%s: %s engine says %v, want %v", what, name, err, want)
				}
			}
			if gt.Len() != lenG || ct.Len() != lenC {
				t.Fatalf("%s: %d and %d keys after the failed call, %d and %d before", what, gt.Len(), ct.Len(), lenG, lenC)
			}
			if err := equalStores(beforeG, snap(gt)); err != nil {
				t.Fatalf("%s: the gpu tree changed: %v", what, err)
			}
			if err := equalStores(beforeC, snap(ct)); err != nil {
				t.Fatalf("%s: the cpu tree changed: %v", what, err)
			}
		}
	}
}
