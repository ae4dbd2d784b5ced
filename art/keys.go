package art

import (
	"bytes"
	"fmt"
	"math"
)

// Keys is a batch of byte-string keys packed in one buffer, the form every
// engine takes: key i is Data[Offs[i]:Offs[i+1]], so Offs has one more
// element than there are keys (an empty Offs is an empty batch). Keys
// holds no pointers besides its two slices, so a batch of millions of
// keys costs the garbage collector nothing to scan.
type Keys struct {
	Data []byte
	Offs []uint32
}

// Pack packs keys into one buffer. Cost: one copy of the keys.
func Pack(keys [][]byte) Keys {
	n := 0
	for _, k := range keys {
		n += len(k)
	}
	out := Keys{Data: make([]byte, 0, n), Offs: make([]uint32, 1, len(keys)+1)}
	for _, k := range keys {
		out.Data = append(out.Data, k...)
		out.Offs = append(out.Offs, uint32(len(out.Data)))
	}
	return out
}

// PackStrings packs string keys into one buffer. Cost: one copy.
func PackStrings(keys []string) Keys {
	n := 0
	for _, k := range keys {
		n += len(k)
	}
	out := Keys{Data: make([]byte, 0, n), Offs: make([]uint32, 1, len(keys)+1)}
	for _, k := range keys {
		out.Data = append(out.Data, k...)
		out.Offs = append(out.Offs, uint32(len(out.Data)))
	}
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
// key at most MaxKeyLen bytes, and n values when values is not nil. Cost:
// O(keys).
func (k Keys) check(op string, values []uint64, withValues bool) error {
	n := k.Len()
	if withValues && len(values) != n {
		return fmt.Errorf("art: %s: %d keys but %d values", op, n, len(values))
	}
	if uint64(len(k.Data)) > math.MaxUint32 {
		return fmt.Errorf("art: %s: %d key bytes in one batch: at most %d", op, len(k.Data), uint64(math.MaxUint32))
	}
	for i := range n {
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
	i := len(p)
	for i > 0 && p[i-1] == 0xff {
		i--
	}
	if i == 0 {
		return nil
	}
	out := append([]byte(nil), p[:i]...)
	out[i-1]++
	return out
}

// compareKeys orders keys bytewise, a proper prefix first.
func compareKeys(a, b []byte) int { return bytes.Compare(a, b) }
