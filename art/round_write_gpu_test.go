package art

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPUNodeWrite runs builds, inserts and deletes whose node rounds
// write every class of touched node (N4 and N16 grown to N16, N48 and
// N256; N4, N16, N48 and N256 changed in place; nodes emptied and
// collapsed by deletes; node entries merged with sorted trims) on a GPU
// tree (an_write with the old children staged, the frees selected in one
// pass and an insert round's trims sorted and merged with its ascending
// node entries) and on the CPU engine. After every batch the GPU tree's
// layout equals the CPU engine's word for word.
func TestGPUNodeWrite(t *testing.T) {
	dev := gputest.Device(t)
	gt, err := Open(Options{GPU: dev})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gt.Close() })
	ct, _ := Open(Options{Device: "cpu"})
	all := []*Tree{gt, ct}
	check := func(what string) {
		t.Helper()
		want, _ := ct.eng.snapshot()
		got, err := gt.eng.snapshot()
		if err != nil {
			t.Fatal(err)
		}
		if err := equalStores(want, got); err != nil {
			t.Fatalf("%s: layouts differ (cpu, gpu): %v", what, err)
		}
	}
	// Keys of 6 bytes: a 2-byte group g, then a byte fanning out to f(g)
	// children (1 to 256: every inner kind), then 3 bytes of a mix. A
	// group's fan-out grows with the batches, so nodes move up the kinds.
	key := func(g, c, x uint32) []byte {
		var b [8]byte
		binary.BigEndian.PutUint16(b[:], uint16(g))
		b[2] = byte(c)
		h := (x*2654435761 ^ g*40503) & 0xffffff
		b[3], b[4], b[5] = byte(h>>16), byte(h>>8), byte(h)
		return b[:6]
	}
	fan := []uint32{1, 3, 4, 5, 12, 16, 17, 40, 48, 49, 200, 256}
	batch := func(step int, add bool) ([][]byte, []uint64) {
		var ks [][]byte
		var vs []uint64
		for g := uint32(0); g < 3000; g++ {
			f := fan[(int(g)+step)%len(fan)]
			lo, hi := uint32(step)*f/4, uint32(step+1)*f/4
			if !add {
				lo, hi = 0, f/3+uint32(g%3)
			}
			for c := lo; c < hi && c < 256; c++ {
				for x := uint32(0); x < 1+g%3; x++ {
					ks = append(ks, key(g, c, x))
					vs = append(vs, uint64(g)<<32|uint64(c)<<8|uint64(x))
				}
			}
		}
		return ks, vs
	}
	ks, vs := batch(0, true)
	for _, tr := range all {
		if err := tr.Build(ks, vs); err != nil {
			t.Fatal(err)
		}
	}
	check("build")
	for step := 1; step < 4; step++ {
		ks, vs := batch(step, true)
		for _, tr := range all {
			if err := tr.Insert(ks, vs); err != nil {
				t.Fatal(err)
			}
		}
		check(fmt.Sprintf("insert %d (%d keys)", step, len(ks)))
	}
	for step := 0; step < 2; step++ {
		ks, _ := batch(step, false)
		for _, tr := range all {
			if _, err := tr.Delete(ks); err != nil {
				t.Fatal(err)
			}
		}
		check(fmt.Sprintf("delete %d (%d keys)", step, len(ks)))
	}
	// Random 16-byte keys into both trees: N4s grown to N16s below
	// a root table, the insert's common case.
	rk, rv := randomKeys(0, 200000)
	for _, tr := range all {
		if err := tr.InsertKeys(rk, rv); err != nil {
			t.Fatal(err)
		}
	}
	check("random keys")
}
