package bench

import (
	"fmt"
	"io"
	"math/bits"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// Sizes of the limits measurements; the kernels they time are prim's
// (prim/limits.cu: DevFillRandom16, DevCopy16, DevGather).
const (
	limitsCopyBytes  = 1 << 30 // source and destination of the copy measurements, each
	limitsTableBytes = 4 << 30 // gather table
	limitsGathers    = 1 << 26 // records gathered per timed run
	limitsHostBytes  = 256 << 20
	limitsSeed       = 0x5EED_11A175
)

// Limits are the measured memory limits of one GPU, the references other
// benchmarks compute their ratios against. Bandwidths are in GB/s (1e9
// bytes per second); gather rates in records per second.
type Limits struct {
	Device     string  // the device measured, e.g. "gpu:0 (NVIDIA H100 80GB HBM3, sm_90)"
	CopyGBps   float64 // copy kernel, 16 B per thread, bytes read + written
	MemcpyGBps float64 // cuMemcpyDtoD, bytes read + written
	Gather32   float64 // random 32-byte record reads per second
	Gather64   float64 // random 64-byte record reads per second
	Gather128  float64 // random 128-byte record reads per second
	H2DGBps    float64 // pinned host to device
	D2HGBps    float64 // device to pinned host
	Results    []Result
	Notes      []string // sizes reduced to fit the device's free memory, if any
}

// limitsConfig sizes a limits measurement.
type limitsConfig struct {
	copyBytes, tableBytes, hostBytes int64
	gathers                          int64
	warmup, reps                     int
}

func defaultLimitsConfig() limitsConfig {
	return limitsConfig{
		copyBytes: limitsCopyBytes, tableBytes: limitsTableBytes, hostBytes: limitsHostBytes,
		gathers: limitsGathers, warmup: DefaultWarmup, reps: DefaultReps,
	}
}

// MeasureLimits measures the device's copy bandwidth (a copy kernel over
// 1 GiB and cuMemcpyDtoD), its random gather rate for 32-, 64- and 128-byte
// records from a 4 GiB table, and pinned host<->device bandwidth over
// 256 MiB, writing progress lines to progress (nil: none). Sizes shrink,
// with a note, when the device has too little free memory. Cost: at most
// 4 GiB of device memory at a time, 256 MiB of pinned host memory, and a
// few seconds; everything is freed on return.
func MeasureLimits(d *gpu.Device, progress io.Writer) (Limits, error) {
	return measureLimits(d, NewProgress(progress), defaultLimitsConfig())
}

func measureLimits(d *gpu.Device, p *Progress, cfg limitsConfig) (Limits, error) {
	lim := Limits{Device: d.String()}
	e, err := prim.NewGPU(d)
	if err != nil {
		return lim, fmt.Errorf("bench: limits engine: %w", err)
	}
	defer e.Close()
	t, err := NewGPUTimer(d, e.Stream())
	if err != nil {
		return lim, err
	}
	defer t.Close()
	run := &limitsRun{d: d, e: e, s: e.Stream(), t: t, p: p, cfg: cfg, lim: &lim}
	for _, step := range []func() error{run.copy, run.gather, run.host} {
		if err := step(); err != nil {
			return lim, err
		}
	}
	return lim, nil
}

// limitsRun is the state shared by the steps of one limits measurement.
type limitsRun struct {
	d   *gpu.Device
	e   *prim.Engine // launches the limits kernels on s
	s   *gpu.Stream
	t   *GPUTimer
	p   *Progress
	cfg limitsConfig
	lim *Limits
}

// fitBytes returns want, halved until it fits in frac of the device's free
// memory (at least min), and whether it was reduced.
func fitBytes(d *gpu.Device, want, min int64, frac float64) (int64, bool, error) {
	free, _, err := d.MemInfo()
	if err != nil {
		return 0, false, fmt.Errorf("bench: querying free memory: %w", err)
	}
	got := want
	for got > min && float64(got) > frac*float64(free) {
		got /= 2
	}
	return got, got != want, nil
}

// copy times the copy kernel and cuMemcpyDtoD.
func (r *limitsRun) copy() error {
	d, e, s, t, p, cfg, lim := r.d, r.e, r.s, r.t, r.p, r.cfg, r.lim
	size, reduced, err := fitBytes(d, cfg.copyBytes, 16<<20, 0.45)
	if err != nil {
		return err
	}
	if reduced {
		lim.Notes = append(lim.Notes, fmt.Sprintf("copy buffers reduced to %s each to fit free device memory", IEC(size)))
	}
	size -= size % 16
	if size == 0 {
		return fmt.Errorf("bench: copy of %d bytes: need at least 16", cfg.copyBytes)
	}
	n := int(size / 16)
	src, err := gpu.Alloc[[16]byte](d, n)
	if err != nil {
		return fmt.Errorf("bench: copy source: %w", err)
	}
	defer src.Free()
	dst, err := gpu.Alloc[[16]byte](d, n)
	if err != nil {
		return fmt.Errorf("bench: copy destination: %w", err)
	}
	defer dst.Free()
	if err := e.DevFillRandom16(src, limitsSeed); err != nil {
		return fmt.Errorf("bench: filling copy source: %w", err)
	}
	moved := 2 * size // read + written
	peak := d.Properties().PeakMemBandwidth() / 1e9

	p.Printf("gpu: copy kernel over %s", IEC(size))
	sec, err := t.Time(cfg.warmup, cfg.reps, nil, func() error {
		return e.DevCopy16(dst, src)
	})
	if err != nil {
		return fmt.Errorf("bench: copy kernel: %w", err)
	}
	res := NewResult(fmt.Sprintf("copy kernel, 16 B/thread (%s, 16 B items)", IEC(size)), "gpu", int64(n), moved, sec)
	lim.CopyGBps = res.GBps
	lim.Results = append(lim.Results, res.VsBandwidth("theoretical peak", peak))

	p.Printf("gpu: cuMemcpyDtoD over %s", IEC(size))
	sec, err = t.Time(cfg.warmup, cfg.reps, nil, func() error { return dst.CopyFrom(s, 0, src, 0, n) })
	if err != nil {
		return fmt.Errorf("bench: cuMemcpyDtoD: %w", err)
	}
	res = NewResult(fmt.Sprintf("cuMemcpyDtoD (%s, 16 B items)", IEC(size)), "gpu", int64(n), moved, sec)
	lim.MemcpyGBps = res.GBps
	lim.Results = append(lim.Results, res.VsBandwidth("theoretical peak", peak))
	return nil
}

// gather times random reads of 32-, 64- and 128-byte records.
func (r *limitsRun) gather() error {
	d, e, t, p, cfg, lim := r.d, r.e, r.t, r.p, r.cfg, r.lim
	size, reduced, err := fitBytes(d, cfg.tableBytes, 64<<20, 0.85)
	if err != nil {
		return err
	}
	size = int64(1) << (63 - bits.LeadingZeros64(uint64(size))) // power of two: records are masked
	if reduced {
		lim.Notes = append(lim.Notes, fmt.Sprintf("gather table reduced to %s to fit free device memory", IEC(size)))
	}
	table, err := gpu.Alloc[[16]byte](d, int(size/16))
	if err != nil {
		return fmt.Errorf("bench: gather table: %w", err)
	}
	defer table.Free()
	if err := e.DevFillRandom16(table, limitsSeed+1); err != nil {
		return fmt.Errorf("bench: filling gather table: %w", err)
	}
	sink, err := gpu.Alloc[uint32](d, prim.GatherSinkLen(d))
	if err != nil {
		return fmt.Errorf("bench: gather sink: %w", err)
	}
	defer sink.Free()
	for _, g := range []struct {
		record int64
		dst    *float64
	}{
		{32, &lim.Gather32},
		{64, &lim.Gather64},
		{128, &lim.Gather128},
	} {
		p.Printf("gpu: random gather of %d-byte records from %s", g.record, IEC(size))
		sec, err := t.Time(cfg.warmup, cfg.reps, nil, func() error {
			return e.DevGather(table, int(g.record), uint64(cfg.gathers), uint64(limitsSeed), sink)
		})
		if err != nil {
			return fmt.Errorf("bench: gather of %d-byte records: %w", g.record, err)
		}
		res := NewResult(fmt.Sprintf("random gather, %d B records (%s table)", g.record, IEC(size)), "gpu",
			cfg.gathers, cfg.gathers*g.record, sec)
		*g.dst = res.OpsPerSec
		lim.Results = append(lim.Results, res.VsBandwidth("gpu copy", lim.CopyGBps))
	}
	return nil
}

// host times pinned host->device and device->host copies.
func (r *limitsRun) host() error {
	d, s, t, p, cfg, lim := r.d, r.s, r.t, r.p, r.cfg, r.lim
	n := int(cfg.hostBytes / 16)
	host, err := gpu.AllocHost[[16]byte](d, n)
	if err != nil {
		return fmt.Errorf("bench: pinned host buffer: %w", err)
	}
	defer host.Free()
	dev, err := gpu.Alloc[[16]byte](d, n)
	if err != nil {
		return fmt.Errorf("bench: transfer buffer: %w", err)
	}
	defer dev.Free()
	h := host.Slice()
	for i := range h {
		for j := range h[i] {
			h[i][j] = byte(i*16 + j*7 + 1)
		}
	}
	for _, x := range []struct {
		op  string
		run func() error
		dst *float64
	}{
		{"pinned host->device", func() error { return dev.Write(s, 0, h) }, &lim.H2DGBps},
		{"pinned device->host", func() error { return dev.Read(s, 0, h) }, &lim.D2HGBps},
	} {
		p.Printf("gpu: %s over %s", x.op, IEC(cfg.hostBytes))
		sec, err := t.Time(cfg.warmup, cfg.reps, nil, x.run)
		if err != nil {
			return fmt.Errorf("bench: %s: %w", x.op, err)
		}
		res := NewResult(fmt.Sprintf("%s (%s, 16 B items)", x.op, IEC(cfg.hostBytes)), "gpu", int64(n), cfg.hostBytes, sec)
		*x.dst = res.GBps
		lim.Results = append(lim.Results, res)
	}
	return nil
}
