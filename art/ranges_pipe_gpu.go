package art

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// Pipelined range calls. A bounded batch of range or prefix queries
// (rangesCands' form) answered into a pinned Result (NewResult) is cut
// into chunks of consecutive queries, each with device buffers of its own
// and queued on stream c mod queryStreams, so that the host's packing,
// the kernels and the transfers of the answers overlap instead of running
// one after the other:
//
//   - a goroutine sizes and packs the chunks in order, each on all the
//     workers (planQueries and fill in parts of queryPipePart queries at
//     least: round 1 on an H200 packed a chunk a goroutine, 12-14 ns a
//     query, which made packing the longest phase), into one pinned buffer
//     with room for queryStride bytes a chunk (the largest chunk layout of
//     the calls before), signalling as each chunk is packed; a chunk that
//     does not fit is packed by the launcher into a pinned buffer of its
//     own, and the room grows for the next call;
//   - chunk c's upload, walk (aq_cands), trim (aq_trim), scan of its
//     counts (aq_chunk_scan, one block) and the readback of its two totals
//     are queued as soon as it is packed: the walks, whose time is the
//     latency of a thread's chain of node loads whatever the chunk's size
//     (about 0.2 ms for ranges of 16 in 16Mi keys on an H200), run side
//     by side;
//   - in chunk order, as its totals arrive, the host places chunk c's
//     answers after those of the chunks before it and queues its pairs
//     (aq_pairs, with the earlier chunks' pairs and key bytes as bases,
//     writing the call's query offsets) and the transfers of its answers
//     straight into the Result's pinned arrays.
//
// The answers are exactly those of the one-batch form: a query's answer
// depends on nothing but the query.

// Shape of a pipelined call: chunks of at least gpuEngine.queryChunk
// queries (queryChunkDefault unless tests or benchmarks set it; 0 turns
// the pipeline off) and at most queryChunksMax of them (and a lead
// chunk); a batch of fewer than two chunks runs in one piece. The chunks
// take queryStreams streams in turn (the engine's three and more of its
// own; eight is the device's default count of hardware queues, past which
// streams would share them).
const (
	queryPipePart     = 1 << 10 // fewest queries of a chunk one worker packs
	queryChunkDefault = 1 << 14
	queryChunksMax    = 16
	queryStreams      = 8
)

// queryPipeStats are the host's phases of the last pipelined call, for
// benchmarks: Packed the time until the last chunk was packed, PackWait
// the launcher's waits for packed chunks, TotWait its waits for chunks'
// totals, Chunks the chunks, Unfit those that did not fit the packing
// room (packed by the launcher).
type queryPipeStats struct {
	Packed, PackWait, TotWait time.Duration
	Chunks, Unfit             int
}

// queryChunks returns the chunk size and count of a pipelined call of Q
// queries; one chunk means no pipeline.
func (g *gpuEngine) queryChunks(Q int) (size, chunks int) {
	if g.queryChunk <= 0 || Q < 2*g.queryChunk {
		return Q, 1
	}
	size = max(g.queryChunk, (Q+queryChunksMax-1)/queryChunksMax)
	chunks = (Q + size - 1) / size
	size = (Q + chunks - 1) / chunks // balanced, none empty
	return size, (Q + size - 1) / size
}

// chunkBounds returns the query bounds of a pipelined call's chunks (Q
// queries, chunks of size): a lead chunk of a quarter of size, so that
// the first answers start across the bus sooner, then the rest in
// balanced chunks of at most size. Chunk c is [b[c], b[c+1]).
func chunkBounds(Q, size, chunks int) []int {
	lead := max(1, size/4)
	if chunks < 3 || lead >= Q {
		b := make([]int, chunks+1)
		for c := range b {
			b[c] = min(Q, c*size)
		}
		return b
	}
	rest := Q - lead
	m := (rest + size - 1) / size
	per := (rest + m - 1) / m
	b := []int{0}
	for at := lead; ; at += per {
		b = append(b, min(Q, at))
		if at >= Q {
			return b
		}
	}
}

