package mpt

import (
	"fmt"
	"time"
)

// Values holds the answers of LookupInto in two flat slices: the value of
// key i is Data[Offs[i]:Offs[i+1]], an empty range when the key is absent
// (stored values are never empty). Reusing one Values across lookups
// reuses its slices: once they have grown to a batch's size, a lookup
// allocates nothing per key.
type Values struct {
	Data []byte
	Offs []uint64
}

// Len returns the number of keys answered. Cost: O(1).
func (v *Values) Len() int { return max(0, len(v.Offs)-1) }

// Get returns the value of key i, which aliases Data, and whether the key
// is present. Cost: O(1).
func (v *Values) Get(i int) ([]byte, bool) {
	lo, hi := v.Offs[i], v.Offs[i+1]
	return v.Data[lo:hi:hi], hi > lo
}

// LookupInto looks up every key and writes the values back to back into
// out (see Values), reusing out's slices when large enough: unlike Lookup,
// it allocates nothing per key, and values are copies that
// stay valid whatever happens to the trie. Cost: on the CPU engines one
// walk per key (on Workers goroutines on the parallel engine) and a copy
// of every value; on the GPU engine the keys' upload, one thread per key,
// a scan placing the values, and one download of their bytes into
// out.Data through pinned chunks.
func (t *Trie) LookupInto(keys [][]byte, out *Values) error {
	e, err := t.lock("lookup")
	if err != nil {
		return err
	}
	defer t.unlock()
	if err := e.lookupInto(keys, out); err != nil {
		return fmt.Errorf("mpt: lookup on the %s engine: %w", t.opts.Engine, err)
	}
	return nil
}

// lookupInto is LookupInto on the CPU engines: the walks (on Workers
// goroutines on the parallel engine) collect the values, a prefix sum
// places them, and the copies run on the same goroutines.
func (t *cpuTrie) lookupInto(keys [][]byte, out *Values) error {
	defer t.timed("lookup", len(keys), time.Now())
	n := len(keys)
	out.Offs = resize(out.Offs, n+1)
	found := resize(t.found, n) // the values found, aliasing the trie
	t.forEach(n, func(h *hasher, lo, hi int) {
		for i := lo; i < hi; i++ {
			key := keys[i]
			if t.secure {
				sum := h.sum(key)
				key = sum[:]
			}
			found[i], _ = lookup(t.root, key)
		}
	})
	total := uint64(0)
	for i, v := range found {
		out.Offs[i] = total
		total += uint64(len(v))
	}
	out.Offs[n] = total
	out.Data = resize(out.Data, int(total))
	t.forEach(n, func(_ *hasher, lo, hi int) {
		for i := lo; i < hi; i++ {
			copy(out.Data[out.Offs[i]:], found[i])
		}
	})
	clear(found) // no references into the trie outlive the call
	t.found = found
	return nil
}
