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
// (hix_persist in persist.cu), one block per slot, polls each slot's
// doorbell in mapped host memory and reads the hashes from, and writes the
// locations to, mapped slots that the caller fills in place. Batches of
// different slots are served at the same time, each by its own block, and
// their callers wait for their own slot's answer only. Batches above
// MaxResident jobs are searched by hix_search launched as usual, also
// straight from the slot (no copies). The resident kernel exits after
// IdleExit without a batch in any slot (so that a device-wide
// synchronization elsewhere, a cuMemFree for instance, waits at most that
// long) and is launched again by the next batch.
//
// Its searches see every insert and delete of earlier Index calls: they
// hold the Index's read lock, which inserts and deletes take exclusively,
// the update kernels have completed when those calls return, and the
// resident kernel loads table words from L2, where they are. Results
// equal Search's.
type PersistentSearch struct {
	ix    *Index
	e     *gpuEngine
	slots int
	cap   int

	ctl    *gpu.MappedBuffer[uint64] // line 0, then two lines a slot (ctlSlot)
	hashes *gpu.MappedBuffer[uint64] // slots*cap
	out    *gpu.MappedBuffer[uint32] // slots*cap
	// tagged holds the resident kernel's answers, a line of min(cap,
	// MaxResident) words a slot: job j's location in the low 32 bits, the
	// batch's number (its low 32 bits) above, so that the caller knows
	// each answer arrived without a fence on the device.
	tagged *gpu.MappedBuffer[uint64]
	tcap   int                       // words of a slot's tagged answers
	dev    *gpu.Buffer[uint64]       // devWords words the blocks share
	trace  *gpu.MappedBuffer[uint64] // a line a slot (TR_*), or nil
	stream *gpu.Stream               // the resident kernel's
	launch *gpu.Stream               // large batches', Close's write of the exit word
	exited *gpu.Event                // recorded after the last resident launch: done once it has exited
	fns    *persistKernels
	seqs   []paddedSeq // batches rung per slot, by the slot's caller

	// gen is the number of resident launches so far, the last launch's
	// gen argument; written under mu.
	gen atomic.Uint64
	// closed is set by Close, which holds the index's write lock (so it
	// waits for the searches in progress), and read by searches, which
	// hold its read lock: the one lock a search takes excludes both
	// updates and Close.
	closed   bool
	mu       sync.Mutex             // launches of the resident kernel (start), exited, refs
	refs     int                    // slots not freed (Slot, PersistentSlot.Free)
	launchMu sync.Mutex             // the launched searches' stream
	broken   atomic.Pointer[string] // the resident kernel failed: every batch is launched

	resident, launched, relaunches atomic.Uint64
}

// ErrSearchClosed is matched (errors.Is) by the error of a
// PersistentSearch's Search after its Close. It also matches
// engine.ErrClosed, which every call after the Index's own Close matches,
// so that one check covers use after either Close.
var ErrSearchClosed error = searchClosed{}

// searchClosed is ErrSearchClosed's type: an error that is also
// engine.ErrClosed.
type searchClosed struct{}

func (searchClosed) Error() string { return "search closed" }

// Is reports whether target is engine.ErrClosed.
func (searchClosed) Is(target error) bool { return target == engine.ErrClosed }

