package mpt

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/internal/workload"
)

// newGPUTest returns an empty GPU-engine trie on the tests' shared device,
// or skips (fails under WARPKV_REQUIRE_GPU=1) without a GPU.
func newGPUTest(t testing.TB, secure bool, mode NodeUpdate) *Trie {
	t.Helper()
	return newGPUTestOpts(t, Options{Secure: secure, NodeUpdate: mode})
}

// newGPUTestOpts is newGPUTest with the options' Secure, NodeUpdate and
// HostValues.
func newGPUTestOpts(t testing.TB, opts Options) *Trie {
	t.Helper()
	secure, mode := opts.Secure, opts.NodeUpdate
	d := gputest.Device(t)
	g, err := newGPUTrie(d, false, secure)
	if err != nil {
		t.Fatal(err)
	}
	g.mode = mode
	if opts.HostValues {
		g.host = newHostValues()
	}
	tr := onGPU(g, Options{Secure: secure, NodeUpdate: mode, HostValues: opts.HostValues})
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Error(err)
		}
	})
	return tr
}

// keyGen draws one key of a distribution.
type keyGen func(r *rand.Rand) []byte

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// gpuKeyGens are the key distributions of the GPU differential tests.
var gpuKeyGens = []struct {
	name string
	gen  keyGen
}{
	{"random32", func(r *rand.Rand) []byte { return randBytes(r, 32) }},
	{"short", func(r *rand.Rand) []byte { return randBytes(r, r.IntN(4)) }}, // includes the empty key and prefixes
	{"nibbles", func(r *rand.Rand) []byte { // few distinct nibbles: deep shared prefixes
		b := make([]byte, 1+r.IntN(6))
		for i := range b {
			b[i] = byte(r.IntN(2)<<4 | r.IntN(2))
		}
		return b
	}},
	{"clustered", func(r *rand.Rand) []byte {
		return append(bytes.Repeat([]byte{0xab}, 20), randBytes(r, 1+r.IntN(2))...)
	}},
	{"long", func(r *rand.Rand) []byte { return randBytes(r, 33+r.IntN(96)) }},
	{"mixed", func(r *rand.Rand) []byte { return randBytes(r, r.IntN(129)) }},
}

// randValue draws a value: empty (a delete) with probability del, else
// one byte below 0x80 (RLP's single-byte case), short, or long.
func randValue(r *rand.Rand, del float64) []byte {
	if r.Float64() < del {
		return nil
	}
	switch r.IntN(4) {
	case 0:
		return []byte{byte(r.IntN(0x80))}
	case 1:
		return randBytes(r, 1+r.IntN(8))
	case 2:
		return randBytes(r, 30+r.IntN(40))
	default:
		return randBytes(r, 100+r.IntN(600))
	}
}

// compareTries checks the GPU trie g against the CPU reference c: the
// root, the canonical shape of its snapshot, lookups and proofs of probe
// keys (present and absent).
func compareTries(t *testing.T, g, c *Trie, probes [][]byte) {
	t.Helper()
	if gr, cr := g.hash(), c.hash(); gr != cr {
		t.Fatalf("root: gpu %x, cpu %x", gr, cr)
	}
	snap, err := g.g.snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkInvariants(snap); err != nil {
		t.Fatalf("gpu trie shape: %v", err)
	}
	vals, found, err := g.Lookup(probes)
	if err != nil {
		t.Fatal(err)
	}
	proofs, err := g.ProveBatch(probes)
	if err != nil {
		t.Fatal(err)
	}
	var into Values
	if err := g.LookupInto(probes, &into); err != nil {
		t.Fatal(err)
	}
	for i, k := range probes {
		want, ok := c.get(k)
		if found[i] != ok || !bytes.Equal(vals[i], want) {
			t.Fatalf("lookup %x: gpu %x %v, cpu %x %v", k, vals[i], found[i], want, ok)
		}
		if v, f := into.Get(i); f != ok || !bytes.Equal(v, want) {
			t.Fatalf("LookupInto %x: gpu %x %v, cpu %x %v", k, v, f, want, ok)
		}
		cp, err := c.Prove(k)
		if err != nil {
			t.Fatal(err)
		}
		if len(cp) != len(proofs[i]) {
			t.Fatalf("proof of %x: gpu %d nodes, cpu %d", k, len(proofs[i]), len(cp))
		}
		for j := range cp {
			if !bytes.Equal(cp[j], proofs[i][j]) {
				t.Fatalf("proof of %x node %d: gpu %x, cpu %x", k, j, proofs[i][j], cp[j])
			}
		}
	}
}

// gpuModes are the node-update settings every GPU test runs under.
var gpuModes = []NodeUpdate{NodeUpdateAuto, NodeUpdatePhase, NodeUpdateLock}

