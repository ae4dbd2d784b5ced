// Package kernels is the registry of every CUDA kernel program of warpkv:
// each engine package lists its programs (Programs), and this package
// gathers them, so that one compile test checks every kernel for the
// architectures warpkv supports, with NVRTC and no GPU.
//
// An engine package with kernels adds its Programs to All; see the marked
// list below.
package kernels
