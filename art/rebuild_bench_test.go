package art

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/warpkv/warpkv/internal/par"
	"github.com/warpkv/warpkv/internal/rebuildbench"
)

// BenchmarkRangeKeysRebuild measures, on the host alone, what sending a
// range call's answer keys front coded over the link would cost and save
// (issue 22: fewer answer bytes): 64Ki answers of 16 keys (ranges16) and
// of 64 keys under a 2-byte prefix (prefix64), 16-byte keys spaced as
// neighbours in a tree of 100M uniform keys (the first 8 bytes of a key
// the previous one's plus a uniform gap of mean 2^64/1e8, as benchKeysPar's
// keys; the last 8 random). Front coding: per key one byte, the bytes it
// shares with the answer's previous key (the first key: with the query's
// prefix, prefix64; none, ranges16), then its other bytes; rebuilt a
// key at a time by two 8-byte masked merges of its 16-byte window. Timed on all
// of GOMAXPROCS's cores (par.Shared), each answer's keys rebuilt into the
// Result's key bytes (rebuild), against a plain copy of the same key bytes
// from a staging buffer (copy: the floor of any path that lands the keys
// in host memory before the Result, where the downloads land them in it
// by DMA at no host cost). Metrics: the transfer's bytes saved (of keys,
// values and query offsets) and the time they take at 55.2 GB/s
// (saved-us), and the host's time a call (host-ms) and its output rate
// (GB/s), as internal/rebuildbench reports them.
func BenchmarkRangeKeysRebuild(b *testing.B) {
	const Q = 1 << 16
	for _, sh := range []struct {
		name        string
		per, prefix int
	}{{"ranges16", 16, 0}, {"prefix64", 64, 2}} {
		r := rand.New(rand.NewPCG(22, uint64(sh.per)))
		n := Q * sh.per
		keys := make([]byte, 16*n)
		for q := range Q {
			hi := r.Uint64()
			if sh.prefix > 0 {
				hi = hi&^(1<<48-1) | uint64(r.IntN(1<<37)) // the first keys under a 2-byte prefix
			}
			for j := range sh.per {
				hi += r.Uint64N(2 * (^uint64(0) / 100_000_000))
				k := keys[16*(q*sh.per+j):]
				binary.BigEndian.PutUint64(k, hi)
				binary.BigEndian.PutUint64(k[8:], r.Uint64())
			}
		}
		// Front code each answer: encOff[q] its first byte (after 16
		// bytes of padding, so that a key's 16-byte window starts in enc).
		enc, encOff := make([]byte, 16, 17*n+32), make([]int, Q+1)
		for q := range Q {
			encOff[q] = len(enc)
			prev := keys[16*q*sh.per : 16*q*sh.per+sh.prefix]
			for j := range sh.per {
				k := keys[16*(q*sh.per+j) : 16*(q*sh.per+j+1)]
				s := 0
				for s < len(prev) && s < 16 && prev[s] == k[s] {
					s++
				}
				enc = append(enc, byte(s))
				enc = append(enc, k[s:]...)
				prev = k
			}
		}
		encOff[Q] = len(enc)
		enc = append(enc, make([]byte, 16)...)
		// mask[s]: the first s bytes of a 16-byte key, big-endian halves.
		var mask [17][2]uint64
		for s := 1; s <= 16; s++ {
			if s <= 8 {
				mask[s] = [2]uint64{^uint64(0) << (64 - 8*s), 0}
			} else {
				mask[s] = [2]uint64{^uint64(0), ^uint64(0) << (128 - 8*s)}
			}
		}
		full := n*(16+8) + 8*(Q+1)
		saved := 16*n - len(enc)
		out := make([]byte, 16*n)
		parts := 8 * par.Shared().Workers()
		b.Run(sh.name+"/rebuild", func(b *testing.B) {
			for b.Loop() {
				par.Shared().Ranges(Q, parts, func(_, a, z int) {
					for q := a; q < z; q++ {
						// Each key: its 16-byte window in enc, its first s
						// bytes the previous key's (the first key's
						// previous: the query's prefix, known to the host).
						p, o := encOff[q], 16*q*sh.per
						var h, l uint64
						if sh.prefix > 0 {
							h = uint64(binary.BigEndian.Uint16(keys[o:])) << 48
						}
						for range sh.per {
							s := int(enc[p])
							p++
							w := enc[p-s : p-s+16]
							m := mask[s]
							h = h&m[0] | binary.BigEndian.Uint64(w)&^m[0]
							l = l&m[1] | binary.BigEndian.Uint64(w[8:])&^m[1]
							binary.BigEndian.PutUint64(out[o:], h)
							binary.BigEndian.PutUint64(out[o+8:], l)
							p, o = p+16-s, o+16
						}
					}
				})
			}
			for i := range out {
				if out[i] != keys[i] {
					b.Fatalf("%s: byte %d rebuilt as %d, want %d", sh.name, i, out[i], keys[i])
				}
			}
			rebuildbench.Report(b, n, 16*n, full, saved, "front coding")
		})
		b.Run(sh.name+"/copy", func(b *testing.B) {
			for b.Loop() {
				par.Shared().Ranges(len(keys), parts, func(_, a, z int) { copy(out[a:z], keys[a:z]) })
			}
			rebuildbench.Report(b, n, 16*n, full, saved, "front coding")
		})
	}
}
