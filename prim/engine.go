package prim

import (
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/warpkv/warpkv/gpu"
)

// Key is an unsigned integer sort key.
type Key interface{ ~uint32 | ~uint64 }

// Word is an unsigned integer payload: a sort value, a scanned or reduced
// element.
type Word interface{ ~uint32 | ~uint64 }

// Engine runs primitives on one backend. A GPU engine owns one stream on its
// device and reusable scratch memory; calls on one engine are serialized
// (its methods and the package's functions may be called from many
// goroutines). Use several engines for concurrency on one device.
type Engine struct {
	backend gpu.Backend
	reason  string
	workers int

	dev     *gpu.Device
	ownsDev bool
	stream  *gpu.Stream

	mu      sync.Mutex
	modules map[string]*gpu.Module
	pool    *gpu.Pool // scratch, one buffer per purpose
}

// New returns an engine for a device option ("auto", "cpu", "gpu",
// "gpu:N"; "" means WARPKV_DEVICE or auto). Reason says what was chosen.
func New(option string) (*Engine, error) {
	c, err := gpu.Choose(option)
	if err != nil {
		return nil, err
	}
	if c.Backend == gpu.BackendCPU {
		e := NewCPU(0)
		e.reason = c.Reason
		return e, nil
	}
	e, err := NewGPU(c.Device)
	if err != nil {
		c.Device.Close()
		return nil, err
	}
	e.ownsDev = true
	e.reason = c.Reason
	return e, nil
}

// NewCPU returns the CPU engine using workers goroutines (0: GOMAXPROCS).
func NewCPU(workers int) *Engine {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	return &Engine{backend: gpu.BackendCPU, workers: workers, reason: "cpu engine"}
}

// NewGPU returns a GPU engine on an open device; the caller keeps ownership
// of the device and must close the engine before it.
func NewGPU(d *gpu.Device) (*Engine, error) {
	s, err := d.NewStream()
	if err != nil {
		return nil, fmt.Errorf("prim: new engine on %s: %w", d, err)
	}
	return &Engine{
		backend: gpu.BackendGPU, dev: d, stream: s, workers: runtime.GOMAXPROCS(0),
		reason:  "gpu engine on " + d.String(),
		modules: map[string]*gpu.Module{}, pool: gpu.NewPool(d, s),
	}, nil
}

// NewGPUWith returns NewGPU's engine on d together with what load returns
// on d (an engine package's kernels, say); when load fails the engine is
// closed and load's error returned. The caller keeps the device. Cost:
// NewGPU's and load's.
func NewGPUWith[K any](d *gpu.Device, load func(*gpu.Device) (K, error)) (*Engine, K, error) {
	var none K
	e, err := NewGPU(d)
	if err != nil {
		return nil, none, err
	}
	k, err := load(d)
	if err != nil {
		return nil, none, errors.Join(err, e.Close())
	}
	return e, k, nil
}

// Backend says whether the engine runs on the CPU or a GPU.
func (e *Engine) Backend() gpu.Backend { return e.backend }

// Name is "cpu" or "gpu".
func (e *Engine) Name() string { return e.backend.String() }

// Reason is a sentence saying which engine was chosen and why.
func (e *Engine) Reason() string { return e.reason }

// Workers is the number of goroutines the CPU paths use.
func (e *Engine) Workers() int { return e.workers }

// Device returns the GPU, or nil for the CPU engine.
func (e *Engine) Device() *gpu.Device { return e.dev }

// Stream returns the stream all device-level work of the engine is queued
// on (nil for the CPU engine). Record events on it to time that work.
func (e *Engine) Stream() *gpu.Stream { return e.stream }

// Synchronize waits for the engine's queued device work.
func (e *Engine) Synchronize() error {
	if e.stream == nil {
		return nil
	}
	return e.stream.Synchronize()
}

// Close frees the engine's scratch memory and stream, and the device if the
// engine opened it.
func (e *Engine) Close() error {
	if e.backend != gpu.BackendGPU {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if e.stream != nil {
		keep(e.stream.Synchronize())
	}
	keep(e.pool.Free())
	keep(e.stream.Close())
	if e.ownsDev {
		keep(e.dev.Close())
	}
	return first
}

// kernel returns the named kernel of the program of the named .cu file,
// loading the program on first use. Callers hold e.mu.
func (e *Engine) kernel(file, name string) (*gpu.Function, error) {
	m, ok := e.modules[file]
	if !ok {
		p, err := program(file)
		if err != nil {
			return nil, err
		}
		if m, err = e.dev.Load(p); err != nil {
			return nil, err
		}
		e.modules[file] = m
	}
	return m.Function(name)
}

// scratchBuf returns a reusable device buffer of at least n bytes for the
// given purpose (grown with headroom). Reuse is safe because all the
// engine's work is ordered on its one stream. Callers hold e.mu.
func (e *Engine) scratchBuf(purpose string, n int) (*gpu.Buffer[byte], error) {
	b, err := gpu.Get[byte](e.pool, purpose, n)
	if err != nil {
		return nil, fmt.Errorf("prim: scratch for %s: %w", purpose, err)
	}
	return b, nil
}

// asBuffer reinterprets the first bytes of a byte buffer as n elements of T
// (a view; it must not be freed).
func asBuffer[T any](b *gpu.Buffer[byte], offsetBytes, n int) *gpu.Buffer[T] {
	return gpu.View[T](b, offsetBytes, n)
}
