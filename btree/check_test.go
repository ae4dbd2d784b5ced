package btree

import "testing"

// TestCheckCatches corrupts a valid tree in one way each and expects Check
// to report it.
func TestCheckCatches(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func(tr *Tree)
	}{
		{"unsorted leaf", func(tr *Tree) { k := tr.st.keys(0); k[0], k[1] = k[1], k[0] }},
		{"stale max key", func(tr *Tree) { tr.st.keys(tr.root)[0]++ }},
		{"wrong parent", func(tr *Tree) { tr.st.setParent(1, 0) }},
		{"broken chain", func(tr *Tree) { tr.st.setNext(0, 2) }},
		{"broken prev", func(tr *Tree) { tr.st.setPrev(2, 0) }},
		{"wrong Len", func(tr *Tree) { tr.n++ }},
		{"overfull", func(tr *Tree) { tr.st.setCount(0, tr.opt.order+1) }},
		{"lost free node", func(tr *Tree) { tr.freed++ }},
	}
	for _, c := range cases {
		tr, err := New(Options{Order: 8})
		if err != nil {
			t.Fatal(err)
		}
		k, v := benchKeys(1000, 3)
		if err := tr.Build(k, v); err != nil {
			t.Fatal(err)
		}
		if err := tr.Check(); err != nil {
			t.Fatalf("%s: before: %v", c.name, err)
		}
		c.corrupt(tr)
		if err := tr.Check(); err == nil {
			t.Fatalf("%s: Check found nothing", c.name)
		}
	}
}
