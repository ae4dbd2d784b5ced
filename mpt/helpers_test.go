package mpt

import (
	"bytes"
	"fmt"
	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"slices"
	"testing"
)

// testEngine is an engine configuration every test runs on.
type testEngine struct {
	name  string
	opts  Options // Engine and Workers
	grain int     // the parallel update's grain; 0: its default
}

// testEngines: the sequential engine, the parallel one as configured by
// default, and the parallel one splitting batches down to single keys.
var testEngines = []testEngine{
	{name: "sequential", opts: Options{Engine: EngineSequential}},
	{name: "parallel", opts: Options{Engine: EngineParallel, Workers: 4}},
	{name: "parallel-grain1", opts: Options{Engine: EngineParallel, Workers: 3}, grain: 1},
}

// new returns an empty trie with opts (Secure) on engine e.
func (e testEngine) new(opts Options) *Trie {
	opts.Engine, opts.Workers = e.opts.Engine, e.opts.Workers
	tr := mustNew(opts)
	tr.cpu.grain = e.grain
	return tr
}

// onGPU returns the facade of a GPU engine the test opened on the shared
// device (with opts' Secure, NodeUpdate and HostValues already applied
// to g).
func onGPU(g *gpuTrie, opts Options) *Trie {
	opts.Engine = EngineGPU
	t := &Trie{opts: opts}
	p := engine.Placement{Backend: gpu.BackendGPU, Device: g.dev, Reason: "mpt: gpu engine: test device"}
	err := engine.OpenOn(&t.Facade, p, engine.Spec[trieEngine]{
		Name:  "mpt",
		Start: func(engine.Placement) (trieEngine, error) { t.g = g; return g, nil },
		Free:  func(e trieEngine) error { return e.close() },
		Last:  func(e trieEngine) engine.Timings { return e.lastBatch() },
	})
	if err != nil {
		panic(err)
	}
	return t
}

// mustNew opens a trie on a CPU engine (the sequential one for "") for
// options known to be valid.
func mustNew(opts Options) *Trie {
	if opts.Engine == "" {
		opts.Engine = EngineSequential
	}
	tr, err := Open(opts)
	if err != nil {
		panic(err)
	}
	return tr
}

// forEngines runs f as a subtest on every test engine.
func forEngines(t *testing.T, f func(t *testing.T, e testEngine)) {
	t.Helper()
	for _, e := range testEngines {
		t.Run(e.name, func(t *testing.T) { f(t, e) })
	}
}

// fromMap builds a fresh trie holding exactly model, inserting in sorted
// key order: the from-scratch reference for incremental updates.
func fromMap(t testing.TB, secure bool, model map[string][]byte) *Trie {
	t.Helper()
	tr := mustNew(Options{Secure: secure})
	var keys, values [][]byte
	for _, k := range slices.Sorted(mapKeys(model)) {
		keys, values = append(keys, []byte(k)), append(values, model[k])
	}
	if err := tr.Update(keys, values); err != nil {
		t.Fatal(err)
	}
	return tr
}

func mapKeys(m map[string][]byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkInvariants verifies the canonical shape go-ethereum relies on:
// every branch has two or more entries, short nodes have non-empty paths,
// an extension's child is a branch, and values are non-empty.
func checkInvariants(n node) error {
	switch n := n.(type) {
	case nil:
		return nil
	case valueNode:
		if len(n) == 0 {
			return fmt.Errorf("empty value")
		}
		return nil
	case *shortNode:
		if len(n.key) == 0 {
			return fmt.Errorf("short node with empty path")
		}
		if _, ok := n.val.(valueNode); ok != hasTerm(n.key) {
			return fmt.Errorf("short node %x: terminator and value disagree", n.key)
		}
		if _, ok := n.val.(*shortNode); ok {
			return fmt.Errorf("short node %x over a short node", n.key)
		}
		return checkInvariants(n.val)
	case *fullNode:
		count := 0
		for i, c := range n.children {
			if c == nil {
				continue
			}
			count++
			if _, ok := c.(valueNode); ok != (i == terminator) {
				return fmt.Errorf("branch slot %d holds %T", i, c)
			}
			if err := checkInvariants(c); err != nil {
				return err
			}
		}
		if count < 2 {
			return fmt.Errorf("branch with %d entries", count)
		}
		return nil
	default:
		return fmt.Errorf("unexpected %T", n)
	}
}

// checkAgainstModel compares tr with model: root equal to a from-scratch
// build, Get of every key, iteration order, and proofs of present keys.
func checkAgainstModel(t testing.TB, tr *Trie, model map[string][]byte) {
	t.Helper()
	if err := checkInvariants(tr.cpu.root); err != nil {
		t.Fatalf("invariant: %v", err)
	}
	secure := tr.Options().Secure
	root := tr.hash()
	if want := fromMap(t, secure, model).hash(); root != want {
		t.Fatalf("root %x, from scratch %x (%d keys)", root, want, len(model))
	}
	trieKeys := map[string][]byte{}
	for k, v := range model {
		got, ok := tr.get([]byte(k))
		if !ok || !bytes.Equal(got, v) {
			t.Fatalf("Get(%x) = %x, %v; want %x", k, got, ok, v)
		}
		tk := []byte(k)
		if secure {
			h := HashKey(tk)
			tk = h[:]
		}
		trieKeys[string(tk)] = v
		proof, err := tr.Prove([]byte(k))
		if err != nil {
			t.Fatal(err)
		}
		pv, err := VerifyProof(root, tk, proof)
		if err != nil || !bytes.Equal(pv, v) {
			t.Fatalf("VerifyProof(%x) = %x, %v; want %x", k, pv, err, v)
		}
	}
	want := slices.Sorted(mapKeys(trieKeys))
	it := tr.NewIterator(nil)
	i := 0
	for ; it.Next(); i++ {
		if i >= len(want) || string(it.Key()) != want[i] || !bytes.Equal(it.Value(), trieKeys[want[i]]) {
			t.Fatalf("iteration item %d: key %x", i, it.Key())
		}
	}
	if i != len(want) {
		t.Fatalf("iteration gave %d pairs, want %d", i, len(want))
	}
}

// hash is Hash for the tests, where a failure fails the test (it panics).
func (t *Trie) hash() [32]byte {
	h, err := t.Hash()
	if err != nil {
		panic(err)
	}
	return h
}

// get is Get for the tests, where a failure fails the test (it panics).
func (t *Trie) get(key []byte) ([]byte, bool) {
	v, ok, err := t.Get(key)
	if err != nil {
		panic(err)
	}
	return v, ok
}

// getBatch is Lookup for the tests, where a failure fails the test (it
// panics).
func (t *Trie) getBatch(keys [][]byte) ([][]byte, []bool) {
	v, f, err := t.Lookup(keys)
	if err != nil {
		panic(err)
	}
	return v, f
}
