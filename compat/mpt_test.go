package compat

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/ethdb/memorydb"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/triedb"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/mpt"
)

// gethTrie is the part of go-ethereum's Trie and StateTrie the tests use.
type gethTrie interface {
	MustUpdate(key, value []byte)
	MustGet(key []byte) []byte
	Hash() common.Hash
}

// newGeth returns an empty go-ethereum trie: a StateTrie (keys hashed)
// when secure, a plain Trie otherwise, and its Prove function (which for
// a StateTrie takes the hashed key).
func newGeth(t *testing.T, secure bool) (gethTrie, func(key []byte) ([][]byte, error)) {
	t.Helper()
	db := triedb.NewDatabase(rawdb.NewMemoryDatabase(), nil)
	if !secure {
		tr := trie.NewEmpty(db)
		return tr, func(key []byte) ([][]byte, error) { return gethProof(tr.Prove, key) }
	}
	tr, err := trie.NewStateTrie(trie.TrieID(types.EmptyRootHash), db)
	if err != nil {
		t.Fatalf("NewStateTrie: %v", err)
	}
	return tr, func(key []byte) ([][]byte, error) { return gethProof(tr.Prove, crypto.Keccak256(key)) }
}

// proofList records proof nodes in the order Prove writes them.
type proofList [][]byte

func (l *proofList) Put(_, value []byte) error {
	*l = append(*l, slices.Clone(value))
	return nil
}

func (l *proofList) Delete([]byte) error { return nil }

func gethProof(prove func([]byte, ethdb.KeyValueWriter) error, key []byte) ([][]byte, error) {
	var l proofList
	err := prove(key, &l)
	return l, err
}

// proofDB loads a proof into a key-value store keyed by node hash, as
// trie.VerifyProof wants.
func proofDB(proof [][]byte) *memorydb.Database {
	db := memorydb.New()
	for _, enc := range proof {
		db.Put(crypto.Keccak256(enc), enc)
	}
	return db
}

// keyGen draws keys from one of several shapes; it reuses earlier keys
// often so that updates and deletes hit present keys.
type keyGen struct {
	rng  *rand.Rand
	used [][]byte
	base []byte // shared prefix of clustered keys
}

func (g *keyGen) key() []byte {
	r := g.rng
	if len(g.used) > 0 && r.IntN(3) == 0 {
		return g.used[r.IntN(len(g.used))]
	}
	var k []byte
	switch r.IntN(7) {
	case 0: // short, from a tiny alphabet: many shared prefixes
		k = make([]byte, r.IntN(4))
		for i := range k {
			k[i] = byte(r.IntN(3)) * 0x11
		}
	case 1: // long
		k = make([]byte, 33+r.IntN(100))
		for i := range k {
			k[i] = byte(r.Uint32())
		}
	case 2: // an extension of an existing key (prefix sharing)
		if len(g.used) > 0 {
			k = slices.Clone(g.used[r.IntN(len(g.used))])
		}
		for range 1 + r.IntN(3) {
			k = append(k, byte(r.IntN(2))<<4|byte(r.IntN(2)))
		}
	case 3: // a prefix of an existing key
		if len(g.used) > 0 {
			u := g.used[r.IntN(len(g.used))]
			k = slices.Clone(u[:r.IntN(len(u)+1)])
		}
	case 4: // clustered: long common prefix, random tail
		k = append(slices.Clone(g.base), byte(r.IntN(4)), byte(r.Uint32()))
	default: // 32 random bytes, like hashed keys
		k = make([]byte, 32)
		for i := range k {
			k[i] = byte(r.Uint32())
		}
	}
	k = k[:min(len(k), maxKeyBytes)]
	g.used = append(g.used, k)
	return k
}

// maxKeyBytes caps generated keys at the longest plain key every engine
// takes (the GPU engine's mpt.MaxGPUKeyBytes); the CPU engines take any
// length, which TestLongKeysCPU covers.
const maxKeyBytes = mpt.MaxGPUKeyBytes

