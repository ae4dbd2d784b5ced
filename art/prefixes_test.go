package art

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPackPrefixes checks that packPrefixes packs the bytes packQueries
// packs for prefixQueries of the same prefixes (every array of the
// layout, byte for byte, and read back against the queries): prefixes of
// 0 to 5 bytes over 0x00, 0x01, 0xfe and 0xff (ends that drop trailing
// 0xff bytes, prefixes of 0xff alone with no end), nil and empty ones,
// one of MaxKeyLen bytes, on 1 and 3 workers and batch sizes around a
// part's; and that a prefix longer than a key fails it with the first.
func TestPackPrefixes(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 5))
	host := func(n int) ([]byte, error) { return alignedBytes(n), nil }
	for _, n := range []int{1, 7, queryPackMin - 1, 3*queryPackMin + 5} {
		ps := make([][]byte, n)
		for i := range ps {
			switch i % 9 {
			case 0:
				ps[i] = nil
			case 1:
				ps[i] = []byte{}
			case 2:
				ps[i] = []byte{0xff, 0xff}
			default:
				ps[i] = randomBytes(r, 1, 5, []byte{0, 1, 0xfe, 0xff})
			}
		}
		if n > 100 {
			ps[n/2] = bytes.Repeat([]byte{0xfe}, MaxKeyLen)
		}
		qs := prefixQueries(ps)
		for _, workers := range []int{1, 3} {
			name := fmt.Sprintf("%d prefixes, %d workers", n, workers)
			p, buf, err := packPrefixes(ps, workers, host)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			wp, wbuf, err := packQueries(qs, workers, host)
			if err != nil {
				t.Fatal(err)
			}
			if p.l != wp.l || !bytes.Equal(buf[:p.l.end], wbuf[:wp.l.end]) {
				t.Fatalf("%s: packed %d bytes (layout %+v), packQueries %d (%+v), or other bytes", name, p.l.end, p.l, wp.l.end, wp.l)
			}
			checkPacked(t, name, p, buf, qs)
		}
		if n > 100 {
			ps[n/3], ps[n-1] = make([]byte, MaxKeyLen+1), make([]byte, MaxKeyLen+3)
			_, _, err := packPrefixes(ps, 3, host)
			var be *boundErr
			if !errors.As(err, &be) || *be != (boundErr{n / 3, MaxKeyLen + 1}) {
				t.Fatalf("%d prefixes, one too long at %d: %v", n, n/3, err)
			}
			if want := checkBounds(prefixQueries(ps)); want == nil || want.Error() != err.Error() {
				t.Fatalf("%d prefixes: %v, Tree.query's check %v", n, err, want)
			}
		}
	}
}
