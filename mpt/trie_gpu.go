package mpt

import (
	"errors"
	"fmt"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/prim"
)

// The GPU engine (Options.Engine = EngineGPU): the trie's nodes, values and
// cached references live in device memory between batches; mpt.cuh
// describes the phases, and each phase's kernels are in a .cu file beside
// the *_gpu.go file that launches them (see kernels_gpu.go). The host
// keeps only the root id, the allocator's counters and the root hash (and,
// with Options.HostValues, a copy of the values). This file holds the
// engine's state, its device storage and small helpers.

// ErrKeyTooLong is wrapped by the GPU engine's errors for a key longer
// than MaxGPUKeyBytes (the CPU engines take keys of any length).
var ErrKeyTooLong = errors.New("mpt: key too long for the gpu engine")

// MaxGPUKeyBytes is the longest key (before hashing, in secure mode any
// length is fine) the GPU engine accepts: a node holds its path inline.
const MaxGPUKeyBytes = maxKeyBytes

// BatchStats are the GPU engine's figures of its last Update or Delete
// batch beyond Trie.LastBatch's phases: the host staging and the copies
// (LastBatch's Upload is both), the node update and PhaseHC (its Work),
// and the phases' counters, from host clocks around synchronized stream
// work.
type BatchStats struct {
	Keys     int           // operations in the batch
	Stage    time.Duration // packing keys and values into pinned host memory
	Upload   time.Duration // host to device copies
	Sort     time.Duration // key hashing (secure mode), sort, last-wins dedupe
	Update   time.Duration // PhaseNU (walks, expansions, inserts, compress) or LockNU
	Hash     time.Duration // PhaseHC: marking and computing, root read back
	Total    time.Duration // the whole call
	Rounds   int           // expansion rounds
	Expanded int           // short nodes expanded
	Dirty    int           // nodes hashed

	Algorithm NodeUpdate // PhaseNU or LockNU, as the decision model (or the override) chose
	Why       string     // the decision model's reason
	Restarts  int        // LockNU walks restarted from the root
}

// GPUTimes is the former name of BatchStats.
//
// Deprecated: use BatchStats.
type GPUTimes = BatchStats

// timings returns the batch's phases as engine.Timings.
func (b BatchStats) timings() engine.Timings {
	return engine.Timings{Op: "update", Items: b.Keys, Upload: b.Stage + b.Upload, Sort: b.Sort, Work: b.Update + b.Hash, Total: b.Total}
}

// gpuTrie is the GPU engine's state on one device. All work is queued on
// the stream of one prim engine; the Trie's callers serialize calls.
type gpuTrie struct {
	dev     *gpu.Device
	ownsDev bool
	pe      *prim.Engine
	s       *gpu.Stream
	k       *kernelSet
	secure  bool

	nodes    *gpu.Buffer[byte]   // capNodes records of nodeBytes
	freelist *gpu.Buffer[uint32] // free node ids, nfree of them
	touched  *gpu.Buffer[uint32] // the dirty list
	capNodes int
	limit    int    // tests: a node capacity past which growing fails as out of memory (0: none)
	bump     uint32 // next id never handed out (0 is the null node)
	nfree    uint32

	vals     *gpu.Buffer[uint64] // value table, two words per entry (offset, length)
	capVals  int
	nvals    uint32 // next value id (0 is none)
	arena    *gpu.Buffer[byte]
	arenaLen int64
	host     *hostValues // the host copy of the values (Options.HostValues); nil without

	ctl     *gpu.Buffer[uint32]
	mode    NodeUpdate // Options.NodeUpdate
	root    uint32     // the root node's id; 0 when the trie is empty
	rootRef [32]byte   // the hash readRoot read from node root and checked; valid while rootOK
	rootOK  bool       // rootRef belongs to the current root (cleared when a batch starts changing the trie)

	xfer *gpu.Pipeline // pinned chunks for every transfer of keys, values and results
	pool *gpu.Pool     // scratch buffers, reserved before use (pool_gpu.go names them)

	// Host scratch reused by every batch (stageKeys, lookupInto).
	hostLens   []uint32
	hostKoff   []uint32
	hostKoff64 []int64
	hostOffs   []uint64

	times       BatchStats
	last        engine.Timings
	lookupTimes [2]time.Duration // the last lookup's walk (keys up, walk, offsets back) and values (gather, download, copy)
}

