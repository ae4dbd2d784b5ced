package art

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestGPUKeyParts builds, inserts and deletes batches whose keys are
// uploaded in two parts (the sort's round 0 per part, then merged) and in
// one part (partsMin above every batch), on the GPU engine
// and the CPU engine: the layouts must be equal word for word after every
// batch, and the counts and lookups the same. The batches put equal keys
// on both sides of the parts' boundary (the last must win), keys that
// tie past round 0's 7 bytes across it (more sort rounds), long keys and
// keys that prefix others, empty keys, and batches of one to three keys
// (a part of one key; a batch of one part); batches of keys of one length
// have their offsets written on the device.
func TestGPUKeyParts(t *testing.T) {
	modes := []struct {
		name string
		set  func(bu *batchUpload)
	}{
		{"parts", func(bu *batchUpload) { bu.partsMin = 2 }},
		{"whole", func(bu *batchUpload) { bu.partsMin = math.MaxInt }},
		{"default", func(*batchUpload) {}},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			gt, ct, g := gpuAndCPU(t)
			mode.set(&g.bu)
			rng := rand.New(rand.NewPCG(22, 4))
			check := func(what string, kb Keys, vals []uint64, op func(tr *Tree) (int, error)) {
				t.Helper()
				ng, errG := op(gt)
				nc, errC := op(ct)
				if (errG != nil) != (errC != nil) || ng != nc {
					t.Fatalf("%s: gpu (%d, %v), cpu (%d, %v)", what, ng, errG, nc, errC)
				}
				a, _ := gt.eng.snapshot()
				b, _ := ct.eng.snapshot()
				if err := equalStores(b, a); err != nil {
					t.Fatalf("%s: layouts differ (cpu, gpu): %v", what, err)
				}
				if kb.Len() == 0 {
					return
				}
				vg, fg := make([]uint64, kb.Len()), make([]bool, kb.Len())
				vc, fc := make([]uint64, kb.Len()), make([]bool, kb.Len())
				if err := firstErr(gt.Lookup(kb, vg, fg), ct.Lookup(kb, vc, fc)); err != nil {
					t.Fatalf("%s: lookup: %v", what, err)
				}
				for i := range vg {
					if vg[i] != vc[i] || fg[i] != fc[i] {
						t.Fatalf("%s: key %d: gpu (%d, %v), cpu (%d, %v)", what, i, vg[i], fg[i], vc[i], fc[i])
					}
				}
			}
			build := func(what string, keys [][]byte) {
				kb, vals := Pack(keys), seqVals(len(keys), 1)
				check(what, kb, vals, func(tr *Tree) (int, error) { err := tr.BuildKeys(kb, vals); return tr.Len(), err })
			}
			insert := func(what string, keys [][]byte, base uint64) {
				kb, vals := Pack(keys), seqVals(len(keys), base)
				check(what, kb, vals, func(tr *Tree) (int, error) { err := tr.InsertKeys(kb, vals); return tr.Len(), err })
			}
			del := func(what string, keys [][]byte) {
				kb := Pack(keys)
				check(what, kb, nil, func(tr *Tree) (int, error) { return tr.DeleteKeys(kb) })
			}
			for _, n := range []int{1, 2, 3} {
				keys := partKeys(rng, n, 16, 0)
				build(fmt.Sprintf("build of %d", n), keys)
				insert(fmt.Sprintf("insert of %d", n), partKeys(rng, n, 16, 0), 100)
				del(fmt.Sprintf("delete of %d", n), keys[:1])
			}
			base := partKeys(rng, 5000, 16, 0)
			build("build of 5000", base)
			// Equal keys on both sides of the boundary: key i of the
			// second half repeats key i of the first.
			dup := partKeys(rng, 3001, 16, 0)
			copy(dup[1501:], dup[:1500])
			insert("duplicates across the parts", dup, 1000)
			// Long keys sharing 20-byte prefixes across the parts, keys
			// that prefix others, and present keys.
			long := partKeys(rng, 4000, 40, 20)
			for i := 0; i < 200; i++ {
				long[2000+i] = bytes.Clone(long[i][:8+i%30])
			}
			copy(long[3000:3100], base[:100])
			insert("long keys", long, 5000)
			del("delete across the parts", append(append([][]byte{}, dup[:700]...), long[1990:2300]...))
			// Empty keys (one length, 0: offsets written on the device).
			insert("empty keys", [][]byte{{}, {}, {}}, 9000)
			del("empty keys", [][]byte{{}, {}})
			build("build of long keys", long)
		})
	}
}

