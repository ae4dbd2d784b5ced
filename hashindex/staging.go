package hashindex

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// Staging is memory for the jobs and outputs of batches of up to Cap()
// jobs, which the staged calls (SearchStaged, InsertStaged, DeleteStaged,
// UpdateStaged) transfer straight to and from the device: on the GPU
// engine it is pinned host memory, so those calls skip the copies through
// the index's own pinned buffer that Search, Insert and Delete make; on the
// CPU engine it is ordinary memory and the staged calls equal the slice
// calls. On the GPU the memory is also mapped into the device's address
// space (gpu.MappedBuffer), so that UpdateStaged's kernel reads a small
// round's jobs and writes its results there without a transfer. A caller
// that builds its batches anyway (a server concatenating queued requests)
// writes them into Hashes() and Locs() and reads the results from Out().
//
// A Staging belongs to the index that made it. Its slices stay valid
// until Free or the index's Close; the caller must not read or write them
// while a staged call on them runs, and must not run two calls on one
// Staging at once. Staged calls read only the first n jobs and never write
// Hashes() or Locs(), so a batch can be run again.
type Staging struct {
	ix      *Index
	host    *gpu.MappedBuffer[byte] // GPU engine: the pinned, mapped memory
	mem     []byte                  // all of it (laid out as l)
	l       stageLayout
	cap     int
	hashes  []uint64
	locs    []uint32
	out     []uint32 // search locations or delete flags, at l.out
	results []uint64 // insert results, the same memory as out
	freed   bool
}

// NewStaging returns a Staging for batches of up to capacity jobs. Cost:
// 20 bytes a job; on the GPU engine one pinned, mapped allocation
// (cuMemHostAlloc and cuMemHostGetDevicePointer, milliseconds or more for
// large sizes: allocate once and reuse), on the CPU engine a Go allocation.
func (ix *Index) NewStaging(capacity int) (*Staging, error) {
	if capacity < 0 || capacity > MaxBatch {
		return nil, fmt.Errorf("hashindex: new staging: capacity %d, want 0 to %d", capacity, MaxBatch)
	}
	l := newStageLayout(capacity, true, 8, 0, false)
	engine.LockAny(&ix.Facade)
	defer engine.Unlock(&ix.Facade)
	if !engine.Live(&ix.Facade) {
		return nil, engine.Closed(&ix.Facade, "new staging")
	}
	st := &Staging{ix: ix, l: l, cap: capacity}
	if ix.gpu != nil {
		h, err := gpu.AllocMapped[byte](ix.gpu.dev, max(l.end, stageAlign)) // never empty: Pinned reports the engine
		if err != nil {
			return nil, fmt.Errorf("hashindex: new staging of %d jobs: %w", capacity, err)
		}
		st.host, st.mem = h, h.Slice()[:l.end]
	} else if l.end > 0 {
		words := make([]uint64, l.end/8) // 8-byte aligned, pointer-free; l.end is a multiple of 16
		st.mem = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), l.end)
	}
	st.hashes = viewAs[uint64](st.mem, l.hashes, capacity)
	st.locs = viewAs[uint32](st.mem, l.locs, capacity)
	st.out = viewAs[uint32](st.mem, l.out, capacity)
	st.results = viewAs[uint64](st.mem, l.out, capacity)
	if ix.stagings == nil {
		ix.stagings = map[*Staging]struct{}{}
	}
	ix.stagings[st] = struct{}{}
	return st, nil
}

// Cap returns the most jobs of a staged call on s.
func (s *Staging) Cap() int { return s.cap }

// Pinned reports whether the memory is pinned host memory (GPU engine).
func (s *Staging) Pinned() bool { return s.host != nil }

// Hashes returns the Cap() job hashes: job i of a staged call of n jobs,
// i < n, is Hashes()[i]. Nil after Free.
func (s *Staging) Hashes() []uint64 { return s.hashes }

// Locs returns the Cap() job locations of InsertStaged and DeleteStaged.
// Nil after Free.
func (s *Staging) Locs() []uint32 { return s.locs }

// Out returns the Cap() outputs: after SearchStaged of n jobs, Out()[i]
// is the location of Hashes()[i] or NotFound; after DeleteStaged, 1 if
// job i found its cell, else 0; after InsertStaged, unspecified (the index
// keeps the insert results there). Nil after Free.
func (s *Staging) Out() []uint32 { return s.out }

// outBytes returns bytes of the output area from byte off (up to 8
// bytes a job).
func (s *Staging) outBytes(off, bytes int) []byte { return s.mem[s.l.out+off : s.l.out+off+bytes] }

// Free releases the memory; the slices handed out become invalid and
// later staged calls on s fail. Freeing twice is a no-op. Cost: on the
// GPU engine a cuMemFreeHost; it waits for a staged call running on s.
func (s *Staging) Free() error {
	engine.LockAny(&s.ix.Facade)
	defer engine.Unlock(&s.ix.Facade)
	return s.free()
}