// newGPUTrie opens the GPU engine on d (closing d on close when ownsDev).
// The kernels are compiled here so that a broken toolchain is reported by
// Open.
func newGPUTrie(d *gpu.Device, ownsDev, secure bool) (*gpuTrie, error) {
	pe, k, err := prim.NewGPUWith(d, loadKernels)
	if err != nil {
		return nil, err
	}
	g := &gpuTrie{dev: d, ownsDev: ownsDev, pe: pe, s: pe.Stream(), k: k, secure: secure, bump: 1, nvals: 1}
	if g.ctl, err = gpu.Alloc[uint32](d, ctlWords); err != nil {
		return nil, errors.Join(err, pe.Close())
	}
	// cuMemAlloc does not clear memory, and the kernels count the dirty
	// list and the error word from the values they find.
	if err := errors.Join(g.ctl.FillBytes(g.s, 0), g.s.Synchronize()); err != nil {
		return nil, errors.Join(err, g.ctl.Free(), pe.Close())
	}
	g.xfer = newTransfers(d)
	g.pool = gpu.NewPool(d, g.s)
	return g, nil
}

// close frees everything the engine holds on the device.
func (g *gpuTrie) close() error {
	err := g.s.Synchronize()
	for _, b := range []interface{ Free() error }{g.nodes, g.freelist, g.touched, g.vals, g.arena, g.ctl} {
		err = errors.Join(err, b.Free()) // nil-safe
	}
	err = errors.Join(err, g.pool.Free())
	err = errors.Join(err, g.xfer.Close())
	err = errors.Join(err, g.pe.Close())
	if g.ownsDev {
		err = errors.Join(err, g.dev.Close())
	}
	return err
}

// ---------------------------------------------------------------- small helpers

// setCtl writes control words [i, i+len(v)).
func (g *gpuTrie) setCtl(i int, v ...uint32) error { return g.ctl.Write(g.s, i, v) }

// readCtl synchronizes the stream and returns control words [i, i+n).
func (g *gpuTrie) readCtl(i, n int) ([]uint32, error) {
	out := make([]uint32, n)
	if err := errors.Join(g.ctl.Read(g.s, i, out), g.s.Synchronize()); err != nil {
		return nil, err
	}
	return out, nil
}

// ctlView is control word i as a one-element buffer (a count output).
func (g *gpuTrie) ctlView(i int) *gpu.Buffer[uint32] { return gpu.View[uint32](g.ctl, 4*i, 1) }

// launch runs kernel f over grid with the engine's stream.
func (g *gpuTrie) launch(f *gpu.Function, grid gpu.Dim3, block int, args ...any) error {
	return f.Launch(g.s, grid, gpu.D1(block), 0, args...)
}

// scanCounts turns counts[0, n) into exclusive offsets in the offs buffer
// (reserved for n+1) and returns them and the total (offs[n]).
// Synchronizes.
func (g *gpuTrie) scanCounts(counts *gpu.Buffer[uint32], n int) (*gpu.Buffer[uint32], uint32, error) {
	offs := gpu.Take[uint32](g.pool, bufOffs, n+1)
	if err := counts.Write(g.s, n, []uint32{0}); err != nil {
		return nil, 0, err
	}
	if err := prim.DevScanExclusive(g.pe, counts, offs, n+1); err != nil {
		return nil, 0, err
	}
	var t [1]uint32
	if err := errors.Join(offs.Read(g.s, n, t[:]), g.s.Synchronize()); err != nil {
		return nil, 0, err
	}
	return offs, t[0], nil
}

// ---------------------------------------------------------------- storage

// reserveNodes makes room for extra more nodes beyond the free list and
// the bump region, growing the node, free-list and dirty-list arrays
// (copying them) when needed, and reserves the scratch that allocIDs takes
// for extra ids and that compress and PhaseHC take for a dirty list as
// long as the node capacity. On failure the trie is unchanged (the node
// arrays may have grown).
func (g *gpuTrie) reserveNodes(extra uint32) error {
	need := int(g.bump) + int(max(0, int64(extra)-int64(g.nfree)))
	if g.limit > 0 && need > g.limit {
		return fmt.Errorf("mpt: gpu engine: %d nodes over the test limit of %d: %w", need, g.limit, gpu.ErrOutOfMemory)
	}
	if err := g.growNodes(need); err != nil {
		return err
	}
	if err := g.pool.Reserve(append(dirtyNeeds(g.capNodes), gpu.NeedOf[uint32](bufIDs, int(extra)))...); err != nil {
		return fmt.Errorf("mpt: gpu engine: scratch for %d new nodes: %w", extra, err)
	}
	return nil
}

