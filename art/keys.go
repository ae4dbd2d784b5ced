package art

import (
	"fmt"
	"unsafe"

	"github.com/warpkv/warpkv/internal/par"
)

// Keys is a batch of byte-string keys packed in one buffer, the form every
// engine takes: key i is Data[Offs[i]:Offs[i+1]], so Offs has one more
// element than there are keys (an empty Offs is an empty batch). Keys
// holds no pointers besides its two slices, so a batch of millions of
// keys costs the garbage collector nothing to scan. Past 4 GiB of Data the
// offsets wrap modulo 2^32 (Pack writes them so); since no key is longer
// than MaxKeyLen, they still say where every key is, and the batch calls
// (build, insert, update, lookup, delete) take such a batch in chunks; At
// and Unpack need a batch of at most 4 GiB.
type Keys struct {
	Data []byte
	Offs []uint32
}

// Pack packs keys into one buffer. Cost: one copy of the keys (on
// GOMAXPROCS goroutines for large batches).
func Pack(keys [][]byte) Keys { return packFunc(len(keys), func(i int) []byte { return keys[i] }) }

// PackStrings packs string keys into one buffer. Cost: one copy (on
// GOMAXPROCS goroutines for large batches).
func PackStrings(keys []string) Keys {
	return packFunc(len(keys), func(i int) []byte { return unsafe.Slice(unsafe.StringData(keys[i]), len(keys[i])) })
}

// packMinPart is the fewest keys one goroutine of packFunc handles.
const packMinPart = 1 << 15

// packFunc packs the n keys key(i) (read only): each part of the keys sums
// its lengths, the parts' starts are summed in order, then each part writes
// its offsets and copies its bytes. Cost: two passes over the keys, split
// over the workers.
func packFunc(n int, key func(i int) []byte) Keys {
	parts := par.Parts(n, packMinPart, 0)
	start := make([]int, parts+1)
	par.Ranges(n, parts, func(p, lo, hi int) {
		t := 0
		for i := lo; i < hi; i++ {
			t += len(key(i))
		}
		start[p+1] = t
	})
	for p := range parts {
		start[p+1] += start[p]
	}
	// Past 4 GiB of keys the offsets wrap: the engines split such a batch
	// into chunks (chunks.go).
	out := Keys{Data: make([]byte, start[parts]), Offs: make([]uint32, n+1)}
	par.Ranges(n, parts, func(p, lo, hi int) {
		o := start[p]
		for i := lo; i < hi; i++ {
			out.Offs[i] = uint32(o)
			o += copy(out.Data[o:], key(i))
		}
	})
	out.Offs[n] = uint32(start[parts])
	return out
}

// Len is the number of keys.
func (k Keys) Len() int {
	if len(k.Offs) == 0 {
		return 0
	}
	return len(k.Offs) - 1
}

// At returns key i (a view into Data).
func (k Keys) At(i int) []byte { return k.Data[k.Offs[i]:k.Offs[i+1]:k.Offs[i+1]] }

// Unpack returns the keys as separate slices (views into Data).
func (k Keys) Unpack() [][]byte {
	out := make([][]byte, k.Len())
	for i := range out {
		out[i] = k.At(i)
	}
	return out
}

// check validates a batch for op: offsets in order and within Data, every
// key at most MaxKeyLen bytes, and n values when values is not nil. A
// batch of more than 4 GiB of key bytes (offsets wrapped) passes when its
// keys' lengths do; the engines split it (chunks.go) and check its end. Cost:
// one pass over the offsets on GOMAXPROCS new goroutines (scanOffsets), one
// unsigned subtraction per key; a failing batch is scanned again in order
// to name its first bad key.
func (k Keys) check(op string, values []uint64, withValues bool) error {
	_, err := k.checkScan(op, values, withValues)
	return err
}

// checkScan is check, and also returns what its pass learned of the
// lengths: sc.one when every key is sc.l bytes and the first starts at
// byte 0 (the GPU engine then writes the offsets on the device instead of
// reading them again: lengthHint). Cost: as check.
func (k Keys) checkScan(op string, values []uint64, withValues bool) (sc offsetsScan, err error) {
	n := k.Len()
	if withValues && len(values) != n {
		return sc, fmt.Errorf("art: %s: %d keys but %d values", op, n, len(values))
	}
	if k.isLong() {
		// Offsets past 4 GiB wrap (chunks.go); the chunking checks their end.
		if sc = scanOffsets(k.Offs, 0); sc.ok {
			return sc, nil
		}
		return sc, fmt.Errorf("art: %s: a key's offsets decrease or it is over %d bytes", op, MaxKeyLen)
	}
	if n == 0 {
		return offsetsScan{ok: true}, nil
	}
	if int(k.Offs[n]) <= len(k.Data) {
		if sc = scanOffsets(k.Offs, 0); sc.ok {
			return sc, nil
		}
	}
	return offsetsScan{}, k.firstBad(op)
}

// checkMinPart is the fewest keys one goroutine of scanOffsets checks.
const checkMinPart = 1 << 16

// offsetsPart's shift by 16 holds only for MaxKeyLen = 2^16 - 1.
var _ [MaxKeyLen - (1<<16 - 1)]struct{}
var _ [(1<<16 - 1) - MaxKeyLen]struct{}

