package art

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/warpkv/warpkv/internal/enginetest"
)

type artCase = enginetest.Case[batch, *model]

// TestRandomSequences runs random batch sequences of the key
// shapes on both engines against the model.
func TestRandomSequences(t *testing.T) {
	long := func(r *rand.Rand) []byte { // three shared prefixes of 100 to 1200 bytes, then a short suffix
		p := []int{100, 500, 1200}[r.IntN(3)]
		k := bytes.Repeat([]byte{byte('p' + p%7)}, p)
		return append(k, randomBytes(r, 0, 12, []byte("xyz\x00\xff"))...)
	}
	nested := func(r *rand.Rand) []byte { return randomBytes(r, 0, 12, []byte("ab")) }
	edge := func(r *rand.Rand) []byte { return randomBytes(r, 0, 4, []byte{0, 0xff, 'a'}) }
	uniform := func(r *rand.Rand) []byte { return randomBytes(r, 4, 64, nil) }
	dense := func(r *rand.Rand) []byte { return []byte{byte(r.IntN(64))} }
	mostlyAbsent := mix{build: 2, insert: 30, update: 10, get: 10, del: 40, ranges: 4, desc: 2, prefix: 2}
	batches := 40
	if testing.Short() {
		batches = 12
	}
	enginetest.Run(t, suite(),
		artCase{Name: "uniform keys of 4 to 64 bytes", Batches: batches, Gen: randomBatches(uniform, 2000, defaultMix)},
		artCase{Name: "long shared prefixes", Batches: batches, Gen: randomBatches(long, 400, defaultMix)},
		artCase{Name: "keys that are prefixes of each other", Batches: batches, Gen: randomBatches(nested, 300, defaultMix)},
		artCase{Name: "empty key, 0x00 and 0xff bytes", Batches: batches, Gen: randomBatches(edge, 60, defaultMix)},
		artCase{Name: "duplicates in a batch", Batches: batches, Gen: randomBatches(dense, 500, defaultMix)},
		artCase{Name: "deletes of absent keys", Batches: batches, Gen: randomBatches(uniform, 500, mostlyAbsent)},
		artCase{Name: "mixed lengths around the leaf classes", Batches: batches, Gen: randomBatches(func(r *rand.Rand) []byte {
			return randomBytes(r, []int{0, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40}[r.IntN(11)], 40, []byte("mn"))
		}, 300, defaultMix)},
	)
}

// TestDeleteEverythingThenRebuild empties the tree by deletes, then fills
// it again by inserts and by a build, in random key sets.
func TestDeleteEverythingThenRebuild(t *testing.T) {
	gen := func(r *rand.Rand, step int, m *model) batch {
		switch step % 4 {
		case 0, 2:
			n := 1 + r.IntN(3000)
			keys, vals := make([][]byte, n), make([]uint64, n)
			for i := range keys {
				keys[i], vals[i] = randomBytes(r, 0, 20, []byte("abcd\x00")), r.Uint64()
			}
			if step%8 == 2 {
				return batch{op: tBuild, keys: keys, vals: vals}
			}
			return batch{op: tInsert, keys: keys, vals: vals}
		}
		keys := [][]byte{[]byte("absent key")}
		for _, k := range m.m.Keys() {
			keys = append(keys, []byte(k))
		}
		r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		return batch{op: tDelete, keys: keys}
	}
	enginetest.Run(t, suite(), artCase{Name: "delete everything then rebuild", Batches: 16, Gen: gen})
}

