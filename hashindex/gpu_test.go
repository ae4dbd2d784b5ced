package hashindex

import (
	"slices"
	"testing"

	"warpkv/gpu"
	"warpkv/internal/gputest"
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
	gpuIx, err := New(Options{Buckets: opts.Buckets, PartitionBits: opts.PartitionBits, GPU: d})
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
		t.Fatalf("%s and %s tables differ", a.Engine(), b.Engine())
	}
}
