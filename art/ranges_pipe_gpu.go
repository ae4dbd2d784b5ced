package art

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
)

// rangeChunkSlots is the answer slots (queries x limit) of a chunk of a
// pipelined call when the engine's rangePipe does not say (chunks 0): a
// call is cut into ceil(Q*limit/rangeChunkSlots) chunks, at least 2 and
// at most rangeChunksMax (and each of at least chunkMin queries). On an
// H200 at 100M keys (BenchmarkGPURangeChunks, branch arng7's options,
// 2026-11-29 19:38 UTC, 5 interleaved rounds, medians), 64Ki ranges of 16
// (1Mi slots) ran in 0.622 ms a call in 4 chunks (every round 0.617-0.651),
// 0.674 and 0.703 in 3, 0.730 in 2; 64Ki prefix scans of 64 (4Mi slots)
// in 2.149 ms in 8 and 2.189 in 4. Before those options (branch arng3's
// run) 3 chunks had been best for the ranges: pairs queued behind each
// walk (pipedCall.queuePairs) make a fourth chunk pay. 256Ki slots gives
// those calls 4 and 8 chunks.
const rangeChunkSlots = 256 << 10

// rangeChunksMax is the most chunks of a pipelined call when the
// engine's rangePipe does not say.
const rangeChunksMax = 8

// rangeChunkMin is the fewest queries of a chunk when the engine's
// rangePipe does not say (chunkMin 0): a batch of fewer than twice as many
// runs in one piece.
const rangeChunkMin = 8192

// rangePipe is the pipelined calls' setting and their events, part of the
// GPU engine (its lock guards it).
type rangePipe struct {
	chunks   int // chunks a call is cut into at most: 0 by its answer slots (rangeChunkSlots), 1 one piece (tests and benchmarks set it)
	chunkMin int // fewest queries a chunk: 0 rangeChunkMin (tests set fewer)
	firstDiv int // chunk 0 holds 1/firstDiv of another chunk's queries (0 or 1: as many; benchmarks compare)

	// keySlot is the key bytes an answer slot a chunk's early pairs
	// (pipedCall.queuePairs) are given room for: keySlotMin at first,
	// grown when a chunk's keys did not fit.
	keySlot int

	names   [][numPipeBufs]string // chunk k's buffers' pool names (pipeBufs with ".k")
	walkAt  []*gpu.Event          // chunk k's walk queued (on s)
	walked  []*gpu.Event          // chunk k's totals written to tot (on s)
	pairsAt []*gpu.Event          // chunk k's pairs queued (on s)
	paired  []*gpu.Event          // chunk k's pairs written (on s)
	fetched []*gpu.Event          // chunk k's downloads done (on out; made and recorded only when the engine is traced: fetchedEvent)
	done    *gpu.Event            // the last download (on out)

	// tot holds totWords words a chunk, a_totals' copy of chunk k's
	// totals from totWords*k, in host memory mapped into the device: a
	// kernel's stores reach it without the copy engine, where a readback
	// would queue behind the earlier chunks' downloads.
	tot *gpu.MappedBuffer[uint64]
}

// totWords is the words a_totals writes: the low and high halves of four
// totals (here pairs, key bytes, squared key lengths, none), then two more.
const totWords = 10

// totals makes sure the pipe's mapped totals hold c chunks'. Cost: a
// cuMemHostAlloc of mapped memory (milliseconds) the first time a call has
// that many chunks.
func (p *rangePipe) totals(d *gpu.Device, c int) error {
	var err error
	p.tot, err = gpu.MappedAtLeast(d, p.tot, totWords*c)
	return err
}

// chunkTotals returns chunk k's pairs, key bytes and squared key lengths
// from the mapped totals; its walked event must have fired. The chunk's
// counts were scanned as one array (countsLayout): a_totals copied the
// running sums N, N+B and N+B+S, and the totals are their differences
// (modulo 2^64, as the scans' sums are). Cost: O(1).
func (p *rangePipe) chunkTotals(k int) (pairs, keyBytes int, sq uint64) {
	w := p.tot.Slice()[totWords*k : totWords*(k+1)]
	word := func(i int) uint64 { return atomic.LoadUint64(&w[2*i]) | atomic.LoadUint64(&w[2*i+1])<<32 }
	n, b, s := word(0), word(1), word(2)
	return int(n), int(b - n), s - b
}

// count returns the chunks of a pipelined call of Q queries of at most
// limit pairs: the setting's chunks, or when it is 0 one per
// rangeChunkSlots answer slots (2 to rangeChunksMax); at most as many as
// hold chunkMin queries each; 1 (one piece) when fewer than two fit.
// Cost: O(1).
func (p *rangePipe) count(Q, limit int) int {
	c, m := p.chunks, p.chunkMin
	if c == 0 {
		slots := int64(Q) * int64(max(limit, 1))
		c = int(min(rangeChunksMax, max(2, (slots+rangeChunkSlots-1)/rangeChunkSlots)))
	}
	if m <= 0 {
		m = rangeChunkMin
	}
	return max(1, min(c, Q/m))
}