// offsetsScan is what one pass over a batch's offsets learns: ok when
// every key ends at or after its start and is at most MaxKeyLen bytes (the
// offsets then rise, so the last one bounds them all); one when, besides,
// every key is l bytes and the first starts at 0.
type offsetsScan struct {
	ok, one bool
	l       uint32
}

// scanOffsets checks the keys of offs (offsets of len(offs)-1 keys) and
// learns on the way whether every key has the first one's length
// (offsetsScan). workers <= 0 means GOMAXPROCS. Cost: one read of offs, split over that many new
// goroutines (par.Ranges); new goroutines, not par.Shared's workers,
// because a 40 MB scan measured at one core's rate on those (ains8, ains9).
func scanOffsets(offs []uint32, workers int) offsetsScan {
	n := len(offs) - 1
	if n <= 0 {
		return offsetsScan{ok: true}
	}
	l := offs[1] - offs[0]
	parts := par.Parts(n, checkMinPart, workers)
	type partScan struct {
		bad, other uint32
		_          [56]byte // a cache line each
	}
	got := make([]partScan, parts)
	par.Ranges(n, parts, func(p, lo, hi int) { got[p].bad, got[p].other = offsetsPart(offs[lo:hi+1], l) })
	sc := offsetsScan{ok: true, one: offs[0] == 0, l: l}
	for _, g := range got {
		sc.ok = sc.ok && g.bad == 0
		sc.one = sc.one && g.other == 0
	}
	sc.one = sc.one && sc.ok
	return sc
}

// offsetsPart scans the keys of the offsets s (len(s)-1 keys): bad is not
// 0 when one of them ends before its start or is longer than MaxKeyLen,
// other not 0 when one is not l bytes long. A key's b - a has a bit at 16
// or above exactly when b < a (the difference wraps) or the key is longer
// than MaxKeyLen = 2^16 - 1; the differences are ORed, four keys a step.
func offsetsPart(s []uint32, l uint32) (bad, other uint32) {
	var acc, oth uint32
	i := 1
	for ; i+3 < len(s); i += 4 {
		d0, d1, d2, d3 := s[i]-s[i-1], s[i+1]-s[i], s[i+2]-s[i+1], s[i+3]-s[i+2]
		acc |= d0 | d1 | d2 | d3
		oth |= (d0 ^ l) | (d1 ^ l) | (d2 ^ l) | (d3 ^ l)
	}
	for ; i < len(s); i++ {
		d := s[i] - s[i-1]
		acc |= d
		oth |= d ^ l
	}
	return acc >> 16, oth
}

// firstBad returns the error of a batch's first bad key (in key order),
// as a sequential check finds it.
func (k Keys) firstBad(op string) error {
	for i := range k.Len() {
		a, b := k.Offs[i], k.Offs[i+1]
		if b < a || int(b) > len(k.Data) {
			return fmt.Errorf("art: %s: key %d: offsets %d..%d outside the %d data bytes", op, i, a, b, len(k.Data))
		}
		if b-a > MaxKeyLen {
			return fmt.Errorf("art: %s: key %d is %d bytes: at most %d", op, i, b-a, MaxKeyLen)
		}
	}
	return nil
}

// prefixEnd returns the smallest key greater than every key that starts
// with p (p with its trailing 0xff bytes dropped and its last byte
// incremented), or nil when there is none (p empty or all 0xff).
func prefixEnd(p []byte) []byte {
	end, ok := appendPrefixEnd(nil, p)
	if !ok {
		return nil
	}
	return end
}

// appendPrefixEnd appends prefixEnd(p) to dst; ok is false (dst as it
// was) when p has no upper bound (empty or all 0xff).
func appendPrefixEnd(dst, p []byte) (out []byte, ok bool) {
	i := prefixEndLen(p)
	if i == 0 {
		return dst, false
	}
	out = append(dst, p[:i]...)
	out[len(out)-1]++
	return out, true
}

// prefixQueries returns the range queries of prefix scans: [p,
// prefixEnd(p)) for each prefix p (a nil p as empty), on GOMAXPROCS
// goroutines for large batches (prefixQueryMin prefixes a part at least).
// Cost: O(total prefix bytes) over the goroutines; one allocation for the
// queries and one per part for its upper bounds.
func prefixQueries(prefixes [][]byte) []Query { return prefixQueriesBy(prefixes, prefixQueryMin) }

// prefixQueryMin is the fewest prefixes one goroutine of prefixQueries
// turns into queries.
const prefixQueryMin = 1 << 13

// prefixQueriesBy is prefixQueries in parts of at least minPer prefixes,
// each part's upper bounds in one array of its own.
func prefixQueriesBy(prefixes [][]byte, minPer int) []Query {
	qs := make([]Query, len(prefixes))
	par.Shared().Ranges(len(prefixes), par.Parts(len(prefixes), minPer, 0), func(_, a, b int) {
		n := 0
		for _, p := range prefixes[a:b] {
			n += len(p)
		}
		ends := make([]byte, 0, n)
		for i, p := range prefixes[a:b] {
			if p == nil {
				p = []byte{}
			}
			q := &qs[a+i]
			q.Lo = p
			at := len(ends)
			var ok bool
			if ends, ok = appendPrefixEnd(ends, p); ok {
				q.Hi = ends[at:len(ends):len(ends)]
			}
		}
	})
	return qs
}
