package mpt

import (
	"fmt"

	"warpkv/gpu"
)

// Open returns an empty trie on any engine (New takes only the CPU
// engines). With EngineGPU it opens the device named by opts.Device and
// fails, naming the reason, where no GPU is usable; with EngineAuto it
// picks the GPU engine where one is usable and the parallel CPU engine
// elsewhere (Reason says which and why). Close the trie to free the
// device. Cost: O(1) on the CPU engines; opening the device and compiling
// the kernels (cached on disk) on the GPU engine.
func Open(opts Options) (*Trie, error) {
	eng, err := ParseEngine(string(opts.Engine))
	if err != nil {
		return nil, err
	}
	if opts.Workers < 0 {
		return nil, fmt.Errorf("mpt: open: %d workers", opts.Workers)
	}
	if _, err := ParseNodeUpdate(string(opts.NodeUpdate)); err != nil {
		return nil, err
	}
	if eng != EngineGPU && eng != EngineAuto {
		opts.Engine = eng
		t := New(opts)
		t.reason = "cpu engine (" + string(eng) + ")"
		return t, nil
	}
	spec := opts.Device
	if eng == EngineGPU && spec == "" {
		spec = "gpu"
	}
	c, err := gpu.Choose(spec)
	if err != nil {
		return nil, fmt.Errorf("mpt: open %s engine: %w", eng, err)
	}
	if c.Backend != gpu.BackendGPU {
		if eng == EngineGPU {
			return nil, fmt.Errorf("mpt: open gpu engine: %s", c.Reason)
		}
		opts.Engine = EngineParallel
		t := New(opts)
		t.reason = "cpu engine (parallel): " + c.Reason
		return t, nil
	}
	g, err := newGPUTrie(c.Device, true, opts.Secure)
	if err != nil {
		return nil, fmt.Errorf("mpt: open gpu engine on %s: %w", c.Device, err)
	}
	g.mode = opts.NodeUpdate
	if opts.HostValues {
		g.host = newHostValues()
	}
	opts.Engine = EngineGPU
	return &Trie{opts: opts, hasher: newHasher(), g: g, reason: "gpu engine: " + c.Reason}, nil
}

// Close frees the GPU engine's device memory and device; the trie must
// not be used afterwards. On the CPU engines it does nothing. Cost: O(1)
// plus the device's teardown.
func (t *Trie) Close() error {
	if t.g == nil {
		return nil
	}
	err := t.g.close()
	t.g = nil
	t.root = nil
	if err != nil {
		return fmt.Errorf("mpt: close gpu engine: %w", err)
	}
	return nil
}

// Reason says which engine the trie runs on and why (for tries made by
// Open; New's say the CPU engine). Cost: O(1).
func (t *Trie) Reason() string {
	if t.reason == "" {
		return "cpu engine (" + string(t.opts.Engine) + ")"
	}
	return t.reason
}

// OnGPU reports whether the trie runs on the GPU engine. Cost: O(1).
func (t *Trie) OnGPU() bool { return t.g != nil }

// GPUTimes returns the time breakdown of the GPU engine's last batch
// (zero on the CPU engines). Cost: O(1).
func (t *Trie) GPUTimes() GPUTimes {
	if t.g == nil {
		return GPUTimes{}
	}
	return t.g.times
}

// Lookup is GetBatch with the GPU engine's failures returned rather than
// panicking: values[i] is keys[i]'s value (nil when absent), found[i]
// whether it is present. The values alias the trie on the CPU engines and
// the host copy of the values on the GPU engine with Options.HostValues
// (never modify them), and are fresh copies on the GPU engine without it.
// LookupInto allocates nothing per key. Cost: GetBatch's on the CPU
// engines; on the GPU engine one upload of the keys, one thread per key,
// and one download of the values (of 4-byte value ids with HostValues).
func (t *Trie) Lookup(keys [][]byte) (values [][]byte, found []bool, err error) {
	if t.g != nil {
		v, f, err := t.g.lookup(keys)
		if err != nil {
			return nil, nil, fmt.Errorf("mpt: lookup on the gpu engine: %w", err)
		}
		return v, f, nil
	}
	values, found = t.GetBatch(keys)
	return values, found, nil
}
