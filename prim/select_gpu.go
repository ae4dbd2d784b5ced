package prim

import (
	"fmt"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
)

// Launch configuration of the select, run-length and reduce-by-key kernels,
// mirrored by SELECT_BLOCK, SELECT_ROUNDS and SELECT_VEC_BYTES in select.cu:
// keep them equal. A block handles one tile of selectBlock threads x
// selectRounds vectors of selectVecBytes of the widest element read.
const (
	selectBlock    = 256 // threads per block
	selectRounds   = 4   // vectors per thread
	selectVecBytes = 16  // bytes per vector load of the widest element
)

// selectTileItems is the number of items in one tile when the widest
// element read has widest bytes.
func selectTileItems(widest int) int { return selectBlock * selectRounds * (selectVecBytes / widest) }

// reduceByKeyValueBytes is the size of the kernels' Pair<V> scan value (a
// 32-bit head count and a V sum, padded to V's alignment) for values of
// valBytes.
func reduceByKeyValueBytes(valBytes int) int { return 2 * valBytes }

// DevSelect queues on the engine's stream the compaction of in[0:n): the
// in[i] with flags[i] != 0 are written in order to the front of out, and
// their number to count[0]. out must hold n elements (the kept number is
// not known when the work is queued) and must not overlap in. No host
// synchronization. Cost: one kernel reading in and flags once and writing
// the kept elements (single pass, decoupled look-back), plus a memset of 8
// bytes per tile.
func DevSelect[T Word](e *Engine, in *gpu.Buffer[T], flags *gpu.Buffer[uint8], out *gpu.Buffer[T], n int,
	count *gpu.Buffer[uint32]) error {
	const op = "prim: device select"
	if e.Backend() != gpu.BackendGPU {
		return fmt.Errorf("%s: needs the gpu engine, have %s", op, e.Name())
	}
	if n < 0 || uint64(n) > selectMaxCount ||
		scanBufLen(in) < n || scanBufLen(flags) < n || scanBufLen(out) < n || scanBufLen(count) < 1 {
		return fmt.Errorf("%s of %d elements: in holds %d, flags %d, out %d, count %d",
			op, n, scanBufLen(in), scanBufLen(flags), scanBufLen(out), scanBufLen(count))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := launchSelect(e, in, flags, out, n, count); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// launchSelect queues the select kernel and its look-back memset (or, for
// no input, a zero count). Callers hold e.mu.
func launchSelect[T Word](e *Engine, in *gpu.Buffer[T], flags *gpu.Buffer[uint8], out *gpu.Buffer[T], n int,
	count *gpu.Buffer[uint32]) error {
	if n == 0 {
		return gpu.View[uint32](count, 0, 1).Fill32(e.stream, 0)
	}
	size := int(unsafe.Sizeof(*new(T)))
	f, err := e.kernel("select.cu", fmt.Sprintf("select_u%d", 8*size))
	if err != nil {
		return err
	}
	tiles := (n + selectTileItems(size) - 1) / selectTileItems(size)
	lb, err := e.scanLookbackScratch("select", tiles, scanStatusBytes(4))
	if err != nil {
		return err
	}
	return f.Launch(e.stream, gpu.D1(tiles), gpu.D1(selectBlock), 0,
		in, flags, out, uint64(n), count, lb.status, lb.counter)
}

// DevRunLengthEncode queues on the engine's stream the run-length encoding
// of keys[0:n): the key and length of the r-th run of equal consecutive
// keys go to uniq[r] and counts[r], the number of runs to runs[0]. uniq and
// counts must hold n elements and must not overlap keys. No host
// synchronization. Cost: one kernel reading the keys once and writing the
// runs (single pass, decoupled look-back), plus a memset of 16 bytes per
// tile of 4096 (uint32) or 2048 (uint64) keys.
func DevRunLengthEncode[K Key](e *Engine, keys *gpu.Buffer[K], uniq *gpu.Buffer[K], counts *gpu.Buffer[uint32],
	n int, runs *gpu.Buffer[uint32]) error {
	const op = "prim: device run-length encode"
	if e.Backend() != gpu.BackendGPU {
		return fmt.Errorf("%s: needs the gpu engine, have %s", op, e.Name())
	}
	if n < 0 || uint64(n) > selectMaxCount ||
		scanBufLen(keys) < n || scanBufLen(uniq) < n || scanBufLen(counts) < n || scanBufLen(runs) < 1 {
		return fmt.Errorf("%s of %d keys: keys hold %d, uniq %d, counts %d, runs %d",
			op, n, scanBufLen(keys), scanBufLen(uniq), scanBufLen(counts), scanBufLen(runs))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := launchReduceByKey(e, keys, nil, uniq, counts, n, runs); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// DevReduceByKey queues on the engine's stream the reduction by key of
// keys[0:n), vals[0:n): the key of the r-th run of equal consecutive keys
// and the sum of its values (modulo 2^bits) go to uniq[r] and sums[r], the
// number of runs to runs[0]. uniq and sums must hold n elements and must
// not overlap the inputs. No host synchronization. Cost: one kernel reading
// keys and values once and writing the runs (single pass, decoupled
// look-back), plus a memset of 16 (uint32 values) or 32 (uint64 values)
// bytes per tile of up to 4096 keys.
func DevReduceByKey[K Key, V Word](e *Engine, keys *gpu.Buffer[K], vals *gpu.Buffer[V], uniq *gpu.Buffer[K],
	sums *gpu.Buffer[V], n int, runs *gpu.Buffer[uint32]) error {
	const op = "prim: device reduce by key"
	if e.Backend() != gpu.BackendGPU {
		return fmt.Errorf("%s: needs the gpu engine, have %s", op, e.Name())
	}
	if n < 0 || uint64(n) > selectMaxCount || scanBufLen(keys) < n || scanBufLen(vals) < n ||
		scanBufLen(uniq) < n || scanBufLen(sums) < n || scanBufLen(runs) < 1 {
		return fmt.Errorf("%s of %d keys: keys hold %d, vals %d, uniq %d, sums %d, runs %d",
			op, n, scanBufLen(keys), scanBufLen(vals), scanBufLen(uniq), scanBufLen(sums), scanBufLen(runs))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := launchReduceByKey(e, keys, vals, uniq, sums, n, runs); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// launchReduceByKey queues the reduce-by-key kernel (vals nil: the
// run-length kernel, V uint32) and its look-back memset, or for no input a
// zero run count. Callers hold e.mu.
func launchReduceByKey[K Key, V Word](e *Engine, keys *gpu.Buffer[K], vals *gpu.Buffer[V], uniq *gpu.Buffer[K],
	sums *gpu.Buffer[V], n int, runs *gpu.Buffer[uint32]) error {
	if n == 0 {
		return gpu.View[uint32](runs, 0, 1).Fill32(e.stream, 0)
	}
	ks, vs := int(unsafe.Sizeof(*new(K))), int(unsafe.Sizeof(*new(V)))
	name := fmt.Sprintf("reduce_by_key_u%d_u%d", 8*ks, 8*vs)
	if vals == nil {
		name = fmt.Sprintf("run_length_encode_u%d", 8*ks)
	}
	f, err := e.kernel("select.cu", name)
	if err != nil {
		return err
	}
	tile := selectTileItems(max(ks, vs))
	tiles := (n + tile - 1) / tile
	lb, err := e.scanLookbackScratch("reduce by key", tiles, scanStatusBytes(reduceByKeyValueBytes(vs)))
	if err != nil {
		return err
	}
	grid, block := gpu.D1(tiles), gpu.D1(selectBlock)
	if vals == nil {
		return f.Launch(e.stream, grid, block, 0,
			keys, uniq, sums, uint64(n), runs, lb.status, lb.counter)
	}
	return f.Launch(e.stream, grid, block, 0,
		keys, vals, uniq, sums, uint64(n), runs, lb.status, lb.counter)
}

// selectOnGPU is the host-level select on the GPU engine: copy in, select,
// read the count, copy out the kept elements.
func selectOnGPU[T Word](e *Engine, in []T, flags []uint8, out []T) (kept int, err error) {
	n := len(in)
	if n == 0 {
		return 0, nil
	}
	var bufs selectBuffers
	defer func() { err = bufs.free(e, err) }()
	bin, err := selectUpload(&bufs, e, in)
	if err != nil {
		return 0, err
	}
	bflags, err := selectUpload(&bufs, e, flags)
	if err != nil {
		return 0, err
	}
	bout, err := selectAlloc[T](&bufs, e, n)
	if err != nil {
		return 0, err
	}
	bcount, err := selectAlloc[uint32](&bufs, e, 1)
	if err != nil {
		return 0, err
	}
	if err := DevSelect(e, bin, bflags, bout, n, bcount); err != nil {
		return 0, err
	}
	kept, err = selectReadCount(e, bcount)
	if err != nil {
		return 0, err
	}
	if len(out) < kept {
		return kept, fmt.Errorf("%d elements kept, out holds %d", kept, len(out))
	}
	if err := bout.Read(e.stream, 0, out[:kept]); err != nil {
		return 0, err
	}
	return kept, e.Synchronize()
}

// reduceByKeyOnGPU is the host-level reduce-by-key (vals nil: run-length
// encoding) on the GPU engine: copy in, reduce, read the number of runs,
// copy out the runs.
func reduceByKeyOnGPU[K Key, V Word](e *Engine, keys []K, vals []V, uniq []K, sums []V) (runs int, err error) {
	n := len(keys)
	if n == 0 {
		return 0, nil
	}
	var bufs selectBuffers
	defer func() { err = bufs.free(e, err) }()
	bkeys, err := selectUpload(&bufs, e, keys)
	if err != nil {
		return 0, err
	}
	var bvals *gpu.Buffer[V]
	if vals != nil {
		if bvals, err = selectUpload(&bufs, e, vals); err != nil {
			return 0, err
		}
	}
	buniq, err := selectAlloc[K](&bufs, e, n)
	if err != nil {
		return 0, err
	}
	bsums, err := selectAlloc[V](&bufs, e, n)
	if err != nil {
		return 0, err
	}
	bruns, err := selectAlloc[uint32](&bufs, e, 1)
	if err != nil {
		return 0, err
	}
	if vals == nil {
		// Only RunLengthEncode passes nil values, and it instantiates V = uint32.
		err = DevRunLengthEncode(e, bkeys, buniq, any(bsums).(*gpu.Buffer[uint32]), n, bruns)
	} else {
		err = DevReduceByKey(e, bkeys, bvals, buniq, bsums, n, bruns)
	}
	if err != nil {
		return 0, err
	}
	runs, err = selectReadCount(e, bruns)
	if err != nil {
		return 0, err
	}
	if len(uniq) < runs || len(sums) < runs {
		return runs, errShortRuns(sumsName(vals == nil), runs, len(uniq), len(sums))
	}
	if err := buniq.Read(e.stream, 0, uniq[:runs]); err != nil {
		return 0, err
	}
	if err := bsums.Read(e.stream, 0, sums[:runs]); err != nil {
		return 0, err
	}
	return runs, e.Synchronize()
}

// selectReadCount waits for the engine's queued work and returns count[0].
func selectReadCount(e *Engine, count *gpu.Buffer[uint32]) (int, error) {
	var c [1]uint32
	if err := count.Read(e.stream, 0, c[:]); err != nil {
		return 0, err
	}
	if err := e.Synchronize(); err != nil {
		return 0, err
	}
	return int(c[0]), nil
}

// selectBuffers collects the device buffers of one host-level call so that
// they are freed together.
type selectBuffers []interface{ Free() error }

// free waits for the queued work (which may still use the buffers) and
// frees them, returning err or else the first failure.
func (bs selectBuffers) free(e *Engine, err error) error {
	if serr := e.Synchronize(); err == nil {
		err = serr
	}
	for _, b := range bs {
		if ferr := b.Free(); err == nil {
			err = ferr
		}
	}
	return err
}

// selectAlloc allocates n elements of T and records the buffer in bufs.
func selectAlloc[T any](bufs *selectBuffers, e *Engine, n int) (*gpu.Buffer[T], error) {
	b, err := gpu.Alloc[T](e.dev, n)
	if err != nil {
		return nil, err
	}
	*bufs = append(*bufs, b)
	return b, nil
}

// selectUpload allocates a buffer for src, records it in bufs and queues the
// copy of src into it.
func selectUpload[T any](bufs *selectBuffers, e *Engine, src []T) (*gpu.Buffer[T], error) {
	b, err := selectAlloc[T](bufs, e, len(src))
	if err != nil {
		return nil, err
	}
	return b, b.Write(e.stream, 0, src)
}
