package btree

import "github.com/warpkv/warpkv/engine"

// insertPinned is InsertStaged on the GPU engine: insertBatch with keys
// and values in pinned host memory, which reach the device by DMA.
func (g *gpuTree) insertPinned(keys, values []uint64) (engine.Timings, error) {
	var tm engine.Timings
	var err error
	g.st, tm, err = g.insertBatch(g.st, keys, values, true)
	return tm, err
}