// TestNodeKindBoundaries grows a node's children one by one past 4, 16 and
// 48 and shrinks them back, under a long prefix and at the root, and moves
// the count across each boundary in both directions several times.
func TestNodeKindBoundaries(t *testing.T) {
	for _, prefix := range []string{"", "node-with-a-prefix-longer-than-eight-bytes/"} {
		var seq []batch
		key := func(b int) []byte { return append([]byte(prefix), byte(b), 'x') }
		one := func(op opKind, b int) batch {
			return batch{op: op, keys: [][]byte{key(b)}, vals: []uint64{uint64(b)}}
		}
		seq = append(seq, one(tInsert, 0))
		for b := 1; b <= 60; b++ {
			seq = append(seq, one(tInsert, b*4))
		}
		for b := 60; b >= 1; b-- {
			seq = append(seq, one(tDelete, b*4))
		}
		for _, edge := range []int{4, 16, 48} {
			keys, vals := [][]byte{}, []uint64{}
			for b := range edge {
				keys, vals = append(keys, key(b)), append(vals, uint64(b))
			}
			seq = append(seq, batch{op: tBuild, keys: keys, vals: vals})
			for range 3 {
				seq = append(seq, one(tInsert, 200), one(tDelete, 200))
			}
			seq = append(seq, one(tInsert, 200), one(tInsert, 201), batch{op: tDelete, keys: [][]byte{key(200), key(201), key(0)}})
			seq = append(seq, batch{op: tRangesDesc, qs: []Query{{}}}, batch{op: tPrefix, pfx: [][]byte{[]byte(prefix)}})
		}
		name := "root"
		if prefix != "" {
			name = "under a long prefix"
		}
		enginetest.Run(t, suite(), artCase{Name: name, Batches: len(seq), Gen: func(_ *rand.Rand, step int, _ *model) batch { return seq[step] }})
	}
}

// TestRegressions replays the situations ART libraries got wrong: a key
// inserted after keys that extend it, null byte keys, reverse iteration
// across an N48, prefix searches that missed keys.
func TestRegressions(t *testing.T) {
	ks := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, x := range s {
			out[i] = []byte(x)
		}
		return out
	}
	vs := func(n int) []uint64 {
		out := make([]uint64, n)
		for i := range out {
			out[i] = uint64(i + 1)
		}
		return out
	}
	var n48 []string
	for b := range 30 {
		n48 = append(n48, fmt.Sprintf("n48%c", 'A'+b), fmt.Sprintf("n48%cz", 'A'+b))
	}
	seq := []batch{
		{op: tInsert, keys: ks("abc1", "abc2", "abc3"), vals: vs(3)},
		{op: tInsert, keys: ks("abc"), vals: vs(1)},
		{op: tInsert, keys: ks("ab", "a", ""), vals: vs(3)},
		{op: tGet, keys: ks("abc", "ab", "a", "", "abc1", "abc4", "abcd")},
		{op: tInsert, keys: ks("\x00", "\x00\x00", "a\x00", "a\x00\x00", "\x00a"), vals: vs(5)},
		{op: tGet, keys: ks("\x00", "\x00\x00", "\x00\x00\x00", "a\x00", "a")},
		{op: tInsert, keys: ks(n48...), vals: vs(len(n48))},
		{op: tRangesDesc, qs: []Query{{}, {Lo: []byte("n48"), Hi: []byte("n48Q")}, {Hi: []byte("n48M")}}},
		{op: tRanges, qs: []Query{{Lo: []byte("n48C"), Hi: []byte("n48Kz")}}, limit: 5},
		{op: tPrefix, pfx: ks("abc", "ab", "a", "", "n48", "n48B", "n48Bz", "n48Bzz", "\x00", "zzz")},
		{op: tDelete, keys: ks("ab", "abc1", "abc")},
		{op: tPrefix, pfx: ks("abc", "ab", "a")},
		{op: tDelete, keys: ks(n48[:40]...)},
		{op: tRangesDesc, qs: []Query{{}}},
		{op: tPrefix, pfx: ks("n48")},
	}
	enginetest.Run(t, suite(), artCase{Name: "ART library regressions", Batches: len(seq), Gen: func(_ *rand.Rand, step int, _ *model) batch { return seq[step] }})
}

// wordsFile is Debian's wamerican word list; $WARPKV_WORDS names another
// copy (a GPU machine without the package).
const wordsFile = "/usr/share/dict/american-english"

// TestWords loads the wamerican word list in batches and queries it.
func TestWords(t *testing.T) {
	wordsFile := wordsFile
	if p := os.Getenv("WARPKV_WORDS"); p != "" {
		wordsFile = p
	}
	f, err := os.Open(wordsFile)
	if err != nil {
		t.Skipf("no word list (install Debian's wamerican): %v", err)
	}
	defer f.Close()
	var words [][]byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		words = append(words, append([]byte(nil), sc.Bytes()...))
	}
	if len(words) < 1000 {
		t.Fatalf("%s holds only %d words", wordsFile, len(words))
	}
	pick := func(r *rand.Rand) []byte { return words[r.IntN(len(words))] }
	batches := 30
	if testing.Short() {
		batches = 8
	}
	enginetest.Run(t, suite(), artCase{Name: "wamerican words", Batches: batches, Gen: func(r *rand.Rand, step int, m *model) batch {
		if step == 0 {
			vals := make([]uint64, len(words))
			for i := range vals {
				vals[i] = uint64(i)
			}
			return batch{op: tInsert, keys: words, vals: vals}
		}
		return randomBatches(pick, 5000, defaultMix)(r, step, m)
	}})
}

