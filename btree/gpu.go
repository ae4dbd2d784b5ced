package btree

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"warpkv/gpu"
	"warpkv/prim"
)

// gpuTree is the GPU engine: the node arrays of the CPU engine's layout,
// flat in device memory (node id owns keys and slots [id*order,
// (id+1)*order) and element id of the others), and every kernel queued on
// the stream of one prim engine. mu serializes the engine's calls, which
// share the scratch buffers.
type gpuTree struct {
	mu      sync.Mutex
	order   int
	fill    int
	dev     *gpu.Device
	ownsDev bool
	pe      *prim.Engine
	s       *gpu.Stream // the prim engine's stream: every kernel and the tree's order of work
	s2      *gpu.Stream // the second stream of overlapped transfers (lookup chunks, build values)
	join    [2]*gpu.Event
	k       *kernelSet
	clock   *gpuClock // phase events of the batch in progress

	// Node arrays, capacity capNodes (a multiple of segNodes); nodes are
	// in use (live or free, as in the CPU engine's store).
	keys, slots              *gpu.Buffer[uint64]
	count, parent, next, prv *gpu.Buffer[uint32]
	kind                     *gpu.Buffer[uint8]
	capNodes, nodes          int
	height                   int // levels, leaves included; 0 when empty

	// Scratch reused across calls, grown with headroom: the batch's
	// buffers (bufInK ...) and the update phases' named ones, reserved
	// before a batch changes the tree.
	pool *gpu.Pool

	up, down *gpu.Pipeline // pinned staging of uploads and downloads (staging.go)
}

// Names of the batch's buffers in the pool.
const (
	bufInK      = "in.keys"    // the batch's keys (queries, range starts)
	bufInV      = "in.values"  // its values (range ends)
	bufOutK     = "out.keys"   // the sorted unique keys (range result keys)
	bufOutV     = "out.values" // their values (lookup values, range offsets)
	bufFlags    = "flags"      // per-key flags (lookups: found)
	bufCounters = "counters"   // two uint32 counters of a select
)

// newGPUTree returns an empty GPU engine on d; with ownsDev it closes d
// when closed. The kernels are compiled here, so that a broken toolchain
// is reported by New.
func newGPUTree(r resolved, d *gpu.Device, ownsDev bool) (*gpuTree, error) {
	pe, err := prim.NewGPU(d)
	if err != nil {
		return nil, err
	}
	k, err := loadKernels(d)
	if err != nil {
		return nil, errors.Join(err, pe.Close())
	}
	clock, err := newGPUClock(d)
	if err != nil {
		return nil, errors.Join(err, pe.Close())
	}
	g := &gpuTree{order: r.order, fill: r.fill, dev: d, ownsDev: ownsDev, pe: pe, s: pe.Stream(), k: k, clock: clock,
		up: gpu.NewPipeline(d, stageConfig), down: gpu.NewPipeline(d, stageConfig), pool: gpu.NewPool(d, pe.Stream())}
	if g.s2, err = d.NewStream(); err == nil {
		for i := range g.join {
			if g.join[i], err = d.NewEvent(); err != nil {
				break
			}
		}
	}
	if err != nil {
		return nil, errors.Join(err, g.closeStreams(), clock.close(), pe.Close())
	}
	return g, nil
}

// closeStreams destroys the second stream and the join events.
func (g *gpuTree) closeStreams() error {
	var err error
	if g.s2 != nil {
		err = errors.Join(g.s2.Synchronize(), g.s2.Close())
		g.s2 = nil
	}
	for i, e := range g.join {
		if e != nil {
			err = errors.Join(err, e.Close())
			g.join[i] = nil
		}
	}
	return err
}

// fork makes the work queued next on s2 wait for everything queued on s so
// far. Cost: an event record and a stream wait.
func (g *gpuTree) fork() error {
	return errors.Join(g.join[0].Record(g.s), g.s2.Wait(g.join[0]))
}

