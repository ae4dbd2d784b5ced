package art

import (
	"fmt"
	"time"
	"unsafe"

	"warpkv/engine"
	"warpkv/gpu"
	"warpkv/internal/par"
)

// Point calls of the GPU engine (lookups, updates) are pipelined: the
// batch is cut into chunks of consecutive keys that gpu.Pipeline.Run
// schedules over three streams, so that chunk c's transfer in (the
// engine's in stream), its kernels (the engine's stream) and its answers'
// transfer out (the out stream) overlap those of its neighbours. From Go
// slices the host packs chunk c into a pinned slot of a small ring (on
// all cores) while the chunks before it are on the device, and copies the
// answers of chunk c-pointLag out of their slot meanwhile; from a
// caller's pinned Staging (LookupStaged) nothing is copied on the host:
// every chunk's transfer in is queued at once, the batch is checked on
// the host while they run, and the answers go straight back into the
// Staging.
//
// On the device the batch lies as one batch would (key i at data
// offs[i]-offs[0], every offset rebased to the first), so the kernels
// index it by batch position; a chunk's kernels cover keys [base,
// base+n). Chunk c transfers the offsets (lo, hi] (chunk 0 also offset
// 0): every offset is written once, by the chunk whose kernels read it
// first, and a later chunk's kernels read its first offset only after the
// earlier chunk's transfer (the in stream runs them in order).

// Shape of a pipelined point call: chunks of at least pointChunkMin keys
// and at most pointChunksMax of them (a batch of up to pointChunkMin keys
// is one chunk: transfer, kernels, transfer, one synchronization);
// pointLag chunks on the device ahead of the one whose answers the host
// copies out; pointSlots pinned slots (a slot is packed again only after
// its chunk was consumed).
const (
	pointChunkMin  = 1 << 18
	pointChunksMax = 16
	pointLag       = 2
	pointSlots     = pointLag + 1
	pinAlign       = 16      // byte alignment of every array of a pinned slot
	hostMinPart    = 1 << 14 // fewest keys one goroutine packs or unpacks
)

// pointDev are a point call's device buffers: the batch (values only for
// updates) and the answers (out only for lookups).
type pointDev struct {
	data  *gpu.Buffer[byte]
	offs  *gpu.Buffer[uint32]
	vals  *gpu.Buffer[uint64]
	out   *gpu.Buffer[uint64]
	found *gpu.Buffer[uint8]
}

// pointCall is one pipelined point call.
type pointCall struct {
	op     string
	kb     Keys
	vals   []uint64 // update: the new values
	out    []uint64 // lookup: the answers
	found  []uint8
	staged bool         // kb, out and found lie in pinned memory (Staging), kb.Offs[0] == 0
	check  func() error // staged: the batch's check, run while its transfers in run
	// work queues the kernels of keys [base, base+n) on the engine's
	// stream; after, if set, queues more after the last chunk's.
	work  func(base, n int) error
	after func() error
}

// pointNeeds are the device buffers of a point call on kb named by prefix:
// the keys (bytes from the first key's offset on), the offsets, the
// values when withVals.
func pointNeeds(prefix string, kb Keys, withVals bool) []gpu.Need {
	n := kb.Len()
	ns := []gpu.Need{gpu.NeedOf[byte](prefix+".data", int(kb.Offs[n]-kb.Offs[0])), gpu.NeedOf[uint32](prefix+".offs", n+1)}
	if withVals {
		ns = append(ns, gpu.NeedOf[uint64](prefix+".vals", n))
	}
	return ns
}

// takeBatch takes the buffers of pointNeeds as a devBatch.
func (g *gpuEngine) takeBatch(prefix string, kb Keys, withVals bool) *devBatch {
	n := kb.Len()
	b := &devBatch{n: n, data: gpu.Take[byte](g.pool, prefix+".data", int(kb.Offs[n]-kb.Offs[0])),
		offs: gpu.Take[uint32](g.pool, prefix+".offs", n+1)}
	if withVals {
		b.vals = gpu.Take[uint64](g.pool, prefix+".vals", n)
	}
	return b
}

// pointChunks returns the chunk size and count of a point call of n keys
// (n > 0).
func (g *gpuEngine) pointChunks(n int) (size, chunks int) {
	size = max(g.chunkMin, (n+pointChunksMax-1)/pointChunksMax)
	chunks = (n + size - 1) / size
	size = (n + chunks - 1) / chunks // balanced, none empty
	return size, (n + size - 1) / size
}

// slotLayout is where a chunk's arrays lie in a pinned slot (byte
// offsets) and the slot's size.
type slotLayout struct{ offs, vals, out, found, size int }

func alignPin(n int) int { return (n + pinAlign - 1) &^ (pinAlign - 1) }

// pinView returns n elements of T at byte offset off of pinned bytes b
// (off a multiple of pinAlign).
func pinView[T any](b []byte, off, n int) []T {
	if n == 0 {
		return nil
	}
	var z T
	_ = b[off+n*int(unsafe.Sizeof(z))-1]
	return unsafe.Slice((*T)(unsafe.Pointer(&b[off])), n)
}

