package prim

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
)

// Launch configuration of the radix sort kernels in sort.cu. The first
// six equal the #defines RADIX_BITS, RADIX_DIGITS, BLOCK_THREADS,
// ITEMS_PER_THREAD, SCAN_THREADS and MAX_PASSES there, and radixPlanWords
// equals PLAN_WORDS: keep them equal.
const (
	radixBits           = 8                                                 // bits per digit (one pass)
	radixDigits         = 1 << radixBits                                    // digit values; also the downsweep's threads per block
	radixBlockThreads   = 256                                               // threads per block of the histogram, up- and downsweep
	radixItemsPerThread = 16                                                // keys per thread per tile
	radixTileItems      = radixBlockThreads * radixItemsPerThread           // keys per tile
	radixScanThreads    = 256                                               // threads per block of radix_scan (one block per digit)
	radixMaxPasses      = 8                                                 // passes of a 64-bit key
	radixPlanWords      = radixMaxPasses*radixDigits + 2*radixMaxPasses + 1 // u32 words of the plan

	radixHistBlocksPerSM = 4   // histogram grid: blocks per SM, grid-stride over tiles
	radixCopyThreads     = 256 // threads per block of radix_copy_back
	radixCopyBlocksPerSM = 8   // radix_copy_back grid: blocks per SM, grid-stride
)

// maxSortLen is the most keys one device sort takes: offsets are 32-bit.
const maxSortLen = math.MaxUint32

// Scratch purposes of the device sort.
const (
	sortScratchKeys = "sort.keys" // the ping-pong copy of the keys
	sortScratchVals = "sort.vals" // the ping-pong copy of the values
	sortScratchMeta = "sort.meta" // histogram, plan and per-block counts
)

// DevSortKeys sorts the first n keys of a device buffer in ascending order,
// in place, queued on the engine's stream. Cost: as DevSortPairsBits over
// all key bits, without values.
func DevSortKeys[K Key](e *Engine, keys *gpu.Buffer[K], n int) error {
	if err := devSortPairsBits[K, uint32](e, keys, nil, n, 0, keyBits[K]()); err != nil {
		return fmt.Errorf("prim: sort keys: %w", err)
	}
	return nil
}

// DevSortPairs sorts the first n keys of a device buffer in ascending order
// and applies the same permutation to the first n values, in place and
// stably, queued on the engine's stream. Cost: as DevSortPairsBits over all
// key bits.
func DevSortPairs[K Key, V Word](e *Engine, keys *gpu.Buffer[K], vals *gpu.Buffer[V], n int) error {
	if vals == nil {
		return fmt.Errorf("prim: sort pairs: nil value buffer")
	}
	if err := devSortPairsBits(e, keys, vals, n, 0, keyBits[K]()); err != nil {
		return fmt.Errorf("prim: sort pairs: %w", err)
	}
	return nil
}

// DevSortPairsBits stably sorts the first n keys of a device buffer by their
// bits [beginBit, endBit) only, in place, moving the first n values along
// (vals may be nil to sort keys only). The work is queued on the engine's
// stream without host synchronization; the result is in keys and vals when
// the stream reaches it. Cost: one read of the keys for the digit histogram
// of every 8-bit pass, then per pass whose digit is not the same for all
// keys, two reads of the keys, one of the values, and one write of each;
// plus a copy back when the number of such passes is odd. Scratch: a copy of
// the keys and values. At most 2^32-1 keys.
func DevSortPairsBits[K Key, V Word](e *Engine, keys *gpu.Buffer[K], vals *gpu.Buffer[V], n, beginBit, endBit int) error {
	if err := devSortPairsBits(e, keys, vals, n, beginBit, endBit); err != nil {
		return fmt.Errorf("prim: sort: %w", err)
	}
	return nil
}

