package workload

import (
	"encoding/binary"

	"github.com/warpkv/warpkv/internal/par"
)

// WeylKeys16 returns n distinct 16-byte keys packed in data (key i at
// 16*i), their offsets (n+1) and the values 0..n-1: key i starts with
// i*0x9E3779B97F4A7C15 ^ 0x5555 big-endian (distinct, spread over the key
// space), then 8 bytes of a splitmix64 hash of i. The ordered indexes'
// 100M-key benchmarks build their trees from it. Cost: O(n) on all cores.
func WeylKeys16(n int) (data []byte, offs []uint32, values []uint64) {
	data, offs, values = make([]byte, 16*n), make([]uint32, n+1), make([]uint64, n)
	par.Ranges(n, par.Parts(n, 1<<16, 0), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			z := uint64(i) + 0x9E3779B97F4A7C15
			z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
			z = (z ^ z>>27) * 0x94D049BB133111EB
			binary.BigEndian.PutUint64(data[16*i:], uint64(i)*0x9E3779B97F4A7C15^0x5555)
			binary.LittleEndian.PutUint64(data[16*i+8:], z^z>>31)
			offs[i+1] = uint32(16 * (i + 1))
			values[i] = uint64(i)
		}
	})
	return data, offs, values
}
