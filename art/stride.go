package art

import (
	"sync/atomic"

	"github.com/warpkv/warpkv/internal/par"
)

// strideMinPart is the fewest offsets one goroutine of keyStride checks.
const strideMinPart = 1 << 16

// keyStride returns L when offs are exactly 0, L, 2L, ... (every key L
// bytes long, as Pack lays out keys of one length), else -1: such a
// batch's offsets can be made on the device instead of uploaded. Cost: one
// read of offs on all cores; a part stops at the first mismatch any part
// found.
func keyStride(offs []uint32) int {
	if len(offs) < 2 || offs[0] != 0 {
		return -1
	}
	l := uint64(offs[1])
	var bad atomic.Bool
	par.For(len(offs), strideMinPart, 0, func(lo, hi int) {
		if bad.Load() {
			return
		}
		want := uint64(lo) * l
		for _, o := range offs[lo:hi] {
			if uint64(o) != want {
				bad.Store(true)
				return
			}
			want += l
		}
	})
	if bad.Load() {
		return -1
	}
	return int(l)
}
