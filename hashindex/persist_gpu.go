package hashindex

import (
	_ "embed"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// A PersistentSearch searches small batches on the GPU engine without a
// kernel launch, a copy or a driver call per batch: a resident kernel
// (hix_persist in persist.cu) polls a doorbell in mapped host memory and
// reads the hashes from, and writes the locations to, mapped slots that
// the caller fills in place. Batches above MaxResident jobs are searched by
// hix_search launched as usual, also straight from the slot (no copies).
// The resident kernel exits after IdleExit without a batch (so that a
// device-wide synchronization elsewhere, a cuMemFree for instance, waits at
// most that long) and is launched again by the next batch.
//
// Its searches see every insert and delete of earlier Index calls: they
// are serialized with them by the Index's lock, the update kernels have
// completed when those calls return, and the resident kernel loads table
// words from L2, where they are. Results equal Search's.
type PersistentSearch struct {
	ix    *Index
	e     *gpuEngine
	slots int
	cap   int

	ctl    *gpu.MappedBuffer[uint64]
	hashes *gpu.MappedBuffer[uint64] // slots*cap
	out    *gpu.MappedBuffer[uint32] // slots*cap
	stream *gpu.Stream               // the resident kernel's
	launch *gpu.Stream               // large batches'
	exited *gpu.Event                // recorded after the resident kernel: done once it has exited
	fns    *persistKernels

	mu      sync.Mutex // guards the fields below; held by Search with the index's lock
	running bool       // a resident kernel was launched and may not have exited
	seq     uint64     // batches rung so far
	bell    uint64     // the doorbell word of the last batch rung (0: none)
	refs    int
	closed  bool
	broken  error // the resident kernel failed: every batch is launched
	stats   PersistentStats
}

// PersistentStats counts what a PersistentSearch did.
type PersistentStats struct {
	Resident  uint64 // batches the resident kernel served
	Launched  uint64 // batches above MaxResident, launched
	Launches  uint64 // launches of the resident kernel (the first, and after each exit)
	Relaunchs uint64 // launches for a batch whose doorbell met an exiting kernel
	// Broken is why the resident kernel is no longer used, if it failed.
	Broken string `json:",omitempty"`
}

// Tuning of the resident search.
const (
	// MaxResident is the largest batch the resident kernel serves; larger
	// ones are launched over the whole device.
	MaxResident = 4096
	// IdleExit is how long the resident kernel waits for a batch before it
	// exits.
	IdleExit = 2 * time.Millisecond
	// persistThreads is the resident kernel's block (PS_THREADS).
	persistThreads = 512
	// persistSpin is how long a search waits for the resident kernel's
	// answer (a few microseconds) spinning on its processor before it
	// also asks the driver whether the kernel is still running and yields
	// the processor between looks: a driver call each time costs about
	// as much as the answer, and a yield gives the processor to another
	// goroutine, which a search answered meanwhile waits for.
	persistSpin = 50 * time.Microsecond
	// persistHang bounds the wait for one batch: past it the search fails.
	persistHang = 5 * time.Second
)

// Control words in the mapped control block (CTL_*).
const (
	ctlSeq   = 0 // the host's doorbell word of the batch to serve (doorbell)
	ctlDone  = 2 // the doorbell word of the last batch served
	ctlQuit  = 3 // nonzero: exit
	ctlHits  = 4 // hits of the last batch
	ctlExits = 6 // resident kernels that have exited
	ctlWords = 8 // words of the block (a cache line)
)

// The doorbell word carries a whole batch, so that the resident kernel
// reads one word over the bus to learn of it: the batch's number above
// the slot (bellSlotBits) above its jobs (bellJobBits).
const (
	bellJobBits  = 13 // jobs of the batch: at most MaxResident
	bellSlotBits = 16 // the slot: at most 65536 slots
)

// A batch's jobs and slot fit their fields (a negative constant fails to
// compile).
const (
	_ = uint(1<<bellJobBits - 1 - MaxResident)
	_ = uint(1<<bellSlotBits - 65536)
)

// doorbell returns the doorbell word of batch seq: n jobs in slot i.
func doorbell(seq uint64, i, n int) uint64 {
	return seq<<(bellSlotBits+bellJobBits) | uint64(i)<<bellJobBits | uint64(n)
}

const persistFile = "persist.cu"

//go:embed persist.cu
var persistSource string

// persistProgram returns the program of persist.cu: it includes
// hashindex.cu (as hashindex_kernels.cuh) and gets its constants from Go.
func persistProgram() gpu.Program {
	p := gpu.NewProgram(persistFile, persistSource, append(indexDefines(),
		gpu.Def("PS_THREADS", persistThreads),
		gpu.Def("CTL_SEQ", ctlSeq), gpu.Def("CTL_DONE", ctlDone),
		gpu.Def("CTL_QUIT", ctlQuit), gpu.Def("CTL_HITS", ctlHits), gpu.Def("CTL_EXITS", ctlExits),
		gpu.Def("BELL_JOB_BITS", bellJobBits), gpu.Def("BELL_SLOT_BITS", bellSlotBits))...)
	p.Headers["hashindex_kernels.cuh"] = indexSource
	return p
}

// persistKernels are persist.cu's kernels on one device.
type persistKernels struct {
	resident, search *gpu.Function
}

// ErrNeedsGPU is returned by NewPersistentSearch on the CPU engine, whose
// searches have no per-call device cost to save.
var ErrNeedsGPU = errors.New("hashindex: persistent search needs the GPU engine")

// NewPersistentSearch returns a persistent search with slots slots of
// capacity jobs each. The caller must Close it before closing the index.
// Cost: three mapped pinned allocations (12 bytes a job), two streams, the
// compilation of persist.cu on first use.
func (ix *Index) NewPersistentSearch(slots, capacity int) (*PersistentSearch, error) {
	if slots < 1 || slots > 1<<16 || capacity < 1 || capacity > 1<<26 {
		return nil, fmt.Errorf("hashindex: new persistent search: %d slots of %d jobs, want 1 to 65536 of 1 to 2^26", slots, capacity)
	}
	engine.LockAny(&ix.Facade)
	defer engine.Unlock(&ix.Facade)
	if !engine.Live(&ix.Facade) {
		return nil, engine.Closed(&ix.Facade, "new persistent search")
	}
	if ix.gpu == nil {
		return nil, ErrNeedsGPU
	}
	e := ix.gpu
	if _, err := e.kernels(); err != nil { // loaded now, not while the resident kernel runs
		return nil, fmt.Errorf("hashindex: new persistent search: %w", err)
	}
	m, err := e.dev.Load(persistProgram())
	if err != nil {
		return nil, fmt.Errorf("hashindex: new persistent search: %w", err)
	}
	fs, err := m.Functions("hix_persist", "hix_search")
	if err != nil {
		return nil, fmt.Errorf("hashindex: new persistent search: %w", err)
	}
	p := &PersistentSearch{ix: ix, e: e, slots: slots, cap: capacity, refs: slots,
		fns: &persistKernels{resident: fs[0], search: fs[1]}}
	if err := p.alloc(); err != nil {
		p.free()
		return nil, fmt.Errorf("hashindex: new persistent search of %d x %d jobs: %w", slots, capacity, err)
	}
	return p, nil
}

// alloc allocates the mapped memory, the streams and the event.
func (p *PersistentSearch) alloc() (err error) {
	d := p.e.dev
	if p.ctl, err = gpu.AllocMapped[uint64](d, ctlWords); err != nil {
		return err
	}
	if p.hashes, err = gpu.AllocMapped[uint64](d, p.slots*p.cap); err != nil {
		return err
	}
	if p.out, err = gpu.AllocMapped[uint32](d, p.slots*p.cap); err != nil {
		return err
	}
	if p.stream, err = d.NewStream(); err != nil {
		return err
	}
	if p.launch, err = d.NewStream(); err != nil {
		return err
	}
	p.exited, err = d.NewEvent()
	return err
}

// free releases what alloc allocated (nil-safe).
func (p *PersistentSearch) free() error {
	return errors.Join(p.exited.Close(), p.stream.Close(), p.launch.Close(), p.out.Free(), p.hashes.Free(), p.ctl.Free())
}

// Slots returns the number of slots; Cap the jobs of each.
func (p *PersistentSearch) Slots() int { return p.slots }

// Cap returns the most jobs of one slot's batch.
func (p *PersistentSearch) Cap() int { return p.cap }

// Hashes returns slot i's hashes, which the caller writes in place: job j
// of a search of n jobs is Hashes(i)[j], j < n.
func (p *PersistentSearch) Hashes(i int) []uint64 {
	return p.hashes.Slice()[i*p.cap : (i+1)*p.cap]
}

// Out returns slot i's outputs: after Search(i, n), Out(i)[j] is the
// location of Hashes(i)[j] or NotFound, j < n.
func (p *PersistentSearch) Out(i int) []uint32 { return p.out.Slice()[i*p.cap : (i+1)*p.cap] }

// Stats returns the counters so far.
func (p *PersistentSearch) Stats() PersistentStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Search searches the first n hashes of slot i into its outputs, and counts
// them in the index's Stats as SearchStaged does. The caller must not touch
// the slot during the call; calls on different slots are serialized.
// Cost: up to MaxResident jobs, a doorbell and a wait (the resident
// kernel's reads over the bus and its table reads, a few microseconds for
// a few hundred jobs), plus a kernel launch when the resident kernel had
// exited; above, a kernel launch and a stream synchronization.
func (p *PersistentSearch) Search(i, n int) error { return p.search(i, n, false) }

// search is Search; with empty it also rings the resident kernel for a
// batch of no jobs (the round-trip floor that BenchmarkPersistentRoundTrip
// measures), which Search returns from at once.
func (p *PersistentSearch) search(i, n int, empty bool) error {
	ix := p.ix
	engine.LockAny(&ix.Facade)
	defer engine.Unlock(&ix.Facade)
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !engine.Live(&ix.Facade):
		return engine.Closed(&ix.Facade, "persistent search")
	case p.closed:
		return fmt.Errorf("hashindex: persistent search: closed")
	case i < 0 || i >= p.slots || n < 0 || n > p.cap:
		return fmt.Errorf("hashindex: persistent search: %d jobs in slot %d of %d x %d", n, i, p.slots, p.cap)
	case n == 0 && !empty:
		return nil
	}
	var hits int
	var err error
	if n <= MaxResident && p.broken == nil {
		if hits, err = p.resident(i, n); err != nil {
			// Searches go on without the resident kernel.
			p.broken = err
			p.stats.Broken = err.Error()
		}
	}
	if n > MaxResident || p.broken != nil {
		hits, err = p.launched(i, n)
	}
	if err != nil {
		return fmt.Errorf("hashindex: persistent search of %d jobs: %w", n, err)
	}
	ix.stats.Searches += uint64(n)
	ix.stats.Hits += uint64(hits)
	return nil
}

