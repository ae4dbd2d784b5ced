package hashindex

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/gpu"
)

func TestSignature(t *testing.T) {
	cases := []struct {
		h    uint64
		want uint32
	}{
		{0, 1},
		{0x0000_0000_FFFF_FFFF, 1},
		{0x0000_0001_0000_0000, 1},
		{0x0000_0002_0000_0000, 2},
		{0xFFFF_FFFF_0000_0000, 0xFFFF_FFFF},
	}
	for _, c := range cases {
		if got := signature(c.h); got != c.want {
			t.Errorf("signature(%#x) = %#x, want %#x", c.h, got, c.want)
		}
	}
}

// TestNearestFree checks the outward circular order from every preferred
// cell.
func TestNearestFree(t *testing.T) {
	if got := []uint32{outward(0), outward(1), outward(2), outward(3), outward(4), outward(5), outward(6), outward(7)}; !slices.Equal(got, []uint32{0, 1, 7, 2, 6, 3, 5, 4}) {
		t.Fatalf("outward order %v", got)
	}
	cases := []struct {
		free, pref, want uint32
		ok               bool
	}{
		{0, 3, 0, false},
		{0xFF, 5, 5, true},
		{1 << 6, 5, 6, true},
		{1<<4 | 1<<6, 5, 6, true}, // +1 before -1
		{1 << 4, 5, 4, true},
		{1 << 1, 5, 1, true},      // +4 last
		{1 << 0, 7, 0, true},      // wraps
		{1 << 7, 0, 7, true},      // wraps down
		{1<<2 | 1<<6, 0, 2, true}, // +2 before -2
		{1 << 6, 0, 6, true},
	}
	for _, c := range cases {
		got, ok := nearestFree(c.free, c.pref)
		if got != c.want || ok != c.ok {
			t.Errorf("nearestFree(%08b, %d) = %d, %v; want %d, %v", c.free, c.pref, got, ok, c.want, c.ok)
		}
	}
}

// TestAlternate checks that a key's two buckets differ, share a partition,
// and map to each other, for several table shapes.
func TestAlternate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, shape := range []struct{ buckets, pbits int }{{2, 1}, {1 << 10, 1}, {1 << 10, 4}, {1 << 10, 10}, {1 << 20, 8}} {
		g := newGeometry(shape.buckets, uint(shape.pbits))
		for range 10000 {
			h := r.Uint64()
			sig := signature(h)
			b1 := g.primary(h)
			b2 := g.alternate(b1, sig)
			if b1 == b2 || g.alternate(b2, sig) != b1 || g.partition(b1) != g.partition(b2) || int(b2) >= g.buckets {
				t.Fatalf("%+v: h %#x: buckets %d, %d, back %d", shape, h, b1, b2, g.alternate(b2, sig))
			}
		}
	}
}