// value returns an empty value (delete) about one time in four, else
// values that inline or not: single bytes on either side of 0x80, short,
// and long ones.
func value(r *rand.Rand) []byte {
	var v []byte
	switch r.IntN(8) {
	case 0, 1:
		return nil
	case 2:
		return []byte{byte(r.Uint32())}
	case 3, 4:
		v = make([]byte, 1+r.IntN(10))
	case 5, 6:
		v = make([]byte, 10+r.IntN(40))
	default:
		v = make([]byte, 56+r.IntN(300))
	}
	for i := range v {
		v[i] = byte(r.Uint32())
	}
	return v
}

// engines are the mpt engines every differential test runs on: the
// sequential one, the parallel one with more workers than this machine
// may have cores so that goroutines interleave, and the GPU engine where
// a GPU is usable (WARPKV_REQUIRE_GPU=1 makes its absence a failure).
var engines = func() []mpt.Options {
	e := []mpt.Options{
		{Engine: mpt.EngineSequential},
		{Engine: mpt.EngineParallel, Workers: 4},
	}
	if ok, _ := gpu.Available(); ok || gputest.Required() {
		e = append(e, mpt.Options{Engine: mpt.EngineGPU})
	}
	return e
}()

// newOurs returns an empty mpt trie on engine e, closed when t ends; the
// GPU engine runs on the tests' shared device (one CUDA context for the
// whole test binary).
func newOurs(t testing.TB, e mpt.Options, secure bool) *mpt.Trie {
	t.Helper()
	e.Secure = secure
	if e.Engine == mpt.EngineGPU {
		e.GPU = gputest.Device(t)
	}
	tr, err := mpt.Open(e)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := tr.Close(); err != nil {
			t.Error(err)
		}
	})
	return tr
}

func TestDifferentialAgainstGeth(t *testing.T) {
	for _, e := range engines {
		for _, secure := range []bool{false, true} {
			for seed := range uint64(24) {
				t.Run(fmt.Sprintf("%s/secure=%v/seed=%d", e.Engine, secure, seed), func(t *testing.T) {
					differential(t, e, secure, seed, 60, 80)
				})
			}
		}
	}
}

// TestDifferentialLargeBatches uses fewer, larger batches, so that the
// parallel engine splits them over several levels of the trie.
func TestDifferentialLargeBatches(t *testing.T) {
	for _, e := range engines {
		for _, secure := range []bool{false, true} {
			for seed := range uint64(3) {
				t.Run(fmt.Sprintf("%s/secure=%v/seed=%d", e.Engine, secure, seed), func(t *testing.T) {
					differential(t, e, secure, 100+seed, 12, 4000)
				})
			}
		}
	}
}

func differential(t *testing.T, e mpt.Options, secure bool, seed uint64, batches, maxBatch int) {
	r := rand.New(rand.NewPCG(seed, 4))
	g := &keyGen{rng: r, base: bytes.Repeat([]byte{0xab}, 30)}
	ours := newOurs(t, e, secure)
	geth, gethProve := newGeth(t, secure)
	model := map[string][]byte{}
	for b := range batches {
		n := r.IntN(maxBatch + 1)
		if b%10 == 9 && len(model) > 0 { // a batch deleting most keys
			n = len(model)
		}
		keys, values := make([][]byte, n), make([][]byte, n)
		for i := range n {
			keys[i], values[i] = g.key(), value(r)
			if b%10 == 9 {
				values[i] = nil
			}
		}
		if err := ours.Update(keys, values); err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
		for i := range keys {
			geth.MustUpdate(keys[i], values[i])
			if len(values[i]) == 0 {
				delete(model, string(keys[i]))
			} else {
				model[string(keys[i])] = values[i]
			}
		}
		want := geth.Hash()
		if got := mustHash(ours); got != want {
			t.Fatalf("batch %d (%d ops, %d keys): root %x, go-ethereum %x", b, n, len(model), got, want)
		}
		for range 8 {
			checkKey(t, ours, geth, gethProve, g.key(), [32]byte(want), secure)
		}
	}
	for k := range model {
		checkKey(t, ours, geth, gethProve, []byte(k), mustHash(ours), secure)
	}
	checkIteration(t, ours, model, secure)
}

