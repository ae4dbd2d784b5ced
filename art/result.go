package art

import (
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// Result holds the answers of a batch of range or prefix queries: the
// pairs of query i are Keys.At(j), Values[j] for Offsets[i] <= j <
// Offsets[i+1], in the query's order.
//
// A Result passed to RangesInto, RangesDescInto or PrefixInto is reused:
// its arrays are overwritten (and grown when short), so the views of an
// earlier answer (Keys.At, Query) hold only until the next call into it.
// One made by Tree.NewResult on the GPU engine keeps its arrays in pinned
// host memory, which the device writes the answers into by DMA with no
// host copy; Free releases it. A call that fails leaves the Result's
// arrays unspecified (a pinned one may have been written in part).
type Result struct {
	Keys    Keys
	Values  []uint64
	Offsets []int

	pin     *gpu.HostArrays // the arrays' pinned memory; nil: Go memory
	keysCap int             // pinned: key bytes its keys array is known to hold (the most asked of it)
}

// NewResult returns an empty Result to answer batch after batch into
// (RangesInto, RangesDescInto, PrefixInto). On the GPU engine its arrays
// live in pinned host memory, allocated at the first call and grown by a
// quarter more than asked when a call needs more, that the device writes
// the answers into directly: the copy out of the transfer buffers
// disappears from every call. Free it when done (before closing the
// tree's device). On the CPU engine it is an ordinary Result. Cost:
// nothing until the first call; each growth of a pinned array is a
// cuMemHostAlloc (milliseconds).
func (t *Tree) NewResult() *Result { return &Result{pin: engine.HostArraysOf(&t.Facade)} }

// Free releases a pinned Result's memory; r is then an ordinary empty
// Result (later calls answer into Go memory). It is a no-op on other
// Results. Earlier answers' views are invalid after it.
func (r *Result) Free() error {
	if r == nil {
		return nil
	}
	err := r.pin.Free()
	*r = Result{}
	if err != nil {
		return fmt.Errorf("art: freeing a result: %w", err)
	}
	return nil
}

// pinned reports whether r's arrays are in pinned host memory.
func (r *Result) pinned() bool { return r != nil && r.pin != nil }

// sizeResult returns into (a new Result when into is nil) sized for Q
// queries with total pairs of totalBytes key bytes, Keys.Offs[total] set:
// each array is into's own when it has the room, else a new one (the
// three large ones allocated on goroutines of their own; pinned ones for
// a pinned Result). The arrays are not cleared: the call that sizes them
// writes every element. Cost: the allocation (and zeroing) of the arrays
// that grow.
func sizeResult(into *Result, Q, total int, totalBytes uint64) (*Result, error) {
	r := into
	if r == nil {
		r = new(Result)
	}
	if r.pin != nil {
		if err := r.sizePinned(Q, total, int(totalBytes)); err != nil {
			return nil, fmt.Errorf("pinning the answers: %w", err)
		}
	} else {
		r.Offsets = slices.Grow(r.Offsets[:0], Q+1)[:Q+1]
		var wg sync.WaitGroup
		wg.Go(func() { r.Keys.Data = slices.Grow(r.Keys.Data[:0], int(totalBytes))[:totalBytes] })
		wg.Go(func() { r.Keys.Offs = slices.Grow(r.Keys.Offs[:0], total+1)[:total+1] })
		wg.Go(func() { r.Values = slices.Grow(r.Values[:0], total)[:total] })
		wg.Wait()
	}
	r.Keys.Offs[total] = uint32(totalBytes)
	return r, nil
}

// sizePinned points r's arrays at its pinned arrays, each grown when
// short.
func (r *Result) sizePinned(Q, total, totalBytes int) error {
	var err error
	if r.Keys.Data, err = gpu.HostArray[byte](r.pin, "keys", totalBytes); err != nil {
		return err
	}
	r.keysCap = max(r.keysCap, totalBytes)
	if r.Keys.Offs, err = gpu.HostArray[uint32](r.pin, "offs", total+1); err != nil {
		return err
	}
	if r.Values, err = gpu.HostArray[uint64](r.pin, "values", total); err != nil {
		return err
	}
	r.Offsets, err = gpu.HostArray[int](r.pin, "offsets", Q+1)
	return err
}

// offsetWords views a Result's query offsets as the 64-bit words the
// device writes (int is 64-bit: below).
func offsetWords(offs []int) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(offs))), len(offs))
}

var _ [1]struct{} = [unsafe.Sizeof(int(0)) / 8]struct{}{}

// Query returns query i's pairs (key views into r.Keys).
func (r *Result) Query(i int) (keys [][]byte, values []uint64) {
	a, b := r.Offsets[i], r.Offsets[i+1]
	keys = make([][]byte, b-a)
	for j := range keys {
		keys[j] = r.Keys.At(a + j)
	}
	return keys, r.Values[a:b]
}

// pinnedKeys points a pinned Result's keys at n bytes of its pinned keys
// array, keeping the first keep bytes: when the array holds n bytes
// already (keysCap) a view of it; else (the caller made sure no transfer
// into the array is still queued) a new array of want bytes (at least n)
// with the kept bytes copied into it. Cost: O(1), or the growth: a free, a
// cuMemHostAlloc and a copy of keep bytes through Go memory.
func (r *Result) pinnedKeys(n, keep, want int) error {
	if n <= r.keysCap {
		var err error
		r.Keys.Data, err = gpu.HostArray[byte](r.pin, "keys", n)
		return err
	}
	kept := slices.Clone(r.Keys.Data[:keep])
	want = max(want, n)
	h, err := gpu.HostArray[byte](r.pin, "keys", want)
	if err != nil {
		r.Keys.Data, r.keysCap = nil, 0
		return err
	}
	copy(h, kept)
	r.Keys.Data, r.keysCap = h[:n], want
	return nil
}
