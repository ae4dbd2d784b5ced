// hashindex.cu: the Mega-KV GPU cuckoo hash index.
//
// Table layout (layout.go): bucket b is 16 u32 words at table[16b]: the
// signatures of its 8 cells, then their locations. Signature 0 marks an
// empty cell (location 0). A key is a 64-bit hash h: signature = h >> 32
// (0 -> 1), first bucket b1 = h & mask, second bucket b2 =
// alternate(b1, sig), which differs from b1 only in the low partition bits.
//
// A processing unit is 8 consecutive lanes of a warp that read a bucket
// together and decide through ballots over their own 8-lane mask. Blocks
// are multiples of 32 threads, so units never straddle warps. Every branch
// below depends only on values all 8 lanes share, so a unit stays converged
// at each ballot and shuffle. A unit works on groups of up to 8 jobs: lane
// t loads the inputs of job t of the group in one coalesced load per array,
// and the unit takes each job's values from lane t by shuffles. The CPU
// engine (cuckoo.go) runs the same per-job algorithm: any change here must be
// made there too.
//
// Constants set by the Go side (hashindex_gpu.go) with -D options: SEARCH_JOBS,
// the jobs of one hix_search unit (1 to 8); the layout's CELLS (cells per
// bucket = lanes per unit, CellsPerBucket), BUCKET_WORDS (u32 words per
// bucket, BucketWords) and NOT_FOUND (NotFound); the insert result reasons
// RES_OVERWRITTEN and RES_DISPLACED (dropped.go, 64-bit); SMALL_UPDATE_MAX
// and SMALL_UPDATE_THREADS, the most jobs and the block of hix_update_small.
#include "warpkv/types.cuh"

#if !defined(SEARCH_JOBS) || !defined(CELLS) || !defined(BUCKET_WORDS) || !defined(NOT_FOUND) || \
    !defined(RES_OVERWRITTEN) || !defined(RES_DISPLACED) || !defined(SMALL_UPDATE_MAX) || !defined(SMALL_UPDATE_THREADS)
#error "SEARCH_JOBS, CELLS, BUCKET_WORDS, NOT_FOUND, RES_OVERWRITTEN, RES_DISPLACED, SMALL_UPDATE_MAX and SMALL_UPDATE_THREADS are passed from hashindex_gpu.go"
#endif
#if SMALL_UPDATE_THREADS % 32 != 0 || SMALL_UPDATE_MAX > 65536
#error "SMALL_UPDATE_THREADS must be whole warps and SMALL_UPDATE_MAX at most 65536"
#endif
#if SEARCH_JOBS < 1 || SEARCH_JOBS > 8
#error "SEARCH_JOBS must be 1 to 8"
#endif

__device__ __forceinline__ u32 signature(u64 h) {
    u32 s = (u32)(h >> 32);
    return s ? s : 1u;
}

__device__ __forceinline__ u32 sig_mix(u32 s) {
    u32 m = s * 0x9E3779B1u;
    return m ^ (m >> 16);
}

// alternate: the other bucket of a key with signature sig in bucket b; only
// the low partition bits (pmask) change, never by zero.
__device__ __forceinline__ u32 alternate(u32 b, u32 sig, u32 pmask) {
    u32 x = sig_mix(sig) & pmask;
    return b ^ (x ? x : 1u);
}

__device__ __forceinline__ u32 preferred(u32 sig) { return sig >> 29; }

// nearest_free: the set bit of free (bit i: cell i empty) nearest pref in
// the order pref, +1, -1, +2, -2, +3, -3, +4 (mod 8); -1 when free is 0.
__device__ __forceinline__ int nearest_free(u32 free, u32 pref) {
    for (u32 k = 0; k < CELLS; k++) {
        u32 off = k == 0 ? 0u : (k & 1u) ? (k + 1u) / 2u : CELLS - k / 2u;
        u32 c = (pref + off) & (CELLS - 1);
        if ((free >> c) & 1u) return (int)c;
    }
    return -1;
}

