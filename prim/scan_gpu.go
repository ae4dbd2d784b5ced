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
// (16 KiB of input), large enough that the look-back's latency hides behind
// the tile's memory traffic.
const (
	scanBlock    = 256 // threads per block
	scanRounds   = 4   // vectors per thread
	scanVecBytes = 16  // bytes per vector load
)

// scanTileItems is the number of elements of elemBytes bytes in one tile.
func scanTileItems(elemBytes int) int { return scanBlock * scanRounds * (scanVecBytes / elemBytes) }

// DevScanExclusive queues on the engine's stream the exclusive prefix sums
// of in[0:n) into out[0:n): out[i] = in[0] + ... + in[i-1] modulo 2^bits.
// out may be in. No host synchronization. Cost: one kernel reading and
// writing every element once (single pass, decoupled look-back), plus a
// memset of 8 bytes per 16 KiB of input.
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
	if size == 4 {
		lb, err := e.scanLookbackScratch("scan", tiles, 0)
		if err != nil {
			return err
		}
		return f.Launch(e.stream, gpu.D1(tiles), gpu.D1(scanBlock), 0,
			in, out, uint64(n), lb.status, lb.counter)
	}
	lb, err := e.scanLookbackScratch("scan", tiles, size)
	if err != nil {
		return err
	}
	return f.Launch(e.stream, gpu.D1(tiles), gpu.D1(scanBlock), 0,
		in, out, uint64(n), lb.status, lb.aggregates, lb.prefixes, lb.counter)
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

// scanLookback is the device state of one decoupled look-back launch, carved
// from one scratch buffer: the tile counter, and per tile either a packed
// status word (status|32-bit value) or a status flag plus an aggregate and
// an inclusive prefix.
type scanLookback struct {
	counter    gpu.DevicePtr // u32 tile counter
	status     gpu.DevicePtr // packed u64 words, or u32 flags
	aggregates gpu.DevicePtr // flag layout only
	prefixes   gpu.DevicePtr // flag layout only
}

// scanLookbackAlign aligns each array of the look-back state (and so 16-byte
// values).
const scanLookbackAlign = 16

// scanLookbackScratch returns look-back state for tiles tiles in the scratch
// buffer of the given purpose, and queues the memset that clears the
// counter and the statuses. valueBytes 0 selects the packed layout (32-bit
// values); otherwise each tile has a flag and two values of valueBytes (a
// multiple of 8). Callers hold e.mu.
func (e *Engine) scanLookbackScratch(purpose string, tiles, valueBytes int) (scanLookback, error) {
	if uint64(tiles) > math.MaxUint32 {
		return scanLookback{}, fmt.Errorf("%d tiles overflow the 32-bit tile counter", tiles)
	}
	align := func(x int) int { return (x + scanLookbackAlign - 1) / scanLookbackAlign * scanLookbackAlign }
	statusBytes := 8 * tiles // packed words
	valuesBytes := 0
	if valueBytes > 0 {
		statusBytes = align(4 * tiles) // flags
		valuesBytes = align(valueBytes * tiles)
	}
	zeroBytes := scanLookbackAlign + statusBytes // counter and statuses
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
