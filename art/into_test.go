package art

import (
	"strings"
	"testing"
)

// TestIntoReusedAnswers runs GetInto and UpdateInto on every target with
// answers that hold stale values from the call before (absent keys must
// read 0 and false), and checks that answers of the wrong length are
// refused with an error naming the lengths, the tree unchanged.
func TestIntoReusedAnswers(t *testing.T) {
	eachTarget(t, func(t *testing.T, tr *Tree) {
		keys := [][]byte{[]byte("a"), []byte("ab"), []byte(strings.Repeat("z", 100))}
		if err := tr.Insert(keys, []uint64{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		q := [][]byte{[]byte("ab"), []byte(""), []byte("zz"), keys[2]}
		vals, found := []uint64{9, 9, 9, 9}, []bool{false, true, true, false}
		if err := tr.GetInto(q, vals, found); err != nil {
			t.Fatal(err)
		}
		want, wantF := []uint64{2, 0, 0, 3}, []bool{true, false, false, true}
		for i := range q {
			if vals[i] != want[i] || found[i] != wantF[i] {
				t.Fatalf("GetInto: key %q: %d/%v, want %d/%v", q[i], vals[i], found[i], want[i], wantF[i])
			}
		}
		if err := tr.UpdateInto(q, []uint64{20, 7, 7, 30}, found); err != nil {
			t.Fatal(err)
		}
		if err := tr.GetInto(q, vals, found); err != nil {
			t.Fatal(err)
		}
		want = []uint64{20, 0, 0, 30}
		for i := range q {
			if vals[i] != want[i] || found[i] != wantF[i] {
				t.Fatalf("after UpdateInto: key %q: %d/%v, want %d/%v", q[i], vals[i], found[i], want[i], wantF[i])
			}
		}
		if tr.Len() != 3 {
			t.Fatalf("UpdateInto inserted absent keys: %d keys, want 3", tr.Len())
		}
		for _, c := range []struct {
			name string
			call func() error
			want string
		}{
			{"GetInto, short values", func() error { return tr.GetInto(q, vals[:3], found) }, "art: lookup: 4 keys, 3 values, 4 found flags"},
			{"GetInto, short found", func() error { return tr.GetInto(q, vals, found[:1]) }, "art: lookup: 4 keys, 4 values, 1 found flags"},
			{"UpdateInto, short values", func() error { return tr.UpdateInto(q, vals[:2], found) }, "art: update: 4 keys, 2 values, 4 found flags"},
			{"UpdateInto, long found", func() error { return tr.UpdateInto(q, vals, append(found, true)) }, "art: update: 4 keys, 4 values, 5 found flags"},
		} {
			if err := c.call(); err == nil || err.Error() != c.want {
				t.Errorf("%s: %v, want %q", c.name, err, c.want)
			}
		}
		if err := tr.GetInto(q, vals, found); err != nil || vals[0] != 20 || vals[3] != 30 {
			t.Fatalf("after the refused calls: %v, %v", vals, err)
		}
	})
}