// growNodes grows the node, free-list and dirty-list arrays (copying them)
// to hold at least need nodes. On failure nothing changed.
func (g *gpuTrie) growNodes(need int) error {
	if need <= g.capNodes {
		return nil
	}
	if need > 1<<31 {
		return fmt.Errorf("mpt: gpu engine: %d nodes exceed the id space", need)
	}
	c := max(need+need/4, 2*g.capNodes, 1024)
	nodes, err := gpu.Alloc[byte](g.dev, c*nodeBytes)
	if err != nil {
		return err
	}
	free, err := gpu.Alloc[uint32](g.dev, c)
	if err != nil {
		return errors.Join(err, nodes.Free())
	}
	touched, err := gpu.Alloc[uint32](g.dev, c)
	if err != nil {
		return errors.Join(err, nodes.Free(), free.Free())
	}
	fail := func(err error) error { return errors.Join(err, nodes.Free(), free.Free(), touched.Free()) }
	old := g.capNodes
	if old > 0 {
		if err := nodes.CopyFrom(g.s, 0, g.nodes, 0, old*nodeBytes); err != nil {
			return fail(err)
		}
		if err := free.CopyFrom(g.s, 0, g.freelist, 0, old); err != nil {
			return fail(err)
		}
		if err := touched.CopyFrom(g.s, 0, g.touched, 0, old); err != nil {
			return fail(err)
		}
	}
	if err := gpu.View[byte](nodes, old*nodeBytes, (c-old)*nodeBytes).FillBytes(g.s, 0); err != nil {
		return fail(err)
	}
	if err := g.s.Synchronize(); err != nil {
		return fail(err)
	}
	if old > 0 {
		if err := errors.Join(g.nodes.Free(), g.freelist.Free(), g.touched.Free()); err != nil {
			return err
		}
	}
	g.nodes, g.freelist, g.touched, g.capNodes = nodes, free, touched, c
	return nil
}

// allocIDs materializes total node ids (free list first, then bump) into
// the ids buffer (reserveNodes reserved it) and consumes them from the
// allocator.
func (g *gpuTrie) allocIDs(total uint32) (*gpu.Buffer[uint32], error) {
	ids := gpu.Take[uint32](g.pool, bufIDs, int(total))
	if total > 0 {
		if err := g.launch(g.k.allocIDs, threads(int(total)), kernelBlock, g.freelist, g.nfree, g.bump, uint64(total), ids); err != nil {
			return nil, err
		}
	}
	if total <= g.nfree {
		g.nfree -= total
	} else {
		g.bump += total - g.nfree
		g.nfree = 0
	}
	return ids, nil
}

// growBuffer returns a buffer of at least n elements holding old's first
// keep elements (old is freed; nil old is fine).
func growBuffer[T any](g *gpuTrie, old *gpu.Buffer[T], keep, n int) (*gpu.Buffer[T], error) {
	b, err := gpu.Alloc[T](g.dev, n)
	if err != nil {
		return nil, err
	}
	if old != nil && keep > 0 {
		if err := errors.Join(b.CopyFrom(g.s, 0, old, 0, keep), g.s.Synchronize()); err != nil {
			return nil, errors.Join(err, b.Free())
		}
	}
	if old != nil {
		if err := old.Free(); err != nil {
			return nil, errors.Join(err, b.Free())
		}
	}
	return b, nil
}

func (g *gpuTrie) backend() gpu.Backend { return gpu.BackendGPU }

func (g *gpuTrie) lastBatch() engine.Timings { return g.last }

func (g *gpuTrie) stats() BatchStats { return g.times }

// readDone records a lookup or proof batch as the last batch: Work is the
// keys' upload, the walks and the offsets or ids back, Download the
// values' return (lookupTimes).
func (g *gpuTrie) readDone(op string, items int, t0 time.Time) {
	g.last = engine.Timings{Op: op, Items: items, Work: g.lookupTimes[0], Download: g.lookupTimes[1], Total: time.Since(t0)}
}
