package prim

import (
	"fmt"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/hugepages"
	"github.com/warpkv/warpkv/internal/par"
)

// SortKeys sorts keys in ascending order, in place. Cost: a stable LSD radix
// sort by 8-bit digits, one read of the keys plus one read and write per
// pass; passes in which every key has the same digit are skipped. Scratch:
// a copy of the keys. On the GPU engine the keys are also copied to the
// device and back.
func SortKeys[K Key](e *Engine, keys []K) error {
	if err := sortBits[K, uint32](e, keys, nil, 0, keyBits[K]()); err != nil {
		return fmt.Errorf("prim: sort keys: %w", err)
	}
	return nil
}

// SortPairs sorts keys in ascending order and applies the same permutation
// to vals, in place; keys that compare equal keep their order (stable).
// len(vals) must equal len(keys). Cost: as SortKeys, plus moving the values
// with the keys in every executed pass.
func SortPairs[K Key, V Word](e *Engine, keys []K, vals []V) error {
	if len(vals) != len(keys) {
		return fmt.Errorf("prim: sort pairs: %d keys but %d values", len(keys), len(vals))
	}
	if err := sortBits(e, keys, vals, 0, keyBits[K]()); err != nil {
		return fmt.Errorf("prim: sort pairs: %w", err)
	}
	return nil
}

// keyBits returns the width of K in bits.
func keyBits[K Key]() int {
	var k K
	return 8 * int(unsafe.Sizeof(k))
}

// checkBitRange reports whether [beginBit, endBit) is a valid range of key
// bits for K.
func checkBitRange[K Key](beginBit, endBit int) error {
	if beginBit < 0 || endBit < beginBit || endBit > keyBits[K]() {
		return fmt.Errorf("bit range [%d,%d) outside %d-bit keys", beginBit, endBit, keyBits[K]())
	}
	return nil
}

// sortBits stably sorts keys (and vals, when not nil) by key bits
// [beginBit, endBit) on the engine's backend.
func sortBits[K Key, V Word](e *Engine, keys []K, vals []V, beginBit, endBit int) error {
	if err := checkBitRange[K](beginBit, endBit); err != nil {
		return err
	}
	if e.Backend() == gpu.BackendGPU {
		return sortOnDevice(e, keys, vals, beginBit, endBit)
	}
	radixSortCPU(e, keys, vals, beginBit, endBit)
	return nil
}

// sortOnDevice copies keys (and vals) to the device, sorts them there and
// copies them back.
func sortOnDevice[K Key, V Word](e *Engine, keys []K, vals []V, beginBit, endBit int) (err error) {
	n := len(keys)
	if n < 2 || beginBit == endBit {
		return nil
	}
	if n > maxSortLen {
		return fmt.Errorf("%d keys: at most %d can be sorted on the device", n, maxSortLen)
	}
	kb, err := gpu.Alloc[K](e.Device(), n)
	if err != nil {
		return err
	}
	var vb *gpu.Buffer[V]
	defer func() {
		// Wait for queued work before freeing what it uses.
		if serr := e.Synchronize(); err == nil {
			err = serr
		}
		kb.Free()
		vb.Free()
	}()
	if vals != nil {
		if vb, err = gpu.Alloc[V](e.Device(), n); err != nil {
			return err
		}
		if err = vb.Write(e.Stream(), 0, vals); err != nil {
			return err
		}
	}
	if err = kb.Write(e.Stream(), 0, keys); err != nil {
		return err
	}
	if err = devSortPairsBits(e, kb, vb, n, beginBit, endBit); err != nil {
		return err
	}
	if err = kb.Read(e.Stream(), 0, keys); err != nil {
		return err
	}
	if vals != nil {
		if err = vb.Read(e.Stream(), 0, vals); err != nil {
			return err
		}
	}
	return e.Synchronize()
}

// CPU twin: a parallel stable LSD radix sort by radixBits-bit digits. Each of
// W workers owns a contiguous chunk of the input; per pass it counts the
// digits of its chunk, the counts are scanned digit-major (digit, then
// worker), and each worker scatters its chunk in order to the scanned
// offsets, which keeps the sort stable.

// radixCPUMinChunk is the fewest keys per worker worth a goroutine.
const radixCPUMinChunk = 1 << 15

