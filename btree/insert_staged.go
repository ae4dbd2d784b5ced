package btree

import (
	"fmt"
	"time"

	"github.com/warpkv/warpkv/engine"
)

// InsertStaged upserts the first n pairs of st.Keys and st.Values, as
// Insert (the last occurrence of a key wins). On the GPU engine with a
// staging from NewStaging the pairs reach the device by DMA straight from
// its pinned arrays, with no host copy: the keys first (a large batch in
// two halves, the first sorted while the second transfers), the values
// while the keys are sorted, located and merged. st must not change until
// it returns. Cost: as Insert, less the host copies into the staging
// rings.
func (t *Tree) InsertStaged(st *Staging, n int) error {
	if st == nil || n < 0 || n > len(st.Keys) || n > len(st.Values) {
		return fmt.Errorf("btree: insert: %d pairs staged in a staging of %d", n, stagedLen(st))
	}
	if _, err := engine.Lock(&t.Facade, "insert"); err != nil {
		return err
	}
	defer engine.Unlock(&t.Facade)
	if n == 0 {
		t.idle("insert", 0, time.Now())
		return nil
	}
	keys, values := st.Keys[:n], st.Values[:n]
	var tm engine.Timings
	var err error
	if g, ok := t.e.(*gpuTree); ok && st.pinned {
		tm, err = g.insertPinned(keys, values)
	} else {
		tm, err = t.e.insert(keys, values)
	}
	if err != nil {
		return fmt.Errorf("btree: insert: %w", err)
	}
	engine.Record(&t.Facade, tm)
	return nil
}
