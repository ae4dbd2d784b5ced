package btree

import (
	"errors"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// lookupBatch fills values and found for keys (found as bytes 0/1). The tree
// must not be empty. Large batches are pipelined in chunks of lookupChunk
// keys over two streams: each chunk's upload, bt_get and download are
// queued on one stream, alternately, so that one chunk's transfers
// overlap the other stream's; from Go memory (pinned false) the
// transfers go through the pinned staging rings, whose copies between Go
// and pinned memory overlap the DMAs; from a caller's pinned Staging
// (pinned true) they are DMAs straight from and into its arrays. The
// batch's phases then overlap, and the timings give their whole device
// span as Work. Smaller batches run the phases one after the other. Cost:
// a transfer each way and one thread per key.
func (g *gpuTree) lookupBatch(root uint32, keys, values []uint64, found []uint8, pinned bool) (engine.Timings, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := len(keys)
	if n == 0 {
		return engine.Timings{Op: "lookup"}, nil
	}
	g.clock.Start()
	g.clock.Mark(g.s, engine.MarkStart)
	q, err := gpu.Get[uint64](g.pool, bufInK, n)
	if err != nil {
		return engine.Timings{}, err
	}
	out, err := gpu.Get[uint64](g.pool, bufOutV, n)
	if err != nil {
		return engine.Timings{}, err
	}
	f, err := gpu.Get[uint8](g.pool, bufFlags, n)
	if err != nil {
		return engine.Timings{}, err
	}
	g.down.Discard()
	tr := transfers{g: g, pinned: pinned}
	if n >= 2*lookupChunk && (pinned || g.up.Staged() && g.down.Staged()) {
		if err := g.fork(); err != nil {
			return engine.Timings{}, err
		}
		streams := [2]*gpu.Stream{g.s, g.s2}
		for c, off := 0, 0; off < n; c, off = c+1, off+lookupChunk {
			s := streams[c%2]
			end := min(off+lookupChunk, n)
			if err := upload(tr, s, q, off, keys[off:end]); err != nil {
				return engine.Timings{}, err
			}
			cnt := end - off
			if err := g.k.get.Launch(s, grid(cnt), gpu.D1(kernelBlock), 0, gpu.View[uint64](q, 8*off, cnt), uint64(cnt),
				root, uint32(g.height), uint32(g.order), g.keys, g.slots, g.count,
				gpu.View[uint64](out, 8*off, cnt), gpu.View[uint8](f, off, cnt)); err != nil {
				return engine.Timings{}, err
			}
			if err := errors.Join(download(tr, s, out, off, values[off:end]), download(tr, s, f, off, found[off:end])); err != nil {
				return engine.Timings{}, err
			}
		}
		if err := g.joinBack(); err != nil {
			return engine.Timings{}, err
		}
		g.clock.Mark(g.s, engine.MarkWorked)
	} else {
		if err := upload(tr, g.s, q, 0, keys); err != nil {
			return engine.Timings{}, err
		}
		g.clock.Mark(g.s, engine.MarkUploaded)
		if err := g.launchGet(root, q, n, out, f); err != nil {
			return engine.Timings{}, err
		}
		g.clock.Mark(g.s, engine.MarkWorked)
		if err := errors.Join(download(tr, g.s, out, 0, values), download(tr, g.s, f, 0, found)); err != nil {
			return engine.Timings{}, err
		}
	}
	g.clock.Mark(g.s, engine.MarkDone)
	if err := errors.Join(g.down.Drain(), g.s.Synchronize()); err != nil {
		return engine.Timings{}, err
	}
	return g.clock.Timings("lookup", n), nil
}

// transfers says how a batch's host arrays reach the device: through the
// engine's pinned staging rings (Go memory) or by DMA (pinned memory).
type transfers struct {
	g      *gpuTree
	pinned bool
	grain  int // elements a goroutine copies at a time into the ring (0: the ring's)
}

// upload queues the copy of src to b[off:] on s.
func upload[T any](tr transfers, s *gpu.Stream, b *gpu.Buffer[T], off int, src []T) error {
	if tr.pinned {
		return b.Write(s, off, src)
	}
	return gpu.UploadStagedGrain(tr.g.up, s, b, off, src, tr.grain)
}

// download queues the copy of b[off:] to dst on s.
func download[T any](tr transfers, s *gpu.Stream, b *gpu.Buffer[T], off int, dst []T) error {
	if tr.pinned {
		return b.Read(s, off, dst)
	}
	return gpu.DownloadStaged(tr.g.down, s, b, off, dst)
}

// launchGet queues bt_get over n keys in q. Callers hold g.mu.
func (g *gpuTree) launchGet(root uint32, q *gpu.Buffer[uint64], n int, out *gpu.Buffer[uint64], f *gpu.Buffer[uint8]) error {
	return g.k.get.Launch(g.s, grid(n), gpu.D1(kernelBlock), 0, q, uint64(n), root, uint32(g.height), uint32(g.order),
		g.keys, g.slots, g.count, out, f)
}
