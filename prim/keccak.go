package prim

import (
	"fmt"
	"sort"

	"golang.org/x/crypto/sha3"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/par"
)

// keccakCPUSerialBytes is the work (message bytes plus keccakCPUMessageCost
// per message) under which the CPU twin hashes on the calling goroutine.
const keccakCPUSerialBytes = 1 << 16

// keccakCPUMessageCost is the per-message cost, in equivalent message bytes,
// used to balance the CPU workers: one permutation hashes up to 136 bytes.
const keccakCPUMessageCost = 136

// Keccak256 computes out[i] = Keccak-256(data[offsets[i]:offsets[i+1]]) for
// every i < len(offsets)-1, with Ethereum's legacy Keccak padding (not
// SHA3-256's). offsets must be nondecreasing and at most len(data), and out
// must hold len(offsets)-1 digests; otherwise it returns an error and writes
// nothing. Cost: one 24-round permutation per 136 bytes of each message,
// plus one per message; on the CPU spread over e.Workers() goroutines, on
// the GPU plus copying the used data and offsets in and the digests out.
func Keccak256(e *Engine, data []byte, offsets []uint32, out [][32]byte) error {
	n, maxLen, err := checkKeccakInput(data, offsets, out)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	if e.Backend() == gpu.BackendGPU {
		return keccak256GPU(e, data[:offsets[n]], offsets[:n+1], out[:n], maxLen)
	}
	keccak256CPU(e, data, offsets[:n+1], out[:n])
	return nil
}

// checkKeccakInput validates the arguments of Keccak256 and returns the
// number of messages and the longest message's length.
func checkKeccakInput(data []byte, offsets []uint32, out [][32]byte) (n, maxLen int, err error) {
	if len(offsets) == 0 {
		return 0, 0, nil
	}
	n = len(offsets) - 1
	if len(out) < n {
		return 0, 0, fmt.Errorf("prim: keccak: %d messages but room for %d digests", n, len(out))
	}
	for i := range n {
		if offsets[i+1] < offsets[i] {
			return 0, 0, fmt.Errorf("prim: keccak: offsets decrease at %d (%d then %d)", i, offsets[i], offsets[i+1])
		}
		maxLen = max(maxLen, int(offsets[i+1]-offsets[i]))
	}
	if int64(offsets[n]) > int64(len(data)) {
		return 0, 0, fmt.Errorf("prim: keccak: offsets end at %d past %d data bytes", offsets[n], len(data))
	}
	return n, maxLen, nil
}

// keccak256CPU hashes the len(offsets)-1 messages on e.Workers()
// goroutines, each owning a contiguous range of messages of about equal
// cost and one reused hasher.
func keccak256CPU(e *Engine, data []byte, offsets []uint32, out [][32]byte) {
	n := len(offsets) - 1
	cost := func(i int) int64 { // work of messages [0, i)
		return int64(offsets[i]-offsets[0]) + int64(i)*keccakCPUMessageCost
	}
	total := cost(n)
	workers := int(min(int64(e.Workers()), total/keccakCPUSerialBytes+1, int64(n)))
	if workers <= 1 {
		keccakRange(data, offsets, out, 0, n)
		return
	}
	bounds := make([]int, workers+1) // worker w hashes [bounds[w], bounds[w+1])
	bounds[workers] = n
	for w := 1; w < workers; w++ {
		target := total * int64(w) / int64(workers)
		lo := bounds[w-1]
		bounds[w] = lo + sort.Search(n-lo, func(j int) bool { return cost(lo+j) >= target })
	}
	par.Do(workers, func(w int) {
		if lo, hi := bounds[w], bounds[w+1]; hi > lo {
			keccakRange(data, offsets, out, lo, hi)
		}
	})
}

// keccakRange hashes messages [lo, hi) with one hasher.
func keccakRange(data []byte, offsets []uint32, out [][32]byte, lo, hi int) {
	h := sha3.NewLegacyKeccak256()
	for i := lo; i < hi; i++ {
		h.Reset()
		h.Write(data[offsets[i]:offsets[i+1]])
		h.Sum(out[i][:0])
	}
}