// streamLauncher queues kernels on one stream s (g.launch queues them on
// the engine's stream): named launch, so that TestLaunchArguments checks
// its calls against the kernels' signatures.
type streamLauncher struct {
	g *gpuEngine
	s *gpu.Stream
}

// launch queues f over n items on l.s with the package's launch
// configuration (one block for n up to kernelBlock).
func (l streamLauncher) launch(f *gpu.Function, n int, args ...any) error {
	if n <= 0 {
		return nil
	}
	if err := f.Launch(l.s, grid(n), gpu.D1(kernelBlock), 0, args...); err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	return nil
}

// pipeChunk is one chunk of a pipelined call: its queries [lo, hi), its
// packing plan, and whether it was packed into its room of the pinned
// buffer (fits) or must be packed by the launcher; err is a sizing error.
type pipeChunk struct {
	lo, hi int
	pack   queryPack
	fits   bool
	err    error
}

// packChunk sizes the bounds of queries [lo, hi) of qs and, when their
// layout fits room (len(room) bytes, 8-byte aligned), packs them into it,
// on up to workers goroutines (parts of at least queryPipePart queries).
// Cost: one parallel pass over the chunk's slice headers, and when it fits
// a second copying the bounds.
func packChunk(qs []Query, lo, hi int, room []byte, workers int) pipeChunk {
	ch := pipeChunk{lo: lo, hi: hi}
	if ch.pack, ch.err = planQueriesBy(qs[lo:hi], queryPipePart, workers); ch.err == nil && ch.pack.l.end <= len(room) {
		ch.pack.fill(room[:ch.pack.l.end], qs[lo:hi])
		ch.fits = true
	}
	return ch
}

// pipeSet is the device buffers of one stream's chunks (set k of a call:
// the pool buffers named with the suffix .k).
type pipeSet struct {
	in                 string // the pool name of the packed bounds, grown as chunks need
	slots, cnt, byt    *gpu.Buffer[uint64]
	ccnt               *gpu.Buffer[uint32]
	ooffs              *gpu.Buffer[uint32]
	ovals, qoff, total *gpu.Buffer[uint64]
	okeys              string // the pool name of the pairs' key bytes, grown as chunks need
}

// pipeNeeds are the buffers of one set for chunks of up to size queries,
// limit pairs a query (the packed bounds, q.in.k, are reserved as chunks
// need).
func pipeNeeds(k, size, limit int) []gpu.Need {
	sfx := fmt.Sprintf(".%d", k)
	S := size * limit
	return []gpu.Need{gpu.NeedOf[uint64]("q.slots"+sfx, S), gpu.NeedOf[uint32]("q.ccnt"+sfx, size),
		gpu.NeedOf[uint64]("q.cnt"+sfx, size+1), gpu.NeedOf[uint64]("q.bytes"+sfx, size+1), gpu.NeedOf[uint32]("q.ooffs"+sfx, S),
		gpu.NeedOf[uint64]("q.ovals"+sfx, S), gpu.NeedOf[uint64]("q.qoff"+sfx, size), gpu.NeedOf[uint64]("q.total"+sfx, 2)}
}

// takeSet takes set k's buffers (pipeNeeds reserved).
func (g *gpuEngine) takeSet(k, size, limit int) pipeSet {
	sfx := fmt.Sprintf(".%d", k)
	S := size * limit
	return pipeSet{in: "q.in" + sfx, slots: gpu.Take[uint64](g.pool, "q.slots"+sfx, S),
		ccnt: gpu.Take[uint32](g.pool, "q.ccnt"+sfx, size), cnt: gpu.Take[uint64](g.pool, "q.cnt"+sfx, size+1),
		byt: gpu.Take[uint64](g.pool, "q.bytes"+sfx, size+1), ooffs: gpu.Take[uint32](g.pool, "q.ooffs"+sfx, S),
		ovals: gpu.Take[uint64](g.pool, "q.ovals"+sfx, S), qoff: gpu.Take[uint64](g.pool, "q.qoff"+sfx, size),
		total: gpu.Take[uint64](g.pool, "q.total"+sfx, 2), okeys: "q.okeys" + sfx}
}

