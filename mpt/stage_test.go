package mpt

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestFillStrided checks the stride layout of keys packed piece by piece
// (pieces starting and ending inside keys, and pieces large enough to be
// split over goroutines) against a layout built key by key.
func TestFillStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 7, 3*stridedPart + 5, 40_000} {
		for _, stride := range []int{8, 24, 40} {
			t.Run(fmt.Sprintf("n=%d/stride=%d", n, stride), func(t *testing.T) {
				keys := make([][]byte, n)
				want := make([]byte, n*stride)
				for i := range keys {
					keys[i] = randBytes(r, r.IntN(stride+1))
					copy(want[i*stride:], keys[i])
				}
				fill := fillStrided(keys, stride)
				for _, piece := range []int{1, 5, stride, 1000, 1 << 20} {
					got := bytes.Repeat([]byte{0xee}, len(want))
					for pos := 0; pos < len(got); pos += piece {
						fill(got[pos:min(pos+piece, len(got))], pos)
					}
					if !bytes.Equal(got, want) {
						t.Fatalf("pieces of %d bytes: layout differs", piece)
					}
				}
			})
		}
	}
}

// TestFillConcat checks the concatenation of parts packed piece by piece.
func TestFillConcat(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	parts := make([][]byte, 1000)
	offs := make([]int64, len(parts)+1)
	var want []byte
	for i := range parts {
		parts[i] = randBytes(r, r.IntN(50))
		offs[i+1] = offs[i] + int64(len(parts[i]))
		want = append(want, parts[i]...)
	}
	fill := fillConcat(parts, offs)
	for _, piece := range []int{1, 7, 100, 1 << 20} {
		got := bytes.Repeat([]byte{0xee}, len(want))
		for pos := 0; pos < len(got); pos += piece {
			fill(got[pos:min(pos+piece, len(got))], pos)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("pieces of %d bytes: concatenation differs", piece)
		}
	}
}