// Unit: this thread's place in its processing unit.
struct Unit {
    u32 lane;  // 0..7: the cell this lane looks at, the job of a group it loads
    u32 shift; // lane index in the warp of the unit's lane 0
    u32 mask;  // the unit's lanes, for *_sync intrinsics
};

__device__ __forceinline__ Unit unit_of() {
    u32 l = threadIdx.x & 31u;
    Unit u;
    u.lane = l & (CELLS - 1);
    u.shift = l & ~(u32)(CELLS - 1);
    u.mask = 0xFFu << u.shift;
    return u;
}

// unit_ballot: bit i set when lane i of the unit has p.
__device__ __forceinline__ u32 unit_ballot(Unit u, bool p) {
    return (__ballot_sync(u.mask, p) >> u.shift) & 0xFFu;
}

__device__ __forceinline__ u32* bucket_at(u32* table, u32 b) { return table + (u64)b * BUCKET_WORDS; }

// unit_shfl: v of lane src of the unit, in every lane.
__device__ __forceinline__ u32 unit_shfl(Unit u, u32 v, u32 src) { return __shfl_sync(u.mask, v, src, CELLS); }
__device__ __forceinline__ u64 unit_shfl(Unit u, u64 v, u32 src) { return __shfl_sync(u.mask, v, src, CELLS); }

// SearchLoads is how search_unit reads memory: hix_search's table does not
// change while it runs, so it reads through the read-only cache (__ldg) and
// its hashes with plain loads.
struct SearchLoads {
    static __device__ __forceinline__ u32 word(const u32* p) { return __ldg(p); }
    static __device__ __forceinline__ u64 hash(const u64* p) { return *p; }
};

// search_unit: one unit's search of jobs [first, first + min(SEARCH_JOBS,
// n - first)), writing out[j] = location of hashes[j], or NOT_FOUND; the
// search of hix_search and of the resident hix_persist (persist.cu), which
// differ only in how they load (Loads: word(p) for a table word, hash(p)
// for a job's hash). Lane t loads the hash of job t; the unit then reads
// the signature half (32 bytes, lane i word i) of the first bucket of
// every job at once (SEARCH_JOBS independent loads in flight per lane) and
// finds the first cell with the job's signature by a ballot. For a job with
// a match, the lane of that cell reads its location; for a job without,
// every lane reads the signature half of the second bucket, and then the
// matching lane, if any, the location. Only the 32-byte halves needed are
// read. Lane t writes job t's result, so the unit's loads of hashes and
// stores of results are coalesced. Returns 1 in the lane that wrote a found
// location, else 0. Called by all 8 lanes of the unit (first < n).
template <class Loads>
__device__ __forceinline__ u32 search_unit(const u32* table, u32 mask, u32 pmask, const u64* hashes, u64 n,
                                           u32* out, u64 first, Unit u) {
    u32 jobs = (u32)min((u64)SEARCH_JOBS, n - first);
    u64 mine = u.lane < jobs ? Loads::hash(hashes + first + u.lane) : 0;
    u32 sig[SEARCH_JOBS], b[SEARCH_JOBS], m[SEARCH_JOBS], v[SEARCH_JOBS];
#pragma unroll
    for (u32 t = 0; t < SEARCH_JOBS; t++) {
        u64 h = unit_shfl(u, mine, t);
        sig[t] = signature(h);
        b[t] = (u32)h & mask;
    }
    // First buckets: signatures.
#pragma unroll
    for (u32 t = 0; t < SEARCH_JOBS; t++) v[t] = t < jobs ? Loads::word(table + (u64)b[t] * BUCKET_WORDS + u.lane) : 0u;
#pragma unroll
    for (u32 t = 0; t < SEARCH_JOBS; t++) m[t] = unit_ballot(u, t < jobs && v[t] == sig[t]);
    // Matches: the location; no match: the second bucket's signatures.
#pragma unroll
    for (u32 t = 0; t < SEARCH_JOBS; t++) {
        if (m[t]) {
            u32 c = (u32)__ffs(m[t]) - 1;
            v[t] = u.lane == c ? Loads::word(table + (u64)b[t] * BUCKET_WORDS + CELLS + c) : 0u;
        } else {
            b[t] = alternate(b[t], sig[t], pmask);
            v[t] = t < jobs ? Loads::word(table + (u64)b[t] * BUCKET_WORDS + u.lane) : 0u;
        }
    }
    u32 r = NOT_FOUND;
#pragma unroll
    for (u32 t = 0; t < SEARCH_JOBS; t++) {
        if (m[t]) {
            u32 loc = unit_shfl(u, v[t], (u32)__ffs(m[t]) - 1);
            if (u.lane == t) r = loc;
            m[t] = 0; // done
        } else {
            m[t] = unit_ballot(u, t < jobs && v[t] == sig[t]);
        }
    }
    // Matches in second buckets: the location.
#pragma unroll
    for (u32 t = 0; t < SEARCH_JOBS; t++) {
        u32 c = (u32)__ffs(m[t]) - 1;
        v[t] = m[t] && u.lane == c ? Loads::word(table + (u64)b[t] * BUCKET_WORDS + CELLS + c) : 0u;
    }
#pragma unroll
    for (u32 t = 0; t < SEARCH_JOBS; t++) {
        if (m[t]) {
            u32 loc = unit_shfl(u, v[t], (u32)__ffs(m[t]) - 1);
            if (u.lane == t) r = loc;
        }
    }
    if (u.lane < jobs) out[first + u.lane] = r;
    return u.lane < jobs && r != NOT_FOUND ? 1u : 0u;
}

