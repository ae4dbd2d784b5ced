package art

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// BenchmarkGPUPointSteps times CuART's point calls step by step: 1Mi
// lookups and updates of 16-byte keys in a tree of 16Mi keys (or
// WARPKV_ART_BENCH_KEYS: benchPointTree) from a packed batch (Lookup,
// UpdateKeys), from Go slices (Get, Update) and, for lookups, from pinned
// staging (LookupStaged); from Go memory with the chunks queued on a
// goroutine of their own (runBeside, the default) or on the caller
// between its packing (queueOnCaller), in chunks of one size (graded
// chunks, chunkUnits, measured slower in every form). Each row is called
// once untimed, then timed call by call (M/s over the loop, and the
// median call), then called once more traced: the log shows that call's chunks, each with
// the host's time packing it (from, to), the device's time its transfer
// in, kernels and transfer out ended, the host's time its wait ended and
// its answers were unpacked, and when its Out was queued, all in ms from
// the call's start (run with -test.v to see them). The row
// update/packed-alloc makes its found flags for each call, as bench art's
// packed update row does.
func BenchmarkGPUPointSteps(b *testing.B) {
	t, vals, probe, slices, out, found := benchPointTree(b)
	n := len(slices)
	g := t.eng.(*gpuEngine)
	st, err := t.NewStaging(n, len(probe.Data))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Free()
	copy(st.Data, probe.Data)
	copy(st.Offs, probe.Offs)
	calls := []struct {
		name string
		call func() error
	}{
		{"lookup/packed", func() error { return t.Lookup(probe, out, found) }},
		{"lookup/slices", func() error { _, _, err := t.Get(slices); return err }},
		{"lookup/pinned", func() error { return t.LookupStaged(st, n) }},
		{"update/packed", func() error { return t.UpdateKeys(probe, vals[:n], found) }},
		{"update/slices", func() error { _, err := t.Update(slices, vals[:n]); return err }},
		// found made for each call, as bench art's packed update row makes it
		{"update/packed-alloc", func() error { return t.UpdateKeys(probe, vals[:n], make([]bool, n)) }},
	}
	// Settings of the host side (the default first): chunks queued on the
	// caller (queueOnCaller), fan-outs of two parts a worker
	// (pointTuning.packSplit), the answers' pages touched beside the call
	// (touchAnswers, for Get and Update only) and backed by huge pages
	// (hugeAnswers, with the pages touched and not),
	// the host's workers woken for a staged call's check (wakeForCheck,
	// for LookupStaged only), chunks of half the keys (8 a call, chunks8).
	settings := []struct {
		name   string
		slices bool // only for calls from Go slices
		set    func()
	}{
		{"default", false, func() {}},
		{"onCaller", false, func() { g.queueOnCaller = true }},
		{"split2", false, func() { g.pointTune.packSplit = 2 }},
		{"split2,onCaller", false, func() { g.pointTune.packSplit, g.queueOnCaller = 2, true }},
		{"touch", true, func() { g.pointTune.touchAnswers = true }},
		{"huge", true, func() { g.pointTune.hugeAnswers = true }},
		{"huge,touch", true, func() { g.pointTune.hugeAnswers, g.pointTune.touchAnswers = true, true }},
		{"wake", false, func() { g.pointTune.wakeForCheck = true }},
		{"chunks8", false, func() { g.chunkMin = pointChunkMin / 2 }},
	}
	for _, c := range calls {
		for i, v := range settings {
			staged, wake := c.name == "lookup/pinned", v.name == "wake"
			if staged && i > 0 && !wake || !staged && wake {
				continue // staged calls copy nothing on the host and queue on the caller; only they check beside
			}
			if v.slices && !strings.HasSuffix(c.name, "/slices") {
				continue
			}
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				v.set()
				defer func() {
					g.chunkMin, g.chunkUnits, g.queueOnCaller, g.pointTune = pointChunkMin, 0, false, pointTuning{}
				}()
				if err := c.call(); err != nil { // grows the buffers and slots, untimed
					b.Fatal(err)
				}
				var calls []time.Duration
				for b.Loop() {
					t0 := time.Now()
					if err := c.call(); err != nil {
						b.Fatal(err)
					}
					calls = append(calls, time.Since(t0))
				}
				b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "M/s")
				med := medianDuration(calls)
				b.ReportMetric(med.Seconds()*1e3, "median-ms")
				b.ReportMetric(float64(n)/med.Seconds()/1e6, "median-M/s")
				tm := t.LastBatch()
				b.ReportMetric(tm.Upload.Seconds()*1e3, "pack-ms")
				b.ReportMetric(tm.Download.Seconds()*1e3, "unpack-ms")
				b.ReportMetric(tm.Work.Seconds()*1e3, "work-ms")
				b.StopTimer()
				g.trace = &engine.StepTrace{}
				defer func() {
					if err := g.trace.Close(); err != nil {
						b.Error(err)
					}
					g.trace = nil
				}()
				t0 := time.Now()
				if err := c.call(); err != nil {
					b.Fatal(err)
				}
				whole := time.Since(t0)
				for _, s := range []*gpu.Stream{g.s, g.in, g.out} { // every mark passed
					if err := s.Synchronize(); err != nil {
						b.Fatal(err)
					}
				}
				steps, err := g.trace.Steps()
				if err != nil {
					b.Fatal(err)
				}
				b.Logf("%s, %s: traced call %.3f ms\n%s", c.name, v.name, whole.Seconds()*1e3, pointTimeline(steps))
			})
		}
	}
}

// medianDuration returns the median of ds (0 when empty).
func medianDuration(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// pointTimeline renders the marks of a traced point call (pointMark) as
// one line for the call's own marks and one per chunk, times in ms from
// the call's start: host times of the marks the host makes (sized,
// planned, end; pack, packed, waited, unpacked), device times of those
// that follow a transfer or kernels (in, kernels, out).
func pointTimeline(steps []engine.Step) string {
	host := map[string]float64{}
	dev := map[string]float64{}
	var at time.Duration
	chunks := 0
	for _, s := range steps {
		at += s.Host
		host[s.Name] = at.Seconds() * 1e3
		dev[s.Name] = s.DeviceFrom.Seconds() * 1e3
		var c int
		if _, err := fmt.Sscanf(s.Name, "c%d ", &c); err == nil {
			chunks = max(chunks, c+1)
		}
	}
	var sb strings.Builder
	cell := func(m map[string]float64, name string) string {
		if v, ok := m[name]; ok {
			return fmt.Sprintf("%8.3f", v)
		}
		return fmt.Sprintf("%8s", "-")
	}
	fmt.Fprintf(&sb, "host: sized %.3f, planned %.3f, check %s, checked %s, end %.3f\n", host["sized"], host["planned"], cell(host, "check"), cell(host, "checked"), host["end"])
	fmt.Fprintf(&sb, "%5s %8s %8s %8s %8s %8s %8s %8s %8s\n", "chunk", "pack", "packed", "in", "kernels", "out", "waited", "unpacked", "queued")
	for c := range chunks {
		p := fmt.Sprintf("c%d ", c)
		fmt.Fprintf(&sb, "%5d %s %s %s %s %s %s %s %s\n", c, cell(host, p+"pack"), cell(host, p+"packed"), cell(dev, p+"in"),
			cell(dev, p+"kernels"), cell(dev, p+"out"), cell(host, p+"waited"), cell(host, p+"unpacked"), cell(host, p+"out"))
	}
	return sb.String()
}