// resident rings the resident kernel for slot i's n jobs and waits for it,
// launching it first if it is not running. The kernel counts its exits in
// the control block; when an exit races the doorbell, the wait notices the
// kernel gone (its event) and launches it again for the batch.
func (p *PersistentSearch) resident(i, n int) (int, error) {
	ctl := p.ctl.Slice()
	if !p.running || atomic.LoadUint64(&ctl[ctlExits]) == p.stats.Launches {
		// Never launched, or every kernel launched has exited (idle).
		if err := p.start(p.bell); err != nil {
			return 0, err
		}
	}
	last := p.bell
	p.seq++
	p.bell = doorbell(p.seq, i, n)
	atomic.StoreUint64(&ctl[ctlSeq], p.bell)
	began := time.Now()
	for spins := 1; atomic.LoadUint64(&ctl[ctlDone]) != p.bell; spins++ {
		if spins%128 != 0 || time.Since(began) < persistSpin {
			continue
		}
		// Past persistSpin, every so often: has the kernel exited (its
		// idle exit raced this doorbell, or it failed)?
		gone, err := p.exited.Done()
		if err != nil {
			p.running = false
			return 0, fmt.Errorf("resident kernel: %w", err)
		}
		if gone && atomic.LoadUint64(&ctl[ctlDone]) != p.bell {
			p.stats.Relaunchs++
			if err := p.start(last); err != nil {
				return 0, err
			}
		}
		if time.Since(began) > persistHang {
			return 0, fmt.Errorf("resident kernel did not answer batch %d in %v", p.seq, persistHang)
		}
		runtime.Gosched()
	}
	p.stats.Resident++
	return int(atomic.LoadUint64(&ctl[ctlHits])), nil
}

