package hashindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// op is one call of a test script.
type op struct {
	kind   string // "insert", "delete" or "search"
	hashes []uint64
	locs   []uint32
}

// script returns steps random calls over a pool of keys: inserts (with
// keys repeated within and across batches), deletes (half with the key's
// last inserted location, half with another) and searches, of the given
// batch sizes. Locations are fresh for every insert job.
func script(r *rand.Rand, pool []uint64, steps int, sizes []int) []op {
	last := map[uint64]uint32{}
	next := uint32(1)
	var out []op
	for range steps {
		n := sizes[r.IntN(len(sizes))]
		o := op{hashes: make([]uint64, n), locs: make([]uint32, n)}
		for j := range o.hashes {
			o.hashes[j] = pool[r.IntN(len(pool))]
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
		out = append(out, o)
	}
	return out
}

// run applies one op and returns its outputs.
func (o op) run(t testing.TB, ix *Index) (dropped []Dropped, found []bool, locs []uint32) {
	t.Helper()
	switch o.kind {
	case "insert":
		return mustInsert(t, ix, o.hashes, o.locs), nil, nil
	case "delete":
		return nil, mustDelete(t, ix, o.hashes, o.locs), nil
	default:
		return nil, nil, mustSearch(t, ix, o.hashes)
	}
}

// TestEnginesAgree runs one random script of inserts, deletes and searches
// on the CPU engine with one goroutine (every batch in order), with several
// goroutines (large batches grouped by partition) and on the GPU (whole
// batches and pipelined chunks), up to 97% load, and checks that every
// output and the tables, word for word, are the same after every call.
func TestEnginesAgree(t *testing.T) {
	configs := []struct {
		name string
		opts Options
		pool int // keys in play; 0: 1.25 times the capacity, to reach full load
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
		t.Run(c.name, func(t *testing.T) {
			r := newRand(t)
			capacity := max(c.opts.Buckets, 2) * CellsPerBucket
			if c.pool == 0 {
				c.pool = capacity + capacity/4
			}
			pool := newKeySet(r).hashes(c.pool, nil)
			cpu := func(w int) testEngine {
				return testEngine{name: fmt.Sprintf("cpu(%d workers)", w), opts: func(o Options) Options {
					o.Device, o.Workers = "cpu", w
					return o
				}}
			}
			engines := []testEngine{cpu(1), cpu(7)}
			engines = append(engines, testEngines(t)[1:]...)
			engines = append(engines, gpuVariants(t)...)
			ixs := make([]*Index, len(engines))
			for i, e := range engines {
				ixs[i] = newIndex(t, e, c.opts)
			}
			for step, o := range script(r, pool, steps, sizes) {
				d0, f0, l0 := o.run(t, ixs[0])
				t0 := mustSnapshot(t, ixs[0])
				for i, ix := range ixs[1:] {
					d, f, l := o.run(t, ix)
					name := engines[i+1].name
					if !slices.Equal(d, d0) || !slices.Equal(f, f0) || !slices.Equal(l, l0) {
						t.Fatalf("step %d (%s of %d): %s outputs differ from %s", step, o.kind, len(o.hashes), name, engines[0].name)
					}
					if tab := mustSnapshot(t, ix); !slices.Equal(tab, t0) {
						i := 0
						for tab[i] == t0[i] {
							i++
						}
						t.Fatalf("step %d (%s of %d): %s table differs from %s first at word %d (bucket %d): %#x vs %#x",
							step, o.kind, len(o.hashes), name, engines[0].name, i, i/BucketWords, tab[i], t0[i])
					}
					if st, st0 := ix.Stats(), ixs[0].Stats(); st != st0 {
						t.Fatalf("step %d: %s stats %+v, %s %+v", step, name, st, engines[0].name, st0)
					}
				}
				checkTable(t, ixs[0])
			}
			st := ixs[0].Stats()
			t.Logf("final load %.3f, stats %+v", float64(st.Entries)/float64(capacity), st)
		})
	}
}