// bound is the first query of chunk k of a call of Q queries in C chunks
// (Q for k == C): chunks of equal size, but for chunk 0 of 1/firstDiv of
// the others' size when firstDiv > 1 (its packing, walk and pairs come
// before the first download: a smaller one starts the transfers sooner).
func (p *rangePipe) bound(Q, C, k int) int {
	d := max(1, p.firstDiv)
	if k == 0 || C == 1 {
		return par.Bound(Q, C, k)
	}
	// Weights: 1 for chunk 0, d for each other; chunk k starts after
	// 1 + (k-1)*d of the C*d-d+1.
	return int(int64(Q) * int64(1+(k-1)*d) / int64(C*d-d+1))
}

// fetchedEvent returns chunk k's fetched event, made on first use
// (traced calls only). Cost: a cuEventCreate the first time.
func (p *rangePipe) fetchedEvent(d *gpu.Device, k int) (*gpu.Event, error) {
	for len(p.fetched) <= k {
		e, err := d.NewEvent()
		if err != nil {
			return nil, err
		}
		p.fetched = append(p.fetched, e)
	}
	return p.fetched[k], nil
}

// events makes sure the pipe has the events and buffer names of c
// chunks. Cost: up to 4c+1 cuEventCreate the first time a call has that
// many chunks.
func (p *rangePipe) events(d *gpu.Device, c int) error {
	for len(p.walked) < c {
		var ev [4]*gpu.Event
		for i := range ev {
			e, err := d.NewEvent()
			if err != nil {
				for _, x := range ev[:i] {
					err = errors.Join(err, x.Close())
				}
				return err
			}
			ev[i] = e
		}
		p.walkAt, p.walked = append(p.walkAt, ev[0]), append(p.walked, ev[1])
		p.pairsAt, p.paired = append(p.pairsAt, ev[2]), append(p.paired, ev[3])
		var names [numPipeBufs]string
		for i, b := range pipeBufs {
			names[i] = fmt.Sprintf("%s.%d", b, len(p.names))
		}
		p.names = append(p.names, names)
	}
	if p.done == nil {
		e, err := d.NewEvent()
		if err != nil {
			return err
		}
		p.done = e
	}
	return nil
}

// work returns the device time of the kernels of a drained pipelined call
// of c chunks: the union of the spans of each chunk's walk (with its scan
// and totals, on s) and its pairs (on s behind them; when run again at
// delivery, that run), not the span from the first walk to the last pairs,
// in which the host packs and waits (events a chunk failed to time are
// left out). Cost: 4c cuEventElapsedTime.
func (p *rangePipe) work(c int) time.Duration {
	var spans [][2]time.Duration
	for k := range c {
		for _, ev := range [][2]*gpu.Event{{p.walkAt[k], p.walked[k]}, {p.pairsAt[k], p.paired[k]}} {
			a, err := gpu.Elapsed(p.walkAt[0], ev[0])
			if err != nil {
				continue
			}
			if b, err := gpu.Elapsed(p.walkAt[0], ev[1]); err == nil && b > a {
				spans = append(spans, [2]time.Duration{a, b})
			}
		}
	}
	return spanUnion(spans)
}

// spanUnion is the length of the union of spans [a, b). Cost: a sort of
// the spans.
func spanUnion(spans [][2]time.Duration) time.Duration {
	slices.SortFunc(spans, func(x, y [2]time.Duration) int { return cmp.Compare(x[0], y[0]) })
	var total, end time.Duration
	for i, sp := range spans {
		a := sp[0]
		if i > 0 && a < end {
			a = end
		}
		if sp[1] > a {
			total += sp[1] - a
			end = sp[1]
		}
	}
	return total
}

// close destroys the pipe's events and frees its mapped totals. Cost: one
// cuEventDestroy each and a cuMemFreeHost.
func (p *rangePipe) close() error {
	var err error
	for _, e := range slices.Concat(p.walkAt, p.walked, p.pairsAt, p.paired, p.fetched, []*gpu.Event{p.done}) {
		if e != nil {
			err = errors.Join(err, e.Close())
		}
	}
	p.walkAt, p.walked, p.pairsAt, p.paired, p.fetched, p.done, p.names = nil, nil, nil, nil, nil, nil, nil
	err = errors.Join(err, p.tot.Free())
	p.tot = nil
	return err
}

// The buffers of a chunk, by their index in rangePipe.names.
const (
	bSlots = iota
	bCcnt
	bCounts
	bQout
	bOkeys
	bOoffs
	bOvals
	bIn
	bHostQ
	numPipeBufs
)

// pipeBufs are the pool names of a chunk's buffers, by index; chunk k's
// have ".k" appended.
var pipeBufs = [numPipeBufs]string{"q.slots", "q.ccnt", "q.counts", "q.qout", "q.okeys", "q.ooffs", "q.ovals", "q.in", "host.q"}