// checkKey compares Get and Prove for one key, and verifies each side's
// proof with both sides' verifiers (see checkProbe; proofs on the empty
// trie must fail everywhere alike).
func checkKey(t *testing.T, ours *mpt.Trie, geth gethTrie, gethProve func([]byte) ([][]byte, error), key []byte, root [32]byte, secure bool) {
	t.Helper()
	checkProbe(t, ours, geth, gethProve, key, root, secure)
}

// checkIteration compares a full iteration with the sorted model.
func checkIteration(t *testing.T, ours *mpt.Trie, model map[string][]byte, secure bool) {
	t.Helper()
	want := map[string][]byte{}
	for k, v := range model {
		if secure {
			h := mpt.HashKey([]byte(k))
			k = string(h[:])
		}
		want[k] = v
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	})
	it := ours.NewIterator(nil)
	for i := 0; it.Next(); i++ {
		if i >= len(keys) || string(it.Key()) != keys[i] || !bytes.Equal(it.Value(), want[keys[i]]) {
			t.Fatalf("iteration item %d: %x", i, it.Key())
		}
	}
}

// TestStackTrie checks sorted bulk inserts against go-ethereum's
// StackTrie: fixed-length keys (StackTrie needs keys that are not
// prefixes of each other), plain and as a secure trie's hashed keys.
func TestStackTrie(t *testing.T) {
	for _, e := range engines {
		t.Run(string(e.Engine), func(t *testing.T) { stackTrie(t, e) })
	}
}

func stackTrie(t *testing.T, e mpt.Options) {
	for _, tc := range []struct {
		n, keyLen int
		secure    bool
	}{
		{1, 20, false}, {2, 1, false}, {300, 2, false}, {2000, 20, false},
		{1, 8, true}, {1000, 8, true}, {5000, 3, true},
	} {
		t.Run(fmt.Sprintf("n=%d/len=%d/secure=%v", tc.n, tc.keyLen, tc.secure), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.keyLen)))
			pairs := map[string][]byte{}
			for len(pairs) < tc.n {
				k := make([]byte, tc.keyLen)
				for i := range k {
					k[i] = byte(r.Uint32())
				}
				v := value(r)
				if len(v) == 0 {
					v = []byte{1}
				}
				pairs[string(k)] = v
			}
			ours := newOurs(t, e, tc.secure)
			sorted := map[string][]byte{}
			var batchK, batchV [][]byte
			for k, v := range pairs {
				batchK, batchV = append(batchK, []byte(k)), append(batchV, v)
				if tc.secure {
					h := mpt.HashKey([]byte(k))
					k = string(h[:])
				}
				sorted[k] = v
			}
			// Half one pair at a time, half in one batch.
			half := len(batchK) / 2
			for i := range half {
				if err := ours.Update(batchK[i:i+1], batchV[i:i+1]); err != nil {
					t.Fatal(err)
				}
			}
			if err := ours.Update(batchK[half:], batchV[half:]); err != nil {
				t.Fatal(err)
			}
			st := trie.NewStackTrie(nil)
			keys := slices.Sorted(func(yield func(string) bool) {
				for k := range sorted {
					if !yield(k) {
						return
					}
				}
			})
			for _, k := range keys {
				if err := st.Update([]byte(k), sorted[k]); err != nil {
					t.Fatal(err)
				}
			}
			if got, want := mustHash(ours), st.Hash(); got != want {
				t.Fatalf("root %x, StackTrie %x", got, want)
			}
		})
	}
}