// start launches the resident kernel, which serves the batches rung
// after the doorbell word last.
func (p *PersistentSearch) start(last uint64) error {
	e := p.e
	err := p.fns.resident.Launch(p.stream, gpu.D1(1), gpu.D1(persistThreads), 0,
		e.table, e.geo.mask, e.geo.pmask, p.ctl, p.hashes, p.out, uint64(p.cap), last, uint64(IdleExit))
	if err == nil {
		err = p.exited.Record(p.stream)
	}
	if err != nil {
		return fmt.Errorf("launching the resident kernel: %w", err)
	}
	p.running = true
	p.stats.Launches++
	return nil
}

// launched searches slot i's n jobs with hix_search over the whole device,
// reading the hashes from and writing the locations to the mapped slot.
func (p *PersistentSearch) launched(i, n int) (int, error) {
	e := p.e
	err := p.fns.search.Launch(p.launch, searchGrid(n), gpu.D1(searchBlock), 0,
		e.table, e.geo.mask, e.geo.pmask, p.hashes.PtrAt(i*p.cap), uint64(n), p.out.PtrAt(i*p.cap))
	if err == nil {
		err = p.launch.Synchronize()
	}
	if err != nil {
		return 0, err
	}
	p.stats.Launched++
	hits := 0
	for _, l := range p.Out(i)[:n] {
		if l != NotFound {
			hits++
		}
	}
	return hits, nil
}

