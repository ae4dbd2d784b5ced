package art

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// chunkOf is art.cu's chunk_of: 7 key bytes from 7j, big-endian, then
// min(bytes left, 8).
func chunkOf(k []byte, j int) uint64 {
	start := 7 * j
	rem := max(0, len(k)-start)
	var v uint64
	for b := range 7 {
		v <<= 8
		if b < rem {
			v |= uint64(k[start+b])
		}
	}
	return v<<8 | uint64(min(rem, 8))
}

// deviceSortModel replays sort_engine_gpu.go's rounds step by step on the host
// (the same arrays, the same stable sorts, marks, scans and selects), so
// that the algorithm the kernels implement is checked against the CPU
// engine's sort without a GPU.
func deviceSortModel(kb Keys) []uint32 {
	n := kb.Len()
	perm := make([]uint32, n)
	apos := make([]uint32, n)
	arun := make([]uint32, n)
	for i := range n {
		perm[i], apos[i] = uint32(i), uint32(i)
	}
	m := n
	stable := func(keys []uint64, vals []uint32) { // prim's stable radix sort
		idx := make([]int, len(keys))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
		k2, v2 := slices.Clone(keys), slices.Clone(vals)
		for i, j := range idx {
			keys[i], vals[i] = k2[j], v2[j]
		}
	}
	for j := 0; m > 0; j++ {
		ck, cv := make([]uint64, m), make([]uint32, m)
		for x := range m { // as_chunk
			ck[x], cv[x] = chunkOf(kb.At(int(perm[apos[x]])), j), uint32(x)
		}
		stable(ck, cv)
		k2, v2 := make([]uint64, m), make([]uint32, m)
		for x := range m { // as_runkey
			k2[x], v2[x] = uint64(arun[cv[x]]), cv[x]
		}
		if j > 0 {
			stable(k2, v2)
		}
		tmp := make([]uint32, m)
		for x := range m { // as_permute
			tmp[x] = perm[apos[v2[x]]]
		}
		for x := range m { // as_scatter
			perm[apos[x]] = tmp[x]
		}
		start, unres := make([]uint32, m), make([]bool, m)
		for x := range m { // as_marks
			c := chunkOf(kb.At(int(perm[apos[x]])), j)
			s := x == 0 || k2[x] != k2[x-1] || c != chunkOf(kb.At(int(perm[apos[x-1]])), j)
			e := x+1 == m || k2[x] != k2[x+1] || c != chunkOf(kb.At(int(perm[apos[x+1]])), j)
			if s {
				start[x] = 1
			}
			unres[x] = c&0xff == 8 && !(s && e)
		}
		grp := make([]uint32, m)
		var acc uint32
		for x := range m { // inclusive scan
			acc += start[x]
			grp[x] = acc
		}
		first := make([]uint32, m)
		for x := range m { // as_first
			if start[x] == 1 {
				first[grp[x]-1] = apos[x]
			}
		}
		var na, nr []uint32
		for x := range m { // as_newrun, then the selects
			if unres[x] {
				na, nr = append(na, apos[x]), append(nr, first[grp[x]-1])
			}
		}
		apos, arun, m = na, nr, len(na)
	}
	return lastOfRuns(kb, perm, 2)
}

// TestDeviceSortModel checks the GPU sort's algorithm on key sets with
// long shared prefixes, prefixes of each other, duplicates and empty keys.
func TestDeviceSortModel(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := range 200 {
		n := 1 + r.IntN(300)
		keys := make([][]byte, n)
		for i := range keys {
			switch r.IntN(4) {
			case 0:
				keys[i] = randomBytes(r, 0, 30, []byte{0, 1, 0xff})
			case 1:
				keys[i] = append([]byte("a shared prefix longer than two chunks/"), randomBytes(r, 0, 9, []byte("xy\x00"))...)
			case 2:
				keys[i] = randomBytes(r, 0, 20, nil)
			default:
				keys[i] = keys[r.IntN(i+1)] // a duplicate (or itself when i is picked)
				if keys[i] == nil {
					keys[i] = []byte{}
				}
			}
		}
		kb := Pack(keys)
		want := lastOfRuns(kb, sortedOrder(kb, 2), 2)
		if got := deviceSortModel(kb); !slices.Equal(got, want) {
			t.Fatalf("trial %d: device sort model %v, CPU %v", trial, got, want)
		}
	}
}
