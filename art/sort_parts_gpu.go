package art

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
)

// A structural batch's keys uploaded in parts. Packing the keys from Go
// memory into the pinned ring is the host's longest step of an insert
// (about 10 ms for 10M 16-byte keys on the H200 host): with the keys
// uploaded whole, the device idles through it. Uploaded in two parts on
// the transfer stream g.in, the sort's round 0 chunks and sorts part 0
// on g.s (as_chunk over its places, a radix sort of its pairs) while the
// host packs part 1; part 1 is sorted when it lands and DevMerge merges
// the two sorted runs, stably, into what one sort of the whole batch
// gives. A batch in parts whose keys all have one length uploads no
// offsets: the host checks them (oneLength, a read) and as_offsets writes
// them on the device. The values are uploaded beside the work after the
// sort (on another goroutine, through a ring of their own) and waited for
// before the first kernel that reads them (waitVals).

// Knobs of the batch upload, and their defaults.
const (
	// keyPartsMin is the fewest keys a batch uploads in parts; smaller
	// batches go whole (their upload is short, and a sort of half of
	// them costs near a sort of all).
	keyPartsMin = 1 << 20
	// partGrain is the bytes one worker copies at a time into the ring
	// (branch bins4 measured 128 KiB pieces ahead of 512 KiB ones for
	// the B+ tree's keys on the H200 host).
	partGrain = 128 << 10
)

// batchUpload is the GPU engine's knobs and state for uploading
// structural batches (build, insert, delete). The zero value is the
// default: keys in parts from keyPartsMin keys, values beside the work.
type batchUpload struct {
	// partsMin, when not 0, replaces keyPartsMin (tests).
	partsMin int

	evs  [2]*gpu.Event // the key parts' arrivals on g.in
	vals *valsUpload   // the values' upload in flight (startVals)
	// up is the values' own ring (made on first use), so that their
	// goroutine shares no pipeline with the calling one, and copies on
	// all cores but two: the calling goroutine, which queues the work
	// and reads its totals back meanwhile, finds a thread free.
	up *gpu.Pipeline
}

// valsUpload is a values upload running on another goroutine: done is
// closed when it has queued every chunk (err set before).
type valsUpload struct {
	done chan struct{}
	err  error
}

// keyParts returns the parts a batch of n keys is uploaded in: bounds
// p and p+1 are part p's keys. One part (the whole batch) below the
// threshold. Cost: O(1).
func (bu *batchUpload) keyParts(n int) []int {
	least := keyPartsMin
	if bu.partsMin > 0 {
		least = bu.partsMin
	}
	if n < least || n < 2 {
		return []int{0, n}
	}
	return []int{0, n / 2, n}
}

// close frees the events and the values' ring. Cost: up to two
// cuEventDestroy and the ring's frees.
func (bu *batchUpload) close() error {
	var err error
	if bu.up != nil {
		err = bu.up.Close()
		bu.up = nil
	}
	for i, e := range bu.evs {
		if e != nil {
			err = errors.Join(err, e.Close())
			bu.evs[i] = nil
		}
	}
	return err
}

// oneLength returns the length of every key of offs when all have one
// and the first starts at 0 (a batch in parts then uploads no offsets:
// as_offsets writes them), or false. Cost: one read of the offsets on all
// cores (a quarter of the bytes that copying them would move through host
// memory: a read and a write into the ring, and the DMA's read).
func oneLength(offs []uint32) (uint32, bool) {
	n := len(offs) - 1
	if n < 1 || offs[0] != 0 {
		return 0, false
	}
	l := offs[1]
	var bad atomic.Bool
	par.Ranges(n+1, par.Parts(n+1, checkMinPart, 0), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			if offs[i] != uint32(i)*l {
				bad.Store(true)
				return
			}
		}
	})
	return l, !bad.Load()
}

// lengthHint is what the facade's check of a batch learned of its keys'
// lengths (Tree.hint), kept by the GPU engine for the batch call under
// way: the batch's offsets by their first element's address and their
// count, and the one length of all its keys (one). A call whose batch is
// another one (a chunk of a long batch, a rebuild's keys) finds no hint
// and reads the offsets itself (oneLength).
type lengthHint struct {
	offs *uint32
	n    int
	one  bool
	l    uint32
	// later: the facade left the check of the batch to the engine
	// (checkLater); one and l are then what the batch's ends say.
	later bool
}

// newLengthHint is the hint of kb's scan sc. Cost: O(1).
func newLengthHint(kb Keys, sc offsetsScan) lengthHint {
	if len(kb.Offs) == 0 || !sc.ok {
		return lengthHint{}
	}
	return lengthHint{offs: &kb.Offs[0], n: len(kb.Offs), one: sc.one, l: sc.l}
}