// free is Free with the index's lock held.
func (s *Staging) free() error {
	if s.freed {
		return nil
	}
	s.freed = true
	delete(s.ix.stagings, s)
	err := s.host.Free()
	s.host, s.mem, s.hashes, s.locs, s.out, s.results = nil, nil, nil, nil, nil, nil
	if err != nil {
		return fmt.Errorf("hashindex: free staging: %w", err)
	}
	return nil
}

// lockStaged takes the index's lock for a staged call op of n jobs on st
// and returns the engine; on an error (a closed index, or checkStaged's)
// it holds no lock. engine.Unlock releases it.
func (ix *Index) lockStaged(op string, st *Staging, n int) (indexEngine, error) {
	e, err := engine.Lock(&ix.Facade, op)
	if err != nil {
		return nil, err
	}
	if err := ix.checkStaged(op, st, n); err != nil {
		engine.Unlock(&ix.Facade)
		return nil, err
	}
	return e, nil
}

// checkStaged checks a staged call of n jobs on st. Callers hold the index's lock.
func (ix *Index) checkStaged(op string, st *Staging, n int) error {
	switch {
	case st == nil:
		return fmt.Errorf("hashindex: %s: nil staging", op)
	case st.ix != ix:
		return fmt.Errorf("hashindex: %s: staging of another index", op)
	case st.freed:
		return fmt.Errorf("hashindex: %s: staging freed", op)
	case n < 0 || n > st.cap:
		return fmt.Errorf("hashindex: %s: %d jobs in a staging of %d", op, n, st.cap)
	}
	return nil
}

// SearchStaged is Search of the first n jobs of st: it writes to
// st.Out()[i] the location of the key with hash st.Hashes()[i], or
// NotFound, for i < n, and counts in Stats as Search does. Cost: as
// Search without its two host copies: on the GPU a transfer straight from
// st per chunk of up to 1 Mi jobs, the kernels, a count of the hits on the
// device and a transfer straight back to st, chunks pipelined over three
// streams, one synchronization per chunk; on the CPU, Search on st's
// slices.
func (ix *Index) SearchStaged(st *Staging, n int) error {
	e, err := ix.lockStaged("search staged", st, n)
	if err != nil {
		return err
	}
	defer engine.Unlock(&ix.Facade)
	if n == 0 {
		return nil
	}
	t0 := time.Now()
	hits, err := e.searchStaged(st, n)
	if err != nil {
		return fmt.Errorf("hashindex: search staged of %d jobs: %w", n, err)
	}
	ix.record("search staged", n, t0)
	ix.stats.Searches += uint64(n)
	ix.stats.Hits += uint64(hits)
	return nil
}

// InsertStaged is Insert of the first n jobs of st (st.Hashes()[i],
// st.Locs()[i]): it appends to dropped, in job order, every location the
// index stopped holding, and counts in Stats as Insert does. A location
// NotFound fails the call with the table unchanged. It overwrites
// st.Out(). Cost: as Insert without its host copy in: on the GPU the
// transfers in of every chunk (up to 1 Mi jobs) are queued at once, the
// locations are checked on the host while they run, then each chunk's
// grouping and insert kernels and its transfer of results back are queued
// (pipelined over three streams); the results of chunks that dropped
// anything are decoded on the host. On the CPU, Insert on st's slices.
func (ix *Index) InsertStaged(st *Staging, n int, dropped []Dropped) ([]Dropped, error) {
	e, err := ix.lockStaged("insert staged", st, n)
	if err != nil {
		return dropped, err
	}
	defer engine.Unlock(&ix.Facade)
	if n == 0 {
		return dropped, nil
	}
	check := func() error {
		if i := firstNotFound(st.locs[:n], ix.workers); i >= 0 {
			return fmt.Errorf("job %d has location NotFound", i)
		}
		return nil
	}
	return ix.recordInsert("insert staged", n, dropped, func(decode func(int, []uint64)) error {
		return e.insertStaged(st, n, check, decode)
	})
}

// DeleteStaged is Delete of the first n jobs of st: for every i < n in
// batch order it clears the cell holding both the signature of
// st.Hashes()[i] and location st.Locs()[i], sets st.Out()[i] to 1 if
// there was one, else 0, and, when found is not nil, found[i] to the
// same; it counts in Stats as Delete does. found, if not nil, must hold n
// flags. Cost: as InsertStaged without the location check; hits are
// counted on the device, and found costs a host pass over the flags.
func (ix *Index) DeleteStaged(st *Staging, n int, found []bool) error {
	e, err := ix.lockStaged("delete staged", st, n)
	if err != nil {
		return err
	}
	defer engine.Unlock(&ix.Facade)
	if found != nil && len(found) < n {
		return fmt.Errorf("hashindex: delete staged: %d outputs for %d jobs", len(found), n)
	}
	if n == 0 {
		return nil
	}
	var done func(int, []uint32)
	if found != nil {
		done = func(first int, flags []uint32) { foundFlags(found[first:first+len(flags)], flags, ix.workers) }
	}
	t0 := time.Now()
	hits, err := e.removeStaged(st, n, done)
	if err != nil {
		return fmt.Errorf("hashindex: delete staged of %d jobs: %w", n, err)
	}
	ix.recordDelete("delete staged", n, hits, t0)
	return nil
}
