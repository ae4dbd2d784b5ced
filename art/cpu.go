package art

import "github.com/warpkv/warpkv/engine"

// Grains of the CPU engine's parallel loops (internal/par.For): items
// handed to a worker at a time.
const (
	keyGrain  = 1024 // keys of a batch (walks, lookups)
	nodeGrain = 64   // touched nodes, segments, range queries
)

// cpuEngine runs the batches on goroutines over a store (the same layout
// and phases as the GPU engine).
type cpuEngine struct {
	s       *store
	workers int
	clock   engine.Clock
	last    engine.Last
}

func newCPUEngine(workers int) *cpuEngine {
	return &cpuEngine{s: newStore(0), workers: workers}
}

// sortBatch returns the sorted distinct positions of kb (the last of equal
// keys), timing the sort.
func (e *cpuEngine) sortBatch(kb Keys) []uint32 {
	e.clock.Start()
	e.clock.Mark(nil, engine.MarkStart)
	e.clock.Mark(nil, engine.MarkUploaded)
	order := lastOfRuns(kb, sortedOrder(kb, e.workers), e.workers)
	e.clock.Mark(nil, engine.MarkSorted)
	return order
}

func (e *cpuEngine) done(op string, n int) {
	e.clock.Mark(nil, engine.MarkWorked) // nothing to download: Download stays 0
	e.last.Set(e.clock.Timings(op, n))
}

func (e *cpuEngine) build(kb Keys, vals []uint64) error {
	if long, err := longBuild(e, kb, vals); long {
		return err
	}
	order := e.sortBatch(kb)
	e.s = buildStore(kb, vals, order, e.workers)
	e.done("build", kb.Len())
	return nil
}

func (e *cpuEngine) insert(kb Keys, vals []uint64) (int, error) {
	if long, n, err := longInsert(e, kb, vals); long {
		return n, err
	}
	order := e.sortBatch(kb)
	added := e.s.insert(kb, vals, order, e.workers)
	e.s.flushFrees()
	e.done("insert", kb.Len())
	return added, nil
}

func (e *cpuEngine) update(kb Keys, vals []uint64, found []bool) error {
	if long, err := longUpdate(e, kb, vals, found); long {
		return err
	}
	timedRead("update", kb.Len(), &e.last, func() { e.s.update(kb, vals, found, e.workers) })
	return nil
}

func (e *cpuEngine) lookup(kb Keys, vals []uint64, found []bool) error {
	if long, err := longLookup(e, kb, vals, found); long {
		return err
	}
	timedRead("lookup", kb.Len(), &e.last, func() { e.s.lookup(kb, vals, found, e.workers) })
	return nil
}

func (e *cpuEngine) remove(kb Keys) (int, error) {
	if long, n, err := longRemove(e, kb); long {
		return n, err
	}
	order := e.sortBatch(kb)
	n := e.s.remove(kb, order, e.workers)
	e.s.flushFrees()
	e.s.maybeCompactArena()
	e.done("delete", kb.Len())
	return n, nil
}

func (e *cpuEngine) ranges(into *Result, qs []Query, limit int, desc bool) (*Result, error) {
	var r *Result
	var err error
	timedRead("ranges", len(qs), &e.last, func() { r, err = e.s.ranges(into, qs, limit, desc, e.workers) })
	return r, err
}

// timedRead runs work, a batch of n items that needs no sort (lookups,
// updates, ranges), on a clock of its own (several may run at once), and
// records its timings as op in last: the whole time is the work phase.
func timedRead(op string, n int, last *engine.Last, work func()) {
	var c engine.Clock
	c.Start()
	c.Mark(nil, engine.MarkStart)
	c.Mark(nil, engine.MarkSorted)
	work()
	c.Mark(nil, engine.MarkWorked) // nothing to download: Download stays 0
	last.Set(c.Timings(op, n))
}

func (e *cpuEngine) size() int                 { return e.s.n }
func (e *cpuEngine) width() int                { return e.s.width }
func (e *cpuEngine) snapshot() (*store, error) { return e.s, nil }
func (e *cpuEngine) lastBatch() engine.Timings { return e.last.Get() }
func (e *cpuEngine) close() error              { e.s = newStore(0); return nil }
