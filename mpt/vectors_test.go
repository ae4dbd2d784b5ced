package mpt

import (
	"encoding/hex"
	"testing"
)

// vectors are small fixed tries; their roots come from go-ethereum
// v1.17.10 (compat's TestVectors checks the same table against it).
var vectors = []struct {
	name   string
	secure bool
	ops    [][2]string // key, value; an empty value deletes
	root   string
}{
	{"empty", false, nil, "56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"},
	{"empty secure", true, nil, "56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"},
	{"one short leaf", false, [][2]string{{"a", "b"}},
		"09ca68268104f67d9da9c8514ebdd8c98c6667aba87016f8602a1fbefb575216"},
	{"doe dog dogglesworth", false, [][2]string{{"doe", "reindeer"}, {"dog", "puppy"}, {"dogglesworth", "cat"}},
		"8aad789dff2f538bca5d8ea56e8abe10f4c7ba3a5dea95fea4cd6e7c3a1168d3"},
	{"long value", false, [][2]string{{"A", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}},
		"fa8c7a415b27f2c1f63e103f311a6691e34704f4f3e4390d663f049a375736e9"},
	{"deletes", false, [][2]string{{"do", "verb"}, {"ether", "wookiedoo"}, {"horse", "stallion"}, {"shaman", "horse"},
		{"doge", "coin"}, {"ether", ""}, {"dog", "puppy"}, {"shaman", ""}},
		"5991bb8c6514148a29db676a14ac506cd2cd5775ace63c30a4fe457715e9ac84"},
	{"empty key and prefixes", false, [][2]string{{"", "root"}, {"a", "1"}, {"ab", "2"}, {"abc", "3"}, {"b", "4"}},
		"bea4d8ad45f21f5c8d7403132a41b424b049f5471ec1e194d22f23dcab518ba2"},
	{"collapse to value slot", false, [][2]string{{"ab", "x"}, {"abc", "y"}, {"abd", "z"}, {"abc", ""}, {"abd", ""}},
		"cb68931c498783174507f9afa75042f290dad77a8908008168764aed3ce652dd"},
	{"delete everything", false, [][2]string{{"ab", "x"}, {"abc", "y"}, {"ab", ""}, {"abc", ""}},
		"56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421"},
	{"secure doe dog", true, [][2]string{{"doe", "reindeer"}, {"dog", "puppy"}, {"dogglesworth", "cat"}},
		"d4cd937e4a4368d7931a9cf51686b7e10abb3dce38a39000fd7902a092b64585"},
	{"secure deletes", true, [][2]string{{"do", "verb"}, {"ether", "wookiedoo"}, {"horse", "stallion"}, {"ether", ""}},
		"bd7cd6a259cd2319f77bf7f2ae7ee18e2f22410bee4243b553504084231b33b1"},
}

func TestVectors(t *testing.T) {
	forEngines(t, func(t *testing.T, e testEngine) {
		for _, v := range vectors {
			t.Run(v.name, func(t *testing.T) {
				for _, batched := range []bool{false, true} {
					tr := e.new(Options{Secure: v.secure})
					var keys, values [][]byte
					for _, op := range v.ops {
						keys, values = append(keys, []byte(op[0])), append(values, []byte(op[1]))
					}
					if batched {
						if err := tr.Update(keys, values); err != nil {
							t.Fatal(err)
						}
					} else {
						for i := range keys {
							if err := tr.Update(keys[i:i+1], values[i:i+1]); err != nil {
								t.Fatal(err)
							}
						}
					}
					if got := tr.hash(); hex.EncodeToString(got[:]) != v.root {
						t.Errorf("batched=%v: root %x, want %s", batched, got, v.root)
					}
				}
			})
		}
	})
}
