package mpt

import (
	"fmt"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// EmptyRoot is the root hash of an empty trie: Keccak-256 of the RLP
// encoding of the empty string (0x80).
var EmptyRoot = [32]byte{
	0x56, 0xe8, 0x1f, 0x17, 0x1b, 0xcc, 0x55, 0xa6, 0xff, 0x83, 0x45, 0xe6, 0x92, 0xc0, 0xf8, 0x6e,
	0x5b, 0x48, 0xe0, 0x1b, 0x99, 0x6c, 0xad, 0xc0, 0x01, 0x62, 0x2f, 0xb5, 0xe3, 0x63, 0xb4, 0x21,
}

// Options configures a Trie.
type Options struct {
	// Secure hashes every key with Keccak-256 before it enters the trie,
	// as Ethereum's state and storage tries (go-ethereum's StateTrie) do.
	// Iteration then yields the hashed keys.
	Secure bool

	// Engine selects the engine: EngineSequential applies a batch one
	// operation at a time and hashes on one goroutine; EngineParallel sorts the batch, splits it by nibble and
	// applies the parts to disjoint subtrees on goroutines (the CPU port of
	// the paper's PhaseNU), and hashes dirty subtrees on goroutines;
	// EngineGPU keeps the trie in device memory and runs PhaseNU and
	// PhaseHC on the GPU (the *_gpu.go and .cu files); EngineAuto is
	// EngineGPU where a GPU is usable and EngineParallel elsewhere. All
	// give the same trie, roots and proofs. Open with "" places the trie
	// by Device and GPU as every warpkv engine is placed (EngineAuto).
	Engine Engine

	// Workers is the parallel engine's number of goroutines; 0 means
	// GOMAXPROCS. The other engines ignore it.
	Workers int

	// NodeUpdate picks the GPU engine's node-update algorithm:
	// NodeUpdateAuto (the default) lets the decision model choose per
	// batch, NodeUpdatePhase forces PhaseNU, NodeUpdateLock forces LockNU
	// where it can run (batches with deletes or into an empty trie always
	// use PhaseNU). The CPU engines ignore it.
	NodeUpdate NodeUpdate

	// HostValues makes the GPU engine keep a copy of every value in host
	// memory beside the device trie: lookups then bring back only a
	// 4-byte value id per key and read the values from the copy (Lookup's
	// values alias it, LookupInto copies from it on all cores), instead of
	// gathering and downloading them. It costs host memory as large as the
	// device's value arena and a host copy of each batch's values during
	// Update (made while the values are packed for upload). The CPU
	// engines ignore it.
	HostValues bool

	// Device is the device option of Open's placed engines (EngineAuto,
	// also for "", and EngineGPU), resolved by engine.Place: "" means
	// $WARPKV_DEVICE, else auto (EngineGPU then insists on a GPU); auto,
	// cpu, gpu or gpu:N. The CPU engines ignore it.
	Device string

	// GPU, when not nil, is an open device the GPU engine (EngineGPU or
	// EngineAuto) runs on instead of resolving Device; the caller keeps
	// it and closes it after the trie.
	GPU *gpu.Device
}

// Engine names an engine; see Options.Engine.
type Engine string

// The engines.
const (
	EngineSequential Engine = "sequential"
	EngineParallel   Engine = "parallel"
	EngineGPU        Engine = "gpu"
	EngineAuto       Engine = "auto"
)

// Engines lists the CPU engines, the default first.
func Engines() []Engine { return []Engine{EngineSequential, EngineParallel} }

// ParseEngine returns the engine named s ("" is the sequential engine),
// or an error naming the valid ones.
func ParseEngine(s string) (Engine, error) {
	switch Engine(s) {
	case "", EngineSequential:
		return EngineSequential, nil
	case EngineParallel, EngineGPU, EngineAuto:
		return Engine(s), nil
	}
	return "", fmt.Errorf("mpt: unknown engine %q (want %s, %s, %s or %s)", s, EngineSequential, EngineParallel, EngineGPU, EngineAuto)
}

// Trie is an in-memory Merkle Patricia Trie. It is safe for concurrent
// use: calls are serialized. It implements engine.Reporter through its
// embedded engine.Facade (Backend, Reason, LastBatch, Close); after Close
// every call returns an error matching engine.ErrClosed.
//
// LastBatch is the time breakdown of the last batch operation: an Update
// ("update": on the GPU engine Upload is staging and copies, Sort the
// device sort and dedupe, Work PhaseNU and PhaseHC), a lookup ("lookup":
// on the GPU engine Work is the keys' upload, the walks and the offsets or
// ids back, Download the values' return), a proof batch ("prove", Total
// only) or, on the CPU engines, a Hash that hashed something ("hash"). CPU
// engines report host time as Work.
type Trie struct {
	engine.Facade[trieEngine]
	opts  Options
	cpu   *cpuTrie // the engine on the CPU engines, else nil
	g     *gpuTrie // the engine on the GPU engine, else nil
	chunk int      // keys per chunk of UpdateContext (0: ContextChunk)
}

var _ engine.Reporter = (*Trie)(nil)

// Options returns the options the trie was created with (Engine the
// engine it runs on). Cost: O(1).
func (t *Trie) Options() Options { return t.opts }

// Update applies a batch: for each i in order, it sets keys[i] to
// values[i], or deletes keys[i] when values[i] is empty (as go-ethereum
// does). Within the batch the last operation on a key wins. Values are
// copied. It returns an error, and changes nothing, when the slices differ
// in length; on the GPU engine also for keys longer than MaxGPUKeyBytes
// (ErrKeyTooLong) and device failures. Cost: on the CPU engines O(sum of
// key lengths in nibbles + value bytes) plus, in secure mode, one
// Keccak-256 per key, hashing deferred to Hash; on the GPU engine the
// batch's upload, PhaseNU and PhaseHC.
func (t *Trie) Update(keys, values [][]byte) error {
	e, err := t.lockUpdate(keys, values)
	if err != nil {
		return err
	}
	defer t.unlock()
	return t.update(e, keys, values)
}

// lockUpdate checks that keys and values pair up and locks the trie for an
// update, returning its engine; the caller unlocks. Cost: O(1).
func (t *Trie) lockUpdate(keys, values [][]byte) (trieEngine, error) {
	if len(keys) != len(values) {
		return nil, fmt.Errorf("mpt: update: %d keys but %d values", len(keys), len(values))
	}
	return t.lock("update")
}

// update is Update on e, the engine the lock returned.
func (t *Trie) update(e trieEngine, keys, values [][]byte) error {
	if err := e.update(keys, values); err != nil {
		return fmt.Errorf("mpt: update on the %s engine: %w", t.opts.Engine, err)
	}
	return nil
}

// Delete removes keys from the trie; absent keys are ignored. Branches
// left with one child collapse and short nodes merge exactly as in
// go-ethereum, so roots match. Only the GPU engine can fail (see Update).
// Cost: Update's.
func (t *Trie) Delete(keys [][]byte) error {
	return t.Update(keys, make([][]byte, len(keys)))
}

// Get returns a copy of the value stored under key and whether it is
// present. Cost: O(key length in nibbles + value length), plus one
// Keccak-256 in secure mode; on the GPU engine a batch of one (see
// Lookup), whose device failure is returned.
func (t *Trie) Get(key []byte) ([]byte, bool, error) {
	if t.cpu != nil { // fast path: no slices for a batch of one
		if _, err := t.lock("get"); err != nil {
			return nil, false, err
		}
		defer t.unlock()
		v, ok := get(t.cpu.root, t.cpu.pathOf(key))
		return v, ok, nil
	}
	v, f, err := t.Lookup([][]byte{key})
	if err != nil {
		return nil, false, err
	}
	return append([]byte(nil), v[0]...), f[0], nil
}

// Hash returns the root hash, EmptyRoot for an empty trie. The CPU engines
// hash only the nodes changed since the previous Hash (each once) and
// cache the result; the GPU engine hashes at the end of every batch and
// returns the hash it read back from the root node then (after a failed
// batch it reads it again, and returns the device's error). Cost: one RLP
// encoding and at most one Keccak-256 per dirty node; O(1) on the GPU
// engine.
func (t *Trie) Hash() ([32]byte, error) {
	e, err := t.lock("hash")
	if err != nil {
		return [32]byte{}, err
	}
	defer t.unlock()
	h, err := e.rootHash()
	if err != nil {
		return [32]byte{}, fmt.Errorf("mpt: root hash on the %s engine: %w", t.opts.Engine, err)
	}
	return h, nil
}

// RootHash is Hash.
//
// Deprecated: use Hash, which returns the error itself.
func (t *Trie) RootHash() ([32]byte, error) { return t.Hash() }

// Stats returns the GPU engine's counters of its last Update beyond
// LastBatch's phases (the zero value on the CPU engines and after Close).
// Cost: O(1).
func (t *Trie) Stats() BatchStats {
	e, err := t.lock("stats")
	if err != nil {
		return BatchStats{}
	}
	defer t.unlock()
	return e.stats()
}