// paddedSeq is a slot's batch counter, alone in its cache line.
type paddedSeq struct {
	n uint64
	_ [7]uint64
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
	// MaxResidentSlots is the most slots of a PersistentSearch: each
	// holds a multiprocessor while the resident kernel runs.
	MaxResidentSlots = 16
	// IdleExit is how long the resident kernel waits for a batch before it
	// exits.
	IdleExit = 2 * time.Millisecond
	// persistThreads is the searching threads of a resident block
	// (PS_THREADS); a polling warp follows them.
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

// Layout of the mapped control block, in words (CTL_*): line 0 holds
// ctlExits; slot i's doorbell is word ctlBells+i*ctlSlot, which the host
// writes, and its answer (the doorbell word of the last batch served)
// ctlDones+i*ctlSlot, which the device writes: separate lines, so that
// neither side's writes disturb the line the other polls.
const (
	ctlLine  = 8 // words of a line
	ctlExits = 1 // resident launches that have exited
	ctlBells = ctlLine
	ctlDones = 2 * ctlLine
	ctlSlot  = 2 * ctlLine
)

// ctlWords returns the words of the control block of slots slots.
func ctlWords(slots int) int { return ctlLine + slots*ctlSlot }

// Device words the resident blocks share (DEV_*), each in its own line:
// the launch number that must exit, the global timer of the latest answer,
// the blocks that have exited.
const (
	devExit   = 0
	devActive = 8
	devExited = 16
	devWords  = 24
)

// Trace words of a slot's line (TR_*), with a tracing search only
// (BenchmarkPersistentRoundTrip): batches served, nanoseconds from seeing
// the doorbell to the answer's store and of the store, the doorbell loads
// of the block's poller and their nanoseconds.
const (
	trBatches  = 0
	trServeNs  = 1
	trAnswerNs = 2
	trLoads    = 3
	trLoadNs   = 4
)

// The doorbell word carries a whole batch, so that the resident kernel
// reads one word over the bus to learn of it: the batch's number above
// its jobs (bellJobBits). The slot is the doorbell's (the block's).
const bellJobBits = 13 // jobs of the batch: at most MaxResident

// A batch's jobs fit their field (a negative constant fails to compile).
const _ = uint(1<<bellJobBits - 1 - MaxResident)

// doorbell returns the doorbell word of batch seq of n jobs.
func doorbell(seq uint64, n int) uint64 { return seq<<bellJobBits | uint64(n) }

const persistFile = "persist.cu"

//go:embed persist.cu
var persistSource string

// persistProgram returns the program of persist.cu: it includes
// hashindex.cu (as hashindex_kernels.cuh) and gets its constants from Go.
func persistProgram() gpu.Program {
	p := gpu.NewProgram(persistFile, persistSource, append(indexDefines(),
		gpu.Def("PS_THREADS", persistThreads), gpu.Def("MAX_RESIDENT", MaxResident),
		gpu.Def("CTL_LINE", ctlLine), gpu.Def("CTL_EXITS", ctlExits), gpu.Def("CTL_BELLS", ctlBells),
		gpu.Def("CTL_DONES", ctlDones), gpu.Def("CTL_SLOT", ctlSlot),
		gpu.Def("DEV_EXIT", devExit), gpu.Def("DEV_ACTIVE", devActive), gpu.Def("DEV_EXITED", devExited),
		gpu.Def("TR_BATCHES", trBatches), gpu.Def("TR_SERVE_NS", trServeNs), gpu.Def("TR_ANSWER_NS", trAnswerNs),
		gpu.Def("TR_LOADS", trLoads), gpu.Def("TR_LOAD_NS", trLoadNs),
		gpu.Def("BELL_JOB_BITS", bellJobBits))...)
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

// NewPersistentSearch returns a persistent search with slots slots (at
// most MaxResidentSlots) of capacity jobs each. The caller must Close it
// before closing the index. Cost: four mapped pinned allocations (20
// bytes a job, the tagged answers' 8 up to MaxResident jobs), a small
// device allocation, two streams, the compilation
// of persist.cu on first use; while the resident kernel runs, a
// multiprocessor per slot.
func (ix *Index) NewPersistentSearch(slots, capacity int) (*PersistentSearch, error) {
	return ix.newPersistentSearch(slots, capacity, false)
}

// newPersistentSearch is NewPersistentSearch, with the kernel's trace
// when trace is set.
func (ix *Index) newPersistentSearch(slots, capacity int, trace bool) (*PersistentSearch, error) {
	if slots < 1 || slots > MaxResidentSlots || capacity < 1 || capacity > 1<<26 {
		return nil, fmt.Errorf("hashindex: new persistent search: %d slots of %d jobs; want 1 to %d of 1 to 2^26",
			slots, capacity, MaxResidentSlots)
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
		seqs: make([]paddedSeq, slots), fns: &persistKernels{resident: fs[0], search: fs[1]}}
	if err := p.alloc(trace); err != nil {
		p.free()
		return nil, fmt.Errorf("hashindex: new persistent search of %d x %d jobs: %w", slots, capacity, err)
	}
	return p, nil
}

// alloc allocates the mapped memory, the device words (zeroed), the
// streams and the event.
func (p *PersistentSearch) alloc(trace bool) (err error) {
	d := p.e.dev
	if p.ctl, err = gpu.AllocMapped[uint64](d, ctlWords(p.slots)); err != nil {
		return err
	}
	if p.hashes, err = gpu.AllocMapped[uint64](d, p.slots*p.cap); err != nil {
		return err
	}
	if p.out, err = gpu.AllocMapped[uint32](d, p.slots*p.cap); err != nil {
		return err
	}
	p.tcap = min(p.cap, MaxResident)
	if p.tagged, err = gpu.AllocMapped[uint64](d, p.slots*p.tcap); err != nil {
		return err
	}
	if trace {
		if p.trace, err = gpu.AllocMapped[uint64](d, p.slots*ctlLine); err != nil {
			return err
		}
	}
	if p.stream, err = d.NewStream(); err != nil {
		return err
	}
	if p.launch, err = d.NewStream(); err != nil {
		return err
	}
	if p.dev, err = gpu.Alloc[uint64](d, devWords); err != nil {
		return err
	}
	if err = p.dev.FillBytes(p.launch, 0); err != nil {
		return err
	}
	if err = p.launch.Synchronize(); err != nil {
		return err
	}
	p.exited, err = d.NewEvent()
	return err
}

// free releases what alloc allocated (nil-safe).
func (p *PersistentSearch) free() error {
	return errors.Join(p.exited.Close(), p.stream.Close(), p.launch.Close(), p.dev.Free(), p.trace.Free(), p.tagged.Free(), p.out.Free(), p.hashes.Free(), p.ctl.Free())
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
	st := PersistentStats{Resident: p.resident.Load(), Launched: p.launched.Load(),
		Launches: p.gen.Load(), Relaunchs: p.relaunches.Load()}
	if b := p.broken.Load(); b != nil {
		st.Broken = *b
	}
	return st
}

// Search searches the first n hashes of slot i into its outputs, and counts
// them in the index's Stats as SearchStaged does. The caller must not touch
// the slot during the call, and one slot takes one call at a time; calls
// on different slots run at the same time, with each other and with the
// index's other searches (they hold its read lock), not with its updates.
// After the search's Close it fails with ErrSearchClosed, after the
// index's with engine.ErrClosed. Cost: up to MaxResident jobs, a doorbell and a wait (the resident
// kernel's read of the doorbell and the hashes over the bus, its table
// reads, its answer: a few microseconds for a few hundred jobs), plus a
// kernel launch when the resident kernel had exited; above, a kernel
// launch and a stream synchronization, one such call at a time.
func (p *PersistentSearch) Search(i, n int) error { return p.search(i, n, false) }

// search is Search; with empty it also rings the resident kernel for a
// batch of no jobs (the round-trip floor that BenchmarkPersistentRoundTrip
// measures), which Search returns from at once.
func (p *PersistentSearch) search(i, n int, empty bool) error {
	ix := p.ix
	if _, err := engine.RLock(&ix.Facade, "persistent search"); err != nil {
		return err
	}
	defer engine.RUnlock(&ix.Facade)
	switch {
	case p.closed:
		return fmt.Errorf("hashindex: persistent search: %w", ErrSearchClosed)
	case i < 0 || i >= p.slots || n < 0 || n > p.cap:
		return fmt.Errorf("hashindex: persistent search: %d jobs in slot %d of %d x %d", n, i, p.slots, p.cap)
	case n == 0 && !empty:
		return nil
	}
	var hits int
	var err error
	if n <= MaxResident && p.broken.Load() == nil {
		if hits, err = p.residentSearch(i, n); err != nil {
			// Searches go on without the resident kernel.
			why := err.Error()
			p.broken.CompareAndSwap(nil, &why)
		}
	}
	if n > MaxResident || p.broken.Load() != nil {
		hits, err = p.launchedSearch(i, n)
	}
	if err != nil {
		return fmt.Errorf("hashindex: persistent search of %d jobs: %w", n, err)
	}
	ix.persistSearches.Add(uint64(n))
	ix.readHits.Add(uint64(hits))
	return nil
}

// residentSearch rings slot i's doorbell for its n jobs and waits for the
// slot's answer, launching the resident kernel first if every launch has
// exited. The kernel counts its exits in the control block; when an exit
// races the doorbell, the wait notices the kernel gone (its event) and
// launches it again, which serves the batch.
func (p *PersistentSearch) residentSearch(i, n int) (int, error) {
	ctl := p.ctl.Slice()
	if atomic.LoadUint64(&ctl[ctlExits]) == p.gen.Load() {
		// Never launched, or every launch has exited (idle).
		p.mu.Lock()
		var err error
		if atomic.LoadUint64(&ctl[ctlExits]) == p.gen.Load() {
			err = p.start()
		}
		p.mu.Unlock()
		if err != nil {
			return 0, err
		}
	}
	seq := &p.seqs[i].n
	*seq++
	if uint32(*seq) == 0 {
		// The tags wrap: clear the slot's, lest an answer of 2^32
		// batches ago pass for this batch's.
		clear(p.tagged.Slice()[i*p.tcap : (i+1)*p.tcap])
		*seq++
	}
	bell := doorbell(*seq, n)
	done := &ctl[ctlDones+i*ctlSlot]
	atomic.StoreUint64(&ctl[ctlBells+i*ctlSlot], bell)
	tag := *seq << 32
	tagged := p.tagged.Slice()[i*p.tcap : i*p.tcap+n]
	out := p.Out(i)[:n]
	hits, j := 0, 0
	var began time.Time
	for spins := 1; ; spins++ {
		// Take the answers in as they arrive (each store of the
		// kernel's is one word, in no particular order).
		for ; j < n; j++ {
			v := atomic.LoadUint64(&tagged[j])
			if v&^(1<<32-1) != tag {
				break
			}
			out[j] = uint32(v)
			if uint32(v) != NotFound {
				hits++
			}
		}
		if j == n && (n > 0 || atomic.LoadUint64(done) == bell) {
			break
		}
		if spins%128 != 0 {
			continue
		}
		if began.IsZero() {
			began = time.Now()
			continue
		}
		if time.Since(began) < persistSpin {
			continue
		}
		// Past persistSpin, every so often: has the kernel exited (its
		// idle exit raced this doorbell, or it failed)?
		if err := p.restart(done, bell); err != nil {
			return 0, err
		}
		if time.Since(began) > persistHang {
			return 0, fmt.Errorf("resident kernel did not answer batch %d of slot %d in %v", *seq, i, persistHang)
		}
		runtime.Gosched()
	}
	p.resident.Add(1)
	return hits, nil
}

// restart launches the resident kernel again if every launch has exited
// and the batch whose answer is *done is not answered.
func (p *PersistentSearch) restart(done *uint64, bell uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	gone, err := p.exited.Done()
	if err != nil {
		return fmt.Errorf("resident kernel: %w", err)
	}
	if gone && atomic.LoadUint64(done) != bell {
		p.relaunches.Add(1)
		return p.start()
	}
	return nil
}

// start launches the resident kernel, a block per slot, which serves the
// batches rung and not answered. The caller holds p.mu.
func (p *PersistentSearch) start() error {
	e := p.e
	gen := p.gen.Load() + 1
	var trace gpu.DevicePtr
	if p.trace != nil {
		trace = p.trace.Ptr()
	}
	err := p.fns.resident.Launch(p.stream, gpu.D1(p.slots), gpu.D1(persistThreads+32), 0,
		e.table, e.geo.mask, e.geo.pmask, p.ctl, p.hashes, p.tagged, uint64(p.cap), uint64(p.tcap), uint64(IdleExit), p.dev, gen, trace)
	if err == nil {
		err = p.exited.Record(p.stream)
	}
	if err != nil {
		return fmt.Errorf("launching the resident kernel: %w", err)
	}
	p.gen.Store(gen)
	return nil
}

// launchedSearch searches slot i's n jobs with hix_search over the whole
// device, reading the hashes from and writing the locations to the mapped
// slot.
func (p *PersistentSearch) launchedSearch(i, n int) (int, error) {
	e := p.e
	p.launchMu.Lock()
	err := p.fns.search.Launch(p.launch, searchGrid(n), gpu.D1(searchBlock), 0,
		e.table, e.geo.mask, e.geo.pmask, p.hashes.PtrAt(i*p.cap), uint64(n), p.out.PtrAt(i*p.cap))
	if err == nil {
		err = p.launch.Synchronize()
	}
	p.launchMu.Unlock()
	if err != nil {
		return 0, err
	}
	p.launched.Add(1)
	hits := 0
	for _, l := range p.Out(i)[:n] {
		if l != NotFound {
			hits++
		}
	}
	return hits, nil
}

// Close stops the resident kernel (its pollers read the exit word the
// call writes to the device) and frees the memory, after the searches in
// progress: it holds the index's write lock, which waits for them, and
// delays the index's other calls by the kernel's exit (microseconds).
// Close before closing the index. Closing twice is a no-op.
func (p *PersistentSearch) Close() error {
	engine.LockAny(&p.ix.Facade) // open or not: the search's memory is freed either way
	defer engine.Unlock(&p.ix.Facade)
	if p.closed {
		return nil
	}
	p.closed = true
	var errs []error
	if gen := p.gen.Load(); gen > 0 {
		errs = append(errs, p.dev.Write(p.launch, devExit, []uint64{gen}), p.launch.Synchronize(), p.exited.Synchronize())
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
