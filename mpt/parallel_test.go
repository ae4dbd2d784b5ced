package mpt

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestEnginesAgree applies the same large random batches (inserts,
// replacements, deletes; random, clustered and prefix-sharing keys) to
// every engine and checks that roots, batch lookups and batch proofs are
// identical after each batch, and that the hash caches agree with a
// from-scratch build at the end.
func TestEnginesAgree(t *testing.T) {
	for _, secure := range []bool{false, true} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("secure=%v/seed=%d", secure, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 99))
				tries := make([]*Trie, len(testEngines))
				for i, e := range testEngines {
					tries[i] = e.new(Options{Secure: secure})
				}
				model := map[string][]byte{}
				var used [][]byte
				for b := range 12 {
					n := []int{1, 7, 300, 3000}[b%4]
					keys, values := make([][]byte, n), make([][]byte, n)
					for i := range n {
						switch {
						case len(used) > 0 && r.IntN(3) == 0:
							keys[i] = used[r.IntN(len(used))]
						case r.IntN(2) == 0: // clustered
							keys[i] = append(bytes.Repeat([]byte{0xab}, 12), byte(r.IntN(3)), byte(r.Uint32()), byte(r.Uint32()))
						default:
							keys[i] = make([]byte, 1+r.IntN(20))
							for j := range keys[i] {
								keys[i][j] = byte(r.IntN(4)) * 0x41
							}
						}
						used = append(used, keys[i])
						if r.IntN(4) > 0 {
							values[i] = bytes.Repeat([]byte{byte(r.Uint32())}, 1+r.IntN(60))
						}
						if b%6 == 5 {
							values[i] = nil
						}
					}
					for i, k := range keys {
						if len(values[i]) == 0 {
							delete(model, string(k))
						} else {
							model[string(k)] = values[i]
						}
					}
					probe := append(slices.Clone(keys[:min(n, 50)]), []byte("absent"), nil)
					var root [32]byte
					var vals [][]byte
					var proofs [][][]byte
					for i, tr := range tries {
						if err := tr.Update(keys, values); err != nil {
							t.Fatal(err)
						}
						got := tr.hash()
						gv, gf := tr.getBatch(probe)
						for j, k := range probe {
							if v, ok := tr.get(k); ok != gf[j] || !bytes.Equal(v, gv[j]) {
								t.Fatalf("Lookup(%x) = %x, %v; Get %x, %v", k, gv[j], gf[j], v, ok)
							}
						}
						gp, err := tr.ProveBatch(probe)
						if err != nil {
							t.Fatal(err)
						}
						if i == 0 {
							root, vals, proofs = got, gv, gp
							continue
						}
						if got != root {
							t.Fatalf("batch %d: %s root %x, sequential %x", b, testEngines[i].name, got, root)
						}
						for j := range probe {
							if !bytes.Equal(gv[j], vals[j]) || !slices.EqualFunc(gp[j], proofs[j], bytes.Equal) {
								t.Fatalf("batch %d: %s disagrees on key %x", b, testEngines[i].name, probe[j])
							}
						}
					}
				}
				for _, tr := range tries {
					checkAgainstModel(t, tr, model)
				}
			})
		}
	}
}

func TestParseEngine(t *testing.T) {
	for _, s := range []string{"", "sequential", "parallel"} {
		if _, err := ParseEngine(s); err != nil {
			t.Errorf("ParseEngine(%q): %v", s, err)
		}
	}
	if _, err := ParseEngine("tpu"); err == nil {
		t.Error("ParseEngine(tpu): no error")
	}
	if e := mustNew(Options{}).Options().Engine; e != EngineSequential {
		t.Errorf("default engine %q", e)
	}
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Engine: "bogus"}, `unknown engine "bogus"`},
		{Options{Engine: EngineParallel, Workers: -1}, "-1 workers"},
		{Options{NodeUpdate: "locks"}, "unknown node update"},
	} {
		if tr, err := Open(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%+v) = %v, %v; want an error containing %q", tc.opts, tr, err, tc.want)
		}
	}
}
