package art

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestChunks splits batches at small windows (the cuts of a batch past
// 4 GiB, at every 2^31 bytes, scaled down) and checks that the chunks hold
// every key once, in order, as ordinary batches, and that applying them in
// order gives the tree and answers of the whole batch.
func TestChunks(t *testing.T) {
	r := rand.New(rand.NewPCG(22, 3))
	for _, window := range []uint32{1 << 17, 1 << 18, 1 << 19} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			n := 6000
			keys := make([][]byte, n)
			for i := range keys {
				k := make([]byte, r.IntN(300))
				for j := range k {
					k[j] = byte(r.IntN(4))
				}
				keys[i] = k
			}
			keys[n-1] = bytes.Repeat([]byte{7}, MaxKeyLen) // a key as long as a key can be
			kb := Pack(keys)
			ch, err := kb.chunksAt("test", window)
			if err != nil {
				t.Fatal(err)
			}
			if len(ch) < 2 {
				t.Fatalf("%d bytes in %d chunks at window %d", len(kb.Data), len(ch), window)
			}
			next := 0
			for _, c := range ch {
				if c.lo != next || c.hi <= c.lo {
					t.Fatalf("chunk [%d, %d) after key %d", c.lo, c.hi, next)
				}
				if err := c.kb.check("test", nil, false); err != nil || len(c.kb.Data) > int(window)+MaxKeyLen {
					t.Fatalf("chunk [%d, %d): %v, %d bytes", c.lo, c.hi, err, len(c.kb.Data))
				}
				for i := c.lo; i < c.hi; i++ {
					if !bytes.Equal(c.kb.At(i-c.lo), keys[i]) {
						t.Fatalf("chunk [%d, %d): key %d differs", c.lo, c.hi, i)
					}
				}
				next = c.hi
			}
			if next != n {
				t.Fatalf("chunks end at key %d of %d", next, n)
			}
			// The chunks applied in order, as the engines apply a long batch,
			// against the whole batch.
			vals := make([]uint64, n)
			for i := range vals {
				vals[i] = r.Uint64()
			}
			whole, parts := newCPUEngine(2), newCPUEngine(2)
			if err := whole.build(kb, vals); err != nil {
				t.Fatal(err)
			}
			for i, c := range ch {
				var err error
				if i == 0 {
					err = parts.build(c.kb, vals[c.lo:c.hi])
				} else {
					_, err = parts.insert(c.kb, vals[c.lo:c.hi])
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			wv, wf := make([]uint64, n), make([]bool, n)
			pv, pf := make([]uint64, n), make([]bool, n)
			if err := whole.lookup(kb, wv, wf); err != nil {
				t.Fatal(err)
			}
			for _, c := range ch {
				if err := parts.lookup(c.kb, pv[c.lo:c.hi], pf[c.lo:c.hi]); err != nil {
					t.Fatal(err)
				}
			}
			if whole.size() != parts.size() || !slices.Equal(wv, pv) || !slices.Equal(wf, pf) {
				t.Fatalf("chunked: %d keys, whole batch %d; answers equal %v", parts.size(), whole.size(), slices.Equal(wv, pv))
			}
		})
	}
}