// TestGPUDifferential applies random batches (inserts, overwrites,
// deletes, duplicates within a batch) of every key distribution to the
// GPU engine and the sequential CPU engine, in both modes, under the
// decision model and with PhaseNU or LockNU forced, and compares roots
// after every batch and lookups, proofs and shape after each. Every other
// batch has no deletes, so that LockNU runs.
func TestGPUDifferential(t *testing.T) {
	for _, kg := range gpuKeyGens {
		for _, secure := range []bool{false, true} {
			for _, mode := range gpuModes {
				t.Run(fmt.Sprintf("%s/secure=%v/mode=%s", kg.name, secure, cmp.Or(string(mode), "auto")), func(t *testing.T) {
					gpuDifferential(t, kg.gen, Options{Secure: secure, NodeUpdate: mode}, uint64(len(kg.name)))
				})
			}
			t.Run(fmt.Sprintf("%s/secure=%v/host-values", kg.name, secure), func(t *testing.T) {
				gpuDifferential(t, kg.gen, Options{Secure: secure, HostValues: true}, uint64(len(kg.name)))
			})
		}
	}
}

// gpuDifferential is one TestGPUDifferential case: batches of keys drawn
// from gen, on a GPU trie with the given mode and a sequential CPU trie.
func gpuDifferential(t *testing.T, gen keyGen, opts Options, seed uint64) {
	secure, mode := opts.Secure, opts.NodeUpdate
	r := rand.New(rand.NewPCG(seed, 7))
	g := newGPUTestOpts(t, opts)
	c := mustNew(Options{Secure: secure})
	var pool [][]byte
	locked := 0
	for batch, size := range []int{1, 3, 50, 1000, 1, 5000, 200, 2000, 7, 3000} {
		del := 0.0
		if batch > 1 && batch%2 == 0 {
			del = 0.3
		}
		keys, values := make([][]byte, size), make([][]byte, size)
		for i := range keys {
			if len(pool) > 0 && r.IntN(3) == 0 {
				keys[i] = pool[r.IntN(len(pool))] // existing key or a duplicate
			} else {
				keys[i] = gen(r)
				pool = append(pool, keys[i])
			}
			values[i] = randValue(r, del)
		}
		if err := g.Update(keys, values); err != nil {
			t.Fatalf("batch %d: %v", batch, err)
		}
		if g.Stats().Algorithm == NodeUpdateLock {
			locked++
		}
		if err := c.Update(keys, values); err != nil {
			t.Fatal(err)
		}
		probes := [][]byte{gen(r), {}, bytes.Repeat([]byte{0xff}, 130)}
		for i := 0; i < 64 && len(pool) > 0; i++ {
			probes = append(probes, pool[r.IntN(len(pool))])
		}
		if !secure {
			probes = slices.DeleteFunc(probes, func(k []byte) bool { return len(k) > maxKeyBytes && r.IntN(2) == 0 })
		}
		compareTries(t, g, c, probes)
	}
	// Delete everything, then insert again (reusing freed nodes).
	if err := g.Delete(pool); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(pool); err != nil {
		t.Fatal(err)
	}
	if g.hash() != EmptyRoot || c.hash() != EmptyRoot {
		t.Fatalf("after deleting all: gpu %x, cpu %x", g.hash(), c.hash())
	}
	vals := make([][]byte, len(pool))
	for i := range vals {
		vals[i] = randValue(r, 0)
	}
	if err := errors2(g.Update(pool, vals), c.Update(pool, vals)); err != nil {
		t.Fatal(err)
	}
	compareTries(t, g, c, pool[:min(len(pool), 200)])
	checkIteration(t, g, c)
	if mode == NodeUpdateLock && locked < 3 {
		t.Fatalf("LockNU ran %d batches, want at least 3", locked)
	}
}