// hix_search: out[j] = location of hashes[j], or NOT_FOUND.
// Thread mapping: one unit per SEARCH_JOBS consecutive jobs, searching them
// as search_unit describes.
// Invariant: read-only on the table; each out[j] written once.
extern "C" __global__ void hix_search(const u32* __restrict__ table, u32 mask, u32 pmask,
                                      const u64* __restrict__ hashes, u64 n, u32* __restrict__ out) {
    u64 first = (blockIdx.x * (u64)blockDim.x + threadIdx.x) / CELLS * SEARCH_JOBS;
    if (first >= n) return; // the whole unit leaves together
    search_unit<SearchLoads>(table, mask, pmask, hashes, n, out, first, unit_of());
}

// JobGroup: lane t's share of a group of up to CELLS grouped jobs: job t's
// hash, location and batch index.
struct JobGroup {
    u64 hash;
    u32 loc, order;
};

// load_group: the group of jobs [j, min(j + CELLS, end)) of a run, lane t
// loading job j + t (one coalesced load per array).
__device__ __forceinline__ JobGroup load_group(const u64* __restrict__ hashes, const u32* __restrict__ locs,
                                               const u32* __restrict__ order, u32 j, u32 end, Unit u) {
    JobGroup g = {0, 0, 0};
    if (j + u.lane < end) {
        g.hash = hashes[j + u.lane];
        g.loc = locs[j + u.lane];
        g.order = order[j + u.lane];
    }
    return g;
}

// displace: cuckoo displacement for an entry (cs, cl) whose two buckets
// are full, starting at bucket b. Each step puts the entry at its preferred
// cell of b, takes the victim there as the new entry and moves to the
// victim's alternate bucket, until that bucket has a free cell (the victim
// goes to the free cell nearest its preferred cell: result 0) or max_disp
// steps are done (the last victim is dropped: its location is returned
// with reason RES_DISPLACED). Called by all 8 lanes of a unit with the same
// arguments; returns the same value in every lane.
__device__ u64 displace(u32* table, u32 pmask, u32 max_disp, Unit u, u32 cs, u32 cl, u32 b) {
    for (u32 d = 0; d < max_disp; d++) {
        u32* k = bucket_at(table, b);
        u32 p = preferred(cs);
        u32 vs = k[p], vl = k[CELLS + p]; // every lane reads the victim
        __syncwarp(u.mask);               // before lane p overwrites it
        if (u.lane == p) {
            k[p] = cs;
            k[CELLS + p] = cl;
        }
        __syncwarp(u.mask);
        cs = vs;
        cl = vl;
        b = alternate(b, cs, pmask);
        k = bucket_at(table, b);
        int c = nearest_free(unit_ballot(u, k[u.lane] == 0), preferred(cs));
        if (c >= 0) {
            if (u.lane == (u32)c) {
                k[c] = cs;
                k[CELLS + c] = cl;
            }
            return 0;
        }
    }
    return (RES_DISPLACED << 32) | cl;
}

