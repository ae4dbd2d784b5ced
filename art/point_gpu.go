package art

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/ntcopy"
	"github.com/warpkv/warpkv/internal/par"
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
// The chunks' transfers and kernels are queued on a goroutine of their
// own (runBeside) while the host packs the next chunk. Chunks may also be
// graded (pointGroups: 1 and 2 units first and last, a full chunk
// pointUnits units), which on an H200 was slower for every form
// (BenchmarkGPUPointSteps, 2026-11-29), so calls use chunks of one size
// unless the engine's chunkUnits says otherwise.
//
// On the device the batch lies as one batch would (key i at data
// offs[i]-offs[0], every offset rebased to the first), so the kernels
// index it by batch position; a chunk's kernels cover keys [base,
// base+n). Chunk c transfers the offsets (lo, hi] (chunk 0 also offset
// 0): every offset is written once, by the chunk whose kernels read it
// first, and a later chunk's kernels read its first offset only after the
// earlier chunk's transfer (the in stream runs them in order).

// Shape of a pipelined point call: full chunks of at least pointChunkMin
// keys and at most pointChunksMax of them (a batch of up to pointChunkMin
// keys is one chunk: transfer, kernels, transfer, one synchronization);
// pointLag chunks on the device ahead of the one whose answers the host
// copies out; pointSlots pinned slots (a slot is packed again only after
// its chunk was consumed).
const (
	pointChunkMin  = 1 << 18
	pointChunksMax = 16
	pointLag       = 2
	pointUnits     = 4 // units of a full chunk when chunks are graded (pointGroups; benchmarks)
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

// pointCall is one pipelined point call: its keys either in a caller's
// pinned Staging (staged: kb) or in Go memory (src: a packed batch or one
// slice per key, packed into pinned slots chunk by chunk).
type pointCall struct {
	op    string
	kb    Keys        // staged: the keys, kb.Offs[0] == 0
	src   gpu.Strings // not staged: the keys
	vals  []uint64    // update: the new values
	out   []uint64    // lookup: the answers
	found []uint8
	// later, if set, allocates out (a lookup's) and found while the call
	// starts: they are set from it before the first answers are copied.
	later  *pendingAnswers
	staged bool         // kb, vals, out and found lie in pinned memory (Staging)
	check  func() error // staged: the batch's check, run while its transfers in run
	// work queues the kernels of keys [base, base+n) on the engine's
	// stream; after, if set, queues more after the last chunk's.
	work  func(base, n int) error
	after func() error
}

// hasOut reports whether the call has values to answer (a lookup).
func (pc *pointCall) hasOut() bool { return pc.out != nil || pc.later != nil && pc.later.withOut }

// answers waits for the answers' slices of a call that allocates them
// (later) and sets out and found.
func (pc *pointCall) answers() {
	if pc.later != nil && pc.found == nil {
		out, found := pc.later.wait()
		pc.out, pc.found = out, boolBytes(found)
	}
}

// len is the number of keys of the call.
func (pc *pointCall) len() int {
	if pc.staged {
		return pc.kb.Len()
	}
	return pc.src.Len()
}

// pointNeeds are the device buffers of a point call of n keys of bytes
// key bytes named by prefix: the keys, the offsets, the values when
// withVals.
func pointNeeds(prefix string, n, bytes int, withVals bool) []gpu.Need {
	ns := []gpu.Need{gpu.NeedOf[byte](prefix+".data", bytes), gpu.NeedOf[uint32](prefix+".offs", n+1)}
	if withVals {
		ns = append(ns, gpu.NeedOf[uint64](prefix+".vals", n))
	}
	return ns
}

// takeBatch takes the buffers of pointNeeds as a devBatch.
func (g *gpuEngine) takeBatch(prefix string, n, bytes int, withVals bool) *devBatch {
	b := &devBatch{n: n, data: gpu.Take[byte](g.pool, prefix+".data", bytes),
		offs: gpu.Take[uint32](g.pool, prefix+".offs", n+1)}
	if withVals {
		b.vals = gpu.Take[uint64](g.pool, prefix+".vals", n)
	}
	return b
}

// pointSizes cuts the n > 0 keys of pc into the units of a point call
// (gpu.Strings.Sizes: their size and byte starts; for a staged call, from
// its offsets) and groups them into chunks (pointGroups: with
// g.chunkUnits units a full chunk; with 1, a unit a chunk); a key over
// MaxKeyLen from Go slices is an error, named as Keys.check names it.
// Cost: O(units), or one parallel pass over the slices' headers.
func (g *gpuEngine) pointSizes(pc *pointCall) (gpu.Layout, []int, error) {
	size, chunks := g.pointChunks(pc.len())
	per := max(g.chunkUnits, 1)
	graded := per > 1 && chunks > 1
	if graded {
		size = (size + per - 1) / per
	}
	src := pc.src
	if pc.staged {
		src = gpu.Strings{Data: pc.kb.Data, Offs: pc.kb.Offs}
	}
	cut, bad := src.Sizes(size, MaxKeyLen, g.workers)
	if bad >= 0 {
		return gpu.Layout{}, nil, fmt.Errorf("art: %s: key %d is %d bytes: at most %d", pc.op, bad, len(src.Slices[bad]), MaxKeyLen)
	}
	if cut.Bytes() > math.MaxUint32 {
		return gpu.Layout{}, nil, errLongSlices
	}
	if !graded {
		return cut, nil, nil
	}
	return cut, pointGroups(cut.Chunks(), per), nil
}

// errLongSlices says that a batch of Go slices holds more than 4 GiB of
// key bytes: the caller packs it (Pack) and takes the long-batch path.
var errLongSlices = errors.New("art: more than 4 GiB of key bytes")

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

// pointPlan is the host side of a point call: its chunks, where each
// chunk's inputs and answers lie in pinned memory (a slot of pin for a
// slice call, the caller's Staging for a staged one), and the copies
// between Go memory and a slot. The chunks are runs of consecutive units
// of cut (pointSizes: units of equal size but the last); unitAt says
// which (pointGroups).
type pointPlan struct {
	pc      *pointCall
	n       int
	chunks  int
	cut     gpu.Layout // the units (pointSizes)
	unitAt  []int      // chunk c is units [unitAt[c], unitAt[c+1]) of cut
	keyAt   []int      // chunk c is keys [keyAt[c], keyAt[c+1])
	lay     slotLayout
	pin     []byte // slice calls: pointSlots (or chunks, if fewer) slots
	workers int
}

// newPointPlan groups the units of cut (pointSizes of pc's n > 0 keys)
// into chunks as unitAt says (nil: one unit a chunk) and, for a slice
// call, lays out a slot for the largest chunk. Cost: O(units).
func newPointPlan(pc *pointCall, cut gpu.Layout, unitAt []int, workers int) *pointPlan {
	p := &pointPlan{pc: pc, n: pc.len(), cut: cut, unitAt: unitAt, workers: workers}
	units := cut.Chunks()
	if p.unitAt == nil {
		p.unitAt = make([]int, units+1)
		for u := range p.unitAt {
			p.unitAt[u] = u
		}
	}
	p.chunks = len(p.unitAt) - 1
	p.keyAt = make([]int, p.chunks+1)
	mostKeys, mostBytes := 0, 0
	for c := range p.chunks {
		p.keyAt[c+1] = min(p.n, p.unitAt[c+1]*cut.Size)
		mostKeys = max(mostKeys, p.keyAt[c+1]-p.keyAt[c])
		mostBytes = max(mostBytes, p.byteAt(c+1)-p.byteAt(c))
	}
	if pc.staged {
		return p
	}
	l := &p.lay
	l.offs = alignPin(mostBytes)
	l.vals = l.offs + alignPin(4*(mostKeys+1))
	l.out = l.vals
	if pc.vals != nil {
		l.out += alignPin(8 * mostKeys)
	}
	l.found = l.out
	if pc.hasOut() {
		l.found += alignPin(8 * mostKeys)
	}
	l.size = l.found + alignPin(mostKeys)
	return p
}

// byteAt is where the key bytes of chunk c (of chunks, for c = chunks:
// the end) start in the batch on the device.
func (p *pointPlan) byteAt(c int) int { return p.cut.Starts[p.unitAt[c]] }

// pointGroups returns how a call of units units (pointSizes) groups them
// into chunks of at most per units (unit boundaries, from 0 to units):
// graded, chunks of 1, 2, 4 ... units (doubling below per) first, then
// chunks of at most per units, then the same ramp down to 1 unit last,
// so that the first transfer in starts after the host packed one unit,
// not a full chunk, and the last chunk's transfers and kernels, which
// nothing overlaps, are one unit's. With per < 2, or fewer units than
// both ramps and one unit more, chunks of per units (the last shorter).
// Cost: O(chunks).
func pointGroups(units, per int) []int {
	per = max(per, 1)
	var ramp []int
	sum := 0
	for r := 1; r < per; r *= 2 {
		ramp = append(ramp, r)
		sum += r
	}
	at := []int{0}
	if per < 2 || units < 2*sum+1 {
		for u := per; u < units; u += per {
			at = append(at, u)
		}
		return append(at, units)
	}
	for _, r := range ramp {
		at = append(at, at[len(at)-1]+r)
	}
	mid := units - 2*sum
	k := (mid + per - 1) / per
	for j := 1; j <= k; j++ {
		at = append(at, sum+mid*j/k)
	}
	for i := len(ramp) - 1; i >= 0; i-- {
		at = append(at, at[len(at)-1]+ramp[i])
	}
	return at
}

// pinBytes is the pinned memory a slice call's slots take.
func (p *pointPlan) pinBytes() int { return min(p.chunks, pointSlots) * p.lay.size }

// bounds returns chunk c's keys [lo, hi).
func (p *pointPlan) bounds(c int) (lo, hi int) { return p.keyAt[c], p.keyAt[c+1] }

// checkBounds checks a staged call's offsets at the chunks' bounds (in
// order, within Data): its transfers in slice the keys there before the
// whole batch is checked. Cost: O(chunks).
func (p *pointPlan) checkBounds() error {
	kb := p.pc.kb
	for c := range p.chunks {
		lo, hi := p.bounds(c)
		if kb.Offs[lo] > kb.Offs[hi] || int(kb.Offs[hi]) > len(kb.Data) {
			if err := p.pc.check(); err != nil {
				return err
			}
			return fmt.Errorf("art: %s: offsets %d..%d of keys %d..%d outside the %d data bytes", p.pc.op, kb.Offs[lo], kb.Offs[hi], lo, hi, len(kb.Data))
		}
	}
	return nil
}

func (p *pointPlan) slot(c int) []byte {
	s := c % pointSlots
	return p.pin[s*p.lay.size : (s+1)*p.lay.size]
}

// inCopies are a chunk's transfers to the device: data at byte dataAt,
// offs at offset offsAt, vals (nil for lookups) at valsAt.
type inCopies struct {
	dataAt, offsAt, valsAt int
	data                   []byte
	offs                   []uint32
	vals                   []uint64
}

// in returns chunk c's transfers in, from its pinned memory: its key
// bytes where the batch puts them, its offsets (lo, hi] (chunk 0 also
// offset 0), its values.
func (p *pointPlan) in(c int) inCopies {
	lo, hi := p.bounds(c)
	cp := inCopies{offsAt: lo + 1, valsAt: lo}
	if p.pc.staged {
		kb := p.pc.kb
		cp.dataAt = int(kb.Offs[lo])
		cp.data, cp.offs = kb.Data[kb.Offs[lo]:kb.Offs[hi]], kb.Offs[lo:hi+1]
		if p.pc.vals != nil {
			cp.vals = p.pc.vals[lo:hi]
		}
	} else {
		s := p.slot(c)
		cp.dataAt = p.byteAt(c)
		cp.data, cp.offs = s[:p.byteAt(c+1)-p.byteAt(c)], pinView[uint32](s, p.lay.offs, hi-lo+1)
		if p.pc.vals != nil {
			cp.vals = pinView[uint64](s, p.lay.vals, hi-lo)
		}
	}
	if c == 0 {
		cp.offsAt = 0
	} else {
		cp.offs = cp.offs[1:]
	}
	return cp
}

// outs returns where chunk c's answers land in pinned memory (o nil for
// updates).
func (p *pointPlan) outs(c int) (o []uint64, f []uint8) {
	lo, hi := p.bounds(c)
	if p.pc.staged {
		if p.pc.out != nil {
			o = p.pc.out[lo:hi]
		}
		return o, p.pc.found[lo:hi]
	}
	s := p.slot(c)
	if p.pc.hasOut() {
		o = pinView[uint64](s, p.lay.out, hi-lo)
	}
	return o, pinView[uint8](s, p.lay.found, hi-lo)
}

// pack copies chunk c of a slice call into its slot on the workers: its
// key bytes and offsets (gpu.Strings.PackChunkAnd, the offsets counted
// from the batch's first key byte) and, in the same fan-out, each part's
// values. A packed batch's chunk is one fan-out whatever its units; from
// Go slices each unit is one (PackChunkAnd packs a unit of Sizes).
func (p *pointPlan) pack(c int) {
	lo, hi := p.bounds(c)
	s := p.slot(c)
	data, offs := s[:p.byteAt(c+1)-p.byteAt(c)], pinView[uint32](s, p.lay.offs, hi-lo+1)
	var vals, srcVals []uint64
	if p.pc.vals != nil {
		vals, srcVals = pinView[uint64](s, p.lay.vals, hi-lo), p.pc.vals[lo:hi]
	}
	// also copies the values of the chunk's keys [from+plo, from+phi).
	also := func(from int) func(plo, phi int) {
		if vals == nil {
			return nil
		}
		return func(plo, phi int) { ntcopy.Slice(vals[from+plo:from+phi], srcVals[from+plo:from+phi]) }
	}
	src := p.pc.src
	if src.Slices == nil {
		// The chunk as a batch of its own, starting at its device byte.
		one := gpu.Layout{Size: hi - lo, Starts: []int{p.byteAt(c), p.byteAt(c + 1)}}
		gpu.Strings{Data: src.Data, Offs: src.Offs[lo : hi+1]}.PackChunkAnd(one, 0, data, offs, also(0))
		return
	}
	for u := p.unitAt[c]; u < p.unitAt[c+1]; u++ {
		ulo, uhi := p.cut.Bounds(u, p.n)
		b := p.cut.Starts[u] - p.byteAt(c)
		eb := p.cut.Starts[u+1] - p.byteAt(c)
		src.PackChunkAnd(p.cut, u, data[b:eb], offs[ulo-lo:uhi-lo+1], also(ulo-lo))
	}
}

// unpack copies chunk c's answers of a slice call out of its slot on the
// workers (par.Shared: one fan-out).
func (p *pointPlan) unpack(c int) {
	lo, hi := p.bounds(c)
	o, f := p.outs(c)
	p.pc.answers()
	par.Shared().Ranges(hi-lo, par.Parts(hi-lo, hostMinPart, p.workers), func(_, plo, phi int) {
		if o != nil {
			copy(p.pc.out[lo+plo:lo+phi], o[plo:phi])
		}
		copy(p.pc.found[lo+plo:lo+phi], f[plo:phi])
	})
}

// point runs pc through the pipeline on the device buffers d. Cost: the
// transfers (keys, offsets, values in; answers out) at the pinned rate,
// overlapped with the kernels and, from Go slices, with one parallel copy
// into and out of pinned memory; about ten driver calls per chunk. The
// call's LastBatch says the host's time packing chunks into the slots
// (Upload) and copying answers out of them (Download) besides the
// kernels' (Work).
//
// When the engine is traced (g.trace) every chunk's steps are marked
// (pointMark): the host times of its packing, queueing, wait and
// unpacking, and the device times of its transfers and kernels.
func (g *gpuEngine) point(pc *pointCall, cut gpu.Layout, unitAt []int, d pointDev) error {
	n := pc.len()
	t0 := time.Now()
	if n == 0 {
		g.last.Set(engine.Timings{Op: pc.op, Total: time.Since(t0)})
		return nil
	}
	p := newPointPlan(pc, cut, unitAt, g.workers)
	if pc.staged {
		if err := p.checkBounds(); err != nil {
			return err
		}
	} else {
		var err error
		if p.pin, err = gpu.Host[byte](g.pool, "pt.pin", p.pinBytes()); err != nil {
			return err
		}
	}
	g.pointMark(g.s, "planned", -1)
	// kev: two events a chunk around its kernels (Work), then three a
	// chunk for runBeside.
	for len(g.kev) < 5*p.chunks {
		e, err := g.dev.NewEvent()
		if err != nil {
			return err
		}
		g.kev = append(g.kev, e)
	}
	beside := !pc.staged && p.chunks > 1 && !g.queueOnCaller
	var markMu sync.Mutex // runBeside marks steps on two goroutines
	mark := func(s *gpu.Stream, name string, c int) {
		if g.trace != nil {
			markMu.Lock()
			g.pointMark(s, name, c)
			markMu.Unlock()
		}
	}
	steps := gpu.Steps{
		In: func(s *gpu.Stream, c int) error {
			cp := p.in(c)
			if err := d.data.Write(s, cp.dataAt, cp.data); err != nil {
				return err
			}
			if err := d.offs.Write(s, cp.offsAt, cp.offs); err != nil {
				return err
			}
			if cp.vals != nil {
				if err := d.vals.Write(s, cp.valsAt, cp.vals); err != nil {
					return err
				}
			}
			mark(s, "in", c)
			return nil
		},
		Work: func(s *gpu.Stream, c int) error {
			lo, hi := p.bounds(c)
			if err := g.kev[2*c].Record(s); err != nil {
				return err
			}
			if err := pc.work(lo, hi-lo); err != nil {
				return err
			}
			if c == p.chunks-1 && pc.after != nil {
				if err := pc.after(); err != nil {
					return err
				}
			}
			mark(s, "kernels", c)
			return g.kev[2*c+1].Record(s)
		},
		Out: func(s *gpu.Stream, c int) error {
			lo, _ := p.bounds(c)
			o, f := p.outs(c)
			if o != nil {
				if err := d.out.Read(s, lo, o); err != nil {
					return err
				}
			}
			if err := d.found.Read(s, lo, f); err != nil {
				return err
			}
			mark(s, "out", c)
			return nil
		},
	}
	var packed, unpacked time.Duration // the host's copies into and out of the slots
	// hostStep is a chunk's host copy f, marked on s before (from) and
	// after (to), its time added to spent.
	hostStep := func(s *gpu.Stream, from, to string, f func(c int), spent *time.Duration) func(c int) error {
		return func(c int) error {
			mark(s, from, c)
			t := time.Now()
			f(c)
			*spent += time.Since(t)
			mark(s, to, c)
			return nil
		}
	}
	if pc.staged {
		steps.Check = pc.check
	} else {
		steps.Pack = hostStep(g.in, "pack", "packed", p.pack, &packed)
		steps.Done = hostStep(g.out, "waited", "unpacked", p.unpack, &unpacked)
	}
	if beside {
		if err := g.runBeside(p.chunks, pointLag, steps, g.kev[2*p.chunks:5*p.chunks]); err != nil {
			return err
		}
	} else if err := g.up.Run(g.s, g.in, g.out, p.chunks, pointLag, steps); err != nil {
		return err
	}
	g.pointMark(g.s, "end", -1)
	var work time.Duration
	for c := range p.chunks {
		if w, err := gpu.Elapsed(g.kev[2*c], g.kev[2*c+1]); err == nil && w > 0 {
			work += w
		}
	}
	g.last.Set(engine.Timings{Op: pc.op, Items: n, Upload: packed, Work: work, Download: unpacked, Total: time.Since(t0)})
	return nil
}