// vectors are the fixed tries whose roots mpt/vectors_test.go hard-codes;
// TestVectors checks both tables agree with go-ethereum (run with -v to
// print the roots).
var vectors = []struct {
	name   string
	secure bool
	ops    [][2]string // key, value; an empty value deletes
}{
	{"one short leaf", false, [][2]string{{"a", "b"}}},
	{"doe dog dogglesworth", false, [][2]string{{"doe", "reindeer"}, {"dog", "puppy"}, {"dogglesworth", "cat"}}},
	{"long value", false, [][2]string{{"A", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}}},
	{"deletes", false, [][2]string{{"do", "verb"}, {"ether", "wookiedoo"}, {"horse", "stallion"}, {"shaman", "horse"},
		{"doge", "coin"}, {"ether", ""}, {"dog", "puppy"}, {"shaman", ""}}},
	{"empty key and prefixes", false, [][2]string{{"", "root"}, {"a", "1"}, {"ab", "2"}, {"abc", "3"}, {"b", "4"}}},
	{"collapse to value slot", false, [][2]string{{"ab", "x"}, {"abc", "y"}, {"abd", "z"}, {"abc", ""}, {"abd", ""}}},
	{"secure doe dog", true, [][2]string{{"doe", "reindeer"}, {"dog", "puppy"}, {"dogglesworth", "cat"}}},
	{"secure deletes", true, [][2]string{{"do", "verb"}, {"ether", "wookiedoo"}, {"horse", "stallion"}, {"ether", ""}}},
}

func TestVectors(t *testing.T) {
	for _, e := range engines {
		t.Run(string(e.Engine), func(t *testing.T) { testVectors(t, e) })
	}
}

func testVectors(t *testing.T, e mpt.Options) {
	for _, v := range vectors {
		geth, _ := newGeth(t, v.secure)
		ours := newOurs(t, e, v.secure)
		for _, op := range v.ops {
			geth.MustUpdate([]byte(op[0]), []byte(op[1]))
			if err := ours.Update([][]byte{[]byte(op[0])}, [][]byte{[]byte(op[1])}); err != nil {
				t.Fatal(err)
			}
		}
		want := geth.Hash()
		t.Logf("%-24s %x", v.name, want)
		if got := mustHash(ours); got != want {
			t.Errorf("%s: root %x, go-ethereum %x", v.name, got, want)
		}
	}
}

// TestLongKeysCPU checks plain keys longer than the GPU engine takes
// (mpt.MaxGPUKeyBytes) on the CPU engines, sharing long prefixes, against
// go-ethereum's root after every batch; the GPU engine must refuse them
// with mpt.ErrKeyTooLong and keep its root.
func TestLongKeysCPU(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	base := bytes.Repeat([]byte{0x5a}, maxKeyBytes+40)
	for _, e := range engines {
		t.Run(string(e.Engine), func(t *testing.T) {
			ours := newOurs(t, e, false)
			geth, _ := newGeth(t, false)
			for b := range 5 {
				var keys, values [][]byte
				for range 50 {
					k := append(slices.Clone(base[:r.IntN(len(base))]), byte(r.Uint32()), byte(r.Uint32()))
					v := value(r)
					keys, values = append(keys, k), append(values, v)
				}
				before := mustHash(ours)
				err := ours.Update(keys, values)
				if e.Engine == mpt.EngineGPU {
					if !errors.Is(err, mpt.ErrKeyTooLong) || mustHash(ours) != before {
						t.Fatalf("gpu engine: got %v and root change %v, want ErrKeyTooLong and no change", err, mustHash(ours) != before)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				for i, k := range keys {
					geth.MustUpdate(k, values[i])
				}
				if got, want := mustHash(ours), geth.Hash(); got != [32]byte(want) {
					t.Fatalf("batch %d: root %x, geth %x", b, got, want)
				}
			}
		})
	}
}

// mustHash is ours.Hash for the tests, where a failure fails the test (it
// panics).
func mustHash(ours *mpt.Trie) [32]byte {
	h, err := ours.Hash()
	if err != nil {
		panic(err)
	}
	return h
}

// mustGet is ours.Get for the tests, where a failure fails the test (it
// panics).
func mustGet(ours *mpt.Trie, key []byte) ([]byte, bool) {
	v, ok, err := ours.Get(key)
	if err != nil {
		panic(err)
	}
	return v, ok
}