// Events of one chunk of a pipelined call: its kernels start, its totals
// read back, its pairs queued, its pairs written, its answers transferred.
const (
	pipeWalk = iota
	pipeTotals
	pipePairs
	pipeWritten
	pipeOut
	pipeEvents
)

// rangesPiped answers the bounded queries qs (limit pairs each at most,
// descending when dsc is 1) into the pinned Result r in chunks of up to
// size queries, about chunks of them (see the top of this file).
// LastBatch's Upload is the host's packing until the last chunk was
// packed, Work the kernels' device time, Download the answers' transfers'
// (all three overlap each other). Cost: one parallel pass sizing and
// packing the bounds (overlapping the device; serial on the launcher for
// chunks larger than any before), the kernels of rangesCands per chunk,
// the answers over the bus once straight into r, about twenty driver
// calls and one wait per chunk.
func (g *gpuEngine) rangesPiped(r *Result, qs []Query, limit int, dsc int32, size, chunks int) (res *Result, err error) {
	t0 := time.Now()
	Q := len(qs)
	for len(g.qstreams) < queryStreams-3 {
		s, err := g.dev.NewStream()
		if err != nil {
			return nil, err
		}
		g.qstreams = append(g.qstreams, s)
	}
	streams := append([]*gpu.Stream{g.s, g.in, g.out}, g.qstreams...)
	idle := func() error {
		var err error
		for _, s := range streams {
			err = errors.Join(err, s.Synchronize())
		}
		return err
	}
	g.down.Discard()
	bounds := chunkBounds(Q, size, chunks)
	chunks = len(bounds) - 1
	st := queryPipeStats{Chunks: chunks}
	stride := g.queryStride
	h, err := gpu.Host[byte](g.pool, "host.q", chunks*stride)
	if err != nil {
		return nil, err
	}
	tot, err := gpu.Host[uint64](g.pool, "host.qtotals", 2*chunks)
	if err != nil {
		return nil, err
	}
	// The workers pack the chunks in order, chunk c into h[c*stride:],
	// closing packed[c] when it is sized and, if it fits, packed; every
	// return below waits for them (h is reused next call).
	cs := make([]pipeChunk, chunks)
	packed := make([]chan struct{}, chunks)
	for c := range packed {
		packed[c] = make(chan struct{})
	}
	var packers sync.WaitGroup
	var packedAt time.Duration
	packers.Go(func() {
		for c := range chunks {
			cs[c] = packChunk(qs, bounds[c], bounds[c+1], h[c*stride:(c+1)*stride], g.workers)
			close(packed[c])
		}
		packedAt = time.Since(t0)
	})
	defer func() {
		packers.Wait()
		if err != nil {
			// r's arrays may be views of pinned arrays grown (freed)
			// since: r answers nothing after a failed call.
			err = errors.Join(err, idle())
			r.Offsets, r.Keys, r.Values = nil, Keys{}, nil
		}
	}()
	var needs []gpu.Need
	for c := range chunks {
		needs = append(needs, pipeNeeds(c, size, limit)...)
	}
	if err := g.pool.Reserve(needs...); err != nil {
		return nil, err
	}
	sets := make([]pipeSet, chunks)
	for c := range sets {
		sets[c] = g.takeSet(c, size, limit)
	}
	for len(g.kev) < pipeEvents*chunks+1 {
		e, err := g.dev.NewEvent()
		if err != nil {
			return nil, err
		}
		g.kev = append(g.kev, e)
	}
	ev := func(c, i int) *gpu.Event { return g.kev[1+pipeEvents*c+i] }
	// The other streams start after the engine's stream's work so far and
	// the descriptor.
	if err := g.setDesc(g.t, nil); err != nil {
		return nil, err
	}
	if err := g.kev[0].Record(g.s); err != nil {
		return nil, err
	}
	for _, s := range streams[1:] {
		if err := s.Wait(g.kev[0]); err != nil {
			return nil, err
		}
	}
	// The Result's arrays: the query offsets sized now (no transfer uses
	// them yet), the pairs' arrays as held and grown as chunks need.
	offsets, err := pinArray[int](r, "offsets", Q+1)
	if err != nil {
		return nil, fmt.Errorf("pinning the answers: %w", err)
	}
	keys, err := pinHeld[byte](r, "keys")
	if err != nil {
		return nil, fmt.Errorf("pinning the answers: %w", err)
	}
	koffs, err := pinHeld[uint32](r, "offs")
	if err != nil {
		return nil, fmt.Errorf("pinning the answers: %w", err)
	}
	vals, err := pinHeld[uint64](r, "values")
	if err != nil {
		return nil, fmt.Errorf("pinning the answers: %w", err)
	}

	// walk queues chunk c up to the readback of its totals.
	most := stride // the largest layout of the call
	walk := func(c int) error {
		w := time.Now()
		<-packed[c]
		st.PackWait += time.Since(w)
		ch, set, s := &cs[c], &sets[c], streams[c%queryStreams]
		if ch.err != nil {
			return ch.err
		}
		n, l := ch.hi-ch.lo, ch.pack.l
		most = max(most, l.end)
		var src []byte
		if ch.fits {
			src = h[c*stride : c*stride+l.end]
		} else {
			// Packed here into a pinned buffer of the chunk's own (kept
			// in the pool: chunk c's while its upload may be in flight).
			st.Unfit++
			x, err := gpu.Host[byte](g.pool, fmt.Sprintf("host.q.%d", c), l.end)
			if err != nil {
				return err
			}
			ch.pack.fill(x, qs[ch.lo:ch.hi])
			src = x
		}
		if held := g.pool.Held(set.in); held == nil || held.Len() < l.end {
			if err := errors.Join(idle(), g.pool.Reserve(gpu.NeedOf[byte](set.in, max(l.end, stride)))); err != nil {
				return err
			}
		}
		in := gpu.Take[byte](g.pool, set.in, l.end)
		if err := in.Write(s, 0, src); err != nil {
			return err
		}
		loB, hiB := ch.pack.loAt[ch.pack.parts], ch.pack.hiAt[ch.pack.parts]
		lod, loo := gpu.View[byte](in, l.loData, max(1, loB)), gpu.View[uint32](in, 0, n+1)
		hid, hio := gpu.View[byte](in, l.hiData, max(1, hiB)), gpu.View[uint32](in, l.hiOffs, n+1)
		hb := gpu.View[uint8](in, l.has, n)
		sl := streamLauncher{g, s}
		return firstErr(ev(c, pipeWalk).Record(s),
			sl.launch(g.k.qCands, n, g.descBuf, uint64(n), nullPtr, lod, loo, hid, hio, hb, uint64(limit), int32(dsc), set.slots, set.ccnt),
			sl.launch(g.k.qTrim, (n+1)*warpSize, g.descBuf, uint64(n), lod, loo, hid, hio, hb, uint64(limit), int32(dsc), set.slots, set.ccnt,
				set.cnt, set.byt),
			sl.launch(g.k.qChunkScan, kernelBlock, uint64(n+1), set.cnt, set.byt, set.total),
			set.total.Read(s, 0, tot[2*c:2*c+2]),
			ev(c, pipeTotals).Record(s))
	}
	// answer waits for chunk c's totals, places its answers after the
	// chunks before it (P pairs, B key bytes) and queues its pairs and
	// their transfers into the Result.
	P, B := 0, 0
	lastWalked := -1
	answer := func(c int) error {
		w := time.Now()
		if err := ev(c, pipeTotals).Synchronize(); err != nil {
			return err
		}
		st.TotWait += time.Since(w)
		ch, set, s := &cs[c], &sets[c], streams[c%queryStreams]
		n := ch.hi - ch.lo
		pairs, bytes := int(tot[2*c]), int(tot[2*c+1])
		if uint64(B)+uint64(bytes) > math.MaxUint32 {
			return fmt.Errorf("%d key bytes in the answers: at most %d per call", uint64(B)+uint64(bytes), uint64(math.MaxUint32))
		}
		if held := g.pool.Held(set.okeys); held == nil || held.Len() < bytes {
			// Grown for this chunk's bytes a pair at most a chunk's
			// pairs (the pool adds its headroom).
			want := max(bytes, int(min(uint64(math.MaxUint32), uint64(bytes)*uint64(size*limit)/uint64(max(1, pairs)))))
			if err := errors.Join(idle(), g.pool.Reserve(gpu.NeedOf[byte](set.okeys, want))); err != nil {
				return err
			}
		}
		okeys := gpu.Take[byte](g.pool, set.okeys, bytes)
		// The pinned arrays grown with room for the rest of the call at
		// the rate so far.
		rest := func(n int) int { return int(uint64(n) * uint64(Q) / uint64(ch.hi)) }
		var err error
		if keys, err = pinGrow(r, "keys", keys, B+bytes, rest(B+bytes), B, idle); err != nil {
			return fmt.Errorf("pinning the answers: %w", err)
		}
		if koffs, err = pinGrow(r, "offs", koffs, P+pairs+1, min(Q*limit+1, rest(P+pairs)+1), P, idle); err != nil {
			return fmt.Errorf("pinning the answers: %w", err)
		}
		if vals, err = pinGrow(r, "values", vals, P+pairs, min(Q*limit, rest(P+pairs)), P, idle); err != nil {
			return fmt.Errorf("pinning the answers: %w", err)
		}
		sl := streamLauncher{g, s}
		err = firstErr(ev(c, pipePairs).Record(s),
			sl.launch(g.k.qPairs, n*warpSize, g.descBuf, uint64(n), uint64(limit), set.slots, set.cnt, set.byt, okeys, set.ooffs, set.ovals,
				uint64(P), uint64(B), set.qoff),
			ev(c, pipeWritten).Record(s),
			set.qoff.Read(s, 0, offsetWords(offsets[ch.lo:ch.hi])),
			okeys.Read(s, 0, keys[B:B+bytes]),
			set.ooffs.Read(s, 0, koffs[P:P+pairs]),
			set.ovals.Read(s, 0, vals[P:P+pairs]),
			ev(c, pipeOut).Record(s))
		P += pairs
		B += bytes
		return err
	}
	// Every chunk's walk is queued as soon as it is packed (the walks,
	// latency-bound, run side by side); the answers are queued in chunk
	// order as the totals come in: those ready after each walk is queued,
	// the rest at the end.
	next := 0
	answerReady := func(block bool) error {
		for next < chunks {
			if !block {
				if next > lastWalked {
					return nil
				}
				if done, err := ev(next, pipeTotals).Done(); err != nil || !done {
					return err
				}
			}
			if err := answer(next); err != nil {
				return fmt.Errorf("pairs: %w", err)
			}
			next++
		}
		return nil
	}
	for c := range chunks {
		if err := walk(c); err != nil {
			return nil, fmt.Errorf("walk: %w", err)
		}
		lastWalked = c
		if err := answerReady(false); err != nil {
			return nil, err
		}
	}
	if err := answerReady(true); err != nil {
		return nil, err
	}
	if err := idle(); err != nil {
		return nil, err
	}
	offsets[Q] = P
	r.Offsets, r.Keys.Data, r.Keys.Offs, r.Values = offsets, keys[:B], koffs[:P+1], vals[:P]
	r.Keys.Offs[P] = uint32(B)
	var work, down time.Duration
	for c := range chunks {
		for _, ph := range [][2]int{{pipeWalk, pipeTotals}, {pipePairs, pipeWritten}} {
			if d, err := gpu.Elapsed(ev(c, ph[0]), ev(c, ph[1])); err == nil && d > 0 {
				work += d
			}
		}
		if d, err := gpu.Elapsed(ev(c, pipeWritten), ev(c, pipeOut)); err == nil && d > 0 {
			down += d
		}
	}
	packers.Wait()
	st.Packed = packedAt
	g.pipeStats = st
	if most > stride {
		// The next call packs chunks of this call's shape on the
		// workers, into room pinned now rather than in its time.
		g.queryStride = most
		if _, err := gpu.Host[byte](g.pool, "host.q", chunks*most); err != nil {
			return nil, err
		}
	}
	g.last.Set(engine.Timings{Op: "ranges", Items: Q, Upload: st.Packed, Work: work, Download: down, Total: time.Since(t0)})
	return r, nil
}
