package mpt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"warpkv/gpu"
	"warpkv/prim"
)

// The GPU engine (Options.Engine = EngineGPU): the trie's nodes, values and
// cached references live in device memory between batches; mpt.cu holds
// the kernels and the description of the phases. The host keeps only the
// root id, the allocator's counters and the root hash.

// ErrKeyTooLong is wrapped by the GPU engine's errors for a key longer
// than MaxGPUKeyBytes (the CPU engines take keys of any length).
var ErrKeyTooLong = errors.New("mpt: key too long for the gpu engine")

// MaxGPUKeyBytes is the longest key (before hashing, in secure mode any
// length is fine) the GPU engine accepts: a node holds its path inline.
const MaxGPUKeyBytes = maxKeyBytes

// GPUTimes is the time breakdown of the GPU engine's last Update or Delete
// batch, from events on its stream and host clocks around them.
type GPUTimes struct {
	Keys     int           // operations in the batch
	Stage    time.Duration // packing keys and values into pinned host memory
	Upload   time.Duration // host to device copies
	Sort     time.Duration // key hashing (secure mode), sort, last-wins dedupe
	Update   time.Duration // PhaseNU: walks, expansions, inserts, compress
	Hash     time.Duration // PhaseHC: marking and computing, root read back
	Total    time.Duration // the whole call
	Rounds   int           // expansion rounds
	Expanded int           // short nodes expanded
	Dirty    int           // nodes hashed

	Algorithm NodeUpdate // PhaseNU or LockNU, as the decision model (or the override) chose
	Why       string     // the decision model's reason
	Restarts  int        // LockNU walks restarted from the root
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

	ctl      *gpu.Buffer[uint32]
	mode     NodeUpdate // Options.NodeUpdate
	root     uint32     // the root node's id; 0 when the trie is empty
	rootHash [32]byte   // the hash readRoot read from node root and checked; valid while rootOK
	rootOK   bool       // rootHash belongs to the current root (cleared when a batch starts changing the trie)

	xfer *streamer // pinned chunks for every transfer of keys, values and results

	keys, raw                       gpu.Scratch[byte]
	hashed                          gpu.Scratch[[32]byte]
	lens, koff, vlens, perm, ops    gpu.Scratch[uint32]
	l32, klen, vid, need, cur, dep  gpu.Scratch[uint32]
	prev                            gpu.Scratch[uint32]
	counts, offs, ids, list, starts gpu.Scratch[uint32]
	w64, entries, wide, wideOffs    gpu.Scratch[uint64]
	flags, st                       gpu.Scratch[uint8]
	out                             gpu.Scratch[byte]

	// Host scratch reused by every batch (stageKeys, lookupInto).
	hostLens   []uint32
	hostKoff   []uint32
	hostKoff64 []int64
	hostOffs   []uint64

	times       GPUTimes
	lookupTimes [2]time.Duration // the last lookup's walk (keys up, walk, offsets back) and values (gather, download, copy)
}