// insert_one applies one insert job (hash h, location loc) and returns its
// result (reason << 32 | loc, 0 when nothing was dropped): a cell of b1 or
// b2 with the signature gets the new location (the old one is dropped as
// overwritten); else the free cell of b1, else of b2, nearest the
// preferred cell takes the entry; else displace from b1. Lane i looks at
// cell i. Called by all 8 lanes with the same job; returns the same value
// in every lane, after a __syncwarp that orders its writes before the
// next job's reads.
__device__ __forceinline__ u64 insert_one(u32* table, u32 mask, u32 pmask, u32 max_disp, Unit u, u64 h, u32 loc) {
    u32 sig = signature(h);
    u32 b1 = (u32)h & mask;
    u32 b2 = alternate(b1, sig, pmask);
    u32* k1 = bucket_at(table, b1);
    u32* k2 = bucket_at(table, b2);
    u32 s1 = k1[u.lane], s2 = k2[u.lane];
    u32 m1 = unit_ballot(u, s1 == sig), m2 = unit_ballot(u, s2 == sig);
    u64 res = 0;
    if (m1 | m2) {
        u32* k = m1 ? k1 : k2;
        u32 c = (u32)__ffs(m1 ? m1 : m2) - 1;
        u32 old = k[CELLS + c]; // every lane reads the old location
        __syncwarp(u.mask);     // before lane c replaces it
        if (u.lane == c) k[CELLS + c] = loc;
        res = (RES_OVERWRITTEN << 32) | old;
    } else {
        u32 pref = preferred(sig);
        int c1 = nearest_free(unit_ballot(u, s1 == 0), pref);
        int c2 = nearest_free(unit_ballot(u, s2 == 0), pref);
        if (c1 >= 0) {
            if (u.lane == (u32)c1) {
                k1[c1] = sig;
                k1[CELLS + c1] = loc;
            }
        } else if (c2 >= 0) {
            if (u.lane == (u32)c2) {
                k2[c2] = sig;
                k2[CELLS + c2] = loc;
            }
        } else {
            res = displace(table, pmask, max_disp, u, sig, loc, b1);
        }
    }
    __syncwarp(u.mask);
    return res;
}

// hix_insert: applies insert jobs grouped by partition: run r, the jobs of
// one partition, is [starts[r], starts[r+1]) of hashes/locs, in batch
// order (runs may be empty); order[j] is job j's batch index, where its
// result goes (see insert_one). When drops is not null, *drops grows by
// the number of jobs whose result is not 0, so that the host can skip
// reading results that drop nothing.
// Thread mapping: one unit per run, applying its jobs one after another in
// groups of CELLS loaded at once (load_group); lane t keeps job t's result
// and writes it when the group is done.
// Invariant: a partition's buckets are touched only by its run's unit (both
// buckets of every key and every displacement stay in the partition), and
// __syncwarp between jobs orders each job's writes before the next job's
// reads, so the result equals applying the batch in order, job by job.
extern "C" __global__ void hix_insert(u32* table, u32 mask, u32 pmask, u32 max_disp,
                                      const u64* __restrict__ hashes, const u32* __restrict__ locs,
                                      const u32* __restrict__ order, const u32* __restrict__ starts,
                                      u64 nruns, u64* __restrict__ results, u32* __restrict__ drops) {
    u64 run = (blockIdx.x * (u64)blockDim.x + threadIdx.x) / CELLS;
    if (run >= nruns) return;
    Unit u = unit_of();
    u32 end = starts[run + 1];
    u32 dropped = 0;
    for (u32 j = starts[run]; j < end; j += CELLS) {
        JobGroup g = load_group(hashes, locs, order, j, end, u);
        u32 jobs = min((u32)CELLS, end - j);
        u64 mine = 0;
        for (u32 t = 0; t < jobs; t++) {
            u64 res = insert_one(table, mask, pmask, max_disp, u, unit_shfl(u, g.hash, t), unit_shfl(u, g.loc, t));
            if (u.lane == t) mine = res;
        }
        if (u.lane < jobs) results[g.order] = mine;
        dropped += __popc(unit_ballot(u, u.lane < jobs && mine != 0));
    }
    if (drops && dropped && u.lane == 0) atomicAdd(drops, dropped);
}

