package bench

import (
	_ "embed"
	"fmt"
	"io"
	"math/bits"

	"github.com/warpkv/warpkv/gpu"
)

//go:embed limits.cu
var limitsSource string

// Programs returns the package's kernel program, limits.cu (the copy and
// gather kernels of the limits suite) with the shared headers, for
// Device.Load and the compile test of every kernel. Cost: reads the
// embedded headers.
func Programs() []gpu.Program { return []gpu.Program{gpu.NewProgram("limits.cu", limitsSource)} }

// Launch configuration and sizes of the limits measurements.
const (
	limitsBlock       = 256     // threads per block of every limits kernel (a multiple of 8 lanes)
	gatherBlocksPerSM = 32      // gather grid: blocks per SM; each thread loops over many gathers
	fillBlocksPerSM   = 32      // fill grid: blocks per SM, grid-stride
	limitsCopyBytes   = 1 << 30 // source and destination of the copy measurements, each
	limitsTableBytes  = 4 << 30 // gather table
	limitsGathers     = 1 << 26 // records gathered per timed run
	limitsHostBytes   = 256 << 20
	limitsSeed        = 0x5EED_11A175
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
	m, err := d.Load(Programs()[0])
	if err != nil {
		return lim, fmt.Errorf("bench: limits kernels: %w", err)
	}
	s, err := d.NewStream()
	if err != nil {
		return lim, fmt.Errorf("bench: limits stream: %w", err)
	}
	defer s.Close()
	t, err := NewGPUTimer(d, s)
	if err != nil {
		return lim, err
	}
	defer t.Close()
	run := &limitsRun{d: d, m: m, s: s, t: t, p: p, cfg: cfg, lim: &lim}
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
	m   *gpu.Module
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

// fillRandom fills a device buffer of 16-byte words with non-zero
// pseudo-random data on stream s.
func (r *limitsRun) fillRandom(b *gpu.Buffer[[16]byte], seed uint64) error {
	f, err := r.m.Function("fill_random_v16")
	if err != nil {
		return err
	}
	grid := min(gpu.Grid(b.Len(), limitsBlock), r.d.Properties().SMs*fillBlocksPerSM)
	return f.Launch(r.s, gpu.D1(grid), gpu.D1(limitsBlock), 0, b, uint64(b.Len()), seed)
}

// copy times the copy kernel and cuMemcpyDtoD.
func (r *limitsRun) copy() error {
	d, m, s, t, p, cfg, lim := r.d, r.m, r.s, r.t, r.p, r.cfg, r.lim
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
	if err := r.fillRandom(src, limitsSeed); err != nil {
		return fmt.Errorf("bench: filling copy source: %w", err)
	}
	copyK, err := m.Function("copy_v16")
	if err != nil {
		return err
	}
	moved := 2 * size // read + written
	peak := d.Properties().PeakMemBandwidth() / 1e9

	p.Printf("gpu: copy kernel over %s", IEC(size))
	sec, err := t.Time(cfg.warmup, cfg.reps, nil, func() error {
		return copyK.Launch(s, gpu.D1(gpu.Grid(n, limitsBlock)), gpu.D1(limitsBlock), 0, src, dst, uint64(n))
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
	d, m, s, t, p, cfg, lim := r.d, r.m, r.s, r.t, r.p, r.cfg, r.lim
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
	if err := r.fillRandom(table, limitsSeed+1); err != nil {
		return fmt.Errorf("bench: filling gather table: %w", err)
	}
	grid := d.Properties().SMs * gatherBlocksPerSM
	sink, err := gpu.Alloc[uint32](d, grid*limitsBlock)
	if err != nil {
		return fmt.Errorf("bench: gather sink: %w", err)
	}
	defer sink.Free()
	for _, g := range []struct {
		kernel string
		record int64
		dst    *float64
	}{
		{"gather32", 32, &lim.Gather32},
		{"gather64", 64, &lim.Gather64},
		{"gather128", 128, &lim.Gather128},
	} {
		f, err := m.Function(g.kernel)
		if err != nil {
			return err
		}
		mask := uint64(size/g.record) - 1
		p.Printf("gpu: random gather of %d-byte records from %s", g.record, IEC(size))
		sec, err := t.Time(cfg.warmup, cfg.reps, nil, func() error {
			return f.Launch(s, gpu.D1(grid), gpu.D1(limitsBlock), 0, table, mask, uint64(cfg.gathers), uint64(limitsSeed), sink)
		})
		if err != nil {
			return fmt.Errorf("bench: %s: %w", g.kernel, err)
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