func TestOptions(t *testing.T) {
	cases := []struct {
		opts                        Options
		buckets, pbits, parts, disp int
		bad                         bool
	}{
		{opts: Options{Buckets: 1}, buckets: 2, pbits: 1, parts: 1, disp: DefaultMaxDisplacements},
		{opts: Options{Buckets: 1000}, buckets: 1024, pbits: 8, parts: 4, disp: DefaultMaxDisplacements},
		{opts: Options{Buckets: 1 << 20, PartitionBits: 3, MaxDisplacements: 5}, buckets: 1 << 20, pbits: 3, parts: 1 << 17, disp: 5},
		{opts: Options{Buckets: 16, PartitionBits: 30, MaxDisplacements: -1}, buckets: 16, pbits: 4, parts: 1, disp: 0},
		{opts: Options{Buckets: 0}, bad: true},
		{opts: Options{Buckets: MaxBuckets + 1}, bad: true},
		{opts: Options{Buckets: 8, PartitionBits: -1}, bad: true},
		{opts: Options{Buckets: 8, Workers: -1}, bad: true},
	}
	for _, c := range cases {
		c.opts.Device = "cpu"
		ix, err := Open(c.opts)
		if c.bad {
			if err == nil {
				ix.Close()
				t.Errorf("Open(%+v) succeeded", c.opts)
			}
			continue
		}
		if err != nil {
			t.Errorf("Open(%+v): %v", c.opts, err)
			continue
		}
		if ix.Buckets() != c.buckets || ix.PartitionBits() != c.pbits || ix.Partitions() != c.parts ||
			ix.MaxDisplacements() != c.disp || ix.Capacity() != 8*c.buckets {
			t.Errorf("Open(%+v): %d buckets, %d bits, %d partitions, %d displacements", c.opts,
				ix.Buckets(), ix.PartitionBits(), ix.Partitions(), ix.MaxDisplacements())
		}
		if ix.Backend() != gpu.BackendCPU || ix.Reason() == "" {
			t.Errorf("engine %v, reason %q", ix.Backend(), ix.Reason())
		}
		ix.Close()
	}
	if _, err := Open(Options{Buckets: 8, Device: "tpu"}); err == nil {
		t.Error("New with device tpu succeeded")
	}
}

// TestGroup checks that grouping by partition is a stable sort into one
// run per partition with jobs, by counting (for batch sizes around the
// goroutine chunk and several worker counts) and by comparison sort (for
// batches far smaller than the partition count).
func TestGroup(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, workers := range []int{1, 3, 8} {
		for _, pbits := range []int{3, 1} {
			ix, err := Open(Options{Buckets: 1 << 12, PartitionBits: pbits, Device: "cpu", Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{0, 1, 100, 1000, groupMinChunk - 1, 2*groupMinChunk + 1, 5 * groupMinChunk} {
				hashes := make([]uint64, n)
				for i := range hashes {
					hashes[i] = r.Uint64() >> r.IntN(64) // some hashes share partitions heavily
				}
				locs := seq(7, n)
				checkGroup(t, ix, hashes, locs, ix.Group(hashes, locs))
			}
			ix.Close()
		}
	}
}

// checkGroup checks that j is hashes/locs grouped by partition.
func checkGroup(t *testing.T, ix *Index, hashes []uint64, locs []uint32, j Jobs) {
	t.Helper()
	n := len(hashes)
	if j.Len() != n || j.Runs() < 0 || j.Runs() > min(n, ix.Partitions()) || j.Starts[0] != 0 || int(j.Starts[j.Runs()]) != n {
		t.Fatalf("n %d: malformed jobs: %d jobs, starts %v", n, j.Len(), j.Starts[:min(len(j.Starts), 10)])
	}
	prev := -1
	for r := range j.Runs() {
		if j.Starts[r] >= j.Starts[r+1] {
			t.Fatalf("n %d: empty run %d", n, r)
		}
		p := ix.Partition(j.Hashes[j.Starts[r]])
		if p <= prev {
			t.Fatalf("n %d: run %d of partition %d after partition %d", n, r, p, prev)
		}
		prev = p
		for k := j.Starts[r]; k < j.Starts[r+1]; k++ {
			o := j.Order[k]
			if ix.Partition(j.Hashes[k]) != p || j.Hashes[k] != hashes[o] || j.Locs[k] != locs[o] {
				t.Fatalf("n %d: job %d of run %d (partition %d) is batch job %d", n, k, r, p, o)
			}
			if k > j.Starts[r] && j.Order[k-1] >= o {
				t.Fatalf("n %d: run %d out of batch order", n, r)
			}
		}
	}
}

func TestHash(t *testing.T) {
	// XXH64 of the empty input with seed 0.
	if got := Hash(nil); got != 0xEF46DB3751D8E999 {
		t.Fatalf("Hash(nil) = %#x", got)
	}
	if Hash([]byte("a")) == Hash([]byte("b")) {
		t.Fatal("Hash collides on a and b")
	}
}
