package art

import (
	"errors"
	"fmt"
	"strings"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// Tree is an ordered index from byte-string keys to uint64 values on the
// CPU engine or the GPU engine (Options.Device). It is safe for concurrent
// use: batches that change it run one at a time; Get, Lookup, Range,
// Ranges, Prefix, Len and the iterators run concurrently with each other.
// It implements engine.Reporter through its embedded engine.Facade
// (Backend, Reason, LastBatch, Close); after Close every call returns an
// error matching engine.ErrClosed.
type Tree struct {
	engine.Facade[backend]
	eng     backend // the facade's engine; used under the facade's lock
	builtAt int     // keys at the last build: the root width is revisited when the tree doubles or halves
	chunk   int     // keys per chunk of the Context calls (0: engine.ContextChunk)

	fresh func() (backend, error) // a new empty engine on the tree's placement
}

var _ engine.Reporter = (*Tree)(nil)

// Open returns an empty tree on the engine that o selects (engine.Place:
// auto, cpu, gpu or gpu:N; "" means WARPKV_DEVICE, else auto). Close it to
// free its memory and, when the tree opened it, the device. Cost: O(1) on
// the CPU engine; on the GPU engine a stream, a few buffers and the
// compilation of the kernels (cached on disk).
func Open(o Options) (*Tree, error) {
	w, err := o.workers()
	if err != nil {
		return nil, err
	}
	if o.LookupLanes != 0 && o.LookupLanes != 1 && o.LookupLanes != lookupLanes {
		return nil, fmt.Errorf("art: lookup lanes %d: want 1 or %d", o.LookupLanes, lookupLanes)
	}
	t := &Tree{}
	t.eng, t.fresh, err = engine.OpenFresh(&t.Facade, engine.Spec[backend]{
		Name: "art", Device: o.Device, GPU: o.GPU,
		Free: func(e backend) error { return e.close() },
		Last: func(e backend) engine.Timings { return e.lastBatch() },
	}, func(p engine.Placement) (backend, error) {
		if p.Backend != gpu.BackendGPU {
			return newCPUEngine(w), nil
		}
		g, err := newGPUEngine(p.Device, w)
		if err != nil {
			return nil, fmt.Errorf("art: gpu engine on %s: %w", p.Device, err)
		}
		g.(*gpuEngine).lanes = max(1, o.LookupLanes)
		return g, nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Len returns the number of keys (0 after Close). Cost: O(1).
func (t *Tree) Len() int {
	if _, err := engine.RLock(&t.Facade, "len"); err != nil {
		return 0
	}
	defer engine.RUnlock(&t.Facade)
	return t.eng.size()
}

// SetLookupLanes sets the GPU engine's lanes per key of later lookups (1
// or 8; see Options.LookupLanes); the CPU engine ignores it.
func (t *Tree) SetLookupLanes(n int) error {
	if n != 1 && n != lookupLanes {
		return fmt.Errorf("art: lookup lanes %d: want 1 or %d", n, lookupLanes)
	}
	if _, err := engine.Lock(&t.Facade, "set lookup lanes"); err != nil {
		return err
	}
	defer engine.Unlock(&t.Facade)
	if g, ok := t.eng.(*gpuEngine); ok {
		g.lanes = n
	}
	return nil
}

// Width returns the root table's width in bytes (the first Width key bytes
// are resolved by one read of a table of 256^Width links). Cost: O(1).
func (t *Tree) Width() int {
	if _, err := engine.RLock(&t.Facade, "width"); err != nil {
		return 0
	}
	defer engine.RUnlock(&t.Facade)
	return t.eng.width()
}

// Build replaces the contents with the pairs (unsorted; of equal keys the
// last wins). Cost: a sort of the batch, then one round per level of the
// new tree, each O(keys) (on the GPU engine: kernels of one thread per key
// or per node, and a transfer of the batch).
func (t *Tree) Build(keys [][]byte, values []uint64) error { return t.BuildKeys(Pack(keys), values) }

// BuildKeys is Build of a packed batch.
func (t *Tree) BuildKeys(kb Keys, values []uint64) error {
	sc, err := kb.checkScan("build", values, true)
	if err != nil {
		return err
	}
	if _, err := engine.Lock(&t.Facade, "build"); err != nil {
		return err
	}
	defer engine.Unlock(&t.Facade)
	defer t.hint(kb, sc)()
	if err := t.eng.build(kb, values); err != nil {
		return fmt.Errorf("art: build: %w", err)
	}
	t.builtAt = t.eng.size()
	return nil
}

// Insert inserts the pairs or replaces the values of present keys (of
// equal keys in the batch the last wins). Cost: a sort of the batch, one
// walk per key, the build rounds of the new subtrees and one round over the
// touched nodes (on the GPU engine all on the device); into an empty tree
// it is Build. When the tree doubles since its last build it is rebuilt
// (O(keys)) so that the root width can follow its size.
func (t *Tree) Insert(keys [][]byte, values []uint64) error { return t.InsertKeys(Pack(keys), values) }

// InsertKeys is Insert of a packed batch.
//
// On the GPU engine a large batch whose ends say its keys have one length
// is checked by the engine beside the device's work (check_later_gpu.go),
// not before the call: a bad one fails with the same error and leaves the
// tree as it was.
func (t *Tree) InsertKeys(kb Keys, values []uint64) error {
	l, later := oneLengthEnds(kb, len(values))
	var sc offsetsScan
	if !later {
		var err error
		if sc, err = kb.checkScan("insert", values, true); err != nil {
			return err
		}
	}
	if _, err := engine.Lock(&t.Facade, "insert"); err != nil {
		return err
	}
	defer engine.Unlock(&t.Facade)
	g, _ := t.eng.(*gpuEngine)
	if later && (g == nil || !g.checkLater(kb) || t.eng.size() == 0) {
		// Checked here: the CPU engine, a batch the GPU engine takes
		// whole, or a build (every build's batch is checked first).
		var err error
		if sc, err = kb.checkScan("insert", values, true); err != nil {
			return err
		}
		later = false
	}
	if later {
		sc = offsetsScan{ok: true, one: true, l: l}
	}
	defer t.hint(kb, sc)()
	if later {
		g.hint.later = true
	}
	return t.insertLocked(kb, values)
}

// hint tells a GPU engine what the check of kb learned of its keys'
// lengths (sc), for the batch call under way, so that the engine does not
// read the offsets again (lengthHint); the returned function clears it,
// for the deferred end of the call. Under the facade's write lock. Cost:
// O(1).
func (t *Tree) hint(kb Keys, sc offsetsScan) func() {
	g, ok := t.eng.(*gpuEngine)
	if !ok {
		return func() {}
	}
	g.hint = newLengthHint(kb, sc)
	return func() { g.hint = lengthHint{} }
}

// insertLocked is InsertKeys of a checked batch under the write lock (or
// of one the GPU engine checks, check_later_gpu.go: its error, a badBatch,
// is returned as the facade's check gives it).
func (t *Tree) insertLocked(kb Keys, values []uint64) error {
	if kb.Len() == 0 {
		return nil
	}
	if t.eng.size() == 0 {
		if err := t.eng.build(kb, values); err != nil {
			return fmt.Errorf("art: insert: %w", err)
		}
		t.builtAt = t.eng.size()
		return nil
	}
	if _, err := t.eng.insert(kb, values); err != nil {
		var bad badBatch
		if errors.As(err, &bad) {
			return bad.err // the check's own error, as the facade gives it
		}
		return fmt.Errorf("art: insert: %w", err)
	}
	return t.maybeRebuild("insert")
}

// Update replaces the values of the keys that are present (CuART's update:
// absent keys are not inserted) and says which were; of equal keys in the
// batch the last wins. Cost: two passes of one walk per key and a conflict
// table of 2 to 4 slots per key; no sort, no structural change.
//
// On the GPU engine the keys go from their slices straight into pinned
// memory, chunk by chunk on all cores while the chunks before are on the
// device (no packed copy on the Go heap), and the found flags are
// allocated on a goroutine of their own meanwhile.
func (t *Tree) Update(keys [][]byte, values []uint64) (found []bool, err error) {
	if _, ok := t.eng.(*gpuEngine); ok && len(values) != len(keys) {
		return nil, fmt.Errorf("art: update: %d keys but %d values", len(keys), len(values))
	}
	if done, err := t.onSlices("update", true, func(g *gpuEngine) (err error) {
		found, err = g.updateSlicesFound(keys, values)
		return err
	}); done {
		return found, err
	}
	if found == nil { // the CPU engine; past 4 GiB of keys the GPU engine allocated them
		found = make([]bool, len(keys))
	}
	return found, t.UpdateKeys(Pack(keys), values, found)
}

// wrapOp prefixes an engine's error with the operation, as the Keys
// calls do; an error that names art already is returned as it is.
func wrapOp(op string, err error) error {
	if err == nil || strings.HasPrefix(err.Error(), "art: ") {
		return err
	}
	return fmt.Errorf("art: %s: %w", op, err)
}

// UpdateKeys is Update of a packed batch into found (len kb.Len()).
func (t *Tree) UpdateKeys(kb Keys, values []uint64, found []bool) error {
	if err := kb.check("update", values, true); err != nil {
		return err
	}
	if len(found) != kb.Len() {
		return fmt.Errorf("art: update: %d keys, %d found flags", kb.Len(), len(found))
	}
	if _, err := engine.Lock(&t.Facade, "update"); err != nil {
		return err
	}
	defer engine.Unlock(&t.Facade)
	if err := t.eng.update(kb, values, found); err != nil {
		return fmt.Errorf("art: update: %w", err)
	}
	return nil
}

// Get looks up every key: values[i] is the value of keys[i] and found[i]
// whether it is present (values[i] is 0 when not). Cost: one walk per key
// (on the GPU engine one thread per key, plus a transfer each way).
//
// On the GPU engine the keys go from their slices straight into pinned
// memory, chunk by chunk on all cores while the chunks before are on the
// device (no packed copy on the Go heap), and the answers are allocated
// on a goroutine of their own meanwhile.
func (t *Tree) Get(keys [][]byte) (values []uint64, found []bool, err error) {
	if done, err := t.onSlices("lookup", false, func(g *gpuEngine) (err error) {
		values, found, err = g.getSlices(keys)
		return err
	}); done {
		return values, found, err
	}
	if values == nil { // the CPU engine; past 4 GiB of keys the GPU engine allocated them
		values, found = make([]uint64, len(keys)), make([]bool, len(keys))
	}
	return values, found, t.Lookup(Pack(keys), values, found)
}

// Lookup is Get of a packed batch into values and found (len kb.Len()).
func (t *Tree) Lookup(kb Keys, values []uint64, found []bool) error {
	if err := kb.check("lookup", nil, false); err != nil {
		return err
	}
	if len(values) != kb.Len() || len(found) != kb.Len() {
		return fmt.Errorf("art: lookup: %d keys, %d values, %d found flags", kb.Len(), len(values), len(found))
	}
	if _, err := engine.RLock(&t.Facade, "lookup"); err != nil {
		return err
	}
	defer engine.RUnlock(&t.Facade)
	if err := t.eng.lookup(kb, values, found); err != nil {
		return fmt.Errorf("art: lookup: %w", err)
	}
	return nil
}

// Delete removes the keys (absent ones are ignored) and returns how many
// distinct keys it removed. Cost: a sort of the batch, one walk per key,
// then one round over the touched nodes per level, deepest first (nodes
// shrink to smaller kinds, collapse into their last entry or disappear).
// When the tree halves since its last build it is rebuilt (O(keys)).
func (t *Tree) Delete(keys [][]byte) (int, error) { return t.DeleteKeys(Pack(keys)) }

// DeleteKeys is Delete of a packed batch.
func (t *Tree) DeleteKeys(kb Keys) (int, error) {
	sc, err := kb.checkScan("delete", nil, false)
	if err != nil {
		return 0, err
	}
	if _, err := engine.Lock(&t.Facade, "delete"); err != nil {
		return 0, err
	}
	defer engine.Unlock(&t.Facade)
	defer t.hint(kb, sc)()
	return t.deleteLocked(kb)
}

// deleteLocked is DeleteKeys of a checked batch under the write lock.
func (t *Tree) deleteLocked(kb Keys) (int, error) {
	if kb.Len() == 0 || t.eng.size() == 0 {
		return 0, nil
	}
	n, err := t.eng.remove(kb)
	if err != nil {
		return 0, fmt.Errorf("art: delete: %w", err)
	}
	return n, t.maybeRebuild("delete")
}

// maybeRebuild rebuilds the tree when it has doubled (and could use a
// wider root table) or halved (and could use a narrower one) since its
// last build. Both engines decide alike, so their layouts stay equal.
// Callers hold the write lock.
func (t *Tree) maybeRebuild(op string) error {
	n, w := t.eng.size(), t.eng.width()
	grow := w < maxWidth && n >= 2*t.builtAt && n >= widthMinKeys[w+1]
	shrink := w > 0 && 2*n < t.builtAt && n < widthMinKeys[w]
	if !grow && !shrink {
		return nil
	}
	all, err := t.eng.ranges(nil, dumpQueries(n), 0, false)
	if err != nil {
		return fmt.Errorf("art: %s: rebuild: %w", op, err)
	}
	if err := t.eng.build(all.Keys, all.Values); err != nil {
		return fmt.Errorf("art: %s: rebuild: %w", op, err)
	}
	t.builtAt = t.eng.size()
	return nil
}

// dumpQueries splits the key space into contiguous ranges (by the first
// byte, or the first two for more than 64Ki keys) so that reading every
// pair runs as many parallel queries.
func dumpQueries(n int) []Query {
	width := 1
	if n > 1<<16 {
		width = 2
	}
	bounds := make([][]byte, 0, 1<<(8*width))
	for v := range 1 << (8 * width) {
		b := make([]byte, width)
		for i := range width {
			b[width-1-i] = byte(v >> (8 * i))
		}
		bounds = append(bounds, b)
	}
	qs := make([]Query, 0, len(bounds)+1)
	qs = append(qs, Query{Lo: nil, Hi: bounds[0]})
	for i, b := range bounds {
		var hi []byte
		if i+1 < len(bounds) {
			hi = bounds[i+1]
		}
		qs = append(qs, Query{Lo: b, Hi: hi})
	}
	return qs
}

// Range returns the pairs with lo <= key < hi in ascending key order, at
// most limit (limit <= 0: all); hi nil means no upper bound (a non-nil
// empty hi bounds everything out). Cost: a seek (one walk) and O(1)
// amortized node steps per pair (on the GPU engine one thread per query).
func (t *Tree) Range(lo, hi []byte, limit int) (keys [][]byte, values []uint64, err error) {
	r, err := t.Ranges([]Query{{Lo: lo, Hi: hi}}, limit)
	if err != nil {
		return nil, nil, err
	}
	keys, values = r.Query(0)
	return keys, values, nil
}

// Ranges answers many range queries, each as Range with the same limit.
// With a limit (and at most 2^24 queries x limit) each query is walked
// once, its leaves kept in slots of the limit's size, then the pairs are
// written at their offsets (prefix sums of the counts); without one, in
// two passes (count each query's pairs, prefix sums, write them). Cost:
// the queries' Range cost (twice without a limit), over the workers; on
// the GPU engine one thread per query walking, a warp per query reading
// the leaves and writing the pairs.
func (t *Tree) Ranges(qs []Query, limit int) (*Result, error) {
	return t.query("ranges", nil, qs, limit, false)
}

// RangesInto is Ranges answering into r, whose arrays it reuses where they
// have the room (r's earlier answers and the key views into them are
// overwritten): a caller that runs batch after batch allocates, and the
// runtime zeroes, the answer's memory once rather than every call. It
// returns r.
func (t *Tree) RangesInto(r *Result, qs []Query, limit int) (*Result, error) {
	return t.query("ranges", r, qs, limit, false)
}

// RangesDesc is Ranges in descending key order: each query's largest keys
// below Hi first, down to Lo.
func (t *Tree) RangesDesc(qs []Query, limit int) (*Result, error) {
	return t.query("ranges", nil, qs, limit, true)
}

// RangesDescInto is RangesDesc answering into r, as RangesInto.
func (t *Tree) RangesDescInto(r *Result, qs []Query, limit int) (*Result, error) {
	return t.query("ranges", r, qs, limit, true)
}

// Prefix answers prefix queries: query i's pairs are those whose key
// starts with prefixes[i], ascending, at most limit each. Cost: as Ranges
// (a prefix is the range [p, the smallest key past every key starting
// with p)).
func (t *Tree) Prefix(prefixes [][]byte, limit int) (*Result, error) {
	return t.PrefixInto(nil, prefixes, limit)
}

// PrefixInto is Prefix answering into r, as RangesInto (nil r: a new
// Result).
func (t *Tree) PrefixInto(r *Result, prefixes [][]byte, limit int) (*Result, error) {
	return t.answer("prefix", r, len(prefixes), func(e backend) (*Result, error) {
		if pe, ok := e.(prefixer); ok {
			return pe.prefix(r, prefixes, limit)
		}
		return rangesChecked(e, r, prefixQueries(prefixes), limit, false)
	})
}

// query runs a batch of queries for op into into (nil: a new Result).
func (t *Tree) query(op string, into *Result, qs []Query, limit int, desc bool) (*Result, error) {
	return t.answer(op, into, len(qs), func(e backend) (*Result, error) { return rangesChecked(e, into, qs, limit, desc) })
}

// rangesChecked is e.ranges after the check of the bounds' lengths,
// unless e checks them as it packs them (boundChecker).
func rangesChecked(e backend, into *Result, qs []Query, limit int, desc bool) (*Result, error) {
	if !checksBounds(e) {
		if err := checkBounds(qs); err != nil {
			return nil, err
		}
	}
	return e.ranges(into, qs, limit, desc)
}

// answer runs run, a batch of n queries for op into into (nil: a new
// Result), on the engine under the facade's read lock; no queries answer
// an empty Result.
func (t *Tree) answer(op string, into *Result, n int, run func(e backend) (*Result, error)) (*Result, error) {
	e, err := engine.RLock(&t.Facade, op)
	if err != nil {
		return nil, err
	}
	defer engine.RUnlock(&t.Facade)
	if n == 0 {
		r, err := sizeResult(into, 0, 0, 0)
		if err != nil {
			return nil, fmt.Errorf("art: %s: %w", op, err)
		}
		r.Offsets[0] = 0
		return r, nil
	}
	r, err := run(e)
	if err != nil {
		return nil, fmt.Errorf("art: %s: %w", op, err)
	}
	return r, nil
}

// Check verifies every invariant of the layout (see store.check); tests
// call it after every batch. Cost: O(tree), plus a download of the device
// arrays on the GPU engine.
func (t *Tree) Check() error {
	if _, err := engine.RLock(&t.Facade, "check"); err != nil {
		return err
	}
	defer engine.RUnlock(&t.Facade)
	s, err := t.eng.snapshot()
	if err != nil {
		return fmt.Errorf("art: check: %w", err)
	}
	if err := s.check(); err != nil {
		return fmt.Errorf("art: check (%s engine): %w", t.Backend(), err)
	}
	return nil
}
