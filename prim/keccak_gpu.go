package prim

import (
	"fmt"

	"github.com/warpkv/warpkv/gpu"
)

// Launch configuration of the Keccak-256 kernels in keccak.cu. Each
// constant equals the #define named beside it there.
const (
	keccakRate        = 136 // KECCAK_RATE: bytes absorbed per permutation
	keccakThreadBlock = 128 // KECCAK_THREAD_BLOCK: threads (messages) per block of keccak256_thread
	keccakWarpBlock   = 256 // KECCAK_WARP_BLOCK: threads per block of keccak256_warp
	keccakWarpSize    = 32  // WARP_SIZE: threads per message in keccak256_warp

	// DevKeccak256 uses the warp-per-message kernel for at most
	// keccakWarpMaxMessages messages of which one is at least
	// keccakWarpMinLen bytes (two or more permutations), else the
	// thread-per-message kernel. The thread kernel does about 6 times less
	// work per permutation (the warp kernel is bound by its shuffles) but
	// runs each message's permutations on one thread: with few messages
	// its warps are too few and each runs latency-bound, and the warp
	// kernel, 25 lanes to a permutation, finishes first. Measured on an
	// H100 (hashes/s, thread vs warp kernel): 4 KiB messages, n = 512:
	// 2.1M vs 5.2M; n = 2048: 7.9M vs 15.1M; n = 4096: 14.3M vs 16.2M;
	// n = 8192: 28.3M vs 17.0M; one 1 MiB message: 22 vs 50.
	keccakWarpMinLen      = keccakRate
	keccakWarpMaxMessages = 4096
	// keccakDataAlign is the multiple Keccak256 rounds its data upload to:
	// the kernels read the aligned 4-byte words that hold message bytes.
	keccakDataAlign = 8
)

// keccakKernel names one of the two Keccak-256 kernels and how it is
// launched.
type keccakKernel struct {
	name            string
	block           int // threads per block
	threadsPerInput int // threads hashing one message
}

var (
	keccakThread = keccakKernel{"keccak256_thread", keccakThreadBlock, 1}
	keccakWarp   = keccakKernel{"keccak256_warp", keccakWarpBlock, keccakWarpSize}
)

// DevKeccak256 computes out[i] = Keccak-256(data[offsets[i]:offsets[i+1]])
// for i < n on the device, queued on e's stream. offsets holds n+1
// nondecreasing byte offsets into data (unchecked: malformed ones give
// wrong digests but no read outside data). maxLen is the longest message
// (or a bound on it); with n it picks the thread-per-message kernel (short
// messages, or many of them) or the warp-per-message kernel (few long
// ones); any value gives correct digests. Cost: one 24-round permutation
// per 136 bytes of each message, plus one per message; no host sync. On an
// H100 the thread kernel hashes about 3.0G 64-byte messages per second.
func DevKeccak256(e *Engine, data *gpu.Buffer[byte], offsets *gpu.Buffer[uint32], n int, out *gpu.Buffer[[32]byte], maxLen int) error {
	k := keccakThread
	if maxLen >= keccakWarpMinLen && n <= keccakWarpMaxMessages {
		k = keccakWarp
	}
	return devKeccak256(e, k, data, offsets, n, out)
}

// DevKeccak256Thread is DevKeccak256 forced to the thread-per-message
// kernel, for tests and benchmarks.
func DevKeccak256Thread(e *Engine, data *gpu.Buffer[byte], offsets *gpu.Buffer[uint32], n int, out *gpu.Buffer[[32]byte]) error {
	return devKeccak256(e, keccakThread, data, offsets, n, out)
}

// DevKeccak256Warp is DevKeccak256 forced to the warp-per-message kernel,
// for tests and benchmarks.
func DevKeccak256Warp(e *Engine, data *gpu.Buffer[byte], offsets *gpu.Buffer[uint32], n int, out *gpu.Buffer[[32]byte]) error {
	return devKeccak256(e, keccakWarp, data, offsets, n, out)
}

// devKeccak256 checks the arguments and queues kernel k over n messages.
func devKeccak256(e *Engine, k keccakKernel, data *gpu.Buffer[byte], offsets *gpu.Buffer[uint32], n int, out *gpu.Buffer[[32]byte]) error {
	if e.Backend() != gpu.BackendGPU {
		return fmt.Errorf("prim: keccak: device call on the %s engine", e.Name())
	}
	switch {
	case n < 0:
		return fmt.Errorf("prim: keccak: %d messages", n)
	case n == 0:
		return nil
	case data == nil || offsets == nil || out == nil:
		return fmt.Errorf("prim: keccak: nil buffer")
	case offsets.Len() < n+1:
		return fmt.Errorf("prim: keccak: %d messages need %d offsets, have %d", n, n+1, offsets.Len())
	case out.Len() < n:
		return fmt.Errorf("prim: keccak: %d messages but room for %d digests", n, out.Len())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	f, err := e.kernel("keccak.cu", k.name)
	if err != nil {
		return fmt.Errorf("prim: keccak: %w", err)
	}
	messagesPerBlock := k.block / k.threadsPerInput
	grid := gpu.Grid(n, messagesPerBlock)
	if err := f.Launch(e.stream, gpu.D1(grid), gpu.D1(k.block), 0,
		data, offsets, uint64(n), uint64(data.Len()), out); err != nil {
		return fmt.Errorf("prim: keccak: %w", err)
	}
	return nil
}

// keccak256GPU is Keccak256 on a GPU engine: it copies data (already cut
// at the last offset) and offsets to the device, hashes them and copies
// the digests back into out.
func keccak256GPU(e *Engine, data []byte, offsets []uint32, out [][32]byte, maxLen int) (err error) {
	d := e.Device()
	n := len(out)
	keep := func(e error) {
		if e != nil && err == nil {
			err = fmt.Errorf("prim: keccak: %w", e)
		}
	}
	dataBuf, err := gpu.Alloc[byte](d, (len(data)+keccakDataAlign-1)/keccakDataAlign*keccakDataAlign)
	if err != nil {
		return fmt.Errorf("prim: keccak: %w", err)
	}
	defer func() { keep(dataBuf.Free()) }()
	offBuf, err := gpu.Alloc[uint32](d, n+1)
	if err != nil {
		return fmt.Errorf("prim: keccak: %w", err)
	}
	defer func() { keep(offBuf.Free()) }()
	outBuf, err := gpu.Alloc[[32]byte](d, n)
	if err != nil {
		return fmt.Errorf("prim: keccak: %w", err)
	}
	defer func() { keep(outBuf.Free()) }()
	// The buffers are freed (deferred above) only after this synchronizes.
	defer func() { keep(e.Synchronize()) }()

	if err := dataBuf.Write(e.Stream(), 0, data); err != nil {
		return fmt.Errorf("prim: keccak: %w", err)
	}
	if err := offBuf.Write(e.Stream(), 0, offsets); err != nil {
		return fmt.Errorf("prim: keccak: %w", err)
	}
	if err := DevKeccak256(e, dataBuf, offBuf, n, outBuf, maxLen); err != nil {
		return err
	}
	if err := outBuf.Read(e.Stream(), 0, out); err != nil {
		return fmt.Errorf("prim: keccak: %w", err)
	}
	return nil
}