// Close stops the resident kernel (it exits at its next poll) and frees
// the memory. Close before closing the index. Closing twice is a no-op.
func (p *PersistentSearch) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	if p.running {
		atomic.StoreUint64(&p.ctl.Slice()[ctlQuit], 1)
		errs = append(errs, p.exited.Synchronize())
		p.running = false
	}
	errs = append(errs, p.free())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("hashindex: close persistent search: %w", err)
	}
	return nil
}

// Slot returns slot i as a searchable buffer (for callers that keep one
// buffer per batch in flight): Hashes, Out, Cap, Search(n) and Free, which
// closes the PersistentSearch once every slot is freed.
func (p *PersistentSearch) Slot(i int) *PersistentSlot { return &PersistentSlot{p: p, i: i} }

// PersistentSlot is one slot of a PersistentSearch.
type PersistentSlot struct {
	p     *PersistentSearch
	i     int
	freed bool
}

// Hashes returns the slot's hashes (PersistentSearch.Hashes).
func (s *PersistentSlot) Hashes() []uint64 { return s.p.Hashes(s.i) }

// Out returns the slot's outputs (PersistentSearch.Out).
func (s *PersistentSlot) Out() []uint32 { return s.p.Out(s.i) }

// Cap returns the slot's capacity.
func (s *PersistentSlot) Cap() int { return s.p.cap }

// Search searches the slot's first n hashes (PersistentSearch.Search).
func (s *PersistentSlot) Search(n int) error { return s.p.Search(s.i, n) }

// Free gives the slot back; the last slot freed closes the search.
func (s *PersistentSlot) Free() error {
	p := s.p
	p.mu.Lock()
	if s.freed {
		p.mu.Unlock()
		return nil
	}
	s.freed = true
	p.refs--
	last := p.refs == 0
	p.mu.Unlock()
	if last {
		return p.Close()
	}
	return nil
}
