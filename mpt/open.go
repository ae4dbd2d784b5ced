package mpt

import (
	"errors"
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// Open returns an empty trie on any engine (New takes only the CPU
// engines). With EngineGPU it runs on opts.GPU when given, else on the
// device engine.Place resolves from opts.Device ("" meaning
// $WARPKV_DEVICE, else a GPU), and fails, naming the reason, where no GPU
// is usable; with EngineAuto, and with no engine named (""), it is placed
// as every warpkv engine is (engine.Place: opts.GPU when given, else
// opts.Device, "" meaning $WARPKV_DEVICE, else auto): the GPU engine on a
// GPU, the parallel CPU engine elsewhere (Reason says which and why). Close
// the trie to free the device. Cost: O(1) on the CPU engines; opening the
// device and compiling the kernels (cached on disk) on the GPU engine.
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
	if eng != EngineGPU && eng != EngineAuto {
		opts.Engine = eng
		return newCPU(opts, "mpt: cpu engine ("+string(eng)+"): requested"), nil
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
		return newCPU(opts, p.Reason+" (parallel)"), nil
	}
	g, err := newGPUTrie(p.Device, p.Owned, opts.Secure)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("mpt: open gpu engine on %s: %w", p.Device, err), p.Release())
	}
	g.mode = opts.NodeUpdate
	if opts.HostValues {
		g.host = newHostValues()
	}
	opts.Engine = EngineGPU
	return &Trie{opts: opts, eng: g, g: g, place: p, reason: p.Reason}, nil
}

// Close frees the engine's memory, and on the GPU engine its device
// memory and the device when the trie opened it; the trie must not be
// used afterwards. Cost: O(1) plus the device's teardown.
func (t *Trie) Close() error {
	if t.eng == nil {
		return nil
	}
	err := t.eng.close()
	t.eng, t.cpu, t.g = closedEngine{}, nil, nil
	if err != nil {
		return fmt.Errorf("mpt: close %s engine: %w", t.opts.Engine, err)
	}
	return nil
}

// OnGPU reports whether the trie runs on the GPU engine. Cost: O(1).
//
// Deprecated: use Backend() == gpu.BackendGPU.
func (t *Trie) OnGPU() bool { return t.Backend() == gpu.BackendGPU }

// GPUTimes returns the GPU engine's breakdown of its last Update.
//
// Deprecated: use LastBatch for the phases and Stats for the counters.
func (t *Trie) GPUTimes() GPUTimes { return t.Stats() }

// Lookup is GetBatch with the GPU engine's failures returned rather than
// panicking: values[i] is keys[i]'s value (nil when absent), found[i]
// whether it is present. The values alias the trie on the CPU engines and
// the host copy of the values on the GPU engine with Options.HostValues
// (never modify them), and are fresh copies on the GPU engine without it.
// LookupInto allocates nothing per key. Cost: GetBatch's on the CPU
// engines; on the GPU engine one upload of the keys, one thread per key,
// and one download of the values (of 4-byte value ids with HostValues).
func (t *Trie) Lookup(keys [][]byte) (values [][]byte, found []bool, err error) {
	v, f, err := t.eng.lookup(keys)
	if err != nil {
		return nil, nil, fmt.Errorf("mpt: lookup on the %s engine: %w", t.opts.Engine, err)
	}
	return v, f, nil
}

// GetBatch looks up every key, as Get does, without copying on the CPU
// engines: values[i] is the value of keys[i] (nil when absent), found[i]
// whether it is present. The values alias the trie's storage and must not
// be modified; they stay valid after later updates (which store new
// values rather than overwrite old ones). The parallel engine looks keys
// up on Workers goroutines. Cost: O(key length in nibbles) per key, plus
// one Keccak-256 in secure mode; no allocation per key. On the GPU engine
// it is Lookup, and a device failure panics.
func (t *Trie) GetBatch(keys [][]byte) (values [][]byte, found []bool) {
	v, f, err := t.Lookup(keys)
	if err != nil {
		panic(err)
	}
	return v, f
}

// closedEngine stands in for the engine of a closed trie: every call
// fails (Hash panics, as after a device failure).
type closedEngine struct{}

var errClosed = errors.New("mpt: trie closed")

func (closedEngine) update([][]byte, [][]byte) error           { return errClosed }
func (closedEngine) rootHash() ([32]byte, error)               { return [32]byte{}, errClosed }
func (closedEngine) lookup([][]byte) ([][]byte, []bool, error) { return nil, nil, errClosed }
func (closedEngine) lookupInto([][]byte, *Values) error        { return errClosed }
func (closedEngine) prove([][]byte) ([][][]byte, error)        { return nil, errClosed }
func (closedEngine) snapshot() (node, error)                   { return nil, errClosed }
func (closedEngine) backend() gpu.Backend                      { return gpu.BackendCPU }
func (closedEngine) lastBatch() engine.Timings                 { return engine.Timings{} }
func (closedEngine) stats() BatchStats                         { return BatchStats{} }
func (closedEngine) close() error                              { return nil }
