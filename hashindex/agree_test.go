package hashindex

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/enginetest"
)

// The differential tests: random scripts of inserts, deletes and searches
// go, through internal/enginetest, to the CPU engine with one goroutine
// (the reference: every batch in order) and to every other engine (the
// CPU engine with several goroutines, the GPU engine, the GPU engine with
// small chunks), driven through the slice calls, the staged calls or both
// alternately; every output, the stats and the table, word for word, must
// equal the reference's after every call, and every table keeps the
// index's invariants.

// op is one call of a test script.
type op struct {
	kind   string // "insert", "delete" or "search"
	hashes []uint64
	locs   []uint32
}

// outcome is what an index answers to an op, and its state after it.
type outcome struct {
	dropped []Dropped
	found   []bool
	locs    []uint32
	stats   Stats
	table   []uint32
}

// compareOutcomes describes how got differs from want ("" when equal).
func compareOutcomes(want, got outcome) string {
	switch {
	case !slices.Equal(want.dropped, got.dropped):
		return fmt.Sprintf("dropped %d locations, want %d", len(got.dropped), len(want.dropped))
	case !slices.Equal(want.found, got.found):
		return "found flags differ"
	case !slices.Equal(want.locs, got.locs):
		return "search results differ"
	case want.stats != got.stats:
		return fmt.Sprintf("stats %+v, want %+v", got.stats, want.stats)
	case !slices.Equal(want.table, got.table):
		i := 0
		for want.table[i] == got.table[i] {
			i++
		}
		return fmt.Sprintf("table differs first at word %d (bucket %d): %#x, want %#x", i, i/BucketWords, got.table[i], want.table[i])
	}
	return ""
}

// stagedMode is how a test index is driven.
type stagedMode int

const (
	viaSlices stagedMode = iota // Search, Insert, Delete
	viaStaged                   // SearchStaged, InsertStaged, DeleteStaged with found
	viaMixed                    // alternately slices and staged calls, DeleteStaged without found
)

func (m stagedMode) String() string { return [...]string{"slices", "staged", "mixed"}[m] }

// driven is an index under test and how it is driven.
type driven struct {
	ix   *Index
	st   *Staging // nil for viaSlices
	mode stagedMode
	step int
}

func (d *driven) Apply(o op) (outcome, error) {
	staged := d.mode == viaStaged || (d.mode == viaMixed && d.step%2 == 1)
	d.step++
	var out outcome
	var err error
	if staged {
		err = o.applyStaged(&out, d.ix, d.st, d.mode == viaStaged)
	} else {
		err = o.apply(&out, d.ix)
	}
	if err != nil {
		return outcome{}, err
	}
	out.stats = d.ix.Stats()
	out.table, err = d.ix.Snapshot()
	return out, err
}

// Check verifies the table's invariants (tableErr).
func (d *driven) Check() error { return tableErr(d.ix) }

func (d *driven) Close() error {
	var err error
	if d.st != nil {
		err = d.st.Free()
	}
	return errors.Join(err, d.ix.Close())
}

// apply runs o through the slice calls.
func (o op) apply(out *outcome, ix *Index) error {
	var err error
	switch o.kind {
	case "insert":
		out.dropped, err = ix.Insert(o.hashes, o.locs, nil)
	case "delete":
		out.found = make([]bool, len(o.hashes))
		err = ix.Delete(o.hashes, o.locs, out.found)
	default:
		out.locs = make([]uint32, len(o.hashes))
		for i := range out.locs {
			out.locs[i] = poison
		}
		err = ix.Search(o.hashes, out.locs)
	}
	return err
}

// poison is written to outputs before each call, so that an output the
// call did not write shows.
const poison = 0xDEADBEEF

