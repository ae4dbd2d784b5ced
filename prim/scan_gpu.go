package prim

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
)

// Launch configuration of the scan kernels, mirrored by SCAN_BLOCK,
// SCAN_ROUNDS and SCAN_VEC_BYTES in scan.cu: keep them equal. A block scans
// one tile of scanBlock threads x scanRounds vectors of scanVecBytes each
// (32 KiB of input). Measured on an H100 (256 MiB, exclusive scan, against
// a device copy): uint32 68% at 4 rounds, 75% at 6, 77% at 8; uint64 81% at
// 6, 84% at 8 (inclusive 78%). More rounds need more than 64 registers a
// thread, which costs a block per SM, or spills under a register cap.
const (
	scanBlock    = 256 // threads per block
	scanRounds   = 8   // vectors per thread
	scanVecBytes = 16  // bytes per vector load
)

// scanStatusBytes is the size of the look-back status of a tile whose scan
// value has valueBytes: one 64-bit word (status and 32 bits of value) per
// 32 bits of value (TileStatus in scan.cu and select.cu).
func scanStatusBytes(valueBytes int) int { return 2 * valueBytes }

// scanBufLen is b's length, 0 for a nil buffer.
func scanBufLen[T any](b *gpu.Buffer[T]) int {
	if b == nil {
		return 0
	}
	return b.Len()
}

// scanTileItems is the number of elements of elemBytes bytes in one tile.
func scanTileItems(elemBytes int) int { return scanBlock * scanRounds * (scanVecBytes / elemBytes) }

// DevScanExclusive queues on the engine's stream the exclusive prefix sums
// of in[0:n) into out[0:n): out[i] = in[0] + ... + in[i-1] modulo 2^bits.
// out may be in. No host synchronization. Cost: one kernel reading and
// writing every element once (single pass, decoupled look-back), plus a
// memset of 8 (uint32) or 16 (uint64) bytes per 32 KiB of input.
func DevScanExclusive[T Word](e *Engine, in, out *gpu.Buffer[T], n int) error {
	return devScan(e, in, out, n, false)
}

// DevScanInclusive queues on the engine's stream the inclusive prefix sums
// of in[0:n) into out[0:n): out[i] = in[0] + ... + in[i] modulo 2^bits.
// out may be in. No host synchronization. Cost as DevScanExclusive.
func DevScanInclusive[T Word](e *Engine, in, out *gpu.Buffer[T], n int) error {
	return devScan(e, in, out, n, true)
}

func devScan[T Word](e *Engine, in, out *gpu.Buffer[T], n int, inclusive bool) error {
	op := scanName(inclusive)
	if e.Backend() != gpu.BackendGPU {
		return fmt.Errorf("prim: device %s: needs the gpu engine, have %s", op, e.Name())
	}
	if n < 0 || scanBufLen(in) < n || scanBufLen(out) < n {
		return fmt.Errorf("prim: device %s of %d elements: in holds %d, out %d", op, n, scanBufLen(in), scanBufLen(out))
	}
	if n == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := launchScan(e, in, out, n, inclusive); err != nil {
		return fmt.Errorf("prim: device %s: %w", op, err)
	}
	return nil
}

// launchScan queues the memset of the look-back state and the scan kernel.
// Callers hold e.mu.
func launchScan[T Word](e *Engine, in, out *gpu.Buffer[T], n int, inclusive bool) error {
	size := int(unsafe.Sizeof(*new(T)))
	kind := "exclusive"
	if inclusive {
		kind = "inclusive"
	}
	f, err := e.kernel("scan.cu", fmt.Sprintf("scan_%s_u%d", kind, 8*size))
	if err != nil {
		return err
	}
	tiles := (n + scanTileItems(size) - 1) / scanTileItems(size)
	lb, err := e.scanLookbackScratch("scan", tiles, scanStatusBytes(size))
	if err != nil {
		return err
	}
	return f.Launch(e.stream, gpu.D1(tiles), gpu.D1(scanBlock), 0, in, out, uint64(n), lb.status, lb.counter)
}

// scanOnGPU is the host-level scan on the GPU engine: copy in, scan in
// place, copy out.
func scanOnGPU[T Word](e *Engine, in, out []T, inclusive bool) (err error) {
	n := len(in)
	if n == 0 {
		return nil
	}
	b, err := gpu.Alloc[T](e.dev, n)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			e.Synchronize() // the buffer may still be in use by queued work
		}
		b.Free()
	}()
	if err := b.Write(e.stream, 0, in); err != nil {
		return err
	}
	if err := devScan(e, b, b, n, inclusive); err != nil {
		return err
	}
	if err := b.Read(e.stream, 0, out); err != nil {
		return err
	}
	return e.Synchronize()
}

// scanLookback is the device state of one decoupled look-back launch,
// carved from one scratch buffer: the tile counter and the tile statuses.
type scanLookback struct {
	counter gpu.DevicePtr // u32 tile counter
	status  gpu.DevicePtr // statusBytes per tile
}

// scanLookbackAlign aligns the statuses after the counter.
const scanLookbackAlign = 16

// scanLookbackScratch returns look-back state for tiles tiles of
// statusBytes each in the scratch buffer of the given purpose, and queues
// the memset that clears it. Callers hold e.mu.
func (e *Engine) scanLookbackScratch(purpose string, tiles, statusBytes int) (scanLookback, error) {
	if uint64(tiles) > math.MaxUint32 {
		return scanLookback{}, fmt.Errorf("%d tiles overflow the 32-bit tile counter", tiles)
	}
	bytes := scanLookbackAlign + statusBytes*tiles
	buf, err := e.scratchBuf(purpose+" look-back", bytes)
	if err != nil {
		return scanLookback{}, err
	}
	if err := asBuffer[byte](buf, 0, bytes).FillBytes(e.stream, 0); err != nil {
		return scanLookback{}, err
	}
	return scanLookback{counter: buf.Ptr(), status: buf.Ptr() + scanLookbackAlign}, nil
}
