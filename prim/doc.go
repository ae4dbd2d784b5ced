// Package prim holds the data-parallel primitives every warpkv index engine
// is built from: radix sort, scan, stream compaction, run-length encoding and
// reduce-by-key, merge, segmented max and batched Keccak-256. Each primitive
// has a GPU implementation (CUDA C kernels in the .cu files of this folder,
// compiled by NVRTC at run time) and a CPU twin on goroutines that gives
// identical output.
//
// Two levels of API:
//   - host level, generic functions over Go slices (SortPairs, ScanExclusive,
//     Keccak256, ...): on the GPU engine they copy in, run, and copy out;
//   - device level (Dev* functions), over gpu.Buffers already on the device,
//     queued on the engine's stream, for engines that keep data on the GPU.
package prim