// delete_one applies one delete job: the cell of b1, else b2, holding both
// the signature of h and loc is cleared (signature and location 0).
// Returns 1 if there was one, else 0, in every lane, after a __syncwarp
// that orders its writes before the next job's reads.
__device__ __forceinline__ u32 delete_one(u32* table, u32 mask, u32 pmask, Unit u, u64 h, u32 loc) {
    u32 sig = signature(h);
    u32 b = (u32)h & mask;
    u32 hit = 0;
    for (int t = 0; t < 2 && !hit; t++) {
        u32* k = bucket_at(table, b);
        u32 m = unit_ballot(u, k[u.lane] == sig && k[CELLS + u.lane] == loc);
        if (m) {
            if (u.lane == (u32)(__ffs(m) - 1)) {
                k[u.lane] = 0;
                k[CELLS + u.lane] = 0;
            }
            hit = 1;
        }
        b = alternate(b, sig, pmask);
    }
    __syncwarp(u.mask);
    return hit;
}

// hix_delete: applies delete jobs grouped by partition (as hix_insert);
// found[order[j]] = 1 if job j found its cell, else 0.
// Thread mapping: as hix_insert.
// Invariant: as hix_insert; a duplicate delete in one batch finds the cell
// only the first time.
extern "C" __global__ void hix_delete(u32* table, u32 mask, u32 pmask,
                                      const u64* __restrict__ hashes, const u32* __restrict__ locs,
                                      const u32* __restrict__ order, const u32* __restrict__ starts,
                                      u64 nruns, u32* __restrict__ found) {
    u64 run = (blockIdx.x * (u64)blockDim.x + threadIdx.x) / CELLS;
    if (run >= nruns) return;
    Unit u = unit_of();
    u32 end = starts[run + 1];
    for (u32 j = starts[run]; j < end; j += CELLS) {
        JobGroup g = load_group(hashes, locs, order, j, end, u);
        u32 jobs = min((u32)CELLS, end - j);
        u32 mine = 0;
        for (u32 t = 0; t < jobs; t++) {
            u32 hit = delete_one(table, mask, pmask, u, unit_shfl(u, g.hash, t), unit_shfl(u, g.loc, t));
            if (u.lane == t) mine = hit;
        }
        if (u.lane < jobs) found[g.order] = mine;
    }
}