// partKeys returns n random keys of length klen, the first share bytes
// the same for all (0: none shared). Cost: O(n klen).
func partKeys(rng *rand.Rand, n, klen, share int) [][]byte {
	prefix := make([]byte, share)
	for i := range prefix {
		prefix[i] = byte(rng.UintN(256))
	}
	keys := make([][]byte, n)
	for i := range keys {
		k := make([]byte, klen)
		copy(k, prefix)
		for j := share; j < klen; j++ {
			k[j] = byte(rng.UintN(256))
		}
		keys[i] = k
	}
	return keys
}

// seqVals returns base, base+1, ... (n values).
func seqVals(n int, base uint64) []uint64 {
	v := make([]uint64, n)
	for i := range v {
		v[i] = base + uint64(i)
	}
	return v
}

// TestOneLength checks the host's test for batches whose offsets the
// device writes: every key of one length, the first at offset 0.
func TestOneLength(t *testing.T) {
	for _, c := range []struct {
		name string
		offs []uint32
		l    uint32
		ok   bool
	}{
		{"no keys", []uint32{0}, 0, false},
		{"one key", []uint32{0, 5}, 5, true},
		{"16 bytes each", []uint32{0, 16, 32, 48}, 16, true},
		{"empty keys", []uint32{0, 0, 0}, 0, true},
		{"one longer", []uint32{0, 16, 33, 49}, 0, false},
		{"the last shorter", []uint32{0, 16, 32, 47}, 0, false},
		{"not from 0", []uint32{4, 20, 36}, 0, false},
	} {
		l, ok := oneLength(c.offs)
		if ok != c.ok || ok && l != c.l {
			t.Errorf("%s: (%d, %v), want (%d, %v)", c.name, l, ok, c.l, c.ok)
		}
	}
	// A long batch, one key off in its last part.
	offs := make([]uint32, 1<<18+1)
	for i := range offs {
		offs[i] = uint32(i) * 16
	}
	if l, ok := oneLength(offs); !ok || l != 16 {
		t.Errorf("%d keys of 16 bytes: (%d, %v)", len(offs)-1, l, ok)
	}
	offs[len(offs)-2]++
	if _, ok := oneLength(offs); ok {
		t.Errorf("%d keys, one of 17 bytes: one length", len(offs)-1)
	}
}

// TestKeyParts checks where batches are cut: in two halves from
// keyPartsMin keys (or partsMin), whole below or under two keys.
func TestKeyParts(t *testing.T) {
	for _, c := range []struct {
		bu   batchUpload
		n    int
		want []int
	}{
		{batchUpload{}, keyPartsMin - 1, []int{0, keyPartsMin - 1}},
		{batchUpload{}, keyPartsMin + 1, []int{0, keyPartsMin / 2, keyPartsMin + 1}},
		{batchUpload{partsMin: math.MaxInt}, keyPartsMin * 4, []int{0, keyPartsMin * 4}},
		{batchUpload{partsMin: 2}, 0, []int{0, 0}},
		{batchUpload{partsMin: 2}, 1, []int{0, 1}},
		{batchUpload{partsMin: 2}, 2, []int{0, 1, 2}},
		{batchUpload{partsMin: 2}, 7, []int{0, 3, 7}},
	} {
		if got := c.bu.keyParts(c.n); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%+v, %d keys: %v, want %v", c.bu, c.n, got, c.want)
		}
	}
}
