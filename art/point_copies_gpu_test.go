package art

import (
	"fmt"
	"testing"
)

// BenchmarkGPUPointCopies runs the point calls whose host copies issue 22
// measures (1Mi lookups and updates of 16-byte keys in a tree of 16Mi
// keys, as BenchmarkGPUWholeCalls) from Go slices and from a packed batch
// with chunks of 64Ki and 256Ki keys (the default), reusing the answers'
// slices (Get allocates them, so the slices rows call the engine's
// lookupSlices and updateSlices as Get and Update do). Each row is called
// once untimed first (growing the pinned slots and device buffers for its
// chunk size). host-GB/s is the bytes the host copies into and out of the
// pinned slots over the last call (keys, offsets, values in; values and
// flags out) divided by its LastBatch total.
func BenchmarkGPUPointCopies(b *testing.B) {
	t, vals, probe, slices, out, found := benchPointTree(b)
	n := len(slices)
	g := t.eng.(*gpuEngine)
	calls := []struct {
		name  string
		bytes int // host copies of one key: 16 key bytes, a 4-byte offset, 8 value bytes (in for updates, out for lookups) and a flag out
		call  func() error
	}{
		{"lookup/packed", 16 + 4 + 8 + 1, func() error { return t.Lookup(probe, out, found) }},
		{"lookup/slices", 16 + 4 + 8 + 1, func() error { return g.lookupSlices(slices, out, found) }},
		{"update/packed", 16 + 4 + 8 + 1, func() error { return t.UpdateKeys(probe, vals[:n], found) }},
		{"update/slices", 16 + 4 + 8 + 1, func() error { return g.updateSlices(slices, vals[:n], found) }},
	}
	for _, c := range calls {
		for _, cm := range []int{1 << 16, pointChunkMin} {
			b.Run(fmt.Sprintf("%s/chunkMin=%d", c.name, cm), func(b *testing.B) {
				g.chunkMin = cm
				defer func() { g.chunkMin = pointChunkMin }()
				if err := c.call(); err != nil { // grows the slots for this chunk size, untimed
					b.Fatal(err)
				}
				for b.Loop() {
					if err := c.call(); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "M/s")
				tm := t.LastBatch()
				b.ReportMetric(tm.Upload.Seconds()*1e3, "pack-ms")
				b.ReportMetric(tm.Download.Seconds()*1e3, "unpack-ms")
				b.ReportMetric(tm.Total.Seconds()*1e3, "total-ms")
				b.ReportMetric(float64(c.bytes)*float64(n)/tm.Total.Seconds()/1e9, "host-GB/s")
			})
		}
	}
}