// point runs pc through the pipeline on the device buffers d. Cost: the
// transfers (keys, offsets, values in; answers out) at the pinned rate,
// overlapped with the kernels and, from Go slices, with one parallel copy
// into and out of pinned memory; about ten driver calls per chunk.
func (g *gpuEngine) point(pc *pointCall, d pointDev) error {
	kb := pc.kb
	n := kb.Len()
	t0 := time.Now()
	if n == 0 {
		g.last.Set(engine.Timings{Op: pc.op, Total: time.Since(t0)})
		return nil
	}
	size, chunks := g.pointChunks(n)
	bounds := func(c int) (int, int) { return c * size, min(n, (c+1)*size) }
	base := kb.Offs[0]
	if pc.staged {
		// The transfers in slice the keys at the chunks' bounds before the
		// whole check has run: those bounds must be in order and in Data.
		for c := range chunks {
			lo, hi := bounds(c)
			if kb.Offs[lo] > kb.Offs[hi] || int(kb.Offs[hi]) > len(kb.Data) {
				if err := pc.check(); err != nil {
					return err
				}
				return fmt.Errorf("art: %s: offsets %d..%d of keys %d..%d outside the %d data bytes", pc.op, kb.Offs[lo], kb.Offs[hi], lo, hi, len(kb.Data))
			}
		}
	}
	// The slice call's pinned ring.
	var pin []byte
	var lay slotLayout
	if !pc.staged {
		most := 0
		for c := range chunks {
			lo, hi := bounds(c)
			most = max(most, int(kb.Offs[hi]-kb.Offs[lo]))
		}
		lay.offs = alignPin(most)
		lay.vals = lay.offs + alignPin(4*(size+1))
		lay.out = lay.vals
		if pc.vals != nil {
			lay.out += alignPin(8 * size)
		}
		lay.found = lay.out
		if pc.out != nil {
			lay.found += alignPin(8 * size)
		}
		lay.size = lay.found + alignPin(size)
		slots := min(chunks, pointSlots)
		var err error
		if pin, err = gpu.Host[byte](g.pool, "pt.pin", slots*lay.size); err != nil {
			return err
		}
	}
	slot := func(c int) []byte { s := c % pointSlots; return pin[s*lay.size : (s+1)*lay.size] }
	// Per chunk: its keys, offsets and values in pinned memory.
	src := func(c int) ([]byte, []uint32, []uint64) {
		lo, hi := bounds(c)
		if pc.staged {
			return kb.Data[kb.Offs[lo]:kb.Offs[hi]], kb.Offs[lo : hi+1], nil
		}
		s := slot(c)
		var v []uint64
		if pc.vals != nil {
			v = pinView[uint64](s, lay.vals, hi-lo)
		}
		return s[:kb.Offs[hi]-kb.Offs[lo]], pinView[uint32](s, lay.offs, hi-lo+1), v
	}
	// Per chunk: where its answers land in pinned memory.
	dst := func(c int) ([]uint64, []uint8) {
		lo, hi := bounds(c)
		if pc.staged {
			return pc.out[lo:hi], pc.found[lo:hi]
		}
		s := slot(c)
		var o []uint64
		if pc.out != nil {
			o = pinView[uint64](s, lay.out, hi-lo)
		}
		return o, pinView[uint8](s, lay.found, hi-lo)
	}
	for len(g.kev) < 2*chunks {
		e, err := g.dev.NewEvent()
		if err != nil {
			return err
		}
		g.kev = append(g.kev, e)
	}
	steps := gpu.Steps{
		In: func(s *gpu.Stream, c int) error {
			lo, _ := bounds(c)
			data, offs, vals := src(c)
			if err := d.data.Write(s, int(kb.Offs[lo]-base), data); err != nil {
				return err
			}
			at := lo + 1
			if c == 0 {
				at = 0
			} else {
				offs = offs[1:]
			}
			if err := d.offs.Write(s, at, offs); err != nil {
				return err
			}
			if vals != nil {
				return d.vals.Write(s, lo, vals)
			}
			return nil
		},
		Work: func(s *gpu.Stream, c int) error {
			lo, hi := bounds(c)
			if err := g.kev[2*c].Record(s); err != nil {
				return err
			}
			if err := pc.work(lo, hi-lo); err != nil {
				return err
			}
			if c == chunks-1 && pc.after != nil {
				if err := pc.after(); err != nil {
					return err
				}
			}
			return g.kev[2*c+1].Record(s)
		},
		Out: func(s *gpu.Stream, c int) error {
			lo, _ := bounds(c)
			o, f := dst(c)
			if o != nil {
				if err := d.out.Read(s, lo, o); err != nil {
					return err
				}
			}
			return d.found.Read(s, lo, f)
		},
	}
	if pc.staged {
		steps.Check = pc.check
	} else {
		steps.Pack = func(c int) error {
			lo, hi := bounds(c)
			data, offs, vals := src(c)
			a := kb.Offs[lo]
			par.Ranges(hi-lo, par.Parts(hi-lo, hostMinPart, g.workers), func(_, plo, phi int) {
				copy(data[kb.Offs[lo+plo]-a:kb.Offs[lo+phi]-a], kb.Data[kb.Offs[lo+plo]:kb.Offs[lo+phi]])
				for i := plo; i < phi; i++ {
					offs[i] = kb.Offs[lo+i] - base
				}
				if vals != nil {
					copy(vals[plo:phi], pc.vals[lo+plo:lo+phi])
				}
			})
			offs[hi-lo] = kb.Offs[hi] - base
			return nil
		}
		steps.Done = func(c int) error {
			lo, hi := bounds(c)
			o, f := dst(c)
			par.Ranges(hi-lo, par.Parts(hi-lo, hostMinPart, g.workers), func(_, plo, phi int) {
				if o != nil {
					copy(pc.out[lo+plo:lo+phi], o[plo:phi])
				}
				copy(pc.found[lo+plo:lo+phi], f[plo:phi])
			})
			return nil
		}
	}
	if err := g.up.Run(g.s, g.in, g.out, chunks, pointLag, steps); err != nil {
		return err
	}
	var work time.Duration
	for c := range chunks {
		if w, err := gpu.Elapsed(g.kev[2*c], g.kev[2*c+1]); err == nil && w > 0 {
			work += w
		}
	}
	g.last.Set(engine.Timings{Op: pc.op, Items: n, Work: work, Total: time.Since(t0)})
	return nil
}