func errors2(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// checkIteration compares the GPU engine's iteration with the CPU's.
func checkIteration(t *testing.T, g, c *Trie) {
	t.Helper()
	gi, ci := g.NewIterator(nil), c.NewIterator(nil)
	n := 0
	for ci.Next() {
		if !gi.Next() {
			t.Fatalf("gpu iteration ended after %d pairs: %v", n, gi.Err())
		}
		if !bytes.Equal(gi.Key(), ci.Key()) || !bytes.Equal(gi.Value(), ci.Value()) {
			t.Fatalf("pair %d: gpu %x=%x, cpu %x=%x", n, gi.Key(), gi.Value(), ci.Key(), ci.Value())
		}
		n++
	}
	if gi.Next() {
		t.Fatalf("gpu iteration has more than %d pairs", n)
	}
}

// TestGPULargeBatches runs batches large enough to fill the device with
// concurrent walks, expansions and CAS inserts: a fresh 200K-pair build,
// then an update of 100K pairs mixing overwrites, new keys and deletes, on
// the paper's data set generators (ETHT with the host copy of the values).
func TestGPULargeBatches(t *testing.T) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	for _, ds := range []workload.Dataset{workload.YCSB, workload.ETHT, workload.Wiki} {
		t.Run(string(ds), func(t *testing.T) {
			m := n
			if ds == workload.Wiki {
				m = n / 20
			}
			keys, values, err := workload.Generate(ds, m, 11)
			if err != nil {
				t.Fatal(err)
			}
			g := newGPUTestOpts(t, Options{HostValues: ds == workload.ETHT})
			c := mustNew(Options{Engine: EngineParallel})
			if err := errors2(g.Update(keys, values), c.Update(keys, values)); err != nil {
				t.Fatal(err)
			}
			probes := append(slices.Clone(keys[:100]), []byte("absent"))
			compareTries(t, g, c, probes)
			r := rand.New(rand.NewPCG(3, 4))
			uk, uv := make([][]byte, m/2), make([][]byte, m/2)
			for i := range uk {
				switch r.IntN(3) {
				case 0:
					uk[i] = keys[r.IntN(m)]
				case 1:
					uk[i] = append(slices.Clone(keys[r.IntN(m)]), byte(i))
				default:
					uk[i] = keys[r.IntN(m)]
					continue // delete
				}
				uv[i] = randValue(r, 0)
			}
			if err := errors2(g.Update(uk, uv), c.Update(uk, uv)); err != nil {
				t.Fatal(err)
			}
			compareTries(t, g, c, append(uk[:100], keys[:100]...))
			logTimes(t, string(ds)+" mixed", g.Stats())
			// A sparse insert-only batch: the decision model picks LockNU.
			nk, nv := make([][]byte, m/50), make([][]byte, m/50)
			for i := range nk {
				nk[i], nv[i] = append(slices.Clone(keys[r.IntN(m)]), 0xee, byte(i), byte(i>>8)), randValue(r, 0)
			}
			if err := errors2(g.Update(nk, nv), c.Update(nk, nv)); err != nil {
				t.Fatal(err)
			}
			compareTries(t, g, c, append(nk[:100], keys[:100]...))
			logTimes(t, string(ds)+" sparse inserts", g.Stats())
		})
	}
}

// logTimes logs a GPU batch's breakdown.
func logTimes(t testing.TB, what string, tm BatchStats) {
	t.Helper()
	t.Logf("%s: %d ops, %s (%s): stage %v upload %v sort %v update %v (%d rounds, %d expanded, %d restarts) hash %v (%d dirty) total %v",
		what, tm.Keys, tm.Algorithm, tm.Why, tm.Stage, tm.Upload, tm.Sort, tm.Update, tm.Rounds, tm.Expanded, tm.Restarts, tm.Hash, tm.Dirty, tm.Total)
}

// TestGPUOutOfMemory runs out of node memory in the middle of batches
// (after expansions, before inserts) under every mode and checks that the
// error matches gpu.ErrOutOfMemory, the trie is as before the batch, and
// later batches still agree with the CPU engine.
func TestGPUOutOfMemory(t *testing.T) {
	for _, mode := range gpuModes {
		t.Run(cmp.Or(string(mode), "auto"), func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 5))
			g := newGPUTest(t, false, mode)
			c := mustNew(Options{})
			keys, values := make([][]byte, 3000), make([][]byte, 3000)
			for i := range keys {
				keys[i], values[i] = randBytes(r, 1+r.IntN(20)), randValue(r, 0)
			}
			if err := errors2(g.Update(keys, values), c.Update(keys, values)); err != nil {
				t.Fatal(err)
			}
			before := g.hash()
			nk, nv := make([][]byte, 3000), make([][]byte, 3000)
			for i := range nk {
				nk[i], nv[i] = append(slices.Clone(keys[r.IntN(len(keys))]), byte(i)), randValue(r, 0)
			}
			g.g.limit = int(g.g.bump) + 1 // any new node beyond the free list fails
			err := g.Update(nk, nv)
			if !errors.Is(err, gpu.ErrOutOfMemory) {
				t.Fatalf("got %v, want an out-of-memory error", err)
			}
			if g.hash() != before {
				t.Fatalf("root %x after the failed batch, %x before", g.hash(), before)
			}
			compareTries(t, g, c, keys[:100])
			g.g.limit = 0
			if err := errors2(g.Update(nk, nv), c.Update(nk, nv)); err != nil {
				t.Fatal(err)
			}
			compareTries(t, g, c, append(nk[:100], keys[:100]...))
		})
	}
}

