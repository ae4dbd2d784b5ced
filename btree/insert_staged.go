package btree

import "fmt"

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
	return t.insertPairs(st.Keys[:n], st.Values[:n], st.pinned)
}
