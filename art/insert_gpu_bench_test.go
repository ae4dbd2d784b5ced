package art

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/prim"
)

// Sizes of BenchmarkGPUInsertSteps: a tree of 16Mi keys and a batch of
// 10M new keys, 16 bytes each (bench art's "insert 10M, 16 B keys" on a
// tree small enough for a short device run).
const (
	stepsTreeKeys  = 1 << 24
	stepsBatchKeys = 10_000_000
)

// stepsKeys returns the 16-byte keys [from, from+n): key i's first 8
// bytes are a bijection of i (so all keys differ), the last 8 a mix of i;
// the values are i. Cost: O(n) on all cores.
func stepsKeys(from, n int) (Keys, []uint64) {
	const klen = 16
	kb := Keys{Data: make([]byte, n*klen), Offs: make([]uint32, n+1)}
	vals := make([]uint64, n)
	par.For(n, 1<<16, 0, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			i := uint64(from + j)
			x := i*0x9E3779B97F4A7C15 ^ 0x5555
			y := i ^ 0xA275EED0012
			y = (y ^ y>>30) * 0xBF58476D1CE4E5B9
			y = (y ^ y>>27) * 0x94D049BB133111EB
			binary.BigEndian.PutUint64(kb.Data[j*klen:], x)
			binary.BigEndian.PutUint64(kb.Data[j*klen+8:], y^y>>31)
			kb.Offs[j+1] = uint32((j + 1) * klen)
			vals[j] = i
		}
	})
	return kb, vals
}

// randomKeys returns bench art's 16-byte keys [from, from+n) (bench.ARTKey
// of ARTKeys16: SplitMix64 of i under the bench's seed in the first 8
// bytes, a bijection, so all keys differ; another in the last 8), the
// values i. Unlike stepsKeys' evenly spread keys they fall into the root
// table's slots as random keys do (about 6 a slot at 100M: inner nodes of
// 2 to 16 children, some of which an insert grows). Cost: O(n) on all
// cores.
func randomKeys(from, n int) (Keys, []uint64) {
	const klen, seed = 16, 0xA27_5EED_0012
	kb := Keys{Data: make([]byte, n*klen), Offs: make([]uint32, n+1)}
	vals := make([]uint64, n)
	par.For(n, 1<<16, 0, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			i := uint64(from + j)
			binary.BigEndian.PutUint64(kb.Data[j*klen:], prim.SplitMix64(seed, i))
			binary.BigEndian.PutUint64(kb.Data[j*klen+8:], prim.SplitMix64(seed+1, i))
			kb.Offs[j+1] = uint32((j + 1) * klen)
			vals[j] = i
		}
	})
	return kb, vals
}

