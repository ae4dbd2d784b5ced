// Package rebuildbench reports the metrics of the host-only benchmarks
// that weigh coding a range call's answer keys for the link (issue 22:
// fewer answer bytes): art's BenchmarkRangeKeysRebuild (front coding)
// and btree's BenchmarkRangeKeyDeltas (deltas). Each times the host's
// rebuild of the keys from their coding against a plain copy of them and
// reports both the same way, here.
package rebuildbench

import (
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/par"
)

// LinkRate is the rate, in bytes a second, at which the saved bytes are
// timed (saved-us): the H200's pinned device-to-host copy, 55.2 GB/s
// (BENCHMARKS.md: `bench limits`, and the copy engine's 55.23 GB/s of
// branch arng4).
const LinkRate = 55.2e9

// Report reports, for the benchmark b that ran on par.Shared's workers,
// the time a call on the host (host-ms) and its output rate (GB/s: out
// bytes a call written, keys keys), the share of a transfer of full
// bytes that the coding named how saves (saved-%: saved of them) and the
// time those bytes take at LinkRate (saved-us), and logs the sizes.
// Cost: O(1).
func Report(b *testing.B, keys, out, full, saved int, how string) {
	b.Helper()
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(per.Seconds()*1e3, "host-ms")
	b.ReportMetric(float64(out)/per.Seconds()/1e9, "GB/s")
	b.ReportMetric(100*float64(saved)/float64(full), "saved-%")
	b.ReportMetric(float64(saved)/LinkRate*1e6, "saved-us")
	b.Logf("%d keys, transfer %d bytes, %d saved by %s, workers %d", keys, full, saved, how, par.Shared().Workers())
}