// keysLength is oneLength of kb, taken from the facade's hint when it
// describes kb (the check read the offsets once already). Cost: O(1) with
// the hint, else oneLength.
func (g *gpuEngine) keysLength(kb Keys) (uint32, bool) {
	if h := g.hint; h.offs != nil && len(kb.Offs) == h.n && &kb.Offs[0] == h.offs {
		return h.l, h.one
	}
	return oneLength(kb.Offs)
}

// reserveBatch reserves and takes a batch of kb's keys (and values when
// withVals) without uploading anything. Cost: the reservation.
func (g *gpuEngine) reserveBatch(prefix string, kb Keys, withVals bool) (*devBatch, error) {
	if err := g.pool.Reserve(batchNeeds(prefix, kb, withVals)...); err != nil {
		return nil, err
	}
	return g.takeBatch(prefix, kb.Len(), len(kb.Data), withVals), nil
}

// uploadPart queues part p of kb (keys bounds[p] to bounds[p+1]) into b on
// the transfer stream g.in, through the ring in partGrain pieces, and makes
// g.s wait for it: the part's bytes (from the part's first key's start to
// the next part's; the first part from byte 0, the last to the end of
// Data) and, withOffs, its offsets (from its first key's end on, the first
// part from offset 0). Cost: one parallel copy of the part into pinned
// chunks, its DMAs, one event.
func (g *gpuEngine) uploadPart(b *devBatch, kb Keys, bounds []int, p int, withOffs bool) error {
	lo, hi := bounds[p], bounds[p+1]
	offs := kb.Offs
	if len(offs) == 0 {
		offs = []uint32{0}
	}
	oa, da, db := lo+1, int(offs[lo]), len(kb.Data)
	if p == 0 {
		oa, da = 0, 0
	}
	if p+2 < len(bounds) {
		db = int(offs[hi])
	}
	bu := &g.bu
	if bu.evs[p] == nil {
		e, err := g.dev.NewEvent()
		if err != nil {
			return err
		}
		bu.evs[p] = e
	}
	err := gpu.UploadStagedGrain(g.up, g.in, b.data, da, kb.Data[da:db], partGrain)
	if err == nil && withOffs {
		err = gpu.UploadStagedGrain(g.up, g.in, b.offs, oa, offs[oa:hi+1], partGrain/4)
	}
	if err != nil {
		return errors.Join(err, g.in.Synchronize())
	}
	return errors.Join(bu.evs[p].Record(g.in), g.s.Wait(bu.evs[p]))
}

// startVals starts the upload of vals into b.vals on another goroutine:
// the packing into the values' ring bu.up and the DMAs on g.in, then
// valsEv recorded there. Nothing else may queue on g.in until waitVals or
// dropVals. Cost: O(1) here (and the ring's pinning, once); the upload
// runs beside the caller.
func (g *gpuEngine) startVals(b *devBatch, vals []uint64) error {
	if len(vals) == 0 {
		return nil
	}
	if g.valsEv == nil {
		e, err := g.dev.NewEvent()
		if err != nil {
			return err
		}
		g.valsEv = e
	}
	if g.bu.up == nil {
		g.bu.up = gpu.NewPipeline(g.dev, gpu.PipelineConfig{ChunkBytes: transferChunk, Chunks: transferChunks,
			Direct: transferDirect, Workers: max(1, runtime.GOMAXPROCS(0)-2)})
	}
	v, up := &valsUpload{done: make(chan struct{})}, g.bu.up
	g.bu.vals = v
	go func() {
		defer close(v.done)
		if err := gpu.UploadStagedGrain(up, g.in, b.vals, 0, vals, partGrain/8); err != nil {
			v.err = errors.Join(err, g.in.Synchronize())
			return
		}
		v.err = g.valsEv.Record(g.in)
	}()
	return nil
}

// waitVals makes g.s wait for the values started by startVals before
// the work queued after it (the first kernel that reads them); nothing
// when none are in flight. Cost: the wait for the goroutine (it has
// usually packed them by then), one stream wait.
func (g *gpuEngine) waitVals() error {
	v := g.joinVals()
	if v == nil {
		return nil
	}
	if v.err != nil {
		return fmt.Errorf("upload values: %w", v.err)
	}
	if err := g.s.Wait(g.valsEv); err != nil {
		return err
	}
	g.step("values waited")
	return nil
}

// dropVals ends a values upload that no kernel waited for (a batch that
// failed, or had no work reading them): the goroutine joined and g.in
// synchronized, so that the ring and b.vals are free again. Cost: the
// wait.
func (g *gpuEngine) dropVals() error {
	v := g.joinVals()
	if v == nil {
		return nil
	}
	return errors.Join(v.err, g.in.Synchronize())
}

// joinVals waits for the values upload in flight, if any, and clears it;
// nil when there is none.
func (g *gpuEngine) joinVals() *valsUpload {
	v := g.bu.vals
	if v == nil {
		return nil
	}
	<-v.done
	g.bu.vals = nil
	return v
}
