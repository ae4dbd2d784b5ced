package mpt

import (
	"bytes"
	"fmt"
	"testing"
)

func TestIteratorStart(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		tr := e.new(Options{})
		all := []string{"", "a", "ab", "abc", "abd", "b", "ba", "\xff"}
		var keys, values [][]byte
		for _, k := range all {
			keys, values = append(keys, []byte(k)), append(values, []byte("v"+k))
		}
		if err := tr.Update(keys, values); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			start string
			want  []string
		}{
			{"", all},
			{"a", all[1:]},
			{"aa", all[2:]},
			{"ab", all[2:]},
			{"abc\x00", all[4:]},
			{"abe", all[5:]},
			{"c", all[7:]},
			{"\xff\x00", nil},
		}
		for _, tc := range tests {
			var got []string
			it := tr.NewIterator([]byte(tc.start))
			for it.Next() {
				if !bytes.Equal(it.Value(), []byte("v"+string(it.Key()))) {
					t.Fatalf("value of %q: %q", it.Key(), it.Value())
				}
				got = append(got, string(it.Key()))
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
				t.Errorf("start %q: %q, want %q", tc.start, got, tc.want)
			}
		}
		if e.new(Options{}).NewIterator(nil).Next() {
			t.Error("empty trie yields a pair")
		}
	})
}
