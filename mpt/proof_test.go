package mpt

import (
	"bytes"
	"errors"
	"testing"
)

func sampleTrie(t *testing.T, e testEngine) *Trie {
	t.Helper()
	tr := e.new(Options{})
	keys := [][]byte{[]byte("doe"), []byte("dog"), []byte("dogglesworth"), []byte("horse"), []byte("h")}
	values := [][]byte{[]byte("reindeer"), []byte("puppy"), bytes.Repeat([]byte("cat"), 20), []byte("stallion"), {0x7f}}
	if err := tr.Update(keys, values); err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestProofRoundTrip(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		tr := sampleTrie(t, e)
		root := tr.hash()
		tests := []struct {
			key  string
			want []byte // nil: absent
		}{
			{"doe", []byte("reindeer")},
			{"dog", []byte("puppy")},
			{"dogglesworth", bytes.Repeat([]byte("cat"), 20)},
			{"horse", []byte("stallion")},
			{"h", []byte{0x7f}},
			{"do", nil},     // ends inside a branch
			{"dogg", nil},   // ends inside a short node
			{"dogx", nil},   // diverges in a branch
			{"zebra", nil},  // diverges at the root
			{"horses", nil}, // extends a leaf
			{"", nil},       // the empty key
			{"doggy", nil},  // diverges inside a leaf path
			{"hors", nil},   // prefix of a leaf
			{"dogglesworthy", nil},
		}
		for _, tc := range tests {
			proof, err := tr.Prove([]byte(tc.key))
			if err != nil {
				t.Fatalf("Prove(%q): %v", tc.key, err)
			}
			if len(proof) == 0 {
				t.Fatalf("Prove(%q): empty proof", tc.key)
			}
			got, err := VerifyProof(root, []byte(tc.key), proof)
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Errorf("VerifyProof(%q) = %q, %v; want %q", tc.key, got, err, tc.want)
			}
			// Order does not matter; proof nodes are found by hash.
			rev := append([][]byte(nil), proof...)
			for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
				rev[i], rev[j] = rev[j], rev[i]
			}
			if got, err := VerifyProof(root, []byte(tc.key), rev); err != nil || !bytes.Equal(got, tc.want) {
				t.Errorf("reversed proof of %q: %q, %v", tc.key, got, err)
			}
		}
	})
}

func TestProofRejects(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		tr := sampleTrie(t, e)
		root := tr.hash()
		proof, err := tr.Prove([]byte("dogglesworth"))
		if err != nil {
			t.Fatal(err)
		}
		tamper := func(i, at int) [][]byte {
			p := make([][]byte, len(proof))
			for j := range proof {
				p[j] = bytes.Clone(proof[j])
			}
			p[i][at] ^= 1
			return p
		}
		otherRoot := root
		otherRoot[0] ^= 1
		tests := []struct {
			name  string
			root  [32]byte
			proof [][]byte
		}{
			{"no nodes", root, nil},
			{"wrong root", otherRoot, proof},
			{"missing last node", root, proof[:len(proof)-1]},
			{"tampered root node", root, tamper(0, len(proof[0])/2)},
			{"tampered last node", root, tamper(len(proof)-1, len(proof[len(proof)-1])-1)},
		}
		for _, tc := range tests {
			if v, err := VerifyProof(tc.root, []byte("dogglesworth"), tc.proof); !errors.Is(err, ErrBadProof) {
				t.Errorf("%s: got %q, %v; want ErrBadProof", tc.name, v, err)
			}
		}
	})
}

func TestProofEmptyTrie(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		tr := e.new(Options{})
		proof, err := tr.Prove([]byte("x"))
		if err != nil || len(proof) != 0 {
			t.Fatalf("Prove on an empty trie: %x, %v", proof, err)
		}
		if _, err := VerifyProof(EmptyRoot, []byte("x"), proof); !errors.Is(err, ErrBadProof) {
			t.Fatalf("VerifyProof on the empty root: %v (go-ethereum rejects it too)", err)
		}
	})
}

func TestDecodeNodeRejects(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		tests := []struct {
			name string
			enc  []byte
		}{
			{"empty", nil},
			{"string", []byte{0x83, 1, 2, 3}},
			{"three items", []byte{0xc3, 1, 2, 3}},
			{"trailing bytes", []byte{0xc2, 0x20, 0x01, 0x00}},
			{"non-canonical byte", []byte{0xc3, 0x20, 0x81, 0x01}},
			{"bad flag", []byte{0xc2, 0x40, 0x01}},
			{"truncated", []byte{0xc5, 0x20, 0x01}},
			{"bad reference size", []byte{0xc4, 0x00, 0x82, 1, 2}},
		}
		for _, tc := range tests {
			if n, err := decodeNode(tc.enc); err == nil {
				t.Errorf("%s: decoded %#v", tc.name, n)
			}
		}
	})
}
