package hashindex

import (
	"slices"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestDevEntryPoints drives the GPU engine through its device-level calls
// (grouping on the host, jobs uploaded once) and checks their outputs and
// table against the CPU engine's host-level calls on the same batches.
func TestDevEntryPoints(t *testing.T) {
	d := gputest.Device(t)
	allocs, bytes := d.Live()
	r := newRand(t)
	keys := newKeySet(r).hashes(3000, nil)
	const n = 5000
	hashes := make([]uint64, n)
	for i := range hashes {
		hashes[i] = keys[r.IntN(len(keys))]
	}
	locs := seq(1, n)
	opts := Options{Buckets: 512, PartitionBits: 4}
	cpuIx := newIndex(t, testEngines(t)[0], opts)
	gpuIx, err := Open(Options{Buckets: opts.Buckets, PartitionBits: opts.PartitionBits, GPU: d})
	if err != nil {
		t.Fatal(err)
	}
	s := gpuIx.Stream()

	// Insert.
	want := mustInsert(t, cpuIx, hashes, locs)
	jobs, err := gpuIx.UploadJobs(gpuIx.Group(hashes, locs))
	if err != nil {
		t.Fatal(err)
	}
	results := mustAlloc[uint64](t, d, n)
	if err := gpuIx.DevInsert(jobs, results); err != nil {
		t.Fatal(err)
	}
	res := mustDownload(t, s, results)
	got, _, _ := DecodeInsertResults(res, nil)
	if !slices.Equal(got, want) {
		t.Fatalf("DevInsert dropped %d, host insert on the cpu %d", len(got), len(want))
	}
	sameTables(t, gpuIx, cpuIx)

	// Search.
	probe := append(slices.Clone(keys), newKeySet(r).hashes(100, nil)...)
	dh, err := gpu.Upload(d, probe)
	if err != nil {
		t.Fatal(err)
	}
	out := mustAlloc[uint32](t, d, len(probe))
	if err := gpuIx.DevSearch(dh, len(probe), out); err != nil {
		t.Fatal(err)
	}
	if got, want := mustDownload(t, s, out), mustSearch(t, cpuIx, probe); !slices.Equal(got, want) {
		t.Fatal("DevSearch differs from the cpu engine's search")
	}

	// Delete, with the same jobs: the locations of overwritten jobs miss.
	want2 := mustDelete(t, cpuIx, hashes, locs)
	found := mustAlloc[uint32](t, d, n)
	if err := gpuIx.DevDelete(jobs, found); err != nil {
		t.Fatal(err)
	}
	for i, f := range mustDownload(t, s, found) {
		if (f != 0) != want2[i] {
			t.Fatalf("DevDelete job %d: found %d, cpu engine %v", i, f, want2[i])
		}
	}
	sameTables(t, gpuIx, cpuIx)

	for _, err := range []error{jobs.Free(), dh.Free(), results.Free(), out.Free(), found.Free(), gpuIx.Close()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if a, b := d.Live(); a != allocs || b != bytes {
		t.Fatalf("device allocations %d (%d bytes) after close, %d (%d bytes) before", a, b, allocs, bytes)
	}
}

func mustAlloc[T any](t *testing.T, d *gpu.Device, n int) *gpu.Buffer[T] {
	t.Helper()
	b, err := gpu.Alloc[T](d, n)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mustDownload waits for the stream and downloads b.
func mustDownload[T any](t *testing.T, s *gpu.Stream, b *gpu.Buffer[T]) []T {
	t.Helper()
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	out, err := b.Download()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTables fails unless the two indexes hold the same table.
func sameTables(t *testing.T, a, b *Index) {
	t.Helper()
	if !slices.Equal(mustSnapshot(t, a), mustSnapshot(t, b)) {
		t.Fatalf("%s and %s tables differ", a.Backend(), b.Backend())
	}
}

// TestDevGroup groups batches on the device and checks the jobs against
// the CPU grouping (Group), whose runs are those of the partitions with
// jobs, and the dense run offsets against the partition counts; then that
// inserting and deleting the device-grouped jobs gives the CPU engine's
// outputs and table.
func TestDevGroup(t *testing.T) {
	d := gputest.Device(t)
	cases := []struct {
		name string
		opts Options
		n    int
	}{
		// Up to smallGroupMax jobs: one block.
		{"empty", Options{Buckets: 1 << 10}, 0},
		{"one job", Options{Buckets: 1 << 10}, 1},
		{"few jobs, many partitions", Options{Buckets: 1 << 16, PartitionBits: 1}, 1000},
		{"one block, 2^18 partitions", Options{Buckets: 1 << 20, PartitionBits: 2}, 3000},
		{"one block, one partition", Options{Buckets: 1 << 12, PartitionBits: 12}, 100},
		{"largest one-block batch", Options{Buckets: 1 << 14}, smallGroupMax},
		// Larger: radix sort.
		{"smallest sorted batch", Options{Buckets: 1 << 14}, smallGroupMax + 1},
		{"default partitions", Options{Buckets: 1 << 14}, 50000},
		{"one partition", Options{Buckets: 1 << 12, PartitionBits: 12}, 5000},
		{"three sort passes", Options{Buckets: 1 << 20, PartitionBits: 2}, 1<<17 + 5}, // 18 partition bits
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRand(t)
			keys := newKeySet(r).hashes(max(1, c.n/3), nil)
			hashes := make([]uint64, c.n) // keys repeat: stability matters
			for i := range hashes {
				hashes[i] = keys[r.IntN(len(keys))]
			}
			locs := seq(1, c.n)
			cpuIx := newIndex(t, testEngines(t)[0], c.opts)
			o := c.opts
			o.GPU = d
			gpuIx, err := Open(o)
			if err != nil {
				t.Fatal(err)
			}
			defer gpuIx.Close()
			s := gpuIx.Stream()
			dh, dl := mustUpload(t, d, hashes), mustUpload(t, d, locs)
			defer dh.Free()
			defer dl.Free()
			jobs, err := gpuIx.AllocJobs(c.n)
			if err != nil {
				t.Fatal(err)
			}
			defer jobs.Free()
			j, err := gpuIx.DevGroup(dh, dl, c.n, jobs)
			if err != nil {
				t.Fatal(err)
			}
			want := gpuIx.Group(hashes, locs)
			if got := mustDownload(t, s, j.Hashes); !slices.Equal(got, want.Hashes) {
				t.Fatal("grouped hashes differ from the cpu grouping")
			}
			if got := mustDownload(t, s, j.Locs); !slices.Equal(got, want.Locs) {
				t.Fatal("grouped locations differ from the cpu grouping")
			}
			if got := mustDownload(t, s, j.Order); !slices.Equal(got, want.Order) {
				t.Fatal("batch order differs from the cpu grouping")
			}
			parts := gpuIx.Partitions()
			starts := make([]uint32, parts+1)
			for _, h := range hashes {
				starts[gpuIx.Partition(h)+1]++
			}
			for p := range parts {
				starts[p+1] += starts[p]
			}
			if got := mustDownload(t, s, j.Starts); !slices.Equal(got, starts) {
				t.Fatalf("run offsets differ: got %v..., want %v...", got[:min(8, len(got))], starts[:min(8, len(starts))])
			}

			results := mustAlloc[uint64](t, d, c.n)
			defer results.Free()
			if err := gpuIx.DevInsert(j, results); err != nil {
				t.Fatal(err)
			}
			got, _, _ := DecodeInsertResults(mustDownload(t, s, results), nil)
			if want := mustInsert(t, cpuIx, hashes, locs); !slices.Equal(got, want) {
				t.Fatalf("DevInsert dropped %d, host insert on the cpu %d", len(got), len(want))
			}
			sameTables(t, gpuIx, cpuIx)
			found := mustAlloc[uint32](t, d, c.n)
			defer found.Free()
			if err := gpuIx.DevDelete(j, found); err != nil {
				t.Fatal(err)
			}
			want2 := mustDelete(t, cpuIx, hashes, locs)
			for i, f := range mustDownload(t, s, found) {
				if (f != 0) != want2[i] {
					t.Fatalf("DevDelete job %d: found %d, cpu engine %v", i, f, want2[i])
				}
			}
			sameTables(t, gpuIx, cpuIx)
		})
	}
}

// TestDevGroupErrors checks DevGroup's argument validation.
func TestDevGroupErrors(t *testing.T) {
	d := gputest.Device(t)
	ix, err := Open(Options{Buckets: 64, PartitionBits: 2, GPU: d})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	jobs, err := ix.AllocJobs(10)
	if err != nil {
		t.Fatal(err)
	}
	defer jobs.Free()
	if jobs.Runs() != ix.Partitions() {
		t.Fatalf("AllocJobs: %d runs, want one per partition (%d)", jobs.Runs(), ix.Partitions())
	}
	dh, dl := mustAlloc[uint64](t, d, 20), mustAlloc[uint32](t, d, 20)
	defer dh.Free()
	defer dl.Free()
	short := jobs
	short.Starts = gpu.View[uint32](jobs.Starts, 0, ix.Partitions())
	for _, c := range []struct {
		name string
		n    int
		dst  DevJobs
	}{
		{"more jobs than the destination", 11, jobs},
		{"negative count", -1, jobs},
		{"too few run offsets", 5, short},
		{"nil destination", 5, DevJobs{}},
	} {
		if _, err := ix.DevGroup(dh, dl, c.n, c.dst); err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if _, err := ix.DevGroup(dh, dl, 10, jobs); err != nil {
		t.Errorf("valid call: %v", err)
	}
}

func mustUpload[T any](t *testing.T, d *gpu.Device, src []T) *gpu.Buffer[T] {
	t.Helper()
	b, err := gpu.Upload(d, src)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
