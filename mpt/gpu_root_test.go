package mpt

import (
	"encoding/binary"
	"strings"
	"testing"
)

// TestCheckRootRecord checks the GPU engine's test of the root record it
// reads back after every batch (runs without a GPU): a root that is free,
// dirty, unhashed, a child, or not canonical (an empty or one-entry
// branch: what a batch that cancels out on an empty trie used to leave)
// is refused with a reason, a canonical hashed root is accepted.
func TestCheckRootRecord(t *testing.T) {
	rec := func(kind uint32, edit func(put func(off int, v uint32))) []byte {
		r := make([]byte, nodeBytes)
		put := func(off int, v uint32) { binary.LittleEndian.PutUint32(r[off:], v) }
		put(nodeKindOffset, kind)
		put(nodeReflenOffset, 32)
		if edit != nil {
			edit(put)
		}
		return r
	}
	twoChildren := func(put func(int, uint32)) { put(nodeChildOffset+4*3, 7); put(nodeChildOffset+4*9, 8) }
	for _, tc := range []struct {
		name string
		rec  []byte
		want string // "" accepts
	}{
		{"branch with two children", rec(kindBranch, twoChildren), ""},
		{"branch with a child and a value", rec(kindBranch, func(put func(int, uint32)) { put(nodeChildOffset, 5); put(nodeValOffset, 2) }), ""},
		{"extension", rec(kindExt, func(put func(int, uint32)) { put(nodePlenOffset, 3); put(nodeChildOffset, 4) }), ""},
		{"leaf of empty path", rec(kindLeaf, func(put func(int, uint32)) { put(nodeValOffset, 1) }), ""},
		{"empty branch", rec(kindBranch, nil), "0 entries"},
		{"empty branch never hashed", rec(kindBranch, func(put func(int, uint32)) { put(nodeReflenOffset, 0) }), "reference of 0 bytes"},
		{"one-child branch", rec(kindBranch, func(put func(int, uint32)) { put(nodeChildOffset+4*2, 9) }), "1 entries"},
		{"free node", rec(kindFree, nil), "free"},
		{"dirty", rec(kindBranch, func(put func(int, uint32)) { twoChildren(put); put(nodeFlagsOffset, flagDirty) }), "dirty"},
		{"inlined reference", rec(kindLeaf, func(put func(int, uint32)) { put(nodeValOffset, 1); put(nodeReflenOffset, 12) }), "12 bytes"},
		{"has a parent", rec(kindBranch, func(put func(int, uint32)) { twoChildren(put); put(nodeParentOffset, 3) }), "parent 3"},
		{"extension without path", rec(kindExt, func(put func(int, uint32)) { put(nodeChildOffset, 4) }), "0-nibble path"},
		{"leaf without value", rec(kindLeaf, func(put func(int, uint32)) { put(nodePlenOffset, 4) }), "without value"},
		{"unknown kind", rec(9, nil), "kind 9"},
	} {
		err := checkRootRecord(tc.rec)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}
