// CuART kernels: the GPU engine of package art (the *_gpu.go files launch them).
//
// The tree is the CPU engine's store, flat in device memory: one record
// buffer per kind (N4, N16, N48, N256 nodes; L8, L16, L32, LV leaves),
// record i of kind k at pool[k] + i*kwords(k); links are kind<<60 |
// aux<<40 | index; the root array holds 256^W table entries, then the
// short slots. Every kernel mirrors a function of the CPU engine (named
// in its comment) step by step, so that both engines write the same words
// and a GPU-vs-CPU difference points at one kernel. All constants come
// from Go as defines (layoutDefines in layout.go, kernelDefines in
// kernels.go).
//
// Thread mapping: every kernel is one thread per item (key, segment,
// piece, touched node, entry, query) with a grid-stride loop, except
// ag_get_lanes (a group of lanes per key), aq_trim and aq_pairs (a
// warp per query, ranges.cu) and aq_walk8/16/32 (a tile of lanes per
// query, walk.cu). No kernel
// takes a lock: every output word has one writer per launch, by the
// batch's sorting and grouping; the update conflict table uses
// compare-and-swap and atomic max, the append-only lists atomic adds
// (their order is fixed by a sort afterwards).
//
// The program is split by operation, one file each, included here in
// this order: art.cuh (the layout and shared helpers), then get, sort,
// build, insert, round, delete, iterate, query, ranges, walk and arena (.cu). Go adds
// them to the program as headers named "art/<file>" (kernels.go).
#include "art/art.cuh"

// a_iota: one thread per i: out[i] = i.
extern "C" __global__ void a_iota(u64 n, u32 *out) {
    GRID_STRIDE(i, n) out[i] = (u32)i;
}

#include "art/get.cu"
#include "art/sort.cu"
#include "art/build.cu"
#include "art/insert.cu"
#include "art/round.cu"
#include "art/delete.cu"
#include "art/iterate.cu"
#include "art/query.cu"
#include "art/ranges.cu"
#include "art/walk.cu"
#include "art/arena.cu"
