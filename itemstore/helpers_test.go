package itemstore

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// newStore returns a store with options o, closed when the test ends.
func newStore(t testing.TB, o Options) *Store {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatalf("New(%+v): %v", o, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// keyOf returns the key of key number i.
func keyOf(i int) []byte { return fmt.Appendf(nil, "key:%08d", i) }

// hashOf returns the hash of key number i (splitmix64 of i: distinct for
// distinct i).
func hashOf(i int) uint64 {
	z := uint64(i) + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// fillValue writes version ver of key number i's value into v: the version
// in the first 8 bytes (if they fit), then bytes derived from i, ver and
// the offset.
func fillValue(v []byte, i int, ver uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], ver)
	n := copy(v, b[:])
	for j := n; j < len(v); j++ {
		v[j] = byte(uint64(i)*31 + ver*7 + uint64(j))
	}
}

// checkValue reports whether v is a value fillValue wrote for key number i,
// and its version.
func checkValue(v []byte, i int) (uint64, bool) {
	if len(v) < 8 {
		return 0, false
	}
	ver := binary.LittleEndian.Uint64(v)
	for j := 8; j < len(v); j++ {
		if v[j] != byte(uint64(i)*31+ver*7+uint64(j)) {
			return ver, false
		}
	}
	return ver, true
}

// set allocates key number i with a valueLen-byte value of version ver,
// fills and links it, and returns the writer's reference and the victims.
func set(t testing.TB, s *Store, i, valueLen int, ver uint64, exptime, now int64) (Ref, []Victim) {
	t.Helper()
	r, victims, err := s.Alloc(hashOf(i), keyOf(i), valueLen, uint32(ver), exptime, ver, now, nil)
	if err != nil {
		t.Fatalf("alloc of key %d: %v", i, err)
	}
	fillValue(r.Value(), i, ver)
	s.Link(r)
	return r, victims
}

// setRelease is set followed by the release of the writer's reference.
func setRelease(t testing.TB, s *Store, i, valueLen int, ver uint64, exptime, now int64) (uint32, []Victim) {
	t.Helper()
	r, victims := set(t, s, i, valueLen, ver, exptime, now)
	loc := r.Loc()
	r.Release()
	return loc, victims
}

// onePage is a store holding one page, so one class can fill it.
var onePage = Options{MemoryLimit: 1 << 20}

// smallValue is a value length whose items (with keyOf keys) go to class 1.
const smallValue = 16

// at returns the header and location of class-wide chunk i. The caller holds
// mu.
func (c *class) at(i int) (*header, uint32) {
	p, idx := c.pages[i/c.perPage], i%c.perPage
	return p.chunk(idx), p.loc(idx, c.s.chunkBits)
}