// applyStaged runs o through the staged calls on st: its jobs are copied
// into st and the outputs poisoned first. With withFound false,
// DeleteStaged gets no found slice and the flags come from st.Out(). The
// staging's inputs must come back unchanged.
func (o op) applyStaged(out *outcome, ix *Index, st *Staging, withFound bool) error {
	n := len(o.hashes)
	if n > st.Cap() {
		return fmt.Errorf("test bug: %d jobs in a staging of %d", n, st.Cap())
	}
	copy(st.Hashes(), o.hashes)
	copy(st.Locs(), o.locs)
	for i := range st.Out()[:n] {
		st.Out()[i] = poison
	}
	switch o.kind {
	case "insert":
		d, err := ix.InsertStaged(st, n, nil)
		if err != nil {
			return err
		}
		out.dropped = d
	case "delete":
		out.found = make([]bool, n)
		var arg []bool
		if withFound {
			arg = out.found
		}
		if err := ix.DeleteStaged(st, n, arg); err != nil {
			return err
		}
		for i, f := range st.Out()[:n] {
			if f > 1 || (withFound && (f == 1) != out.found[i]) {
				return fmt.Errorf("delete job %d: flag %#x in Out, found %v", i, f, out.found[i])
			}
			out.found[i] = f == 1
		}
	default:
		if err := ix.SearchStaged(st, n); err != nil {
			return err
		}
		out.locs = slices.Clone(st.Out()[:n])
	}
	if !slices.Equal(st.Hashes()[:n], o.hashes) || (o.kind != "search" && !slices.Equal(st.Locs()[:n], o.locs)) {
		return fmt.Errorf("%s staged changed the staging's inputs", o.kind)
	}
	return nil
}

// engineSpec is an engine the differential tests drive.
type engineSpec struct {
	name    string
	gpu     bool
	workers int // host goroutines (0: GOMAXPROCS)
	chunk   int // GPU: jobs per chunk of host-level calls (0: the defaults)
}

// agreeEngines are the targets of the random scripts: the CPU engine with
// 7 goroutines, the GPU engine and the GPU engine cut into chunks of 1000
// and 5000 jobs (pipelined over three streams, grouped in one block or by
// the radix sort, which default settings do only for batches over a
// million jobs).
var agreeEngines = []engineSpec{
	{name: "cpu(7 workers)", workers: 7},
	{name: "gpu", gpu: true, workers: 7},
	{name: "gpu, 1000-job chunks", gpu: true, workers: 7, chunk: 1000},
	{name: "gpu, 5000-job chunks", gpu: true, workers: 7, chunk: 5000},
}

// agreeSuite returns the suite of indexes of opts: the reference is the
// CPU engine with refWorkers goroutines driven through the slice calls;
// the targets are the engines, each in every mode of modes, with
// stagings of capacity jobs.
func agreeSuite(opts Options, refWorkers int, engines []engineSpec, modes []stagedMode, capacity int) enginetest.Suite[op, outcome, *driven] {
	open := func(e engineSpec, dev *gpu.Device, mode stagedMode) (*driven, error) {
		o := opts
		o.Device, o.Workers, o.GPU = "cpu", e.workers, dev
		ix, err := Open(o)
		if err != nil {
			return nil, err
		}
		if e.chunk > 0 {
			ix.gpu.chunkJobs, ix.gpu.stagedChunkJobs = e.chunk, e.chunk
		}
		d := &driven{ix: ix, mode: mode}
		if mode != viaSlices {
			if d.st, err = ix.NewStaging(capacity); err != nil {
				return nil, errors.Join(err, ix.Close())
			}
		}
		return d, nil
	}
	var targets []enginetest.Target[op, outcome]
	for _, e := range engines {
		for _, m := range modes {
			targets = append(targets, enginetest.Target[op, outcome]{
				Name: e.name + ", " + m.String(), GPU: e.gpu,
				Open: func(_ testing.TB, dev *gpu.Device) (enginetest.Subject[op, outcome], error) { return open(e, dev, m) },
			})
		}
	}
	return enginetest.Suite[op, outcome, *driven]{
		NewModel: func() *driven {
			d, err := open(engineSpec{name: "reference", workers: refWorkers}, nil, viaSlices)
			if err != nil {
				panic(err) // the CPU engine of a valid configuration cannot fail to open
			}
			return d
		},
		Targets: targets,
		Compare: compareOutcomes,
	}
}

// scriptCase returns a case of steps random calls over a pool of pool
// keys (0: 1.25 times the capacity of opts, to reach full load): inserts
// (keys repeated within and across batches, locations fresh for every
// job), deletes (half with the key's last inserted location, half with
// another) and searches, of the given batch sizes.
func scriptCase(name string, opts Options, pool, steps int, sizes []int) enginetest.Case[op, *driven] {
	if pool == 0 {
		capacity := max(opts.Buckets, 2) * CellsPerBucket
		pool = capacity + capacity/4
	}
	var keys []uint64
	last := map[uint64]uint32{}
	next := uint32(1)
	return enginetest.Case[op, *driven]{Name: name, Batches: steps, Gen: func(r *rand.Rand, step int, _ *driven) op {
		if step == 0 {
			keys = newKeySet(r).hashes(pool, nil)
		}
		n := sizes[r.IntN(len(sizes))]
		o := op{hashes: make([]uint64, n), locs: make([]uint32, n)}
		for j := range o.hashes {
			o.hashes[j] = keys[r.IntN(len(keys))]
		}
		switch x := r.IntN(10); {
		case x < 6:
			o.kind = "insert"
			for j, h := range o.hashes {
				o.locs[j] = next
				last[h] = next
				next++
			}
		case x < 8:
			o.kind = "delete"
			for j, h := range o.hashes {
				if l, ok := last[h]; ok && r.IntN(2) == 0 {
					o.locs[j] = l
				} else {
					o.locs[j] = r.Uint32N(next + 1)
				}
			}
		default:
			o.kind = "search"
		}
		return o
	}}
}

