package art

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// TestGPUScanCounts checks aq_scan_counts against the CPU: the exclusive
// scans in place of n+1 pair counts and key bytes (entry n the total),
// sq[n] the sum of the squares, the other squares untouched, and the
// totals in mapped memory as a_totals writes them (pipelined chunks'
// chunkTotals reads them), for n from 0 to several tiles of 8192 entries,
// with counts small and totals past 32 bits, and without the mapped words
// (out null).
func TestGPUScanCounts(t *testing.T) {
	dev := gputest.Device(t)
	gt, _ := openTwins(t, dev)
	g := gt.eng.(*gpuEngine)
	r := rand.New(rand.NewPCG(6, 22))
	tot, err := gpu.AllocMapped[uint64](dev, totWords)
	if err != nil {
		t.Fatal(err)
	}
	defer tot.Free()
	for _, n := range []int{0, 1, 31, 1023, 1025, 8191, 8192, 8193, 21846, 70001} {
		for _, big := range []bool{false, true} {
			for _, mapped := range []bool{true, false} {
				name := fmt.Sprintf("n=%d,big=%v,mapped=%v", n, big, mapped)
				in := make([][]uint64, 3)
				for a := range in {
					in[a] = make([]uint64, n+1)
					for i := range n {
						v := r.Uint64N(40)
						if big {
							v = r.Uint64N(1 << 36)
						}
						in[a][i] = v
					}
					in[a][n] = 0
				}
				bufs := make([]*gpu.Buffer[uint64], 3)
				for a := range bufs {
					if bufs[a], err = gpu.Upload(dev, in[a]); err != nil {
						t.Fatal(err)
					}
				}
				var out any = nullPtr
				if mapped {
					clear(tot.Slice())
					tot.Slice()[9] = 7 // a_totals zeroes the unused words
					out = tot.PtrAt(0)
				}
				if err := g.scanCountsTotals(n, bufs[0], bufs[1], bufs[2], out); err != nil {
					t.Fatal(err)
				}
				if err := g.s.Synchronize(); err != nil {
					t.Fatal(err)
				}
				var want [3][]uint64
				for a := range 2 {
					var s uint64
					for _, v := range in[a][:n] {
						want[a] = append(want[a], s)
						s += v
					}
					want[a] = append(want[a], s)
				}
				var sq uint64
				for _, v := range in[2][:n] {
					sq += v
				}
				want[2] = append(slices.Clone(in[2][:n]), sq)
				for a, b := range bufs {
					got, err := b.Download()
					if err != nil {
						t.Fatal(err)
					}
					if err := b.Free(); err != nil {
						t.Fatal(err)
					}
					if i := firstDiff(got, want[a]); i >= 0 {
						t.Fatalf("%s: array %d entry %d: %d, want %d", name, a, i, got[i], want[a][i])
					}
				}
				if mapped {
					pairs, keyBytes, sqs := (&rangePipe{tot: tot}).chunkTotals(0)
					if pairs != int(want[0][n]) || keyBytes != int(want[1][n]) || sqs != sq || tot.Slice()[9] != 0 {
						t.Fatalf("%s: totals %d %d %d (word 9 %d), want %d %d %d", name, pairs, keyBytes, sqs, tot.Slice()[9],
							want[0][n], want[1][n], sq)
					}
				}
			}
		}
	}
}
