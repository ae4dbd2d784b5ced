package prim

import (
	"fmt"
	"math"
	"unsafe"

	"warpkv/gpu"
)

// Launch configuration of the scan kernels, mirrored by SCAN_BLOCK,
// SCAN_ROUNDS and SCAN_VEC_BYTES in scan.cu: keep them equal. A block scans
// one tile of scanBlock threads x scanRounds vectors of scanVecBytes each
// (32 KiB of input). Measured on an H100 (256 MiB, against a device copy):
// 4 rounds reached 69% (uint32) and 55% (uint64), 8 rounds 77% and 69%;
// more rounds cost blocks per SM and gained nothing.
const (
	scanBlock    = 256 // threads per block
	scanRounds   = 8   // vectors per thread
	scanVecBytes = 16  // bytes per vector load
)

// Bytes of look-back status per tile: the packed status|value word of
// uint32 scans, the two status|half-value words of uint64 scans.
const (
	scanStatusBytes32 = 8
	scanStatusBytes64 = 16
)

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
	if n < 0 || in.Len() < n || out.Len() < n {
		return fmt.Errorf("prim: device %s of %d elements: in holds %d, out %d", op, n, in.Len(), out.Len())
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
	statusBytes := scanStatusBytes32
	if size == 8 {
		statusBytes = scanStatusBytes64
	}
	lb, err := e.scanLookbackScratch("scan", tiles, statusBytes, 0)
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
// carved from one scratch buffer: the tile counter, the tile statuses and,
// for flag statuses, the arrays of aggregates and inclusive prefixes.
type scanLookback struct {
	counter    gpu.DevicePtr // u32 tile counter
	status     gpu.DevicePtr // statusBytes per tile
	aggregates gpu.DevicePtr // valueBytes per tile, flag statuses only
	prefixes   gpu.DevicePtr // valueBytes per tile, flag statuses only
}

// scanLookbackAlign aligns each array of the look-back state (and so
// 16-byte values).
const scanLookbackAlign = 16

// scanLookbackScratch returns look-back state for tiles tiles in the scratch
// buffer of the given purpose, and queues the memset that clears the
// counter and the statuses. Each tile has statusBytes of status and, when
// valueBytes > 0 (a multiple of 8), an aggregate and a prefix of valueBytes.
// Callers hold e.mu.
func (e *Engine) scanLookbackScratch(purpose string, tiles, statusBytes, valueBytes int) (scanLookback, error) {
	if uint64(tiles) > math.MaxUint32 {
		return scanLookback{}, fmt.Errorf("%d tiles overflow the 32-bit tile counter", tiles)
	}
	align := func(x int) int { return (x + scanLookbackAlign - 1) / scanLookbackAlign * scanLookbackAlign }
	zeroBytes := scanLookbackAlign + align(statusBytes*tiles) // counter and statuses
	valuesBytes := align(valueBytes * tiles)
	buf, err := e.scratchBuf(purpose+" look-back", zeroBytes+2*valuesBytes)
	if err != nil {
		return scanLookback{}, err
	}
	if err := asBuffer[byte](buf, 0, zeroBytes).FillBytes(e.stream, 0); err != nil {
		return scanLookback{}, err
	}
	base := buf.Ptr()
	lb := scanLookback{counter: base, status: base + scanLookbackAlign}
	if valueBytes > 0 {
		lb.aggregates = base + gpu.DevicePtr(zeroBytes)
		lb.prefixes = lb.aggregates + gpu.DevicePtr(valuesBytes)
	}
	return lb, nil
}