// newGPUTrie opens the GPU engine on d (closing d on close when ownsDev).
// The kernels are compiled here so that a broken toolchain is reported by
// Open.
func newGPUTrie(d *gpu.Device, ownsDev, secure bool) (*gpuTrie, error) {
	pe, err := prim.NewGPU(d)
	if err != nil {
		return nil, err
	}
	k, err := loadKernels(d)
	if err != nil {
		return nil, errors.Join(err, pe.Close())
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
	if g.xfer, err = newStreamer(d); err != nil {
		return nil, errors.Join(err, g.ctl.Free(), pe.Close())
	}
	return g, nil
}

// close frees everything the engine holds on the device.
func (g *gpuTrie) close() error {
	err := g.s.Synchronize()
	for _, b := range []interface{ Free() error }{g.nodes, g.freelist, g.touched, g.vals, g.arena, g.ctl} {
		err = errors.Join(err, b.Free()) // nil-safe
	}
	err = errors.Join(err, g.keys.Free(g.s), g.raw.Free(g.s), g.hashed.Free(g.s), g.lens.Free(g.s),
		g.koff.Free(g.s), g.vlens.Free(g.s), g.perm.Free(g.s), g.ops.Free(g.s), g.l32.Free(g.s),
		g.klen.Free(g.s), g.vid.Free(g.s), g.prev.Free(g.s), g.need.Free(g.s), g.cur.Free(g.s), g.dep.Free(g.s),
		g.counts.Free(g.s), g.offs.Free(g.s), g.ids.Free(g.s), g.list.Free(g.s), g.starts.Free(g.s),
		g.w64.Free(g.s), g.entries.Free(g.s), g.wide.Free(g.s), g.wideOffs.Free(g.s), g.flags.Free(g.s),
		g.st.Free(g.s), g.out.Free(g.s))
	if g.xfer != nil {
		err = errors.Join(err, g.xfer.close())
	}
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

// scanCounts turns counts[0, n) into exclusive offsets in offs[0, n] and
// returns the total (offs[n]). Synchronizes.
func (g *gpuTrie) scanCounts(counts *gpu.Buffer[uint32], n int) (*gpu.Buffer[uint32], uint32, error) {
	offs, err := g.offs.Get(g.dev, g.s, n+1)
	if err != nil {
		return nil, 0, err
	}
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
// (copying them) when needed. On failure nothing changed.
func (g *gpuTrie) reserveNodes(extra uint32) error {
	need := int(g.bump) + int(max(0, int64(extra)-int64(g.nfree)))
	if g.limit > 0 && need > g.limit {
		return fmt.Errorf("mpt: gpu engine: %d nodes over the test limit of %d: %w", need, g.limit, gpu.ErrOutOfMemory)
	}
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
// the ids scratch and consumes them from the allocator.
func (g *gpuTrie) allocIDs(total uint32) (*gpu.Buffer[uint32], error) {
	ids, err := g.ids.Get(g.dev, g.s, int(total))
	if err != nil {
		return nil, err
	}
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

// ---------------------------------------------------------------- staging

// stagedKeys describes a batch of keys on the device: key i's bytes at
// keys[i*stride, i*stride+lens[i]), zero-padded to stride.
type stagedKeys struct {
	keys   *gpu.Buffer[byte]
	lens   *gpu.Buffer[uint32]
	stride int
	varied bool // lengths differ
}

// checkKeys returns an error wrapping ErrKeyTooLong for the first key the
// engine cannot take.
func (g *gpuTrie) checkKeys(keys [][]byte) error {
	if g.secure {
		return nil
	}
	for i, k := range keys {
		if len(k) > maxKeyBytes {
			return fmt.Errorf("%w: key %d has %d bytes (at most %d)", ErrKeyTooLong, i, len(k), maxKeyBytes)
		}
	}
	return nil
}

// stageKeys uploads keys in the stride layout (through the pinned chunks),
// hashing them on the device first in secure mode.
func (g *gpuTrie) stageKeys(keys [][]byte) (stagedKeys, error) {
	n := len(keys)
	g.hostLens = resize(g.hostLens, n)
	lens := g.hostLens
	maxLen, total := 0, 0
	for i, k := range keys {
		lens[i] = uint32(len(k))
		maxLen = max(maxLen, len(k))
		total += len(k)
	}
	if g.secure {
		// Raw keys back to back, then Keccak-256 on the device.
		g.hostKoff, g.hostKoff64 = resize(g.hostKoff, n+1), resize(g.hostKoff64, n+1)
		offs, offs64 := g.hostKoff, g.hostKoff64
		offs[0], offs64[0] = 0, 0
		for i, k := range keys {
			offs[i+1] = offs[i] + uint32(len(k))
			offs64[i+1] = int64(offs[i+1])
		}
		raw, err := g.raw.Get(g.dev, g.s, total+8)
		if err != nil {
			return stagedKeys{}, err
		}
		koff, err := g.koff.Get(g.dev, g.s, n+1)
		if err != nil {
			return stagedKeys{}, err
		}
		out, err := g.hashed.Get(g.dev, g.s, n)
		if err != nil {
			return stagedKeys{}, err
		}
		l, err := g.lens.Get(g.dev, g.s, n)
		if err != nil {
			return stagedKeys{}, err
		}
		if err := errors.Join(g.xfer.upload(g.s, raw, 0, total, fillConcat(keys, offs64)), koff.Write(g.s, 0, offs)); err != nil {
			return stagedKeys{}, err
		}
		if err := prim.DevKeccak256(g.pe, raw, koff, n, out, maxLen); err != nil {
			return stagedKeys{}, err
		}
		for i := range lens {
			lens[i] = 32
		}
		if err := l.Write(g.s, 0, lens); err != nil {
			return stagedKeys{}, err
		}
		return stagedKeys{keys: gpu.View[byte](out, 0, 32*n), lens: l, stride: 32}, nil
	}
	stride := max(8, (maxLen+7)&^7)
	kb, err := g.keys.Get(g.dev, g.s, n*stride)
	if err != nil {
		return stagedKeys{}, err
	}
	l, err := g.lens.Get(g.dev, g.s, n)
	if err != nil {
		return stagedKeys{}, err
	}
	if err := errors.Join(g.xfer.upload(g.s, kb, 0, n*stride, fillStrided(keys, stride)), l.Write(g.s, 0, lens)); err != nil {
		return stagedKeys{}, err
	}
	varied := false
	for _, v := range lens {
		if v != lens[0] {
			varied = true
			break
		}
	}
	return stagedKeys{keys: kb, lens: l, stride: stride, varied: varied}, nil
}

// stageValues appends the batch's non-empty values to the arena (through
// the pinned chunks) and writes value table entries vbase+i for every operation i (an
// empty value gets a zero-length entry, never referenced). It returns
// vbase and whether any value is non-empty. On failure nothing changed.
func (g *gpuTrie) stageValues(values [][]byte) (vbase uint32, anyInsert, anyDelete bool, err error) {
	n := len(values)
	offs := make([]int64, n+1)
	vl := make([]uint32, n)
	for i, v := range values {
		offs[i+1] = offs[i] + int64(len(v))
		vl[i] = uint32(len(v))
		anyInsert = anyInsert || len(v) > 0
		anyDelete = anyDelete || len(v) == 0
	}
	total := offs[n]
	if uint64(g.nvals)+uint64(n) >= 1<<32 {
		return 0, false, false, fmt.Errorf("mpt: gpu engine: value table full")
	}
	// Grow the table and the arena first: failure leaves both as they were.
	if need := int(g.nvals) + n; need > g.capVals {
		c := max(need+need/4, 2*g.capVals, 1024)
		b, err := growBuffer(g, g.vals, 2*int(g.nvals), 2*c)
		if err != nil {
			return 0, false, false, err
		}
		g.vals, g.capVals = b, c
	}
	if need := g.arenaLen + total + 8; g.arena == nil || need > int64(g.arena.Len()) {
		c := max(need+need/4, 2*int64(g.bufLen(g.arena)), 1<<20)
		b, err := growBuffer(g, g.arena, int(g.arenaLen), int(c))
		if err != nil {
			return 0, false, false, err
		}
		g.arena = b
	}
	entries := make([]uint64, 2*n)
	for i := range values {
		entries[2*i] = uint64(g.arenaLen + offs[i])
		entries[2*i+1] = uint64(vl[i])
	}
	vb, err := g.vlens.Get(g.dev, g.s, n)
	if err != nil {
		return 0, false, false, err
	}
	fill := fillConcat(values, offs)
	if g.host != nil {
		fill = g.host.mirror(g.arenaLen, total, fill)
	}
	if err := errors.Join(g.xfer.upload(g.s, g.arena, int(g.arenaLen), int(total), fill), g.vals.Write(g.s, 2*int(g.nvals), entries),
		vb.Write(g.s, 0, vl)); err != nil {
		return 0, false, false, err
	}
	if g.host != nil {
		g.host.commit(entries, g.arenaLen+total)
	}
	vbase = g.nvals
	g.nvals += uint32(n)
	g.arenaLen += total
	return vbase, anyInsert, anyDelete, nil
}

// bufLen is b's length, 0 for nil.
func (g *gpuTrie) bufLen(b *gpu.Buffer[byte]) int {
	if b == nil {
		return 0
	}
	return b.Len()
}

// ---------------------------------------------------------------- update

// update applies a batch (an empty value deletes; the last operation on a
// key wins) and hashes the changed nodes. Errors before the trie changes
// leave it as it was; after that (only a device failure or running out of
// memory while growing the node arrays), the batch is abandoned, the
// nodes already expanded are compressed back, and the trie is again as
// before the batch.
func (g *gpuTrie) update(keys, values [][]byte) error {
	t0 := time.Now()
	g.times = GPUTimes{Keys: len(keys)}
	n := len(keys)
	if n == 0 {
		return nil
	}
	if err := g.checkKeys(keys); err != nil {
		return err
	}
	sk, err := g.stageKeys(keys)
	if err != nil {
		return err
	}
	vbase, anyInsert, anyDelete, err := g.stageValues(values)
	if err != nil {
		return err
	}
	t1 := time.Now()
	if err := g.s.Synchronize(); err != nil {
		return err
	}
	t2 := time.Now()
	g.times.Stage, g.times.Upload = t1.Sub(t0), t2.Sub(t1)
	m, err := g.sortBatch(sk, n)
	if err != nil {
		return err
	}
	t3 := time.Now()
	g.times.Sort = t3.Sub(t2)
	if g.root == 0 && !anyInsert {
		g.times.Total = time.Since(t0)
		return nil // deletes from an empty trie
	}
	g.rootOK = false // until hash reads the new root back
	wasEmpty := g.root == 0
	if wasEmpty {
		if err := g.newRoot(); err != nil {
			return err
		}
	}
	o, err := g.opInit(sk, m, vbase)
	if err != nil {
		return errors.Join(err, g.abandon())
	}
	algo, why := chooseUpdate(g.mode, m, o.lcpMean, g.liveNodes(), anyDelete, wasEmpty)
	g.times.Algorithm, g.times.Why = algo, why
	if algo == NodeUpdateLock {
		if err := g.lockApply(o); err != nil {
			return errors.Join(err, g.abandon())
		}
		c, err := g.readCtl(ctlTouched, 1)
		if err != nil {
			return err
		}
		if _, err := g.markUp(int(c[0])); err != nil {
			return err
		}
	} else {
		if err := g.apply(o); err != nil {
			return errors.Join(err, g.abandon())
		}
		if err := g.compress(); err != nil {
			return err
		}
	}
	t4 := time.Now()
	g.times.Update = t4.Sub(t3)
	if err := g.hash(); err != nil {
		return err
	}
	g.times.Hash = time.Since(t4)
	g.times.Total = time.Since(t0)
	return nil
}

// abandon restores canonical form after a batch failed midway: the
// expansions made so far only re-shaped nodes, so compressing the dirty
// set and re-hashing gives back the trie as it was.
func (g *gpuTrie) abandon() error {
	return errors.Join(g.compress(), g.hash())
}

// newRoot makes an empty branch the root (the walks need one to start at)
// and puts it on the dirty list, so that compress makes it canonical or
// frees it even when no operation of the batch touches it (a batch whose
// inserts all lose to later deletes of the same keys): an empty branch
// must never stay the root.
func (g *gpuTrie) newRoot() error {
	if err := g.reserveNodes(1); err != nil {
		return err
	}
	ids, err := g.allocIDs(1)
	if err != nil {
		return err
	}
	var id [1]uint32
	if err := errors.Join(ids.Read(g.s, 0, id[:]), g.s.Synchronize()); err != nil {
		return err
	}
	c, err := g.readCtl(ctlTouched, 1)
	if err != nil {
		return err
	}
	rec := make([]byte, nodeBytes)
	binary.LittleEndian.PutUint32(rec[nodeKindOffset:], kindBranch)
	binary.LittleEndian.PutUint32(rec[nodeFlagsOffset:], flagDirty)
	if err := errors.Join(g.nodes.Write(g.s, int(id[0])*nodeBytes, rec), g.touched.Write(g.s, int(c[0]), id[:]),
		g.setCtl(ctlTouched, c[0]+1), g.s.Synchronize()); err != nil {
		return err
	}
	g.root = id[0]
	return nil
}

// sortBatch sorts the staged keys (their indices, stably: length first,
// then big-endian words from the last to the first), keeps the last
// operation of each key in g.ops, and returns how many were kept.
func (g *gpuTrie) sortBatch(sk stagedKeys, n int) (int, error) {
	perm, err := g.perm.Get(g.dev, g.s, n)
	if err != nil {
		return 0, err
	}
	if err := g.launch(g.k.iota, threads(n), kernelBlock, perm, uint64(n)); err != nil {
		return 0, err
	}
	if sk.varied {
		l, err := g.l32.Get(g.dev, g.s, n)
		if err != nil {
			return 0, err
		}
		if err := g.launch(g.k.keyLen, threads(n), kernelBlock, sk.lens, perm, uint64(n), l); err != nil {
			return 0, err
		}
		if err := prim.DevSortPairsBits(g.pe, l, perm, n, 0, 8); err != nil {
			return 0, err
		}
	}
	w, err := g.w64.Get(g.dev, g.s, n)
	if err != nil {
		return 0, err
	}
	for word := sk.stride/8 - 1; word >= 0; word-- {
		if err := g.launch(g.k.keyWord, threads(n), kernelBlock, sk.keys, uint32(sk.stride), perm, uint64(n), uint32(word), w); err != nil {
			return 0, err
		}
		if err := prim.DevSortPairs(g.pe, w, perm, n); err != nil {
			return 0, err
		}
	}
	flags, err := g.flags.Get(g.dev, g.s, n)
	if err != nil {
		return 0, err
	}
	ops, err := g.ops.Get(g.dev, g.s, n)
	if err != nil {
		return 0, err
	}
	if err := g.launch(g.k.lastFlags, threads(n), kernelBlock, sk.keys, uint32(sk.stride), sk.lens, perm, uint64(n), flags); err != nil {
		return 0, err
	}
	if err := prim.DevSelect(g.pe, perm, flags, ops, n, g.ctlView(ctlSelect)); err != nil {
		return 0, err
	}
	c, err := g.readCtl(ctlSelect, 1)
	if err != nil {
		return 0, err
	}
	return int(c[0]), nil
}

// maxRounds bounds the expansion rounds: each round expands at least one
// short node on some walk's path, and a path has at most one short node
// per nibble.
const maxRounds = 2*maxKeyBytes + 2

// opState is the per-operation state of a batch on the device (m kept
// operations in key order).
type opState struct {
	sk                        stagedKeys
	m                         int
	ops                       *gpu.Buffer[uint32] // batch index of each kept operation
	klen, vid, need, cur, dep *gpu.Buffer[uint32]
	prev                      *gpu.Buffer[uint32] // nibbles shared with the previous operation
	st                        *gpu.Buffer[uint8]
	lcpMean                   float64 // mean need: nibbles shared with a sorted neighbour
}

// opInit computes every kept operation's path length, value id, need and
// walk start, and the batch's mean need (for the decision model).
func (g *gpuTrie) opInit(sk stagedKeys, m int, vbase uint32) (*opState, error) {
	o := &opState{sk: sk, m: m, ops: g.ops.Buf()}
	bufs := make([]*gpu.Buffer[uint32], 6)
	for i, s := range []*gpu.Scratch[uint32]{&g.klen, &g.vid, &g.need, &g.cur, &g.dep, &g.prev} {
		b, err := s.Get(g.dev, g.s, m)
		if err != nil {
			return nil, err
		}
		bufs[i] = b
	}
	o.klen, o.vid, o.need, o.cur, o.dep, o.prev = bufs[0], bufs[1], bufs[2], bufs[3], bufs[4], bufs[5]
	st, err := g.st.Get(g.dev, g.s, m)
	if err != nil {
		return nil, err
	}
	o.st = st
	if err := g.setCtl(ctlLCP, 0); err != nil {
		return nil, err
	}
	if err := g.launch(g.k.opInit, threads(m), kernelBlock, sk.keys, uint32(sk.stride), sk.lens, g.vlens.Buf(), vbase, o.ops,
		uint64(m), g.root, o.klen, o.vid, o.need, o.prev, o.cur, o.dep, st, g.ctl); err != nil {
		return nil, err
	}
	c, err := g.readCtl(ctlLCP, 1)
	if err != nil {
		return nil, err
	}
	o.lcpMean = float64(c[0]) / float64(m)
	return o, nil
}

// apply runs PhaseNU's walks and expansions, then the inserts and
// deletes, on the kept operations.
func (g *gpuTrie) apply(o *opState) error {
	sk, m, ops := o.sk, o.m, o.ops
	klen, vid, need, cur, dep, st := o.klen, o.vid, o.need, o.cur, o.dep, o.st
	stride := uint32(sk.stride)
	list, err := g.list.Get(g.dev, g.s, m)
	if err != nil {
		return err
	}
	for round := 0; ; round++ {
		if round > maxRounds {
			return fmt.Errorf("mpt: gpu engine: expansion did not settle after %d rounds", round)
		}
		if err := g.setCtl(ctlWait, 0, 0); err != nil {
			return err
		}
		if err := g.launch(g.k.walk, threads(m), kernelBlock, g.nodes, sk.keys, stride, ops, klen, vid, uint64(m),
			cur, dep, st, list, g.ctl); err != nil {
			return err
		}
		c, err := g.readCtl(ctlWait, 2)
		if err != nil {
			return err
		}
		nwait, ne := int(c[0]), int(c[1])
		if ne == 0 {
			if nwait > 0 {
				return fmt.Errorf("mpt: gpu engine: %d walks wait but no node is listed for expansion (a bug)", nwait)
			}
			break
		}
		g.times.Rounds++
		g.times.Expanded += ne
		if err := g.expandRound(list, ne); err != nil {
			// The listed nodes keep their need unless it is cleared:
			// a later batch would not list them again.
			return errors.Join(err, g.launch(g.k.resetVersions, threads(ne), kernelBlock, g.nodes, list, uint64(ne)))
		}
	}
	counts, err := g.counts.Get(g.dev, g.s, m+1)
	if err != nil {
		return err
	}
	if err := g.launch(g.k.insertCount, threads(m), kernelBlock, g.nodes, klen, vid, need, o.prev, cur, dep, st, uint64(m), counts); err != nil {
		return err
	}
	_, ids, total, err := g.placeIDs(counts, m)
	if err != nil {
		return err
	}
	if err := g.setCtl(ctlPool, 0); err != nil {
		return err
	}
	if err := g.launch(g.k.insert, threads(m), kernelBlock, g.nodes, sk.keys, stride, ops, klen, vid, need, cur, dep, st,
		uint64(m), ids, total, g.touched, g.ctl); err != nil {
		return err
	}
	return g.reclaim(ids, total)
}

// expandRound expands the ne short nodes of list (counted, placed by a
// scan, given ids, then rewritten by mpt_expand, which clears their need).
func (g *gpuTrie) expandRound(list *gpu.Buffer[uint32], ne int) error {
	counts, err := g.counts.Get(g.dev, g.s, ne+1)
	if err != nil {
		return err
	}
	if err := g.launch(g.k.expandCount, threads(ne), kernelBlock, g.nodes, list, uint64(ne), counts); err != nil {
		return err
	}
	offs, ids, _, err := g.placeIDs(counts, ne)
	if err != nil {
		return err
	}
	return g.launch(g.k.expand, threads(ne), kernelBlock, g.nodes, list, uint64(ne), offs, ids, g.touched, g.ctl)
}

// placeIDs turns per-item node counts[0, n) into exclusive offsets and
// reserves and materializes that many node ids (count, scan, allocate: the
// allocation every node-creating phase starts with). On failure nothing
// was allocated.
func (g *gpuTrie) placeIDs(counts *gpu.Buffer[uint32], n int) (offs, ids *gpu.Buffer[uint32], total uint32, err error) {
	if offs, total, err = g.scanCounts(counts, n); err != nil {
		return nil, nil, 0, err
	}
	if err := g.reserveNodes(total); err != nil {
		return nil, nil, 0, err
	}
	if ids, err = g.allocIDs(total); err != nil {
		return nil, nil, 0, err
	}
	return offs, ids, total, nil
}

// reclaim returns the reserved ids that were not used (kind FREE) to the
// free list and checks the error word.
func (g *gpuTrie) reclaim(ids *gpu.Buffer[uint32], total uint32) error {
	if err := g.setCtl(ctlFreed, 0); err != nil {
		return err
	}
	if total > 0 {
		if err := g.launch(g.k.reclaim, threads(int(total)), kernelBlock, g.nodes, ids, uint64(total), g.freelist, g.nfree, g.ctl); err != nil {
			return err
		}
	}
	c, err := g.readCtl(ctlFreed, 3)
	if err != nil {
		return err
	}
	g.nfree += c[0]
	if c[2] != 0 {
		return fmt.Errorf("mpt: gpu engine: insert invariant %d failed (a bug)", c[2])
	}
	return nil
}

// lockIDs is the number of node ids LockNU reserves per insert: a split
// creates at most a branch, a remainder short node and a leaf.
const lockIDs = 3

// lockApply runs LockNU on the kept operations (all inserts, into a
// non-empty trie), then resets the version words of the changed nodes.
func (g *gpuTrie) lockApply(o *opState) error {
	total := uint32(lockIDs * o.m)
	if err := g.reserveNodes(total); err != nil {
		return err
	}
	ids, err := g.allocIDs(total)
	if err != nil {
		return err
	}
	if err := g.setCtl(ctlRestarts, 0); err != nil {
		return err
	}
	if err := g.launch(g.k.lockInsert, threads(o.m), kernelBlock, g.nodes, o.sk.keys, uint32(o.sk.stride), o.ops, o.klen,
		o.vid, uint64(o.m), g.root, ids, g.touched, g.ctl); err != nil {
		return err
	}
	if err := g.reclaim(ids, total); err != nil {
		return err
	}
	c, err := g.readCtl(ctlTouched, ctlRestarts-ctlTouched+1)
	if err != nil {
		return err
	}
	g.times.Restarts = int(c[ctlRestarts-ctlTouched])
	if nt := int(c[0]); nt > 0 {
		return g.launch(g.k.resetVersions, threads(nt), kernelBlock, g.nodes, g.touched, uint64(nt))
	}
	return nil
}

// dirtyStarts counts, for the nt listed nodes, their dirty children
// (parents' pending counters) and returns the start list: the listed live
// nodes without dirty children.
func (g *gpuTrie) dirtyStarts(nt int) (*gpu.Buffer[uint32], int, error) {
	if err := g.launch(g.k.countPending, threads(nt), kernelBlock, g.nodes, g.touched, uint64(nt)); err != nil {
		return nil, 0, err
	}
	starts, err := g.starts.Get(g.dev, g.s, nt)
	if err != nil {
		return nil, 0, err
	}
	if err := g.setCtl(ctlStarts, 0); err != nil {
		return nil, 0, err
	}
	if err := g.launch(g.k.starts, threads(nt), kernelBlock, g.nodes, g.touched, uint64(nt), starts, g.ctl); err != nil {
		return nil, 0, err
	}
	c, err := g.readCtl(ctlStarts, 1)
	if err != nil {
		return nil, 0, err
	}
	return starts, int(c[0]), nil
}

// compress closes the dirty set under ancestors, puts every dirty node
// back into canonical form bottom-up, updates the root, and compacts the
// dirty list to its live nodes.
func (g *gpuTrie) compress() error {
	c, err := g.readCtl(ctlTouched, 1)
	if err != nil {
		return err
	}
	if c[0] == 0 {
		return nil
	}
	nt, err := g.markUp(int(c[0]))
	if err != nil {
		return err
	}
	starts, ns, err := g.dirtyStarts(nt)
	if err != nil {
		return err
	}
	if err := g.setCtl(ctlFreed, 0); err != nil {
		return err
	}
	if err := g.launch(g.k.compress, threads(ns), kernelBlock, g.nodes, starts, uint64(ns), g.freelist, g.nfree, g.ctl); err != nil {
		return err
	}
	if c, err = g.readCtl(ctlFreed, 1); err != nil {
		return err
	}
	g.nfree += c[0]
	var kind [4]byte
	if err := errors.Join(g.nodes.Read(g.s, int(g.root)*nodeBytes, kind[:]), g.s.Synchronize()); err != nil {
		return err
	}
	if binary.LittleEndian.Uint32(kind[:]) == kindFree {
		g.root = 0
	}
	// Keep the live nodes of the dirty list (freed ones may be reused).
	flags, err := g.flags.Get(g.dev, g.s, nt)
	if err != nil {
		return err
	}
	tmp, err := g.list.Get(g.dev, g.s, nt)
	if err != nil {
		return err
	}
	if err := g.launch(g.k.liveFlags, threads(nt), kernelBlock, g.nodes, g.touched, uint64(nt), flags); err != nil {
		return err
	}
	if err := prim.DevSelect(g.pe, g.touched, flags, tmp, nt, g.ctlView(ctlTouched)); err != nil {
		return err
	}
	if c, err = g.readCtl(ctlTouched, 1); err != nil {
		return err
	}
	return g.touched.CopyFrom(g.s, 0, tmp, 0, int(c[0]))
}

// markUp closes the first nt nodes of the dirty list under ancestors and
// returns the list's new length.
func (g *gpuTrie) markUp(nt int) (int, error) {
	if err := g.launch(g.k.markUp, threads(nt), kernelBlock, g.nodes, g.touched, uint64(nt), g.ctl); err != nil {
		return 0, err
	}
	c, err := g.readCtl(ctlTouched, 1)
	if err != nil {
		return 0, err
	}
	return int(c[0]), nil
}

// hash runs PhaseHC over the dirty list (marking, then computing: leaves
// one thread each, then the walks up one warp each), empties the list and
// reads the root hash back.
func (g *gpuTrie) hash() error {
	c, err := g.readCtl(ctlTouched, 1)
	if err != nil {
		return err
	}
	nt := int(c[0])
	if nt > 0 {
		starts, ns, err := g.dirtyStarts(nt)
		if err != nil {
			return err
		}
		next, err := g.list.Get(g.dev, g.s, nt)
		if err != nil {
			return err
		}
		if err := g.setCtl(ctlNext, 0); err != nil {
			return err
		}
		if err := g.launch(g.k.hashLeaves, threads(ns), kernelBlock, g.nodes, g.vals, g.arena, starts, uint64(ns), g.root, next, g.ctl); err != nil {
			return err
		}
		c, err := g.readCtl(ctlNext, 1)
		if err != nil {
			return err
		}
		if nn := int(c[0]); nn > 0 {
			if err := g.launch(g.k.hash, warps(nn), warpBlock, g.nodes, g.vals, g.arena, next, uint64(nn), g.root); err != nil {
				return err
			}
		}
		if err := g.setCtl(ctlTouched, 0); err != nil {
			return err
		}
		g.times.Dirty = nt
	}
	return g.readRoot()
}

// readRoot reads the root node's record back after PhaseHC and caches its
// hash, after checking that the record is a canonical, hashed root: live,
// clean, without a parent, holding a 32-byte reference, and a branch with
// at least two entries, an extension with a path and a child, or a leaf
// with a value. A record that is not (a bug in a phase) is an error rather
// than a root hash: the cached hash is only ever one read from a checked
// record, and Hash derives EmptyRoot from an empty trie (root 0) instead
// of caching it. Cost: one 256-byte read and a synchronization.
func (g *gpuTrie) readRoot() error {
	if g.root == 0 {
		return g.s.Synchronize()
	}
	rec := make([]byte, nodeBytes)
	if err := errors.Join(g.nodes.Read(g.s, int(g.root)*nodeBytes, rec), g.s.Synchronize()); err != nil {
		return err
	}
	if err := checkRootRecord(rec); err != nil {
		return fmt.Errorf("mpt: gpu engine: root node %d after the batch: %w (a bug)", g.root, err)
	}
	copy(g.rootHash[:], rec[nodeRefOffset:nodeRefOffset+32])
	g.rootOK = true
	return nil
}

// checkRootRecord returns an error naming what makes the node record rec
// unfit as a hashed, canonical root.
func checkRootRecord(rec []byte) error {
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(rec[off:]) }
	kind, flags, reflen := u32(nodeKindOffset), u32(nodeFlagsOffset), u32(nodeReflenOffset)
	switch {
	case kind == kindFree:
		return errors.New("the node is free")
	case kind != kindBranch && kind != kindExt && kind != kindLeaf:
		return fmt.Errorf("kind %d", kind)
	case flags != 0:
		return fmt.Errorf("still flagged dirty (flags %#x)", flags)
	case u32(nodeParentOffset) != 0:
		return fmt.Errorf("parent %d", u32(nodeParentOffset))
	case reflen != 32:
		return fmt.Errorf("reference of %d bytes, not its hash", reflen)
	}
	switch kind {
	case kindBranch:
		entries := 0
		for s := 0; s < 16; s++ {
			if u32(nodeChildOffset+4*s) != 0 {
				entries++
			}
		}
		if u32(nodeValOffset) != 0 {
			entries++
		}
		if entries < 2 {
			return fmt.Errorf("a branch with %d entries", entries)
		}
	case kindExt:
		if u32(nodePlenOffset) == 0 || u32(nodeChildOffset) == 0 {
			return fmt.Errorf("an extension with a %d-nibble path and child %d", u32(nodePlenOffset), u32(nodeChildOffset))
		}
	case kindLeaf:
		if u32(nodeValOffset) == 0 {
			return errors.New("a leaf without value")
		}
	}
	return nil
}

// hashRoot returns the root hash: EmptyRoot for an empty trie, else the
// hash readRoot read back and checked after the last batch, read again
// when a failed batch left none. Cost: O(1), or one read of the root
// record after a failed batch.
func (g *gpuTrie) hashRoot() ([32]byte, error) {
	if g.root == 0 {
		return EmptyRoot, nil
	}
	if !g.rootOK {
		if err := g.readRoot(); err != nil {
			return [32]byte{}, err
		}
	}
	return g.rootHash, nil
}

// Byte offsets inside a Node record (mpt.cu's struct Node).
const (
	nodeKindOffset   = 0
	nodeParentOffset = 4
	nodeChildOffset  = 8
	nodeValOffset    = 72
	nodePlenOffset   = 76
	nodeReflenOffset = 80
	nodeFlagsOffset  = 84
	nodePathOffset   = 96
	nodeRefOffset    = 224
)
