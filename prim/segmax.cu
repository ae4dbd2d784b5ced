// segmax.cu: segmented max. out[s] = max(vals[offsets[s], offsets[s+1])),
// 0 for an empty segment, for s in [0, nseg).
//
// Load balancing (merge path over segments and elements): the work is a
// sequence of nseg + (offsets[nseg] - offsets[0]) events, in order: segment
// s starts, then its elements, then segment s+1 starts, ... The start of
// segment s is event segStart(s) = s + (offsets[s] - offsets[0]), strictly
// increasing in s. Every warp takes SEGMAX_WARP_EVENTS consecutive events and
// every lane SEGMAX_ITEMS of them, whatever the segment lengths, so one huge
// segment and millions of empty ones cost the same per event.
//
// Results: the pieces of a segment that crosses lanes are combined in the
// warp (shuffles). A segment that starts and ends inside one warp's events
// is stored by that warp, through shared memory, coalesced. The segments
// open across warp boundaries are zeroed by the partition kernel, and each
// warp holding a piece of one adds it with atomicMax.
#include "warpkv/types.cuh"

// Launch configuration, passed from segmax_gpu.go as -D options:
// SEGMAX_WARP (lanes per warp), SEGMAX_BLOCK (threads per segmax_reduce
// block), SEGMAX_ITEMS (events per lane; odd, so shared reads at stride
// SEGMAX_ITEMS avoid bank conflicts) and SEGMAX_PARTITION_BLOCK (threads per
// segmax_partition block).
#if !defined(SEGMAX_WARP) || !defined(SEGMAX_BLOCK) || !defined(SEGMAX_ITEMS) || !defined(SEGMAX_PARTITION_BLOCK)
#error "SEGMAX_WARP, SEGMAX_BLOCK, SEGMAX_ITEMS and SEGMAX_PARTITION_BLOCK are passed from segmax_gpu.go"
#endif
#define SEGMAX_WARP_EVENTS (SEGMAX_WARP * SEGMAX_ITEMS)            // events per warp
#define SEGMAX_WARPS_PER_BLOCK (SEGMAX_BLOCK / SEGMAX_WARP)

#define SEGMAX_FULL_MASK FULL_MASK

// GlobalOffsets reads the offsets from global memory.
struct GlobalOffsets {
    const u32* p;
    __device__ __forceinline__ u32 at(u64 s) const { return p[s]; }
};

// StagedOffsets reads offsets[first, first+count) from a warp's copy in
// shared memory, and any other from global memory (which only invalid
// offsets need).
struct StagedOffsets {
    const u32* global;
    const u32* tile;
    u64 first, count;
    __device__ __forceinline__ u32 at(u64 s) const {
        u64 i = s - first;
        return i < count ? tile[i] : global[s];
    }
};

// segStart returns the event index of the start of segment s (s <= nseg;
// segment nseg "starts" at the end, event nseg + elements).
template <typename Offsets>
__device__ __forceinline__ u64 segStart(const Offsets& off, u32 base, u64 s) {
    return s + (u64)(off.at(s) - base);
}