// radixCounts holds one worker's digit counts for every pass.
type radixCounts [radixMaxPasses][radixDigits]int

// radixSortCPU stably sorts keys (and vals, when not nil) by key bits
// [beginBit, endBit) using e.Workers() goroutines.
func radixSortCPU[K Key, V Word](e *Engine, keys []K, vals []V, beginBit, endBit int) {
	n := len(keys)
	if n < 2 || beginBit >= endBit {
		return
	}
	passes := (endBit - beginBit + radixBits - 1) / radixBits
	workers := par.Parts(n, radixCPUMinChunk, e.Workers())
	chunk := func(w int) (int, int) { return par.Bound(n, workers, w), par.Bound(n, workers, w+1) }
	var shift [radixMaxPasses]uint
	var mask [radixMaxPasses]uint8
	for p := range passes {
		shift[p] = uint(beginBit + p*radixBits)
		mask[p] = uint8(1<<min(radixBits, endBit-int(shift[p])) - 1)
	}

	// One read of the keys counts the digits of every pass.
	counts := make([]radixCounts, workers)
	par.Do(workers, func(w int) {
		lo, hi := chunk(w)
		c := &counts[w]
		for _, k := range keys[lo:hi] {
			for p := range passes {
				c[p][uint8(uint64(k)>>shift[p])&mask[p]]++
			}
		}
	})

	var tmpKeys []K
	var tmpVals []V
	srcK, srcV := keys, vals
	recount := false // counts no longer match srcK's chunks
	for p := range passes {
		if radixPassIsNoop(counts, p, n) {
			continue
		}
		if tmpKeys == nil {
			tmpKeys = make([]K, n)
			hugepages.Advise(tmpKeys) // new memory, written once a pass
			if vals != nil {
				tmpVals = make([]V, n)
				hugepages.Advise(tmpVals)
			}
		}
		dstK, dstV := tmpKeys, tmpVals
		if &srcK[0] == &tmpKeys[0] {
			dstK, dstV = keys, vals
		}
		s, m := shift[p], mask[p]
		if recount {
			par.Do(workers, func(w int) {
				lo, hi := chunk(w)
				cp := &counts[w][p]
				*cp = [radixDigits]int{}
				for _, k := range srcK[lo:hi] {
					cp[uint8(uint64(k)>>s)&m]++
				}
			})
		}
		// Offsets, digit-major: worker w's first key of digit d goes after
		// every smaller digit and after the d's of workers before w.
		next := 0
		for d := range radixDigits {
			for w := range counts {
				c := counts[w][p][d]
				counts[w][p][d] = next
				next += c
			}
		}
		par.Do(workers, func(w int) {
			lo, hi := chunk(w)
			radixScatter(srcK, srcV, dstK, dstV, lo, hi, s, m, &counts[w][p])
		})
		srcK, srcV = dstK, dstV
		recount = true
	}
	if &srcK[0] != &keys[0] {
		par.Do(workers, func(w int) {
			lo, hi := chunk(w)
			copy(keys[lo:hi], srcK[lo:hi])
			if vals != nil {
				copy(vals[lo:hi], srcV[lo:hi])
			}
		})
	}
}

// radixPassIsNoop reports whether every key has the same digit in pass p.
func radixPassIsNoop(counts []radixCounts, p, n int) bool {
	for d := range radixDigits {
		total := 0
		for w := range counts {
			total += counts[w][p][d]
		}
		if total == n {
			return true
		}
		if total != 0 {
			return false
		}
	}
	return false
}

// radixScatter moves src[lo:hi] (and srcV, when not nil) to dst in order, key
// k to offset[digit(k)], advancing the offsets.
func radixScatter[K Key, V Word](srcK []K, srcV []V, dstK []K, dstV []V, lo, hi int, s uint, m uint8, offset *[radixDigits]int) {
	ks := srcK[lo:hi]
	if srcV == nil {
		for _, k := range ks {
			d := uint8(uint64(k)>>s) & m
			dstK[offset[d]] = k
			offset[d]++
		}
		return
	}
	vs := srcV[lo:hi]
	vs = vs[:len(ks)]
	for i, k := range ks {
		d := uint8(uint64(k)>>s) & m
		o := offset[d]
		dstK[o] = k
		dstV[o] = vs[i]
		offset[d] = o + 1
	}
}