// TestUUIDs runs batches of UUID strings (36 bytes: the LV class).
func TestUUIDs(t *testing.T) {
	uuid := func(r *rand.Rand) []byte {
		var b [16]byte
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		return fmt.Appendf(nil, "%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
	}
	batches := 20
	if testing.Short() {
		batches = 6
	}
	enginetest.Run(t, suite(), artCase{Name: "UUID strings", Batches: batches, Gen: randomBatches(uuid, 20000, defaultMix)})
}

// TestRootWidths grows a tree of random 8-byte keys past the root widths'
// thresholds (rebuilds with wider tables) and shrinks it back.
func TestRootWidths(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	gen := func(r *rand.Rand, step int, m *model) batch {
		if step < 6 {
			n := 2000 << step
			keys, vals := make([][]byte, n), make([]uint64, n)
			for i := range keys {
				keys[i], vals[i] = randomBytes(r, 8, 8, nil), r.Uint64()
			}
			return batch{op: tInsert, keys: keys, vals: vals}
		}
		if step%3 == 0 {
			return randomBatches(func(r *rand.Rand) []byte { return randomBytes(r, 0, 9, nil) }, 3000, defaultMix)(r, step, m)
		}
		all := m.m.Keys()
		keys := make([][]byte, 0, len(all)/2)
		for i, k := range all {
			if i%2 == 0 {
				keys = append(keys, []byte(k))
			}
		}
		return batch{op: tDelete, keys: keys}
	}
	enginetest.Run(t, suite(), artCase{Name: "growing and shrinking root widths", Batches: 16, Gen: gen})
}

// TestDumpQueriesCoverEveryKey checks that the rebuild's split queries
// tile the key space: every key in exactly one, in order.
func TestDumpQueriesCoverEveryKey(t *testing.T) {
	for _, n := range []int{10, 1 << 20} {
		qs := dumpQueries(n)
		for _, k := range [][]byte{nil, {0}, {0, 0}, {0xff}, {0xff, 0xff, 0xff}, {1, 2, 3}, {7}} {
			hits := 0
			for _, q := range qs {
				if bytes.Compare(k, q.Lo) >= 0 && (q.Hi == nil || bytes.Compare(k, q.Hi) < 0) {
					hits++
				}
			}
			if hits != 1 {
				t.Fatalf("n %d: key %x in %d queries", n, k, hits)
			}
		}
		for i := 1; i < len(qs); i++ {
			if !bytes.Equal(qs[i].Lo, qs[i-1].Hi) {
				t.Fatalf("query %d does not start where %d ends", i, i-1)
			}
		}
	}
}

// TestLookupStaged checks lookups from a staging buffer against Get, on
// both engines.
func TestLookupStaged(t *testing.T) {
	eachTarget(t, func(t *testing.T, tr *Tree) {
		keys := [][]byte{[]byte(""), []byte("a"), []byte("ab"), bytes.Repeat([]byte("z"), 100)}
		if err := tr.Insert(keys[1:], []uint64{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		st, err := tr.NewStaging(8, 256)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Free()
		q := [][]byte{[]byte("ab"), []byte(""), []byte("zz"), keys[3]}
		st.Offs[0] = 0
		o := 0
		for i, k := range q {
			o += copy(st.Data[o:], k)
			st.Offs[i+1] = uint32(o)
		}
		if err := tr.LookupStaged(st, len(q)); err != nil {
			t.Fatal(err)
		}
		want := []uint64{2, 0, 0, 3}
		wantF := []uint8{1, 0, 0, 1}
		for i := range q {
			if st.Values[i] != want[i] || st.Found[i] != wantF[i] {
				t.Fatalf("key %q: %d/%d, want %d/%d", q[i], st.Values[i], st.Found[i], want[i], wantF[i])
			}
		}
		if err := tr.LookupStaged(st, 9); err == nil {
			t.Fatal("9 keys in a staging of 8 accepted")
		}
	})
}