// TestGPUKeyTooLong checks the GPU engine's limit on plain keys: a clear
// error and an unchanged trie.
func TestGPUKeyTooLong(t *testing.T) {
	g := newGPUTest(t, false, NodeUpdateAuto)
	if err := g.Update([][]byte{{1}}, [][]byte{{2}}); err != nil {
		t.Fatal(err)
	}
	before := g.hash()
	err := g.Update([][]byte{{3}, make([]byte, maxKeyBytes+1)}, [][]byte{{4}, {5}})
	if err == nil || !errors.Is(err, ErrKeyTooLong) {
		t.Fatalf("got %v, want ErrKeyTooLong", err)
	}
	if g.hash() != before {
		t.Fatal("root changed by a failed batch")
	}
}

// TestGPUPlaceholderRoots replays the cases on the GPU engine in
// every mode, plain and secure, against the sequential engine: a fresh
// trie, an empty batch and a delete of an absent key must give EmptyRoot
// (not a zero hash); a batch inserting and deleting the same key on a
// fresh trie must leave it empty, with an empty proof; the next batch of
// inserts (LockNU where forced) must start from the right root; and a
// batch cancelling out on a non-empty trie must leave its root as it was.
func TestGPUPlaceholderRoots(t *testing.T) {
	for _, secure := range []bool{false, true} {
		for _, mode := range gpuModes {
			t.Run(fmt.Sprintf("secure=%v/mode=%s", secure, cmp.Or(string(mode), "auto")), func(t *testing.T) {
				g := newGPUTest(t, secure, mode)
				c := mustNew(Options{Secure: secure})
				step := func(what string, keys, values [][]byte) {
					t.Helper()
					if err := errors2(g.Update(keys, values), c.Update(keys, values)); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					gr, err := g.Hash()
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					if cr := c.hash(); gr != cr {
						t.Fatalf("%s: gpu root %x, cpu %x", what, gr, cr)
					}
					compareTries(t, g, c, append(slices.Clone(keys), []byte{0x01}, []byte{}, []byte{0x01, 0x02}))
				}
				if h := g.hash(); h != EmptyRoot {
					t.Fatalf("fresh trie: root %x, want the empty root", h)
				}
				step("empty batch", nil, nil)
				step("delete of an absent key on a fresh trie", [][]byte{{0x01}}, [][]byte{nil})
				step("insert then delete of 0x01 in one batch", [][]byte{{0x01}, {0x01}}, [][]byte{{0x02}, nil})
				if p, err := g.Prove([]byte{0x01}); err != nil || len(p) != 0 {
					t.Fatalf("proof on the empty trie: %x, %v; want no nodes", p, err)
				}
				step("inserts after the cancelled batch", [][]byte{{0x01}, {0x02}, {0x13, 0x37}}, [][]byte{{0x0a}, {0x0b}, bytes.Repeat([]byte{7}, 40)})
				step("inserts again", [][]byte{{0x03}}, [][]byte{{0x0c}})
				before := g.hash()
				step("insert then delete of a new key on a non-empty trie", [][]byte{{0x44}, {0x44}}, [][]byte{{0x01}, nil})
				step("delete of an absent key on a non-empty trie", [][]byte{{0x45}}, [][]byte{nil})
				step("the same pairs again", [][]byte{{0x01}, {0x02}}, [][]byte{{0x0a}, {0x0b}})
				if g.hash() != before {
					t.Fatal("batches that change nothing changed the root")
				}
				step("delete everything", [][]byte{{0x01}, {0x02}, {0x13, 0x37}, {0x03}}, make([][]byte, 4))
				step("insert into the emptied trie", [][]byte{{0x05}}, [][]byte{{0x06}})
			})
		}
	}
}

// TestGPUOpen opens the GPU engine through Open on the tests' device
// (Options.GPU: the trie must not close it) and checks the facade: its
// backend and reason, LastBatch and Stats after an update and a lookup.
func TestGPUOpen(t *testing.T) {
	d := gputest.Device(t)
	tr, err := Open(Options{Engine: EngineGPU, GPU: d})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Backend() != gpu.BackendGPU || !strings.Contains(tr.Reason(), "given by the caller") {
		t.Fatalf("backend %v, reason %q", tr.Backend(), tr.Reason())
	}
	keys := [][]byte{{1}, {2}, {3}}
	if err := tr.Update(keys, [][]byte{{1}, {2}, {3}}); err != nil {
		t.Fatal(err)
	}
	if lb, st := tr.LastBatch(), tr.Stats(); lb.Op != "update" || lb.Items != 3 || lb.Total <= 0 || st.Keys != 3 || st.Dirty == 0 {
		t.Fatalf("after update: %+v, %+v", lb, st)
	}
	if _, _, err := tr.Lookup(keys); err != nil {
		t.Fatal(err)
	}
	if lb := tr.LastBatch(); lb.Op != "lookup" || lb.Items != 3 {
		t.Fatalf("after lookup: %+v", lb)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	// The device stays open for the other tests.
	again, err := Open(Options{Engine: EngineAuto, GPU: d})
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(again.Update(keys, keys), again.Close()); err != nil {
		t.Fatal(err)
	}
}
