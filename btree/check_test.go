package btree

import "testing"

// TestCheckCatches corrupts a valid tree in one way each and expects Check
// to report it.
func TestCheckCatches(t *testing.T) {
	cases := []struct {
		name    string
		corrupt func(tr *cpuTree)
	}{
		{"unsorted leaf", func(tr *cpuTree) { k := tr.st.keys(0); k[0], k[1] = k[1], k[0] }},
		{"stale max key", func(tr *cpuTree) { tr.st.keys(tr.root)[0]++ }},
		{"wrong parent", func(tr *cpuTree) { tr.st.setParent(1, 0) }},
		{"broken chain", func(tr *cpuTree) { tr.st.setNext(0, 2) }},
		{"broken prev", func(tr *cpuTree) { tr.st.setPrev(2, 0) }},
		{"wrong Len", func(tr *cpuTree) { tr.n++ }},
		{"overfull", func(tr *cpuTree) { tr.st.setCount(0, tr.opt.order+1) }},
		{"lost free node", func(tr *cpuTree) { tr.freed++ }},
	}
	for _, c := range cases {
		tr, err := Open(Options{Order: 8, Device: "cpu"})
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
		c.corrupt(tr.e.(*cpuTree))
		if err := tr.Check(); err == nil {
			t.Fatalf("%s: Check found nothing", c.name)
		}
	}
}