// joinBack makes the work queued next on s wait for everything queued on
// s2 so far. Cost: an event record and a stream wait.
func (g *gpuTree) joinBack() error {
	return errors.Join(g.join[1].Record(g.s2), g.s.Wait(g.join[1]))
}

// close frees the device memory, the stream and (when owned) the device.
func (g *gpuTree) close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	err := errors.Join(g.freeNodes(), g.s.Synchronize(), g.closeStreams(), g.up.Close(), g.down.Close(),
		g.pool.Free(), g.clock.close(), g.pe.Close())
	if g.ownsDev {
		err = errors.Join(err, g.dev.Close())
	}
	return err
}

// freeNodes frees the node arrays.
func (g *gpuTree) freeNodes() error {
	if g.keys == nil {
		return nil
	}
	err := errors.Join(g.s.Synchronize(), g.keys.Free(), g.slots.Free(), g.count.Free(), g.parent.Free(),
		g.next.Free(), g.prv.Free(), g.kind.Free())
	g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind = nil, nil, nil, nil, nil, nil, nil
	g.capNodes, g.nodes, g.height = 0, 0, 0
	return err
}

// reserve makes the node arrays hold at least n nodes (rounded up to whole
// segments) and zeroes the first n. Cost: a reallocation when growing (the
// old contents are dropped) and memsets of n nodes.
func (g *gpuTree) reserve(n int) error {
	if n > g.capNodes {
		if err := g.freeNodes(); err != nil {
			return err
		}
		c := (n + n/8 + segMask) &^ segMask
		m := g.order
		var err error
		if g.keys, err = gpu.Alloc[uint64](g.dev, c*m); err == nil {
			if g.slots, err = gpu.Alloc[uint64](g.dev, c*m); err == nil {
				if g.count, err = gpu.Alloc[uint32](g.dev, c); err == nil {
					if g.parent, err = gpu.Alloc[uint32](g.dev, c); err == nil {
						if g.next, err = gpu.Alloc[uint32](g.dev, c); err == nil {
							if g.prv, err = gpu.Alloc[uint32](g.dev, c); err == nil {
								g.kind, err = gpu.Alloc[uint8](g.dev, c)
							}
						}
					}
				}
			}
		}
		if err != nil {
			for _, b := range []interface{ Free() error }{g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind} {
				_ = b.Free() // best effort (nil-safe): err says what failed
			}
			g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind = nil, nil, nil, nil, nil, nil, nil
			return fmt.Errorf("node arrays of %d nodes: %w", c, err)
		}
		g.capNodes = c
	}
	m := g.order
	for _, err := range []error{
		gpu.View[uint64](g.keys, 0, n*m).FillBytes(g.s, 0),
		gpu.View[uint64](g.slots, 0, n*m).FillBytes(g.s, 0),
		gpu.View[uint32](g.count, 0, n).FillBytes(g.s, 0),
		gpu.View[uint32](g.parent, 0, n).FillBytes(g.s, 0),
		gpu.View[uint32](g.next, 0, n).FillBytes(g.s, 0),
		gpu.View[uint32](g.prv, 0, n).FillBytes(g.s, 0),
		gpu.View[uint8](g.kind, 0, n).FillBytes(g.s, 0),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// levelSizes returns the node counts of the levels of a built tree of m
// keys, leaves first: ceil(m/fill) leaves, then ceil(below/fill) per level
// up to one root. Empty for m == 0.
func levelSizes(m, fill int) []int {
	var sizes []int
	for n := m; n > 1 || len(sizes) == 0; {
		if n == 0 {
			return nil
		}
		p := (n + fill - 1) / fill
		sizes = append(sizes, p)
		n = p
		if p == 1 {
			break
		}
	}
	return sizes
}

// built is what a build tells the Tree: root, keys, leaves.
type built struct {
	root   uint32
	n      int
	leaves int
}

// build replaces the tree with the pairs (unsorted, last occurrence
// wins): upload, sort, keep the last occurrences, then writeTree; bt gets
// the phase times. Cost: one transfer of the batch, the sort, the
// compaction and writeTree's.
func (g *gpuTree) build(keys, values []uint64, bt *BatchTimes) (built, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.clock.reset()
	g.clock.mark(g.s, markStart)
	if len(keys) == 0 {
		return built{root: nilNode}, g.freeNodes()
	}
	m, err := g.uploadSortDedupe(keys, values)
	if err != nil {
		return built{}, err
	}
	b, err := g.writeTree(gpu.Take[uint64](g.pool, bufOutK, m), gpu.Take[uint64](g.pool, bufOutV, m), m)
	if err != nil {
		return built{}, err
	}
	return b, g.finishTimes(bt)
}

// finishTimes marks the end of the work (and of the download, none) and
// fills bt once the stream is there. Callers hold g.mu.
func (g *gpuTree) finishTimes(bt *BatchTimes) error {
	g.clock.mark(g.s, markWorked)
	g.clock.mark(g.s, markDone)
	if err := g.s.Synchronize(); err != nil {
		return err
	}
	g.clock.times(bt)
	return nil
}

// sortUploaded stably sorts the n pairs in inK, inV by key on the device.
// Callers hold g.mu.
func (g *gpuTree) sortUploaded(n int) error {
	return prim.DevSortPairs(g.pe, gpu.Take[uint64](g.pool, bufInK, n), gpu.Take[uint64](g.pool, bufInV, n), n)
}

// buildSorted builds the tree from the n key-sorted pairs in inK, inV:
// dedupe (the last of each run of equal keys, into outK, outV), then
// writeTree. Callers hold g.mu.
func (g *gpuTree) buildSorted(n int) (built, error) {
	if n == 0 {
		return built{root: nilNode}, g.freeNodes()
	}
	m, err := g.dedupe(n, true)
	if err != nil {
		return built{}, err
	}
	return g.writeTree(gpu.Take[uint64](g.pool, bufOutK, m), gpu.Take[uint64](g.pool, bufOutV, m), m)
}

// writeTree builds the tree from the m strictly increasing pairs in uk,
// uv (which must not be node arrays): the leaves (one thread per key) and each internal level (one
// thread per child) with the CPU engine's closed form, so the node arrays
// equal the CPU engine's word for word. Callers hold g.mu.
func (g *gpuTree) writeTree(uk, uv *gpu.Buffer[uint64], m int) (built, error) {
	if m == 0 {
		return built{root: nilNode}, g.freeNodes()
	}
	sizes := levelSizes(m, g.fill)
	total := 0
	for _, p := range sizes {
		total += p
	}
	if total > maxNodes {
		return built{}, fmt.Errorf("%d nodes: at most %d", total, maxNodes)
	}
	if err := g.reserve(total); err != nil {
		return built{}, err
	}
	order := uint32(g.order)
	L := sizes[0]
	if err := g.k.leaves.Launch(g.s, grid(m), gpu.D1(kernelBlock), 0, uk, uv, uint64(m), uint64(L), order, uint32(0),
		g.keys, g.slots, g.count, g.parent, g.next, g.prv, g.kind); err != nil {
		return built{}, err
	}
	childFirst, first := 0, L
	for l := 1; l < len(sizes); l++ {
		below, p := sizes[l-1], sizes[l]
		if err := g.k.level.Launch(g.s, grid(below), gpu.D1(kernelBlock), 0, uint64(below), uint64(p),
			uint32(childFirst), uint32(first), order, g.keys, g.slots, g.count, g.parent, g.kind); err != nil {
			return built{}, err
		}
		childFirst, first = first, first+p
	}
	if err := g.s.Synchronize(); err != nil {
		return built{}, err
	}
	g.nodes, g.height = total, len(sizes)
	return built{root: uint32(total - 1), n: m, leaves: L}, nil
}

// lookup fills values and found for keys (found as bytes 0/1). The tree
// must not be empty. Large batches are pipelined in chunks of lookupChunk
// keys over two streams: each chunk's upload (pinned staging), bt_get and
// download (pinned staging) are queued on one stream, alternately, so
// that one chunk's transfers overlap the other stream's, and the copies
// between Go and pinned memory overlap the DMAs; the batch's phases then
// overlap, and bt gets their whole device span as Work. Smaller batches
// run the phases one after the other. Cost: a transfer each way and one
// thread per key.
func (g *gpuTree) lookup(root uint32, keys, values []uint64, found []bool, bt *BatchTimes) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(keys)
	if n == 0 {
		return nil
	}
	g.clock.reset()
	g.clock.mark(g.s, markStart)
	q, err := gpu.Get[uint64](g.pool, bufInK, n)
	if err != nil {
		return err
	}
	out, err := gpu.Get[uint64](g.pool, bufOutV, n)
	if err != nil {
		return err
	}
	f, err := gpu.Get[uint8](g.pool, bufFlags, n)
	if err != nil {
		return err
	}
	g.down.Discard()
	fb := unsafe.Slice((*uint8)(unsafe.Pointer(&found[0])), n) // the kernel writes 0 or 1
	if n >= 2*lookupChunk && g.up.Staged() && g.down.Staged() {
		if err := g.fork(); err != nil {
			return err
		}
		streams := [2]*gpu.Stream{g.s, g.s2}
		for c, off := 0, 0; off < n; c, off = c+1, off+lookupChunk {
			s := streams[c%2]
			end := min(off+lookupChunk, n)
			if err := gpu.UploadStaged(g.up, s, q, off, keys[off:end]); err != nil {
				return err
			}
			cnt := end - off
			if err := g.k.get.Launch(s, grid(cnt), gpu.D1(kernelBlock), 0, gpu.View[uint64](q, 8*off, cnt), uint64(cnt),
				root, uint32(g.height), uint32(g.order), g.keys, g.slots, g.count,
				gpu.View[uint64](out, 8*off, cnt), gpu.View[uint8](f, off, cnt)); err != nil {
				return err
			}
			if err := errors.Join(gpu.DownloadStaged(g.down, s, out, off, values[off:end]), gpu.DownloadStaged(g.down, s, f, off, fb[off:end])); err != nil {
				return err
			}
		}
		if err := g.joinBack(); err != nil {
			return err
		}
		g.clock.mark(g.s, markWorked)
	} else {
		if err := gpu.UploadStaged(g.up, g.s, q, 0, keys); err != nil {
			return err
		}
		g.clock.mark(g.s, markUploaded)
		if err := g.launchGet(root, q, n, out, f); err != nil {
			return err
		}
		g.clock.mark(g.s, markWorked)
		if err := errors.Join(gpu.DownloadStaged(g.down, g.s, out, 0, values), gpu.DownloadStaged(g.down, g.s, f, 0, fb)); err != nil {
			return err
		}
	}
	g.clock.mark(g.s, markDone)
	if err := errors.Join(g.down.Drain(), g.s.Synchronize()); err != nil {
		return err
	}
	g.clock.times(bt)
	return nil
}

// launchGet queues bt_get over n keys in q. Callers hold g.mu.
func (g *gpuTree) launchGet(root uint32, q *gpu.Buffer[uint64], n int, out *gpu.Buffer[uint64], f *gpu.Buffer[uint8]) error {
	return g.k.get.Launch(g.s, grid(n), gpu.D1(kernelBlock), 0, q, uint64(n), root, uint32(g.height), uint32(g.order),
		g.keys, g.slots, g.count, out, f)
}

// ranges answers range queries in two passes on the device: bt_range
// counts each query's pairs, prim's exclusive scan places them, bt_range
// writes them; the offsets, keys and values come back through the pinned
// staging buffers (copied out of pinned memory in parallel, overlapping
// the later chunks' DMAs). The tree must not be empty. Cost: two kernels
// of one thread per query, a scan, the transfers of the queries and the
// result, one read of the total in between.
func (g *gpuTree) ranges(root uint32, los, his []uint64, limit int) (keys, values []uint64, offsets []int, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	q := len(los)
	lim := uint64(0)
	if limit > 0 {
		lim = uint64(limit)
	}
	g.down.Discard()
	lo, err := gpu.Get[uint64](g.pool, bufInK, q)
	if err != nil {
		return nil, nil, nil, err
	}
	hi, err := gpu.Get[uint64](g.pool, bufInV, q)
	if err != nil {
		return nil, nil, nil, err
	}
	counts, err := gpu.Get[uint64](g.pool, bufOutV, q+1)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := errors.Join(gpu.UploadStaged(g.up, g.s, lo, 0, los), gpu.UploadStaged(g.up, g.s, hi, 0, his),
		gpu.View[uint64](counts, 8*q, 1).FillBytes(g.s, 0)); err != nil {
		return nil, nil, nil, err
	}
	launch := func(write int, offs, ok, ov *gpu.Buffer[uint64]) error {
		return g.k.rng.Launch(g.s, grid(q), gpu.D1(kernelBlock), 0, lo, hi, uint64(q), lim, root, uint32(g.height),
			uint32(g.order), g.keys, g.slots, g.count, g.next, write, counts, offs, ok, ov)
	}
	if err := launch(0, counts, counts, counts); err != nil {
		return nil, nil, nil, err
	}
	if err := prim.DevScanExclusive(g.pe, counts, counts, q+1); err != nil {
		return nil, nil, nil, err
	}
	var tot [1]uint64
	if err := errors.Join(counts.Read(g.s, q, tot[:]), g.s.Synchronize()); err != nil {
		return nil, nil, nil, err
	}
	total := int(tot[0])
	offsets = make([]int, q+1)
	offWords := unsafe.Slice((*uint64)(unsafe.Pointer(&offsets[0])), q+1) // int is 64-bit (below)
	if err := gpu.DownloadStaged(g.down, g.s, counts, 0, offWords); err != nil {
		return nil, nil, nil, err
	}
	keys, values = make([]uint64, total), make([]uint64, total)
	if total > 0 {
		ok, err := gpu.Get[uint64](g.pool, bufOutK, total)
		if err != nil {
			return nil, nil, nil, err
		}
		// outV holds the offsets; the values go to a scratch buffer of their own.
		ov, err := gpu.Get[uint64](g.pool, "rangev", total)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := errors.Join(launch(1, counts, ok, ov), gpu.DownloadStaged(g.down, g.s, ok, 0, keys),
			gpu.DownloadStaged(g.down, g.s, ov, 0, values)); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := errors.Join(g.down.Drain(), g.s.Synchronize()); err != nil {
		return nil, nil, nil, err
	}
	return keys, values, offsets, nil
}

// Offsets are read from the device's 64-bit words straight into []int.
var _ [1]struct{} = [unsafe.Sizeof(int(0)) / 8]struct{}{}

// snapshot copies the node arrays to a host store (segments of the CPU
// engine's layout), for Check and the tests. Cost: a transfer of the
// allocated nodes.
func (g *gpuTree) snapshot() (store, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := store{order: g.order}
	if g.nodes == 0 {
		return st, nil
	}
	if _, err := st.grow(g.nodes); err != nil {
		return st, err
	}
	m := g.order
	for i := range st.segs {
		sg := &st.segs[i]
		a := i * segNodes
		b := min(a+segNodes, g.nodes)
		if err := errors.Join(
			g.keys.Read(g.s, a*m, sg.keys[:(b-a)*m]), g.slots.Read(g.s, a*m, sg.slots[:(b-a)*m]),
			g.count.Read(g.s, a, sg.count[:b-a]), g.parent.Read(g.s, a, sg.parent[:b-a]),
			g.next.Read(g.s, a, sg.next[:b-a]), g.prv.Read(g.s, a, sg.prev[:b-a]),
			g.kind.Read(g.s, a, sg.kind[:b-a])); err != nil {
			return st, err
		}
	}
	return st, g.s.Synchronize()
}
