package mpt

import (
	"errors"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// TestFacadeCPU checks the engine.Reporter side of a CPU trie: its
// backend and reason, LastBatch after an update, a hash, a lookup and a
// proof batch, and a trie that fails cleanly after Close.
func TestFacadeCPU(t *testing.T) {
	for _, e := range Engines() {
		t.Run(string(e), func(t *testing.T) {
			var tr engine.Reporter
			tr, err := Open(Options{Engine: e})
			if err != nil {
				t.Fatal(err)
			}
			m := tr.(*Trie)
			if m.Backend() != gpu.BackendCPU || !strings.Contains(m.Reason(), string(e)) {
				t.Fatalf("backend %v, reason %q", m.Backend(), m.Reason())
			}
			keys := [][]byte{{1}, {2}, {3}}
			if err := m.Update(keys, [][]byte{{1}, {2}, {3}}); err != nil {
				t.Fatal(err)
			}
			if lb := m.LastBatch(); lb.Op != "update" || lb.Items != 3 || lb.Total <= 0 || lb.Work != lb.Total {
				t.Fatalf("after update: %+v", lb)
			}
			m.Hash()
			if lb := m.LastBatch(); lb.Op != "hash" {
				t.Fatalf("after hash: %+v", lb)
			}
			var out Values
			if err := m.LookupInto(keys, &out); err != nil {
				t.Fatal(err)
			}
			if lb := m.LastBatch(); lb.Op != "lookup" || lb.Items != 3 {
				t.Fatalf("after lookup: %+v", lb)
			}
			if _, err := m.ProveBatch(keys[:2]); err != nil {
				t.Fatal(err)
			}
			if lb := m.LastBatch(); lb.Op != "prove" || lb.Items != 2 {
				t.Fatalf("after prove: %+v", lb)
			}
			if m.Stats() != (BatchStats{}) {
				t.Fatalf("CPU stats %+v", m.Stats())
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if err := m.Update(keys[:1], [][]byte{{9}}); !errors.Is(err, engine.ErrClosed) {
				t.Fatalf("update after close: %v", err)
			}
			if _, err := m.Hash(); !errors.Is(err, engine.ErrClosed) {
				t.Fatalf("root after close: %v", err)
			}
			if err := m.Close(); err != nil {
				t.Fatalf("second close: %v", err)
			}
		})
	}
}

// TestOpenPlacement checks Open's device resolution without a GPU (with
// one, the GPU engine's own tests cover it): auto falls back to the
// parallel engine with the reason, cpu picks it, and the GPU engine
// fails with the reason.
func TestOpenPlacement(t *testing.T) {
	if ok, _ := gpu.Available(); ok {
		t.Skip("a GPU is usable: TestGPUOpen covers Open")
	}
	for _, device := range []string{"auto", "cpu"} {
		tr, err := Open(Options{Engine: EngineAuto, Device: device})
		if err != nil {
			t.Fatalf("auto on %s: %v", device, err)
		}
		if tr.Options().Engine != EngineParallel || tr.Backend() != gpu.BackendCPU || !strings.Contains(tr.Reason(), "cpu") {
			t.Errorf("auto on %s: engine %s, backend %v, reason %q", device, tr.Options().Engine, tr.Backend(), tr.Reason())
		}
	}
	if _, err := Open(Options{Engine: EngineGPU}); err == nil || !strings.Contains(err.Error(), "no GPU is usable") {
		t.Errorf("gpu engine without a GPU: %v", err)
	}
	if _, err := Open(Options{Engine: EngineAuto, Device: "tpu"}); err == nil {
		t.Error("a bad device option: no error")
	}
}
