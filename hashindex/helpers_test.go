package hashindex

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// testEngine makes indexes on one engine.
type testEngine struct {
	name string                  // starts with the engine's name
	opts func(o Options) Options // sets the engine's fields of o
	tune func(ix *Index)         // if not nil, adjusts a new index (test-only engine settings)
}

// testEngines returns the engines every test runs on: the CPU always, the
// GPU when one is usable (else logged; a failure under
// WARPKV_REQUIRE_GPU=1).
func testEngines(t *testing.T) []testEngine {
	t.Helper()
	out := []testEngine{{name: "cpu", opts: func(o Options) Options { o.Device = "cpu"; return o }}}
	if d, err := gputest.Open(); err != nil {
		if gputest.Required() {
			t.Fatalf("GPU required (WARPKV_REQUIRE_GPU=1) but unusable: %v", err)
		}
		t.Logf("gpu engine not tested: %v", err)
	} else {
		out = append(out, testEngine{name: "gpu", opts: func(o Options) Options { o.GPU = d; return o }})
	}
	return out
}

// gpuVariants returns GPU engines whose host-level calls (slice and
// staged) are cut into chunks of 1000 and of 5000 jobs (pipelined over
// three streams, grouped in one block or by the radix sort), which default
// settings do only for batches over a million jobs; none without a usable
// GPU.
func gpuVariants(t *testing.T) []testEngine {
	t.Helper()
	var out []testEngine
	for _, e := range testEngines(t)[1:] {
		for _, c := range []int{1000, 5000} {
			out = append(out, testEngine{name: fmt.Sprintf("gpu, %d-job chunks", c), opts: e.opts,
				tune: func(ix *Index) { ix.gpu.chunkJobs, ix.gpu.stagedChunkJobs = c, c }})
		}
	}
	return out
}

// newIndex returns an index on engine e, closed when the test ends.
func newIndex(t testing.TB, e testEngine, o Options) *Index {
	t.Helper()
	ix, err := Open(e.opts(o))
	if err != nil {
		t.Fatalf("%s: Open(%+v): %v", e.name, o, err)
	}
	if !strings.HasPrefix(e.name, ix.Backend().String()) {
		t.Fatalf("asked for the %s engine, got %s (%s)", e.name, ix.Backend(), ix.Reason())
	}
	if e.tune != nil {
		e.tune(ix)
	}
	t.Cleanup(func() {
		if err := ix.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return ix
}

// newRand returns a generator with a fresh seed, logged so a failure can
// be replayed.
func newRand(t testing.TB) *rand.Rand {
	seed := rand.Uint64()
	t.Logf("seed %#x", seed)
	return rand.New(rand.NewPCG(seed, seed^0x5DEECE66D))
}

// keySet hands out hashes of distinct keys: no two share a signature, so
// no two collide in the index and every check is exact.
type keySet struct {
	r    *rand.Rand
	sigs map[uint32]bool
}

func newKeySet(r *rand.Rand) *keySet { return &keySet{r: r, sigs: map[uint32]bool{}} }

// next returns the hash of a new key; shape, if not nil, rewrites the
// random hash first (to steer it into a partition).
func (k *keySet) next(shape func(uint64) uint64) uint64 {
	for {
		h := k.r.Uint64()
		if shape != nil {
			h = shape(h)
		}
		if s := signature(h); uint32(h>>32) != 0 && !k.sigs[s] {
			k.sigs[s] = true
			return h
		}
	}
}

// hashes returns n new distinct hashes.
func (k *keySet) hashes(n int, shape func(uint64) uint64) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = k.next(shape)
	}
	return out
}

// seq returns locations base, base+1, ...
func seq(base uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = base + uint32(i)
	}
	return out
}

// mustInsert inserts a batch and returns what it dropped.
func mustInsert(t testing.TB, ix *Index, hashes []uint64, locs []uint32) []Dropped {
	t.Helper()
	d, err := ix.Insert(hashes, locs, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// mustSearch searches a batch.
func mustSearch(t testing.TB, ix *Index, hashes []uint64) []uint32 {
	t.Helper()
	out := make([]uint32, len(hashes))
	for i := range out {
		out[i] = 0xDEADBEEF
	}
	if err := ix.Search(hashes, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// mustDelete deletes a batch and returns the found flags.
func mustDelete(t testing.TB, ix *Index, hashes []uint64, locs []uint32) []bool {
	t.Helper()
	found := make([]bool, len(hashes))
	if err := ix.Delete(hashes, locs, found); err != nil {
		t.Fatal(err)
	}
	return found
}

// mustSnapshot returns the table.
func mustSnapshot(t testing.TB, ix *Index) []uint32 {
	t.Helper()
	s, err := ix.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != ix.Buckets()*BucketWords {
		t.Fatalf("snapshot of %d words, want %d", len(s), ix.Buckets()*BucketWords)
	}
	return s
}

// checkTable checks the table's invariants (tableEntries) and returns
// the map from location to signature of every entry.
func checkTable(t testing.TB, ix *Index) map[uint32]uint32 {
	t.Helper()
	entries, err := tableEntries(ix)
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// tableErr returns the first violation of the table's invariants
// (tableEntries), nil when there is none.
func tableErr(ix *Index) error {
	_, err := tableEntries(ix)
	return err
}

// tableEntries checks the table's invariants: empty cells have location 0;
// no signature appears twice in a key's two buckets, which are in one
// partition; no location is indexed twice (the tests never insert one
// location under two keys); the entry count matches Stats. It returns the
// map from location to signature of every entry.
func tableEntries(ix *Index) (map[uint32]uint32, error) {
	g := ix.geo
	tab, err := ix.Snapshot()
	if err != nil {
		return nil, err
	}
	if len(tab) != ix.Buckets()*BucketWords {
		return nil, fmt.Errorf("snapshot of %d words, want %d", len(tab), ix.Buckets()*BucketWords)
	}
	entries := map[uint32]uint32{}
	for b := 0; b < g.buckets; b++ {
		k := tab[b*BucketWords : (b+1)*BucketWords]
		for i := range CellsPerBucket {
			sig, loc := k[i], k[CellsPerBucket+i]
			if sig == 0 {
				if loc != 0 {
					return nil, fmt.Errorf("bucket %d cell %d: empty with location %#x", b, i, loc)
				}
				continue
			}
			for j := i + 1; j < CellsPerBucket; j++ {
				if k[j] == sig {
					return nil, fmt.Errorf("bucket %d: signature %#x in cells %d and %d", b, sig, i, j)
				}
			}
			a := g.alternate(uint32(b), sig)
			ka := tab[int(a)*BucketWords:][:CellsPerBucket]
			for j := range CellsPerBucket {
				if ka[j] == sig {
					return nil, fmt.Errorf("signature %#x in buckets %d and %d", sig, b, a)
				}
			}
			if g.partition(a) != g.partition(uint32(b)) {
				return nil, fmt.Errorf("bucket %d and its alternate %d for %#x in different partitions", b, a, sig)
			}
			if _, dup := entries[loc]; dup {
				return nil, fmt.Errorf("location %d indexed twice", loc)
			}
			entries[loc] = sig
		}
	}
	if st := ix.Stats(); st.Entries != uint64(len(entries)) {
		return nil, fmt.Errorf("stats say %d entries, table has %d", st.Entries, len(entries))
	}
	return entries, nil
}
