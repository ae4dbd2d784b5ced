package compat

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/trie"

	"github.com/warpkv/warpkv/internal/enginetest"
	"github.com/warpkv/warpkv/internal/workload"
	"github.com/warpkv/warpkv/mpt"
)

// configs are the engine configurations the edge-case tests run: every
// engine of engines, the GPU engine under the decision model and with
// PhaseNU and LockNU forced.
var configs = func() []mpt.Options {
	var out []mpt.Options
	for _, e := range engines {
		if e.Engine != mpt.EngineGPU {
			out = append(out, e)
			continue
		}
		for _, nu := range []mpt.NodeUpdate{mpt.NodeUpdateAuto, mpt.NodeUpdatePhase, mpt.NodeUpdateLock} {
			e.NodeUpdate = nu
			out = append(out, e)
		}
	}
	return out
}()

// configName names an engine configuration in subtests.
func configName(e mpt.Options) string {
	if e.Engine == mpt.EngineGPU {
		return "gpu-" + cmp.Or(string(e.NodeUpdate), "auto")
	}
	return string(e.Engine)
}

// edgeScenarios returns the edge-case scenarios for a seed from
// WARPKV_TEST_SEED or the clock, logged.
func edgeScenarios(t *testing.T) []workload.MPTScenario {
	seed := enginetest.Seed()
	t.Logf("scenario seed %d (%s=%d replays it)", seed, enginetest.EnvSeed, seed)
	return workload.MPTEdgeScenarios(rand.New(rand.NewPCG(seed, 15)))
}

// TestEdgeCasesAgainstGeth runs the edge-case scenarios (batches that
// leave the trie empty or unchanged, cancel out, delete everything and
// insert again, alternate inserts and deletes of the same keys, collapse
// branches, inline small nodes; empty batches between sections) on every
// engine configuration, plain and secure, in batches of 1, 3 and whole
// sections, and after every batch compares the root with go-ethereum's,
// and for every probe key (present and absent) Get, Prove and both sides'
// VerifyProof on both sides' proofs, also on the empty trie.
func TestEdgeCasesAgainstGeth(t *testing.T) {
	scenarios := edgeScenarios(t)
	for _, e := range configs {
		for _, secure := range []bool{false, true} {
			for _, sc := range scenarios {
				for _, size := range []int{1, 3, 0} {
					t.Run(fmt.Sprintf("%s/secure=%v/%s/batch=%d", configName(e), secure, sc.Name, size), func(t *testing.T) {
						edgeAgainstGeth(t, e, secure, sc, size)
					})
				}
			}
		}
	}
}

func edgeAgainstGeth(t *testing.T, e mpt.Options, secure bool, sc workload.MPTScenario, size int) {
	ours := newOurs(t, e, secure)
	geth, gethProve := newGeth(t, secure)
	for b, batch := range sc.Batches(size) {
		keys, values := workload.Split(batch)
		if err := ours.Update(keys, values); err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
		for i := range keys {
			geth.MustUpdate(keys[i], values[i])
		}
		want := geth.Hash()
		got, err := ours.Hash()
		if err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
		if got != want {
			t.Fatalf("batch %d (%d ops): root %x, go-ethereum %x", b, len(batch), got, want)
		}
		// One batch call each on our side (one device round trip each on
		// the GPU engine), then key by key against go-ethereum.
		vals, found, err := ours.Lookup(sc.Probes)
		if err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
		proofs, err := ours.ProveBatch(sc.Probes)
		if err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
		for i, k := range sc.Probes {
			compareProbe(t, vals[i], found[i], proofs[i], geth, gethProve, k, [32]byte(want), secure)
		}
	}
}

// checkProbe compares Get and Prove of one key with go-ethereum's, and
// go-ethereum's trie.VerifyProof and mpt.VerifyProof on both proofs: all
// four must give the same value, or all fail (the empty trie's proofs,
// which hold no node, fail against the empty root). Against a non-empty
// root they must prove what Get returns, nil for an absent key.
func checkProbe(t *testing.T, ours *mpt.Trie, geth gethTrie, gethProve func([]byte) ([][]byte, error), key []byte, root [32]byte, secure bool) {
	t.Helper()
	got, ok := mustGet(ours, key)
	proof, err := ours.Prove(key)
	if err != nil {
		t.Fatalf("Prove(%x): %v", key, err)
	}
	compareProbe(t, got, ok, proof, geth, gethProve, key, root, secure)
}

// compareProbe is checkProbe with our value, presence and proof of key
// already computed.
func compareProbe(t *testing.T, got []byte, ok bool, proof [][]byte, geth gethTrie, gethProve func([]byte) ([][]byte, error), key []byte, root [32]byte, secure bool) {
	t.Helper()
	want := geth.MustGet(key)
	if !bytes.Equal(got, want) || ok != (len(want) > 0) {
		t.Fatalf("Get(%x) = %x, %v; go-ethereum %x", key, got, ok, want)
	}
	wantProof, err := gethProve(key)
	if err != nil {
		t.Fatalf("go-ethereum Prove(%x): %v", key, err)
	}
	if !slices.EqualFunc(proof, wantProof, bytes.Equal) {
		t.Fatalf("Prove(%x):\n ours %x\n geth %x", key, proof, wantProof)
	}
	tkey := key
	if secure {
		h := mpt.HashKey(key)
		tkey = h[:]
	}
	type verdict struct {
		who string
		v   []byte
		err error
	}
	var vs []verdict
	for _, p := range []struct {
		name  string
		proof [][]byte
	}{{"our proof", proof}, {"go-ethereum's proof", wantProof}} {
		v, err := trie.VerifyProof(common.Hash(root), tkey, proofDB(p.proof))
		vs = append(vs, verdict{"go-ethereum's VerifyProof on " + p.name, v, err})
		v, err = mpt.VerifyProof(root, tkey, p.proof)
		vs = append(vs, verdict{"mpt.VerifyProof on " + p.name, v, err})
	}
	for _, v := range vs {
		if root == mpt.EmptyRoot {
			if v.err == nil {
				t.Fatalf("empty trie, key %x: %s accepted a proof of %d nodes", key, v.who, len(proof))
			}
			continue
		}
		if v.err != nil || !bytes.Equal(v.v, want) {
			t.Fatalf("key %x: %s = %x, %v; want %x", key, v.who, v.v, v.err, want)
		}
	}
}
