package prim

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/warpkv/warpkv/gpu"
)

// Launch configuration of merge.cu. Keep equal to its #defines.
const (
	mergeBlock          = 128                     // MERGE_BLOCK: threads per merge_tile block
	mergeItems          = 15                      // MERGE_ITEMS: outputs per thread
	mergeTile           = mergeBlock * mergeItems // MERGE_TILE: outputs per block
	mergePartitionBlock = 128                     // MERGE_PARTITION_BLOCK: threads per merge_partition block
)

// DevMerge queues on e's stream the stable merge of the ascending device
// runs ak[0,na) and bk[0,nb) into outK[0,na+nb): on equal keys every element
// of a comes before every element of b, and each run keeps its order. With
// av, bv and outV all non-nil, values follow their keys; with all three nil
// only keys are merged. Runs that are not ascending give an unspecified
// output, but every access stays in bounds. It does not wait for the work.
// Cost: two kernels,
// one reading every key and value once and writing the output, and a
// scratch array of 8 bytes per 1920 outputs.
func DevMerge[K Key, V Word](e *Engine, ak *gpu.Buffer[K], av *gpu.Buffer[V], na int, bk *gpu.Buffer[K], bv *gpu.Buffer[V], nb int, outK *gpu.Buffer[K], outV *gpu.Buffer[V]) error {
	if e.Backend() != gpu.BackendGPU {
		return fmt.Errorf("prim: merge: DevMerge on the %s engine, need gpu", e.Name())
	}
	if err := checkDevMerge(ak, av, na, bk, bv, nb, outK, outV); err != nil {
		return fmt.Errorf("prim: merge: %w", err)
	}
	n := na + nb
	if n == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := devMergeLocked(e, ak, av, na, bk, bv, nb, outK, outV); err != nil {
		return fmt.Errorf("prim: merge: %w", err)
	}
	return nil
}

// checkDevMerge validates DevMerge's sizes against its buffers.
func checkDevMerge[K Key, V Word](ak *gpu.Buffer[K], av *gpu.Buffer[V], na int, bk *gpu.Buffer[K], bv *gpu.Buffer[V], nb int, outK *gpu.Buffer[K], outV *gpu.Buffer[V]) error {
	if na < 0 || nb < 0 {
		return fmt.Errorf("negative run length (na %d, nb %d)", na, nb)
	}
	if ak == nil || bk == nil || outK == nil {
		return errors.New("nil key buffer")
	}
	n := na + nb
	if ak.Len() < na || bk.Len() < nb || outK.Len() < n {
		return fmt.Errorf("key buffers of %d, %d, %d elements too small for %d + %d = %d", ak.Len(), bk.Len(), outK.Len(), na, nb, n)
	}
	if (av == nil) != (bv == nil) || (av == nil) != (outV == nil) {
		return errors.New("av, bv and outV must be all nil (keys only) or all non-nil")
	}
	if av != nil && (av.Len() < na || bv.Len() < nb || outV.Len() < n) {
		return fmt.Errorf("value buffers of %d, %d, %d elements too small for %d + %d = %d", av.Len(), bv.Len(), outV.Len(), na, nb, n)
	}
	return nil
}

// devMergeLocked queues the partition and merge kernels; e.mu is held and
// na+nb > 0.
func devMergeLocked[K Key, V Word](e *Engine, ak *gpu.Buffer[K], av *gpu.Buffer[V], na int, bk *gpu.Buffer[K], bv *gpu.Buffer[V], nb int, outK *gpu.Buffer[K], outV *gpu.Buffer[V]) error {
	kbits := 8 * unsafe.Sizeof(K(0))
	part, err := e.kernel("merge.cu", fmt.Sprintf("merge_partition_k%d", kbits))
	if err != nil {
		return err
	}
	name := fmt.Sprintf("merge_tile_k%d", kbits)
	if av != nil {
		name += fmt.Sprintf("_v%d", 8*unsafe.Sizeof(V(0)))
	}
	tile, err := e.kernel("merge.cu", name)
	if err != nil {
		return err
	}

	tiles := gpu.Grid(na+nb, mergeTile)
	scratch, err := e.scratchBuf("merge splits", 8*(tiles+1))
	if err != nil {
		return err
	}
	splits := asBuffer[uint64](scratch, 0, tiles+1)
	if err := part.Launch(e.stream, gpu.D1(gpu.Grid(tiles+1, mergePartitionBlock)), gpu.D1(mergePartitionBlock), 0,
		ak, uint64(na), bk, uint64(nb), uint64(tiles), splits); err != nil {
		return err
	}
	if av == nil {
		return tile.Launch(e.stream, gpu.D1(tiles), gpu.D1(mergeBlock), 0,
			ak, uint64(na), bk, uint64(nb), splits, outK)
	}
	return tile.Launch(e.stream, gpu.D1(tiles), gpu.D1(mergeBlock), 0,
		ak, av, uint64(na), bk, bv, uint64(nb), splits, outK, outV)
}

// mergeOnGPU is Merge on a GPU engine: copy in, merge, copy out.
func mergeOnGPU[K Key, V Word](e *Engine, ak []K, av []V, bk []K, bv []V, outK []K, outV []V) (err error) {
	if len(outK) == 0 {
		return nil
	}
	var st deviceStaging
	defer func() {
		if cerr := st.finish(e); err == nil {
			err = cerr
		}
	}()
	dak, err := stageOnDevice(e, &st, ak, len(ak))
	if err != nil {
		return err
	}
	dbk, err := stageOnDevice(e, &st, bk, len(bk))
	if err != nil {
		return err
	}
	dok, err := stageOnDevice[K](e, &st, nil, len(outK))
	if err != nil {
		return err
	}
	var dav, dbv, dov *gpu.Buffer[V]
	if outV != nil {
		if dav, err = stageOnDevice(e, &st, av, len(av)); err != nil {
			return err
		}
		if dbv, err = stageOnDevice(e, &st, bv, len(bv)); err != nil {
			return err
		}
		if dov, err = stageOnDevice[V](e, &st, nil, len(outV)); err != nil {
			return err
		}
	}
	e.mu.Lock()
	err = devMergeLocked(e, dak, dav, len(ak), dbk, dbv, len(bk), dok, dov)
	e.mu.Unlock()
	if err != nil {
		return err
	}
	if err := dok.Read(e.Stream(), 0, outK); err != nil {
		return err
	}
	if outV != nil {
		return dov.Read(e.Stream(), 0, outV)
	}
	return nil
}

// deviceStaging tracks the device buffers a host-level call allocates.
type deviceStaging struct {
	bufs []interface{ Free() error }
}

// stageOnDevice allocates n elements on e's device, records the buffer in st and
// queues the copy of src (len(src) <= n) to its start.
func stageOnDevice[T any](e *Engine, st *deviceStaging, src []T, n int) (*gpu.Buffer[T], error) {
	b, err := gpu.Alloc[T](e.Device(), n)
	if err != nil {
		return nil, err
	}
	st.bufs = append(st.bufs, b)
	return b, b.Write(e.Stream(), 0, src)
}

// finish waits for e's stream, so the copies out are complete and the
// buffers idle, then frees the buffers. It returns the first error.
func (st *deviceStaging) finish(e *Engine) error {
	err := e.Synchronize()
	for _, b := range st.bufs {
		if ferr := b.Free(); err == nil {
			err = ferr
		}
	}
	st.bufs = nil
	return err
}
