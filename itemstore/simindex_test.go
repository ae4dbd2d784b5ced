package itemstore

import "sync/atomic"

// simIndex is the hash index the concurrent tests simulate: one atomic
// location a key number (NotFound while the key has none), and the key
// number of every key's hash, to find the keys of the victims an Alloc or a
// page move names.
type simIndex struct {
	locs      []atomic.Uint32
	keyOfHash map[uint64]int
}

// newSimIndex returns an empty simIndex of key numbers 0 to keys-1.
func newSimIndex(keys int) *simIndex {
	x := &simIndex{locs: make([]atomic.Uint32, keys), keyOfHash: make(map[uint64]int, keys)}
	for k := range keys {
		x.locs[k].Store(NotFound)
		x.keyOfHash[hashOf(k)] = k
	}
	return x
}

// drop clears the locations of victims, each only while it still holds the
// victim's (a writer may have replaced it since).
func (x *simIndex) drop(victims []Victim) {
	for _, v := range victims {
		x.locs[x.keyOfHash[v.Hash]].CompareAndSwap(v.Loc, NotFound)
	}
}

// publish links r, written for key number k, in s, points k's location at
// it and unlinks the item it replaced. The old location may be r's own when
// the sweep reused the key's previous chunk: that one is never unlinked.
func (x *simIndex) publish(s *Store, k int, r Ref) {
	s.Link(r)
	if old := x.locs[k].Swap(r.Loc()); old != NotFound && old != r.Loc() {
		s.Unlink(old, hashOf(k))
	}
}

// write allocates key number k's item (a valueLen-byte value, flags,
// exptime and CAS ver, at now), fills the value with version ver
// (fillValue), publishes it and releases the writer's reference. victims
// is scratch for the items the Alloc evicted, whose locations it drops
// even when the Alloc fails; it is returned for the next call, with the
// Alloc's error (ErrOutOfMemory, for one: nothing was written).
func (x *simIndex) write(s *Store, k, valueLen int, flags uint32, exptime int64, ver uint64, now int64, victims []Victim) ([]Victim, error) {
	r, victims, err := s.Alloc(hashOf(k), keyOf(k), valueLen, flags, exptime, ver, now, victims[:0])
	x.drop(victims)
	if err != nil {
		return victims, err
	}
	fillValue(r.Value(), k, ver)
	x.publish(s, k, r)
	r.Release()
	return victims, nil
}
