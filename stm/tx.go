package stm

import (
	"fmt"
	"math"
	"runtime"
)

// smallSet is the size up to which a transaction's sets are searched
// linearly; larger sets use a map.
const smallSet = 16

// Tx is one attempt of a transaction, handed to the closure of Atomically
// or ReadOnly. It is valid only inside that closure and only on the
// goroutine running it. Reads see the store as of the transaction's
// snapshot (and its own earlier writes); writes are buffered until commit.
type Tx struct {
	s    *Store
	snap uint64
	ro   bool
	ts   uint64 // commit timestamp once committed

	reads  []uint32 // items read from the store (not from own writes), in order
	rvals  []uint64 // their values, when recording
	witems []uint32 // items written, in first-write order
	wvals  []uint64 // their newest values
	windex map[uint32]int32

	order []uint64 // commit: item<<32 | write index, in item order
	wold  []uint64 // commit: the words of the items locked so far

	stats *stripe     // where its commits and aborts are counted
	log   *versionLog // where its commits log the versions they replace (nil: K = 1)
	logNo uint64      // log's number
	tm    *phaseTimes // nil unless timing
}

// abortSignal unwinds a closure whose transaction cannot go on.
type abortSignal struct{ cause Cause }

func (tx *Tx) begin(ro bool) {
	tx.snap = tx.s.clock.Load()
	tx.ro = ro
	tx.ts = 0
	tx.reads, tx.rvals = tx.reads[:0], tx.rvals[:0]
	tx.witems, tx.wvals = tx.witems[:0], tx.wvals[:0]
	if tx.windex != nil {
		clear(tx.windex)
	}
}

// Snapshot returns the timestamp of the state the transaction reads.
func (tx *Tx) Snapshot() uint64 { return tx.snap }

// Read returns item i as of the transaction's snapshot, or the value the
// transaction last wrote to it. It panics if i is outside the store. When
// the item no longer keeps a version that old, the attempt is abandoned and
// retried with a fresh snapshot. Cost: O(K) plus a lookup in the write set.
func (tx *Tx) Read(i int) uint64 {
	s := tx.s
	if uint(i) >= uint(len(s.items)) {
		s.checkItem(i)
	}
	if len(tx.witems) > 0 {
		if j := tx.findWrite(uint32(i)); j >= 0 {
			return tx.wvals[j]
		}
	}
	var v uint64
	// The newest version, free and not newer than the snapshot (a locked
	// word is above every snapshot): readAt's first case, inlined.
	it := &s.items[i]
	if w := it.word.Load(); w <= tx.snap && !s.yield {
		v = it.val.Load()
		if it.word.Load() != w {
			v = tx.readSlow(i)
		}
	} else {
		v = tx.readSlow(i)
	}
	if !tx.ro || s.record {
		tx.reads = append(tx.reads, uint32(i))
		if s.record {
			tx.rvals = append(tx.rvals, v)
		}
	}
	return v
}

// readSlow reads item i at the snapshot through readAt, abandoning the
// attempt when the version is gone.
func (tx *Tx) readSlow(i int) uint64 {
	if tx.s.yield {
		runtime.Gosched()
	}
	v, ok := tx.s.readAt(i, tx.snap)
	if !ok {
		panic(abortSignal{SnapshotTooOld})
	}
	return v
}

// Write sets item i to v for the rest of the transaction and, if it
// commits, for everyone after it. It panics in a read-only transaction or
// if i is outside the store. Cost: a lookup in the write set.
func (tx *Tx) Write(i int, v uint64) {
	tx.s.checkItem(i)
	if tx.ro {
		panic(fmt.Sprintf("stm: Write(%d) in a read-only transaction", i))
	}
	if j := tx.findWrite(uint32(i)); j >= 0 {
		tx.wvals[j] = v
		return
	}
	tx.witems = append(tx.witems, uint32(i))
	tx.wvals = append(tx.wvals, v)
	if tx.windex != nil {
		tx.windex[uint32(i)] = int32(len(tx.witems) - 1)
	} else if len(tx.witems) > smallSet {
		tx.windex = make(map[uint32]int32, 2*smallSet)
		for j, it := range tx.witems {
			tx.windex[it] = int32(j)
		}
	}
}

// Add adds delta to item i (wrapping) and returns the new value.
func (tx *Tx) Add(i int, delta uint64) uint64 {
	v := tx.Read(i) + delta
	tx.Write(i, v)
	return v
}

// ReadInt reads item i as a two's complement int64.
func (tx *Tx) ReadInt(i int) int64 { return int64(tx.Read(i)) }

// WriteInt writes v to item i as a two's complement int64.
func (tx *Tx) WriteInt(i int, v int64) { tx.Write(i, uint64(v)) }

// ReadFloat reads item i as the bits of a float64.
func (tx *Tx) ReadFloat(i int) float64 { return math.Float64frombits(tx.Read(i)) }

// WriteFloat writes v to item i as the bits of a float64.
func (tx *Tx) WriteFloat(i int, v float64) { tx.Write(i, math.Float64bits(v)) }

// findWrite returns the write set index of item i, or -1.
func (tx *Tx) findWrite(i uint32) int {
	if tx.windex != nil {
		if j, ok := tx.windex[i]; ok {
			return int(j)
		}
		return -1
	}
	for j, it := range tx.witems {
		if it == i {
			return j
		}
	}
	return -1
}
