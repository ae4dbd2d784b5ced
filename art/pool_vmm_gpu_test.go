package art

import (
	"fmt"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// layoutsOf returns an error naming the first of trees whose layout
// differs from want's (the CPU engine's) word for word, or nil.
func layoutsOf(want *Tree, trees ...*Tree) error {
	w, err := want.eng.snapshot()
	if err != nil {
		return err
	}
	for j, tr := range trees {
		got, err := tr.eng.snapshot()
		if err != nil {
			return err
		}
		if err := equalStores(w, got); err != nil {
			return fmt.Errorf("tree %d: layouts differ (cpu, gpu): %w", j, err)
		}
	}
	return nil
}

// TestGPUPoolsInPlace runs the same builds, inserts (some growing pools
// ahead and in their rounds) and deletes on three GPU trees of one
// device: every pool in place (vmm, the default where the device has
// virtual memory management, from the first byte: inPlaceMin 0), pools of
// buffers (the fallback, vmm off), and pools that start as buffers and
// move in place as they grow past a size set after the build; and on a
// CPU tree. After every batch the layouts equal the CPU engine's word for
// word; a pool in place keeps its address as it grows (nothing copied or
// retired), while a pool of buffers moves when it grows; in the third
// tree exactly the pools past the size are in place, and some moved; and
// after Close the device holds what it held before.
func TestGPUPoolsInPlace(t *testing.T) {
	dev := gputest.Device(t)
	if _, err := dev.VMMGranularity(); err != nil {
		gputest.Unavailable(t, err.Error())
	}
	_, before := dev.Live()
	var trees [3]*Tree
	var engs [3]*gpuEngine
	for i := range trees {
		tr, err := Open(Options{GPU: dev})
		if err != nil {
			t.Fatal(err)
		}
		trees[i], engs[i] = tr, tr.eng.(*gpuEngine)
	}
	if !engs[0].vmm {
		t.Fatal("vmm is off in a new engine on a device with VMM, want on")
	}
	engs[0].inPlaceMin = 0
	engs[1].vmm = false
	engs[2].inPlaceMin = 1 << 62 // buffers for the build
	ct, _ := Open(Options{Device: "cpu"})
	check := func(what string) {
		t.Helper()
		if err := layoutsOf(ct, trees[:]...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	tk, tv := randomKeys(0, 50000)
	for _, tr := range []*Tree{trees[0], trees[1], trees[2], ct} {
		if err := tr.BuildKeys(tk, tv); err != nil {
			t.Fatal(err)
		}
	}
	check("build")
	var largest uint64 // bytes of the third tree's largest pool
	for k := kindN4; k <= kindLV; k++ {
		p0, p1, p2 := &engs[0].t.pools[k], &engs[1].t.pools[k], &engs[2].t.pools[k]
		if p0.words != nil && p0.vm == nil || p1.vm != nil || p2.vm != nil {
			t.Fatalf("kind %d after the build: in place %v, %v, %v; want yes, no, no", k, p0.vm != nil, p1.vm != nil, p2.vm != nil)
		}
		largest = max(largest, p2.cap*uint64(8*kindWords[k]))
	}
	engs[2].inPlaceMin = largest * 8 / 5 // passed when it grows by more than half again
	moved := 0
	var grown [2]int
	from := 50000
	for i := 0; i < 8; i++ {
		ik, iv := randomKeys(from-500, 30000) // 500 present
		from += 29500
		var ptrs [2][numKinds + 1]uint64
		caps := [2][numKinds + 1]uint64{poolCaps(engs[0].t), poolCaps(engs[1].t)}
		for j := range ptrs {
			for k := kindN4; k <= kindLV; k++ {
				if p := &engs[j].t.pools[k]; p.words != nil {
					ptrs[j][k] = uint64(p.words.Ptr())
				}
			}
		}
		var was [numKinds + 1]bool
		for k := range was {
			was[k] = engs[2].t.pools[k].vm != nil
		}
		for _, tr := range []*Tree{trees[0], trees[1], trees[2], ct} {
			if err := tr.InsertKeys(ik, iv); err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
		}
		check("insert")
		for k := kindN4; k <= kindLV; k++ {
			p := &engs[2].t.pools[k]
			if p.words != nil && (p.vm != nil) != (p.cap*uint64(8*kindWords[k]) >= engs[2].inPlaceMin) {
				t.Fatalf("batch %d: kind %d of %d bytes in place %v, from %d bytes", i, k, p.cap*uint64(8*kindWords[k]), p.vm != nil, engs[2].inPlaceMin)
			}
			if p.vm != nil && !was[k] {
				moved++
			}
		}
		for j, eg := range engs[:2] {
			for k := kindN4; k <= kindLV; k++ {
				p := &eg.t.pools[k]
				if ptrs[j][k] == 0 || p.cap == caps[j][k] {
					continue
				}
				grown[j]++
				if got := uint64(p.words.Ptr()); (got == ptrs[j][k]) != (j == 0) {
					t.Fatalf("batch %d, tree %d (in place: %v): kind %d grew from %#x to %#x", i, j, j == 0, k, ptrs[j][k], got)
				}
			}
		}
		dk, _ := randomKeys(from-30000, 3000)
		for _, tr := range []*Tree{trees[0], trees[1], trees[2], ct} {
			if _, err := tr.DeleteKeys(dk); err != nil {
				t.Fatalf("batch %d: delete: %v", i, err)
			}
		}
		check("delete")
	}
	if grown[0] < 2 || grown[1] < 2 || moved < 1 {
		t.Fatalf("%d pools grew in place, %d of the fallback, %d moved in place; want at least 2, 2, 1", grown[0], grown[1], moved)
	}
	for _, tr := range trees {
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, after := dev.Live(); after != before {
		t.Fatalf("the device holds %d bytes after Close, %d before", after, before)
	}
}