// TestEnginesAgree runs random scripts through the slice calls on every
// engine, up to 97% load, in several table geometries.
func TestEnginesAgree(t *testing.T) {
	configs := []struct {
		name string
		opts Options
		pool int
	}{
		{"default", Options{Buckets: 1 << 14}, 0},
		{"pair partitions", Options{Buckets: 1 << 14, PartitionBits: 1}, 0},
		{"one partition", Options{Buckets: 1 << 12, PartitionBits: 12, MaxDisplacements: 32}, 0},
		{"no displacement", Options{Buckets: 1 << 13, MaxDisplacements: -1}, 0},
		{"two buckets", Options{Buckets: 2}, 0},
		// Batches far smaller than the partition count: grouped by
		// comparison sort.
		{"many partitions", Options{Buckets: 1 << 19, PartitionBits: 1}, 1 << 16},
	}
	sizes := []int{1, 31, 33, 1000, 1 << 14, 1 << 17}
	steps := 40
	if testing.Short() {
		sizes, steps = sizes[:5], 20
	}
	for _, c := range configs {
		enginetest.Run(t, agreeSuite(c.opts, 1, agreeEngines, []stagedMode{viaSlices}, 0), scriptCase(c.name, c.opts, c.pool, steps, sizes))
	}
}

// TestStagedAgree runs random scripts of sizes 0, 1, small and larger than
// the chunks of the GPU variants through the slice calls, the staged calls
// and both alternately, on every engine.
func TestStagedAgree(t *testing.T) {
	configs := []struct {
		name string
		opts Options
		pool int
	}{
		{"default", Options{Buckets: 1 << 13}, 0},
		{"many partitions", Options{Buckets: 1 << 16, PartitionBits: 1}, 1 << 15},
	}
	sizes := []int{0, 1, 33, 1000, 5000, 1 << 14}
	steps := 40
	if testing.Short() {
		steps = 20
	}
	modes := []stagedMode{viaSlices, viaStaged, viaMixed}
	for _, c := range configs {
		enginetest.Run(t, agreeSuite(c.opts, 1, agreeEngines, modes, slices.Max(sizes)), scriptCase(c.name, c.opts, c.pool, steps, sizes))
	}
}

// TestStagedLarge runs a batch larger than the default chunks of both
// call kinds (pipeChunk, stagedChunk) through insert, search and delete,
// staged and as slices, on every engine.
func TestStagedLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large batches skipped under -short")
	}
	n := max(pipeChunk, stagedChunk) + 5
	opts := Options{Buckets: 1 << 20} // 8 Mi cells: load about one half
	var keys, hashes []uint64
	gen := func(r *rand.Rand, step int, _ *driven) op {
		if step == 0 {
			keys = newKeySet(r).hashes(n-n/8, nil)
			hashes = append(slices.Clone(keys), keys[:n/8]...) // an eighth of the keys twice: overwrites
			r.Shuffle(n, func(i, j int) { hashes[i], hashes[j] = hashes[j], hashes[i] })
		}
		switch step {
		case 0:
			return op{kind: "insert", hashes: hashes, locs: seq(1, n)}
		case 1:
			return op{kind: "search", hashes: append(slices.Clone(keys[:n/2]), newKeySet(r).hashes(n-n/2, nil)...)}
		case 2:
			return op{kind: "delete", hashes: hashes, locs: seq(1, n)} // overwritten locations miss
		}
		return op{kind: "search", hashes: keys}
	}
	engines := []engineSpec{{name: "cpu"}, {name: "gpu", gpu: true}}
	s := agreeSuite(opts, 0, engines, []stagedMode{viaSlices, viaStaged, viaMixed}, n)
	enginetest.Run(t, s, enginetest.Case[op, *driven]{Name: "large", Batches: 4, Gen: gen})
}
