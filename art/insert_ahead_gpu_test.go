package art

import (
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestAheadCaps checks which pools growAhead grows for an insert: those
// whose bound on the batch's new records does not fit but fits half again
// their capacity (N16 to N256: twice, or any bound for a pool under
// aheadSmall's records, grown to at most that), to growCap's capacity
// for the bound.
func TestAheadCaps(t *testing.T) {
	type pool struct{ hwm, top, cap uint64 }
	for _, c := range []struct {
		name  string
		pools map[int]pool
		n, lk int
		want  map[int]uint64
	}{
		{"fits", map[int]pool{kindL16: {100, 0, 200}}, 50, kindL16, nil},
		{"leaves past the capacity", map[int]pool{kindL16: {100, 0, 120}}, 50, kindL16, map[int]uint64{kindL16: 180}},
		{"free records count", map[int]pool{kindL16: {100, 40, 120}}, 50, kindL16, nil},
		{"past half again: left to the plan", map[int]pool{kindL16: {100, 0, 100}}, 60, kindL16, nil},
		{"leaf kind unknown", map[int]pool{kindL16: {100, 0, 120}}, 50, 0, nil},
		{"N16 past twice, a small pool: to the bound", map[int]pool{kindN4: {1000, 0, 1500}, kindN16: {100, 0, 100}}, 1000,
			0, map[int]uint64{kindN4: 2250, kindN16: 1100}},
		{"N16 past twice, a large pool: left to the plan", map[int]pool{kindN4: {1 << 20, 0, 1 << 20},
			kindN16: {aheadSmall(kindN16), 0, aheadSmall(kindN16)}}, 1 << 20, 0, nil},
		{"N48 past twice, a small pool: to aheadSmall", map[int]pool{kindN4: {1 << 24, 0, 1 << 25}, kindN48: {1906, 0, 1906}},
			1 << 23, 0, map[int]uint64{kindN48: aheadSmall(kindN48)}},
		{"N16 past half again", map[int]pool{kindN4: {60, 0, 100}, kindN16: {100, 0, 100}}, 1000,
			0, map[int]uint64{kindN16: 160}},
		{"N48 past twice, a small pool: to the bound", map[int]pool{kindN16: {101, 0, 200}, kindN48: {100, 0, 100}}, 1000,
			0, map[int]uint64{kindN48: 201}},
		{"N16 grown for the N4s that may grow", map[int]pool{kindN4: {40, 0, 100}, kindN16: {100, 0, 100}}, 1000,
			0, map[int]uint64{kindN16: 150}},
		{"N48 bounded by n", map[int]pool{kindN4: {40, 0, 100}, kindN16: {100, 0, 200}, kindN48: {100, 0, 100}}, 30,
			0, map[int]uint64{kindN48: 150}},
		{"empty pool: left to the plan", map[int]pool{kindN4: {40, 0, 100}}, 1000, kindL16, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &devTree{}
			for k, p := range c.pools {
				tr.pools[k] = devPool{words: new(gpu.Buffer[uint64]), hwm: p.hwm, top: p.top, cap: p.cap}
			}
			got := aheadCaps(tr, c.n, c.lk)
			for k := kindN4; k <= kindLV; k++ {
				if got[k] != c.want[k] {
					t.Errorf("kind %d: capacity %d, want %d", k, got[k], c.want[k])
				}
			}
		})
	}
}

// TestGPUGrowAhead inserts batches of new keys until three of them had
// pools grown ahead (growAhead; every fourth batch runs without), and
// after every fourth insert and the last compares the layout with the CPU
// engine's (word for word, free stacks included).
func TestGPUGrowAhead(t *testing.T) {
	gt, ct, g := gpuAndCPU(t)
	tk, tv := randomKeys(0, 100000)
	for _, tr := range []*Tree{gt, ct} {
		if err := tr.BuildKeys(tk, tv); err != nil {
			t.Fatal(err)
		}
	}
	same := func(i int) {
		t.Helper()
		a, _ := gt.eng.snapshot()
		b, _ := ct.eng.snapshot()
		if err := equalStores(b, a); err != nil {
			t.Fatalf("after batch %d (-1: the last): layouts differ (cpu, gpu): %v", i, err)
		}
	}
	ahead, from := 0, 100000
	for i := 0; i < 40 && ahead < 3; i++ {
		ik, iv := randomKeys(from-2000, 25000) // 2000 present
		from += 23000
		if g.aheadGrowth = i%4 != 3; !g.aheadGrowth { // every fourth batch: without
			t.Logf("batch %d without growAhead", i)
		} else if aheadCaps(g.t, ik.Len(), leafGuess(ik)) != ([numKinds + 1]uint64{}) {
			ahead++
		}
		for _, tr := range []*Tree{gt, ct} {
			if err := tr.InsertKeys(ik, iv); err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
		}
		if i%4 == 0 {
			same(i)
		}
	}
	same(-1)
	if ahead < 2 {
		t.Fatalf("%d batches grew pools ahead, want at least 2", ahead)
	}
	if err := gt.Check(); err != nil {
		t.Fatal(err)
	}
}

// gpuAndCPU opens an empty tree on the GPU (closed when t ends, skipped
// without one) and one on the CPU engine, and returns the GPU tree's
// engine.
func gpuAndCPU(t *testing.T) (gt, ct *Tree, g *gpuEngine) {
	t.Helper()
	gt, err := Open(Options{GPU: gputest.Device(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gt.Close() })
	ct, _ = Open(Options{Device: "cpu"})
	return gt, ct, gt.eng.(*gpuEngine)
}
