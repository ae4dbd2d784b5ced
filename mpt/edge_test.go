package mpt

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/enginetest"
	"github.com/warpkv/warpkv/internal/workload"
)

// edgeBatch is one batch of an edge-case scenario and the keys to look up
// and prove after it.
type edgeBatch struct {
	keys, values, probes [][]byte
}

// edgeOut is what a trie answers after a batch: its root, and the probes'
// values and proofs.
type edgeOut struct {
	root   [32]byte
	values [][]byte
	found  []bool
	proofs [][][]byte
}

// trieSubject is a Trie under enginetest, with the Values its
// LookupInto calls reuse.
type trieSubject struct {
	t   *Trie
	buf *Values
}

// Apply runs the batch, then reads the root, looks the probes up (with
// Lookup, and with LookupInto, which must agree) and proves them, and checks each proof with VerifyProof: against a non-empty
// root it must prove the value the lookup found (or absence); an empty
// trie has no proof nodes, and the root, unknown to any proof, rejects it.
func (s trieSubject) Apply(b edgeBatch) (edgeOut, error) {
	if err := s.t.Update(b.keys, b.values); err != nil {
		return edgeOut{}, err
	}
	root, err := s.t.Hash()
	if err != nil {
		return edgeOut{}, err
	}
	vals, found, err := s.t.Lookup(b.probes)
	if err != nil {
		return edgeOut{}, err
	}
	if err := s.t.LookupInto(b.probes, s.buf); err != nil {
		return edgeOut{}, err
	}
	if s.buf.Len() != len(b.probes) {
		return edgeOut{}, fmt.Errorf("LookupInto answered %d keys of %d", s.buf.Len(), len(b.probes))
	}
	for i := range b.probes {
		if v, ok := s.buf.Get(i); ok != found[i] || !bytes.Equal(v, vals[i]) {
			return edgeOut{}, fmt.Errorf("key %x: LookupInto %x (%v), Lookup %x (%v)", b.probes[i], v, ok, vals[i], found[i])
		}
	}
	proofs, err := s.t.ProveBatch(b.probes)
	if err != nil {
		return edgeOut{}, err
	}
	for i, p := range proofs {
		k := b.probes[i]
		if s.t.opts.Secure {
			h := HashKey(k)
			k = h[:]
		}
		v, err := VerifyProof(root, k, p)
		if root == EmptyRoot {
			if len(p) != 0 || !errors.Is(err, ErrBadProof) {
				return edgeOut{}, fmt.Errorf("empty trie: proof of %x has %d nodes, verifies with %v", b.probes[i], len(p), err)
			}
			continue
		}
		if err != nil || !bytes.Equal(v, vals[i]) {
			return edgeOut{}, fmt.Errorf("proof of %x proves %x, %v; lookup found %x", b.probes[i], v, err, vals[i])
		}
	}
	return edgeOut{root, vals, found, proofs}, nil
}

// Check verifies the canonical shape of the trie (on the GPU engine, of a
// snapshot of its device nodes).
func (s trieSubject) Check() error {
	if s.t.g != nil {
		snap, err := s.t.g.snapshot()
		if err != nil {
			return err
		}
		return checkInvariants(snap)
	}
	return checkInvariants(s.t.cpu.root)
}

func (s trieSubject) Close() error { return s.t.Close() }

// compareEdge describes the first difference between two answers.
func compareEdge(want, got edgeOut) string {
	if want.root != got.root {
		return fmt.Sprintf("root %x, want %x", got.root, want.root)
	}
	for i := range want.found {
		if want.found[i] != got.found[i] || !bytes.Equal(want.values[i], got.values[i]) {
			return fmt.Sprintf("probe %d: value %x (found %v), want %x (%v)", i, got.values[i], got.found[i], want.values[i], want.found[i])
		}
		wp, gp := want.proofs[i], got.proofs[i]
		if len(wp) != len(gp) {
			return fmt.Sprintf("probe %d: proof of %d nodes, want %d", i, len(gp), len(wp))
		}
		for j := range wp {
			if !bytes.Equal(wp[j], gp[j]) {
				return fmt.Sprintf("probe %d: proof node %d %x, want %x", i, j, gp[j], wp[j])
			}
		}
	}
	return ""
}

// edgeTargets are the engines compared with the sequential one: the
// parallel engine as configured by default and splitting down to single
// keys, and the GPU engine under the decision model and with PhaseNU and
// LockNU forced, and with its host copy of the values.
func edgeTargets(secure bool) []enginetest.Target[edgeBatch, edgeOut] {
	var out []enginetest.Target[edgeBatch, edgeOut]
	for _, e := range testEngines[1:] {
		out = append(out, enginetest.Target[edgeBatch, edgeOut]{Name: e.name,
			Open: func(testing.TB, *gpu.Device) (enginetest.Subject[edgeBatch, edgeOut], error) {
				return trieSubject{e.new(Options{Secure: secure}), &Values{}}, nil
			}})
	}
	for i, mode := range append(slices.Clone(gpuModes), NodeUpdateAuto) {
		host := i == len(gpuModes) // the decision model again, with the host copy of the values
		name := "gpu-" + cmp.Or(string(mode), "auto")
		if host {
			name = "gpu-host-values"
		}
		out = append(out, enginetest.Target[edgeBatch, edgeOut]{Name: name, GPU: true,
			Open: func(_ testing.TB, d *gpu.Device) (enginetest.Subject[edgeBatch, edgeOut], error) {
				g, err := newGPUTrie(d, false, secure)
				if err != nil {
					return nil, err
				}
				g.mode = mode
				if host {
					g.host = newHostValues()
				}
				opts := Options{Secure: secure, Engine: EngineGPU, NodeUpdate: mode, HostValues: host}
				return trieSubject{onGPU(g, opts), &Values{}}, nil
			}})
	}
	return out
}

// TestEdgeCases runs the edge-case scenarios of internal/workload (batches
// that leave the trie empty or unchanged, cancel out, delete everything
// and insert again, repeat keys with alternating inserts and deletes,
// collapse branches, inline small nodes; an empty batch before and after
// every section) on every engine, plain and secure, in batches of 1, 3 and
// whole sections, and compares the root, lookups and proofs of present and
// absent keys with the sequential engine after every batch (compat/ does
// the same against go-ethereum).
func TestEdgeCases(t *testing.T) {
	seed := enginetest.Seed()
	t.Logf("scenario seed %d (%s=%d replays it)", seed, enginetest.EnvSeed, seed)
	scenarios := workload.MPTEdgeScenarios(rand.New(rand.NewPCG(seed, 15)))
	for _, secure := range []bool{false, true} {
		t.Run(fmt.Sprintf("secure=%v", secure), func(t *testing.T) {
			var cases []enginetest.Case[edgeBatch, trieSubject]
			for _, sc := range scenarios {
				for _, size := range []int{1, 3, 0} {
					batches := sc.Batches(size)
					cases = append(cases, enginetest.Case[edgeBatch, trieSubject]{
						Name:    fmt.Sprintf("%s/batch=%d", sc.Name, size),
						Batches: len(batches),
						Gen: func(_ *rand.Rand, step int, _ trieSubject) edgeBatch {
							k, v := workload.Split(batches[step])
							return edgeBatch{k, v, sc.Probes}
						},
					})
				}
			}
			enginetest.Run(t, enginetest.Suite[edgeBatch, edgeOut, trieSubject]{
				NewModel: func() trieSubject { return trieSubject{mustNew(Options{Secure: secure}), &Values{}} },
				Targets:  edgeTargets(secure),
				Compare:  compareEdge,
			}, cases...)
		})
	}
}
