package art

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
)

// Transfers of the GPU engine: batches from Go slices go to the device and
// answers come back through the engine's two gpu.Pipelines (up, down), so
// that the copies between Go memory and pinned chunks run on all cores
// while the DMAs of the neighbouring chunks run. A caller's pinned
// Staging (LookupStaged) is copied by DMA straight from and into its
// buffers. The few totals a batch reads back between steps come through a
// pinned buffer of the pool.

// Shape of the pipelines: chunks of transferChunk bytes, transferChunks of
// them in flight each way; transfers of fewer than transferDirect bytes
// skip the ring (pinning would cost more than it saves).
const (
	transferChunk  = 16 << 20
	transferChunks = 4
	transferDirect = 64 << 10
)

// newPipeline returns one direction's pipeline (pinned on first use; when
// pinning fails its transfers go straight from or to Go memory).
func newPipeline(d *gpu.Device) *gpu.Pipeline {
	return gpu.NewPipeline(d, gpu.PipelineConfig{ChunkBytes: transferChunk, Chunks: transferChunks, Direct: transferDirect})
}

// devBatch is a batch's keys (and values) on the device.
type devBatch struct {
	n    int
	data *gpu.Buffer[byte]
	offs *gpu.Buffer[uint32]
	vals *gpu.Buffer[uint64] // nil without values
}

// batchNeeds are the pool buffers, named by prefix, of a batch of kb's
// keys (and values when withVals).
func batchNeeds(prefix string, kb Keys, withVals bool) []gpu.Need {
	ns := []gpu.Need{gpu.NeedOf[byte](prefix+".data", len(kb.Data)), gpu.NeedOf[uint32](prefix+".offs", kb.Len()+1)}
	if withVals {
		ns = append(ns, gpu.NeedOf[uint64](prefix+".vals", kb.Len()))
	}
	return ns
}

// uploadKeys readies a batch for the device: its buffers (the
// values' too when withVals) taken from the pool and the keys and offsets
// queued on the engine's stream. Cost: the keys and offsets over the bus
// once (and, from Go memory, one parallel copy into pinned chunks).
func (g *gpuEngine) uploadKeys(prefix string, kb Keys, withVals, pinned bool) (*devBatch, error) {
	if err := g.pool.Reserve(batchNeeds(prefix, kb, withVals)...); err != nil {
		return nil, err
	}
	b := &devBatch{n: kb.Len(), data: gpu.Take[byte](g.pool, prefix+".data", len(kb.Data)),
		offs: gpu.Take[uint32](g.pool, prefix+".offs", kb.Len()+1)}
	offs := kb.Offs
	if len(offs) == 0 {
		offs = []uint32{0}
	}
	if withVals {
		b.vals = gpu.Take[uint64](g.pool, prefix+".vals", b.n)
	}
	if pinned {
		return b, errors.Join(b.data.Write(g.s, 0, kb.Data), b.offs.Write(g.s, 0, offs))
	}
	return b, errors.Join(gpu.UploadStaged(g.up, g.s, b.data, 0, kb.Data), gpu.UploadStaged(g.up, g.s, b.offs, 0, offs))
}

// drain completes the downloads queued on the down pipeline and
// synchronizes the stream. Cost: the waits and the copies out of the
// pinned chunks.
func (g *gpuEngine) drain() error {
	return errors.Join(g.down.Drain(), g.s.Synchronize())
}

// readBack returns n elements of b from off (a few totals between steps),
// through the pool's pinned buffer host.T; it synchronizes the stream.
func readBack[T any](g *gpuEngine, b *gpu.Buffer[T], off, n int) ([]T, error) {
	h, err := gpu.Host[T](g.pool, "host.readback", n)
	if err != nil {
		return nil, err
	}
	g.trace.Synced()
	if err := errors.Join(b.Read(g.s, off, h), g.s.Synchronize()); err != nil {
		return nil, err
	}
	return append([]T(nil), h...), nil
}

func (g *gpuEngine) readU64(b *gpu.Buffer[uint64], off, n int) ([]uint64, error) {
	return readBack(g, b, off, n)
}

func (g *gpuEngine) readU32(b *gpu.Buffer[uint32], off, n int) ([]uint32, error) {
	return readBack(g, b, off, n)
}

// span is n elements of b from off viewed as bytes: one part of a
// readSpans.
func span[T any](b *gpu.Buffer[T], off, n int) *gpu.Buffer[byte] {
	var z T
	size := int(unsafe.Sizeof(z))
	return gpu.View[byte](b, off*size, n*size)
}

// readSpans reads several small device arrays (spans) back with one
// synchronization: each is queued into its place in the pool's pinned
// buffer, then the stream is synchronized once. It returns each span's
// bytes (copies). Cost: one transfer per span and one synchronization.
func (g *gpuEngine) readSpans(spans ...*gpu.Buffer[byte]) ([][]byte, error) {
	total := 0
	for _, sp := range spans {
		total += (sp.Len() + 7) &^ 7
	}
	h, err := gpu.Host[byte](g.pool, "host.readback", total)
	if err != nil {
		return nil, err
	}
	at := make([]int, len(spans))
	o := 0
	for i, sp := range spans {
		at[i] = o
		if err := sp.Read(g.s, 0, h[o:o+sp.Len()]); err != nil {
			return nil, err
		}
		o += (sp.Len() + 7) &^ 7
	}
	g.trace.Synced()
	if err := g.s.Synchronize(); err != nil {
		return nil, err
	}
	out := make([][]byte, len(spans))
	for i, sp := range spans {
		out[i] = append([]byte(nil), h[at[i]:at[i]+sp.Len()]...)
	}
	return out, nil
}

// u32sOf and u64sOf decode a span's bytes (little-endian, as the device
// writes them).
func u32sOf(b []byte) []uint32 {
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

func u64sOf(b []byte) []uint64 {
	out := make([]uint64, len(b)/8)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out
}