// BenchmarkGPUInsertSteps inserts 10M new 16-byte keys into a freshly
// built tree (built again before every run, untimed) and logs where the
// last run's time went: every step's device time (CUDA events), host time
// and host synchronizations (engine.StepTrace). It reports keys/s of the
// whole call and of its phases (engine.Timings), the call as the caller
// sees it (ms/call) and its parts outside the engine's clock (ms-before-
// clock: the facade's check of the batch and the engine's entry before
// the clock starts; ms-after-clock: the host's end of the call after it
// stops), and logs how long the frees beside the call ran past its
// return and how long the batch's check takes alone once more after the
// runs (the keys in cache, the workers spinning), and (tree=100M) traces
// that pass part by part right after a build on each fan-out (traceCheck). tree=16Mi: stepsKeys, 16Mi keys; tree=100M: bench art's keys
// and tree (its "insert 10M, 16 B keys, in 100M"), as the engine runs by
// default (pools grown in place where the device has VMM:
// pool_vmm_gpu.go; the pools grown ahead: growAhead; the keys in two parts beside
// the sort and the values beside the work: batchUpload; the retired
// pools freed beside, after the call: freeBeside; the batch checked
// beside the work: check_later_gpu.go), with the batch checked before the
// call (checkFirst), with pools of buffers
// (buffers: the fallback without VMM), without growAhead,
// with the retired pools freed before the call returns (freeInCall), and
// with the build's frees beside waited for and the host idle 20 ms before
// the insert (settled: a tree built long before the insert), with the
// host idle 20 ms alone (idle), with the frees waited for inside the
// timed call (waitTimed), and with no spare device memory kept, so that
// the old tree's pools go back to the driver, which clears them beside the
// insert's uploads (noSpare: how every build ran before gpu/spare.go).
func BenchmarkGPUInsertSteps(b *testing.B) {
	for _, c := range []struct {
		name          string
		tree          int
		keys          func(from, n int) (Keys, []uint64)
		ahead, inCall bool
		buffers       bool // pools of buffers, not grown in place (vmm off)
		checkFirst    bool // the batch checked before the call (deferCheck off)
		settled       bool // the build's frees beside waited for, and 20 ms idle, before the insert
		idle          bool // 20 ms idle before the insert, the build's frees beside not waited for
		waitTimed     bool // the build's frees beside waited for inside the timed call, as an engine waiting for them would
		noSpare       bool // the device keeps no spare memory: the old tree's pools released to the driver (gpu/spare.go)
	}{
		{name: "tree=16Mi", tree: stepsTreeKeys, keys: stepsKeys, ahead: true},
		{name: "tree=100M", tree: 100_000_000, keys: randomKeys, ahead: true},
		{name: "tree=100M,checkFirst", tree: 100_000_000, keys: randomKeys, ahead: true, checkFirst: true},
		{name: "tree=100M,settled", tree: 100_000_000, keys: randomKeys, ahead: true, settled: true},
		{name: "tree=100M,idle", tree: 100_000_000, keys: randomKeys, ahead: true, idle: true},
		{name: "tree=100M,waitTimed", tree: 100_000_000, keys: randomKeys, ahead: true, waitTimed: true},
		{name: "tree=100M,noSpare", tree: 100_000_000, keys: randomKeys, ahead: true, noSpare: true},
		{name: "tree=100M,buffers", tree: 100_000_000, keys: randomKeys, ahead: true, buffers: true},
		{name: "tree=100M,ahead=off", tree: 100_000_000, keys: randomKeys},
		{name: "tree=100M,freeInCall", tree: 100_000_000, keys: randomKeys, ahead: true, inCall: true},
	} {
		b.Run(c.name, func(b *testing.B) {
			d := gputest.Device(b)
			if c.noSpare {
				if err := d.SetSpareLimit(0); err != nil {
					b.Fatal(err)
				}
				defer func() {
					if err := d.SetSpareLimit(-1); err != nil {
						b.Error(err)
					}
				}()
			}
			tk, tv := c.keys(0, c.tree)
			ik, iv := c.keys(c.tree, stepsBatchKeys)
			tr, err := Open(Options{GPU: d})
			if err != nil {
				b.Fatal(err)
			}
			defer tr.Close()
			g := tr.eng.(*gpuEngine)
			g.trace = &engine.StepTrace{}
			g.aheadGrowth, g.freeBeside = c.ahead, !c.inCall
			g.vmm = g.vmm && !c.buffers
			g.deferCheck = !c.checkFirst
			var lb engine.Timings
			var call, frees, before, waited time.Duration
			var pools string
			for b.Loop() {
				b.StopTimer()
				if err := tr.BuildKeys(tk, tv); err != nil {
					b.Fatal(err)
				}
				pools = poolsLine(g.t, aheadCaps(g.t, ik.Len(), leafGuess(ik)))
				if c.settled {
					g.waitFrees()
				}
				if c.settled || c.idle {
					time.Sleep(settleFor())
				}
				b.StartTimer()
				t0 := time.Now()
				if c.waitTimed {
					g.waitFrees()
					waited = time.Since(t0)
				}
				if err := tr.InsertKeys(ik, iv); err != nil {
					b.Fatal(err)
				}
				call = time.Since(t0)
				lb = tr.LastBatch()
				before = g.trace.Began().Sub(t0)
				b.StopTimer()
				g.waitFrees()
				frees = time.Since(t0) - call
				pools += "\n        after:  " + poolsLine(g.t, [numKinds + 1]uint64{})
				b.StartTimer()
			}
			rate := func(d interface{ Seconds() float64 }) float64 { return stepsBatchKeys / d.Seconds() / 1e6 }
			b.ReportMetric(rate(lb.Total), "Mkeys/s")
			b.ReportMetric(rate(lb.Work), "work-Mkeys/s")
			b.ReportMetric(float64(call)/1e6, "ms/call")
			b.ReportMetric(float64(before)/1e6, "ms-before-clock")
			b.ReportMetric(float64(call-before-lb.Total)/1e6, "ms-after-clock")
			steps, err := g.trace.Steps()
			if err != nil {
				b.Fatal(err)
			}
			t1 := time.Now()
			if err := ik.check("insert", iv, true); err != nil {
				b.Fatal(err)
			}
			b.Logf("the batch's check alone, warm: %v; the build's frees waited for in the call: %v", time.Since(t1), waited)
			b.Logf("last insert: %v, the call %v, its frees beside done %v after it\n%s        pools (kind: live/capacity, grown ahead to)\n        before: %s",
				lb, call, frees, engine.FormatSteps(steps), pools)
			if tr.Len() != c.tree+stepsBatchKeys {
				b.Fatalf("%d keys after the insert, want %d", tr.Len(), c.tree+stepsBatchKeys)
			}
			if c.name != "tree=100M" {
				return
			}
			// The check's pass where the call made it before ains9 (right
			// after a build), traced part by part on each fan-out.
			parts := par.Parts(ik.Len(), checkMinPart, 0)
			for _, f := range checkFanOuts[:2] {
				if err := tr.BuildKeys(tk, tv); err != nil {
					b.Fatal(err)
				}
				b.Logf("the check's pass right after a build, fan=%s:\n%s", f.name,
					traceCheck(f.run, ik.Offs, parts, ik.Offs[1]-ik.Offs[0]))
			}
		})
	}
}

// poolsLine is the live records and capacity of each of t's pools in
// use, and the capacity aheadCaps grows it to (ahead; 0: none).
func poolsLine(t *devTree, ahead [numKinds + 1]uint64) string {
	var sb strings.Builder
	for k := kindN4; k <= kindLV; k++ {
		p := &t.pools[k]
		if p.hwm == 0 {
			continue
		}
		fmt.Fprintf(&sb, "%d: %d/%d", k, p.hwm-p.top, p.cap)
		if ahead[k] != 0 {
			fmt.Fprintf(&sb, " ahead %d", ahead[k])
		}
		sb.WriteString("  ")
	}
	return sb.String()
}

// settleFor is how long BenchmarkGPUInsertSteps' settled and idle cases
// wait after the build: $WARPKV_SETTLE_MS milliseconds, 20 by default.
func settleFor() time.Duration {
	if ms, err := strconv.Atoi(os.Getenv("WARPKV_SETTLE_MS")); err == nil && ms >= 0 {
		return time.Duration(ms) * time.Millisecond
	}
	return 20 * time.Millisecond
}
