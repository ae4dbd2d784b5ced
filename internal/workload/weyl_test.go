package workload

import "testing"

// TestWeylKeys16 checks the keys' layout and that they are distinct.
func TestWeylKeys16(t *testing.T) {
	const n = 100000
	data, offs, values := WeylKeys16(n)
	if len(data) != 16*n || len(offs) != n+1 || len(values) != n {
		t.Fatalf("lengths %d, %d, %d for n %d", len(data), len(offs), len(values), n)
	}
	seen := make(map[string]bool, n)
	for i := range n {
		if offs[i+1]-offs[i] != 16 || values[i] != uint64(i) {
			t.Fatalf("key %d: length %d, value %d", i, offs[i+1]-offs[i], values[i])
		}
		k := string(data[16*i : 16*i+16])
		if seen[k] {
			t.Fatalf("key %d repeats an earlier key", i)
		}
		seen[k] = true
	}
}