// segFind returns the number of segments that start before event d: the
// smallest s in [lo, hi] with segStart(s) >= d. Requires segStart(hi) >= d
// and segStart(lo-1) < d.
template <typename Offsets>
__device__ __forceinline__ u64 segFind(const Offsets& off, u32 base, u64 lo, u64 hi, u64 d) {
    while (lo < hi) {
        u64 mid = lo + (hi - lo) / 2;
        if (segStart(off, base, mid) >= d)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

// segmaxPartition: starts[w] = number of segments that start before event
// min(w*SEGMAX_WARP_EVENTS, events), for w in [0, nwarps]; nseg >= 1. It also
// zeroes out[starts[w]-1], the segment open across boundary w: the only
// segments the reduce kernel updates with atomicMax.
// Thread mapping: one thread per warp boundary w.
// Invariant: starts is nondecreasing, starts[0] = 0, and for the last
// boundary at or past the end starts[w] = nseg.
template <typename T>
__device__ __forceinline__ void segmaxPartition(const u32* __restrict__ offsets, u64 nseg, u64 nwarps,
                                                u64* __restrict__ starts, T* __restrict__ out) {
    u64 w = blockIdx.x * (u64)blockDim.x + threadIdx.x;
    if (w > nwarps)
        return;
    const u32 base = offsets[0];
    const u64 events = nseg + (u64)(offsets[nseg] - base);
    u64 d = w * SEGMAX_WARP_EVENTS;
    if (d > events)
        d = events;
    const u64 s = segFind(GlobalOffsets{offsets}, base, 0, nseg, d);
    starts[w] = s;
    if (s > 0)
        out[s - 1] = 0;
}

extern "C" __global__ void segmax_partition_u32(const u32* offsets, u64 nseg, u64 nwarps, u64* starts, u32* out) {
    segmaxPartition<u32>(offsets, nseg, nwarps, starts, out);
}

extern "C" __global__ void segmax_partition_u64(const u32* offsets, u64 nseg, u64 nwarps, u64* starts, u64* out) {
    segmaxPartition<u64>(offsets, nseg, nwarps, starts, out);
}

template <typename T>
__device__ __forceinline__ T tmax(T a, T b) { return a > b ? a : b; }

// segmaxReduce: warp w handles events [w*SEGMAX_WARP_EVENTS,
// (w+1)*SEGMAX_WARP_EVENTS) and lane l of it the SEGMAX_ITEMS events from
// w*SEGMAX_WARP_EVENTS + l*SEGMAX_ITEMS, all clipped to the event count.
// Thread mapping: SEGMAX_WARPS_PER_BLOCK independent warps per block; the
// warp stages its elements and offsets in its own slices of shared memory
// (coalesced), each lane walks its events, and the warp stores its results
// from shared memory (coalesced).
// Invariant: with sLo = starts[w] and sHi = starts[w+1], the segments
// [sLo, sHi-1) start and end inside warp w: it stores them, and no other
// warp touches them. Segment sLo-1 (open at the warp's start) and sHi-1
// (open at its end) were zeroed by segmaxPartition; the warp adds its piece
// of each with atomicMax. Offsets that decrease or pass nvals give
// unspecified results, but every access stays in bounds.
template <typename T>
__device__ __forceinline__ void segmaxReduce(const T* __restrict__ vals, u64 nvals, const u32* __restrict__ offsets,
                                             u64 nseg, u64 nwarps, const u64* __restrict__ starts,
                                             T* __restrict__ out) {
    static_assert(SEGMAX_WARPS_PER_BLOCK *
                          (2 * SEGMAX_WARP_EVENTS * sizeof(T) + (SEGMAX_WARP_EVENTS + 1) * sizeof(u32)) <=
                      48 * 1024,
                  "static shared memory over 48 KiB");
    __shared__ T valTiles[SEGMAX_WARPS_PER_BLOCK][SEGMAX_WARP_EVENTS];     // the warp's elements
    __shared__ u32 offTiles[SEGMAX_WARPS_PER_BLOCK][SEGMAX_WARP_EVENTS + 1]; // its offsets
    __shared__ T outTiles[SEGMAX_WARPS_PER_BLOCK][SEGMAX_WARP_EVENTS];     // its complete results

    const u32 lane = threadIdx.x % SEGMAX_WARP;
    const u32 wib = threadIdx.x / SEGMAX_WARP;
    const u64 w = blockIdx.x * (u64)SEGMAX_WARPS_PER_BLOCK + wib;
    if (w >= nwarps)
        return; // the whole warp leaves together
    T* vtile = valTiles[wib];
    T* otile = outTiles[wib];

    const u32 base = offsets[0];
    const u64 events = nseg + (u64)(offsets[nseg] - base);
    u64 wlo = w * SEGMAX_WARP_EVENTS, whi = wlo + SEGMAX_WARP_EVENTS;
    if (wlo > events)
        wlo = events;
    if (whi > events)
        whi = events;
    const u64 sLo = starts[w], sHi = starts[w + 1];
    // The warp's elements: every element event in [wlo, whi). Valid offsets
    // give eLo <= eHi <= nvals and at most SEGMAX_WARP_EVENTS elements; the
    // clamps only keep invalid ones in bounds.
    const u64 eLo = base + (wlo - sLo), eHi = base + (whi - sHi);
    u64 nVals = eHi >= eLo && eHi <= nvals ? eHi - eLo : 0;
    if (nVals > SEGMAX_WARP_EVENTS)
        nVals = SEGMAX_WARP_EVENTS;
    for (u64 x = lane; x < nVals; x += SEGMAX_WARP)
        vtile[x] = vals[eLo + x];
    // The warp's offsets: offsets[sLo, sHi], the starts of its segments and
    // of the next one; at most SEGMAX_WARP_EVENTS + 1 when valid.
    u64 nOff = sHi >= sLo ? sHi - sLo + 1 : 0;
    if (nOff > SEGMAX_WARP_EVENTS + 1)
        nOff = SEGMAX_WARP_EVENTS + 1;
    for (u64 x = lane; x < nOff; x += SEGMAX_WARP)
        offTiles[wib][x] = offsets[sLo + x];
    __syncwarp();
    const StagedOffsets off = {offsets, offTiles[wib], sLo, nOff};
    // The warp's complete segments [sLo, sHi-1) go to otile[s - sLo].
    const u64 nOut = nOff >= 2 ? nOff - 2 : 0;
    // emit records the max v of segment seg: in otile when the segment is
    // complete in this warp, else (v != 0) with atomicMax.
    auto emit = [&](u64 seg, T v) {
        const u64 i = seg - sLo;
        if (i < nOut)
            otile[i] = v;
        else if (v != 0)
            atomicMax(&out[seg], v);
    };

    u64 dlo = wlo + (u64)lane * SEGMAX_ITEMS, dhi = dlo + SEGMAX_ITEMS;
    if (dlo > whi)
        dlo = whi;
    if (dhi > whi)
        dhi = whi;
    u64 s = segFind(off, base, sLo, sHi, dlo);    // next segment to start
    u64 e = base + (dlo - s);                     // next element
    u64 next = s < nseg ? (u64)off.at(s) : ~0ull; // element before which segment s starts
    const i64 headKey = (i64)s - 1;               // segment open at the lane's first event; -1: none
    u64 active = s - 1;                           // segment the next element belongs to
    T head = 0, cur = 0;
    bool started = false;
#pragma unroll
    for (int k = 0; k < SEGMAX_ITEMS; k++) {
        if (dlo + k < dhi) {
            if (next == e) { // event: segment s starts
                if (started)
                    emit(active, cur); // started and ended in this lane: complete
                else
                    head = cur;
                started = true;
                active = s;
                s++;
                cur = 0;
                next = s < nseg ? (u64)off.at(s) : ~0ull;
            } else { // event: element e of segment active
                if (e - eLo < nVals) // always, for valid offsets
                    cur = tmax(cur, vtile[e - eLo]);
                e++;
            }
        }
    }
    T tail = 0; // max of the lane's part of segment active, when it started here
    if (started)
        tail = cur;
    else
        head = cur;

    // The segment open at the end of lane l is the one open at the start of
    // lane l+1: hand the tail on. The last lane's tail is segment sHi-1.
    const T prevTail = __shfl_up_sync(SEGMAX_FULL_MASK, tail, 1);
    if (lane > 0)
        head = tmax(head, prevTail);
    if (lane == SEGMAX_WARP - 1 && started)
        emit(active, tail);

    // Lanes with the same head segment are contiguous: max-reduce each group
    // into its lowest lane, which emits the segment's max over the warp.
    const u32 group = __match_any_sync(SEGMAX_FULL_MASK, (u64)headKey);
    const u32 last = 31 - __clz(group);
#pragma unroll
    for (u32 delta = 1; delta < SEGMAX_WARP; delta <<= 1) {
        const T o = __shfl_down_sync(SEGMAX_FULL_MASK, head, delta);
        if (lane + delta <= last)
            head = tmax(head, o);
    }
    if (lane == (u32)(__ffs(group) - 1) && headKey >= 0)
        emit((u64)headKey, head);

    __syncwarp();
    for (u64 x = lane; x < nOut; x += SEGMAX_WARP)
        out[sLo + x] = otile[x];
}

extern "C" __global__ void segmax_reduce_u32(const u32* vals, u64 nvals, const u32* offsets, u64 nseg, u64 nwarps,
                                             const u64* starts, u32* out) {
    segmaxReduce<u32>(vals, nvals, offsets, nseg, nwarps, starts, out);
}

extern "C" __global__ void segmax_reduce_u64(const u64* vals, u64 nvals, const u32* offsets, u64 nseg, u64 nwarps,
                                             const u64* starts, u64* out) {
    segmaxReduce<u64>(vals, nvals, offsets, nseg, nwarps, starts, out);
}