// hix_update_small: a whole update round of n <= SMALL_UPDATE_MAX jobs in
// one launch, with no grouping pass and no transfers: jobs [0, ndel) are
// deletes (as hix_delete), jobs [ndel, n) inserts (as hix_insert), read
// from hashes[j] and locs[j] in mapped host memory (the caller's Staging);
// the result of insert job j goes to results[j] (mapped, every insert
// job's, 0 included), and block b stores how many deletes found their cell
// and how many inserts dropped a location into counts[2b] and counts[2b+1]
// (mapped; plain stores, so the host needs no zeroing). Delete jobs get no
// result.
// Thread mapping: gridDim.x blocks of SMALL_UPDATE_THREADS threads; every
// block copies all n jobs into shared memory (loads that bypass the caches,
// __ldcv, as the host wrote them just before the launch) and tags each with
// its owner, the unit (8 lanes, global number) that applies the jobs of its
// partition: partition % (units in the grid). Each unit then scans the tags
// in job order, 8 at a time by a ballot, and applies its jobs one after
// another with delete_one and insert_one; lane 0 writes the insert results
// and keeps the unit's counts, summed per block in shared memory.
// Invariant: as hix_insert: a partition's buckets (both buckets of every
// key, every displacement) are touched only by its owner unit, which
// applies that partition's jobs in job order, so every delete of the round
// precedes every insert of the same partition and the table equals that of
// hix_delete over jobs [0, ndel) followed by hix_insert over [ndel, n).
// Every branch around delete_one and insert_one depends on a ballot, so
// units stay converged; __syncthreads separates the copy, the scans and the
// block's counts.
extern "C" __global__ void __launch_bounds__(SMALL_UPDATE_THREADS)
hix_update_small(u32* table, u32 mask, u32 pmask, u32 pbits, u32 max_disp, const u64* hashes, const u32* locs,
                 u32 ndel, u32 n, u64* results, u32* counts) {
    __shared__ u64 s_hash[SMALL_UPDATE_MAX];
    __shared__ u32 s_loc[SMALL_UPDATE_MAX];
    __shared__ u16 s_owner[SMALL_UPDATE_MAX];
    __shared__ u32 s_hits, s_drops;
    const u32 per_block = SMALL_UPDATE_THREADS / CELLS;
    u32 units = gridDim.x * per_block;
    u32 me = blockIdx.x * per_block + threadIdx.x / CELLS;
    if (threadIdx.x == 0) {
        s_hits = 0;
        s_drops = 0;
    }
    for (u32 i = threadIdx.x; i < n; i += blockDim.x) {
        u64 h = __ldcv(hashes + i);
        s_hash[i] = h;
        s_loc[i] = __ldcv(locs + i);
        s_owner[i] = (u16)((((u32)h & mask) >> pbits) % units);
    }
    __syncthreads();
    Unit u = unit_of();
    u32 hits = 0, drops = 0;
    for (u32 j0 = 0; j0 < n; j0 += CELLS) {
        u32 j = j0 + u.lane;
        u32 mine = unit_ballot(u, j < n && s_owner[j] == me);
        while (mine) {
            u32 k = j0 + (u32)__ffs(mine) - 1;
            mine &= mine - 1;
            if (k < ndel) {
                hits += delete_one(table, mask, pmask, u, s_hash[k], s_loc[k]);
            } else {
                u64 r = insert_one(table, mask, pmask, max_disp, u, s_hash[k], s_loc[k]);
                if (u.lane == 0) results[k] = r;
                drops += r != 0;
            }
        }
    }
    if (u.lane == 0 && (hits | drops)) {
        atomicAdd(&s_hits, hits);
        atomicAdd(&s_drops, drops);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        counts[2 * blockIdx.x] = s_hits;
        counts[2 * blockIdx.x + 1] = s_drops;
    }
}

// hix_count: *count += the number of v[0:n] that are not absent (hit
// counts of a chunk of search results or delete flags, so the host need
// not scan them).
// Thread mapping: a grid-stride loop, each thread summing its values; the
// warp then sums by shuffles and lane 0 adds the warp's total to *count
// (one atomic per warp). Every thread reaches the shuffles: blocks are
// whole warps and no thread returns early.
// Invariant: read-only on v; *count is only added to.
extern "C" __global__ void hix_count(const u32* __restrict__ v, u64 n, u32 absent, u32* __restrict__ count) {
    u32 c = 0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) c += v[i] != absent;
#pragma unroll
    for (u32 o = 16; o > 0; o >>= 1) c += __shfl_down_sync(0xFFFFFFFFu, c, o);
    if ((threadIdx.x & 31u) == 0 && c) atomicAdd(count, c);
}