// devSortPairsBits is DevSortPairsBits without the wrapping of errors.
func devSortPairsBits[K Key, V Word](e *Engine, keys *gpu.Buffer[K], vals *gpu.Buffer[V], n, beginBit, endBit int) error {
	if e.Backend() != gpu.BackendGPU {
		return fmt.Errorf("device sort on the %s engine", e.Name())
	}
	if err := checkBitRange[K](beginBit, endBit); err != nil {
		return err
	}
	if n < 0 || n > maxSortLen {
		return fmt.Errorf("%d keys: the device sort takes 0 to %d", n, maxSortLen)
	}
	if keys == nil || keys.Len() < n {
		return fmt.Errorf("%d keys asked for in a buffer of %d", n, radixBufLen(keys))
	}
	if vals != nil && vals.Len() < n {
		return fmt.Errorf("%d values asked for in a buffer of %d", n, vals.Len())
	}
	if n < 2 || beginBit == endBit {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return radixSortDevice(e, keys, vals, n, beginBit, endBit)
}

// radixBufLen returns the length of b, 0 for nil.
func radixBufLen[T any](b *gpu.Buffer[T]) int {
	if b == nil {
		return 0
	}
	return b.Len()
}

// radixKernels are the kernels of one sort's key and value types.
type radixKernels struct {
	histogram, plan, upsweep, scan, downsweep, copyBack *gpu.Function
}

// radixKernelsFor looks up the kernels for keys of keySize bytes and values
// of valSize bytes (0: keys only). Callers hold e.mu.
func radixKernelsFor(e *Engine, keySize, valSize int) (radixKernels, error) {
	k := fmt.Sprintf("k%d", 8*keySize)
	down := "radix_downsweep_" + k
	if valSize > 0 {
		down += fmt.Sprintf("_v%d", 8*valSize)
	}
	names := []string{"radix_histogram_" + k, "radix_plan", "radix_upsweep_" + k, "radix_scan", down, "radix_copy_back"}
	fs := make([]*gpu.Function, len(names))
	for i, name := range names {
		f, err := e.kernel("sort.cu", name)
		if err != nil {
			return radixKernels{}, err
		}
		fs[i] = f
	}
	return radixKernels{fs[0], fs[1], fs[2], fs[3], fs[4], fs[5]}, nil
}

// radixSortDevice queues the sort (see sort.cu for the kernels and
// their order). n >= 2 and beginBit < endBit. Callers hold e.mu.
func radixSortDevice[K Key, V Word](e *Engine, keys *gpu.Buffer[K], vals *gpu.Buffer[V], n, beginBit, endBit int) error {
	var k K
	var v V
	keySize, valSize := int(unsafe.Sizeof(k)), 0
	if vals != nil {
		valSize = int(unsafe.Sizeof(v))
	}
	ks, err := radixKernelsFor(e, keySize, valSize)
	if err != nil {
		return err
	}

	sms := e.dev.Properties().SMs
	passes := (endBit - beginBit + radixBits - 1) / radixBits
	tiles := (n + radixTileItems - 1) / radixTileItems
	// The up- and downsweep run one wave of blocks, each owning a run of
	// consecutive tiles.
	perSM, err := ks.downsweep.BlocksPerSM(radixBlockThreads, 0)
	if err != nil {
		return err
	}
	blocks := min(tiles, max(1, perSM)*sms)

	keyScratch, err := e.scratchBuf(sortScratchKeys, n*keySize)
	if err != nil {
		return err
	}
	altKeys := asBuffer[K](keyScratch, 0, n)
	var altVals *gpu.Buffer[V]
	if vals != nil {
		valScratch, err := e.scratchBuf(sortScratchVals, n*valSize)
		if err != nil {
			return err
		}
		altVals = asBuffer[V](valScratch, 0, n)
	}
	const histWords = radixMaxPasses * radixDigits
	planOff := radixAlignUp(4*histWords, 256)
	countsOff := radixAlignUp(planOff+4*radixPlanWords, 256)
	meta, err := e.scratchBuf(sortScratchMeta, countsOff+4*radixDigits*blocks)
	if err != nil {
		return err
	}
	hist := asBuffer[uint32](meta, 0, passes*radixDigits)
	plan := asBuffer[uint32](meta, planOff, radixPlanWords)
	counts := asBuffer[uint32](meta, countsOff, radixDigits*blocks)

	s := e.stream
	if err := hist.Fill32(s, 0); err != nil {
		return err
	}
	block := gpu.D1(radixBlockThreads)
	if err := ks.histogram.Launch(s, gpu.D1(min(tiles, radixHistBlocksPerSM*sms)), block, 0,
		keys, uint32(n), uint32(tiles), hist, uint32(beginBit), uint32(endBit), uint32(passes)); err != nil {
		return err
	}
	if err := ks.plan.Launch(s, gpu.D1(1), gpu.D1(radixDigits), 0, hist, plan, uint32(n), uint32(passes)); err != nil {
		return err
	}
	for p := range passes {
		shift := beginBit + p*radixBits
		mask := uint32(1)<<min(radixBits, endBit-shift) - 1
		common := []any{counts, plan, uint32(n), uint32(tiles), uint32(shift), mask, uint32(p)}
		if err := ks.upsweep.Launch(s, gpu.D1(blocks), block, 0, append([]any{keys, altKeys}, common...)...); err != nil {
			return err
		}
		if err := ks.scan.Launch(s, gpu.D1(radixDigits), gpu.D1(radixScanThreads), 0,
			counts, plan, uint32(blocks), uint32(p)); err != nil {
			return err
		}
		args := []any{keys, altKeys}
		if vals != nil {
			args = append(args, vals, altVals)
		}
		if err := ks.downsweep.Launch(s, gpu.D1(blocks), block, 0, append(args, common...)...); err != nil {
			return err
		}
	}
	copyGrid := gpu.D1(min(gpu.Grid(n*keySize/4, radixCopyThreads), radixCopyBlocksPerSM*sms))
	if err := ks.copyBack.Launch(s, copyGrid, gpu.D1(radixCopyThreads), 0,
		keys, altKeys, uint64(n*keySize/4), plan); err != nil {
		return err
	}
	if vals != nil {
		if err := ks.copyBack.Launch(s, copyGrid, gpu.D1(radixCopyThreads), 0,
			vals, altVals, uint64(n*valSize/4), plan); err != nil {
			return err
		}
	}
	return nil
}

// radixAlignUp rounds n up to a multiple of a (a power of two).
func radixAlignUp(n, a int) int { return (n + a - 1) &^ (a - 1) }
