package mpt

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestUpdateGetDelete(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		type op struct{ key, value string } // empty value deletes
		tests := []struct {
			name string
			ops  []op
			want map[string]string
		}{
			{"empty", nil, map[string]string{}},
			{"insert", []op{{"k", "v"}}, map[string]string{"k": "v"}},
			{"replace", []op{{"k", "v"}, {"k", "w"}}, map[string]string{"k": "w"}},
			{"last wins", []op{{"k", "v"}, {"k", ""}, {"k", "x"}}, map[string]string{"k": "x"}},
			{"delete wins", []op{{"k", "v"}, {"k", "x"}, {"k", ""}}, map[string]string{}},
			{"delete absent", []op{{"a", "1"}, {"b", ""}, {"ab", ""}, {"", ""}}, map[string]string{"a": "1"}},
			{"prefix keys", []op{{"", "0"}, {"a", "1"}, {"ab", "2"}}, map[string]string{"": "0", "a": "1", "ab": "2"}},
			{"remove middle prefix", []op{{"", "0"}, {"a", "1"}, {"ab", "2"}, {"a", ""}}, map[string]string{"": "0", "ab": "2"}},
			{"collapse to extension", []op{{"\x12\x34", "a"}, {"\x12\x35", "b"}, {"\x12\x44", "c"}, {"\x12\x44", ""}},
				map[string]string{"\x12\x34": "a", "\x12\x35": "b"}},
			{"long values", []op{{"x", string(bytes.Repeat([]byte{7}, 100))}, {"y", string(bytes.Repeat([]byte{8}, 40))}},
				map[string]string{"x": string(bytes.Repeat([]byte{7}, 100)), "y": string(bytes.Repeat([]byte{8}, 40))}},
		}
		for _, tc := range tests {
			for _, secure := range []bool{false, true} {
				tr := e.new(Options{Secure: secure})
				var keys, values [][]byte
				for _, o := range tc.ops {
					keys, values = append(keys, []byte(o.key)), append(values, []byte(o.value))
				}
				if err := tr.Update(keys, values); err != nil {
					t.Fatalf("%s: %v", tc.name, err)
				}
				model := map[string][]byte{}
				for k, v := range tc.want {
					model[k] = []byte(v)
				}
				checkAgainstModel(t, tr, model)
			}
		}
	})
}

func TestUpdateErrors(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		tr := e.new(Options{})
		if err := tr.Update([][]byte{[]byte("a")}, [][]byte{[]byte("1")}); err != nil {
			t.Fatal(err)
		}
		before := tr.hash()
		if err := tr.Update([][]byte{[]byte("b")}, nil); err == nil {
			t.Fatal("mismatched lengths: no error")
		}
		if tr.hash() != before {
			t.Fatal("a failed batch changed the trie")
		}
	})
}

func TestValuesAreCopied(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		tr := e.new(Options{})
		v := []byte("value")
		if err := tr.Update([][]byte{[]byte("k")}, [][]byte{v}); err != nil {
			t.Fatal(err)
		}
		v[0] = 'X'
		got, _ := tr.get([]byte("k"))
		got[1] = 'Y'
		if again, _ := tr.get([]byte("k")); string(again) != "value" {
			t.Fatalf("stored value changed to %q", again)
		}
	})
}

func TestDeleteMethod(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		tr := e.new(Options{})
		keys := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
		if err := tr.Update(keys, [][]byte{{1}, {2}, {3}}); err != nil {
			t.Fatal(err)
		}
		tr.Delete(keys[:2])
		checkAgainstModel(t, tr, map[string][]byte{"c": {3}})
	})
}

// TestHashCache checks that Hash re-encodes only the nodes changed since
// the previous Hash.
func TestHashCache(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		tr := e.new(Options{Secure: true})
		r := rand.New(rand.NewPCG(1, 2))
		const n = 4096
		keys, values := make([][]byte, n), make([][]byte, n)
		for i := range keys {
			keys[i], values[i] = []byte{byte(i), byte(i >> 8)}, bytes.Repeat([]byte{byte(r.Uint32())}, 40)
		}
		if err := tr.Update(keys, values); err != nil {
			t.Fatal(err)
		}
		tr.Hash()
		first := tr.cpu.hasher.nodes
		tr.Hash()
		if tr.cpu.hasher.nodes != first {
			t.Fatalf("clean Hash encoded %d nodes", tr.cpu.hasher.nodes-first)
		}
		if err := tr.Update(keys[:1], [][]byte{[]byte("new")}); err != nil {
			t.Fatal(err)
		}
		tr.Hash()
		// One path: about log16(4096) = 3 branches plus a leaf.
		if d := tr.cpu.hasher.nodes - first; d < 2 || d > 6 {
			t.Fatalf("one update re-encoded %d nodes", d)
		}
		// Rewriting the same value leaves the trie clean.
		mark := tr.cpu.hasher.nodes
		if err := tr.Update(keys[:1], [][]byte{[]byte("new")}); err != nil {
			t.Fatal(err)
		}
		tr.Hash()
		if tr.cpu.hasher.nodes != mark {
			t.Fatalf("an unchanged value re-encoded %d nodes", tr.cpu.hasher.nodes-mark)
		}
	})
}
