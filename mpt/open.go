package mpt

import (
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// Open returns an empty trie on the engine opts selects. With no engine
// named ("") or EngineAuto it is placed as every warpkv engine is
// (engine.Place: opts.GPU when given, else opts.Device: auto, cpu, gpu or
// gpu:N, "" meaning $WARPKV_DEVICE, else auto): the GPU engine on a GPU,
// the parallel CPU engine elsewhere (Reason says which and why). With
// EngineGPU it runs on opts.GPU when given, else on the device
// engine.Place resolves from opts.Device ("" meaning $WARPKV_DEVICE, else
// a GPU), and fails, naming the reason, where no GPU is usable.
// EngineSequential and EngineParallel are the CPU engines. Close the trie
// to free its memory and the device it opened. Cost: O(1) on the CPU
// engines; opening the device and compiling the kernels (cached on disk)
// on the GPU engine.
func Open(opts Options) (*Trie, error) {
	eng := EngineAuto // no engine named: placed by the device options
	if opts.Engine != "" {
		var err error
		if eng, err = ParseEngine(string(opts.Engine)); err != nil {
			return nil, err
		}
	}
	if opts.Workers < 0 {
		return nil, fmt.Errorf("mpt: open: %d workers", opts.Workers)
	}
	if _, err := ParseNodeUpdate(string(opts.NodeUpdate)); err != nil {
		return nil, err
	}
	t := &Trie{}
	if eng != EngineGPU && eng != EngineAuto {
		opts.Engine = eng
		p := engine.Placement{Backend: gpu.BackendCPU, Reason: "mpt: cpu engine (" + string(eng) + "): requested"}
		if err := t.start(p, opts); err != nil {
			return nil, err
		}
		return t, nil
	}
	option := opts.Device
	if eng == EngineGPU && option == "" {
		option = "gpu"
	}
	p, err := engine.Place("mpt", option, opts.GPU)
	if err != nil {
		return nil, fmt.Errorf("mpt: open %s engine: %w", eng, err)
	}
	if p.Backend != gpu.BackendGPU {
		if eng == EngineGPU {
			return nil, fmt.Errorf("mpt: open gpu engine: %s", p.Reason)
		}
		opts.Engine = EngineParallel
		p.Reason += " (parallel)"
		if err := t.start(p, opts); err != nil {
			return nil, err
		}
		return t, nil
	}
	opts.Engine = EngineGPU
	if err := t.start(p, opts); err != nil {
		return nil, err
	}
	return t, nil
}

// start opens t's facade on p with the engine opts.Engine (validated).
func (t *Trie) start(p engine.Placement, opts Options) error {
	t.opts = opts
	return engine.OpenOn(&t.Facade, p, engine.Spec[trieEngine]{
		Name: "mpt",
		Start: func(p engine.Placement) (trieEngine, error) {
			if p.Backend != gpu.BackendGPU {
				t.cpu = newCPUTrie(opts)
				return t.cpu, nil
			}
			g, err := newGPUTrie(p.Device, false, opts.Secure) // the facade releases the device
			if err != nil {
				return nil, fmt.Errorf("mpt: open gpu engine on %s: %w", p.Device, err)
			}
			g.mode = opts.NodeUpdate
			if opts.HostValues {
				g.host = newHostValues()
			}
			t.g = g
			return g, nil
		},
		Free: func(e trieEngine) error { return e.close() },
		Last: func(e trieEngine) engine.Timings { return e.lastBatch() },
	})
}

// lock takes the trie's lock for op and returns the engine, or returns an
// error matching engine.ErrClosed and holds no lock.
func (t *Trie) lock(op string) (trieEngine, error) { return engine.Lock(&t.Facade, op) }

// unlock releases the lock lock took.
func (t *Trie) unlock() { engine.Unlock(&t.Facade) }

// Lookup looks every key up: values[i] is keys[i]'s value (nil when
// absent), found[i] whether it is present. The values alias the trie on
// the CPU engines and the host copy of the values on the GPU engine with
// Options.HostValues (never modify them; they stay valid after later
// updates, which store new values rather than overwrite old ones), and are
// fresh copies on the GPU engine without it. The parallel engine looks
// keys up on Workers goroutines. LookupInto allocates nothing per key.
// Cost: O(key length in nibbles) per key, plus one Keccak-256 in secure
// mode, no allocation per key on the CPU engines; on the GPU engine one
// upload of the keys, one thread per key, and one download of the values
// (of 4-byte value ids with HostValues).
func (t *Trie) Lookup(keys [][]byte) (values [][]byte, found []bool, err error) {
	e, err := t.lock("lookup")
	if err != nil {
		return nil, nil, err
	}
	defer t.unlock()
	v, f, err := e.lookup(keys)
	if err != nil {
		return nil, nil, fmt.Errorf("mpt: lookup on the %s engine: %w", t.opts.Engine, err)
	}
	return v, f, nil
}
