// CUBPT kernels: the GPU engine of package btree (gpu.go launches them).
//
// The tree is the CPU engine's node array, flat in device memory: node id
// owns keys[id*ORDER .. id*ORDER+ORDER) and slots[...] (values in a leaf,
// child ids in an internal node) and element id of count, parent, next,
// prev (u32) and kind (u8). ORDER is passed at run time (order), so one
// cubin serves every order. Indices into keys and slots are 64-bit.

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;

#define NIL 0xffffffffu
#define KIND_LEAF 1
#define KIND_INTERNAL 2

// part_of inverts the CPU engine's share(): n items split into p parts as
// evenly as possible, the first n%p parts one larger. Item i lies in part
// *q at slot *slot; *size is that part's size. Needs 1 <= p <= n.
__device__ __forceinline__ void part_of(u64 i, u64 n, u64 p, u64 *q, u64 *slot, u64 *size) {
    u64 base = n / p, rem = n % p;
    u64 big = rem * (base + 1);
    if (i < big) {
        *q = i / (base + 1);
        *slot = i - *q * (base + 1);
        *size = base + 1;
    } else {
        u64 r = (i - big) / base;
        *q = rem + r;
        *slot = (i - big) - r * base;
        *size = base;
    }
}

// lower_bound returns the first j < c with k[j] >= key, or c.
__device__ __forceinline__ u32 lower_bound(const u64 *k, u32 c, u64 key) {
    u32 lo = 0, hi = c;
    while (lo < hi) {
        u32 mid = (lo + hi) >> 1;
        if (k[mid] < key) lo = mid + 1; else hi = mid;
    }
    return lo;
}

// find_leaf descends from root through height-1 internal levels: at each
// the first child whose max key is >= key, or the last child (right spine).
__device__ __forceinline__ u32 find_leaf(u64 key, u32 root, u32 height, u32 order,
                                         const u64 *keys, const u64 *slots, const u32 *count) {
    u32 node = root;
    for (u32 h = 1; h < height; h++) {
        u64 base = (u64)node * order;
        u32 c = count[node];
        u32 j = lower_bound(keys + base, c, key);
        if (j == c) j = c - 1;
        node = (u32)slots[base + j];
    }
    return node;
}

// bt_last_flags: one thread per sorted key (grid-stride). flags[i] = 1 when
// keys[i] is the last of its run of equal keys (the batch's last
// occurrence after a stable sort), else 0.
extern "C" __global__ void bt_last_flags(const u64 *keys, u64 n, u8 *flags) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        flags[i] = (i + 1 == n || keys[i + 1] != keys[i]) ? 1 : 0;
    }
}

// bt_leaves: one thread per key of the strictly increasing k[0:n) (grid-
// stride). Key i goes to leaf first+q at slot s, (q, s) = part_of(i, n, L):
// the closed form of the CPU engine's buildSorted. The thread of slot 0
// also writes the leaf's count, kind, parent (nil; the level above sets
// it) and leaf chain. The node arrays must be zero beforehand.
extern "C" __global__ void bt_leaves(const u64 *k, const u64 *v, u64 n, u64 L, u32 order, u32 first,
                                     u64 *keys, u64 *slots, u32 *count, u32 *parent, u32 *next, u32 *prev,
                                     u8 *kind) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u64 q, s, size;
        part_of(i, n, L, &q, &s, &size);
        u32 id = first + (u32)q;
        u64 at = (u64)id * order + s;
        keys[at] = k[i];
        slots[at] = v[i];
        if (s == 0) {
            count[id] = (u32)size;
            kind[id] = KIND_LEAF;
            parent[id] = NIL;
            prev[id] = q == 0 ? NIL : id - 1;
            next[id] = q + 1 == L ? NIL : id + 1;
        }
    }
}

// bt_level: one thread per child (grid-stride) of a level of n nodes with
// ids childFirst..childFirst+n-1 in key order, building the p nodes above
// (ids first..first+p-1) with the same closed form: the child's max key
// and id go to slot s of parent first+q, and the child's parent is set.
// The thread of slot 0 writes the parent's count, kind and a nil parent.
extern "C" __global__ void bt_level(u64 n, u64 p, u32 childFirst, u32 first, u32 order,
                                    u64 *keys, u64 *slots, u32 *count, u32 *parent, u8 *kind) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u64 q, s, size;
        part_of(i, n, p, &q, &s, &size);
        u32 child = childFirst + (u32)i;
        u32 id = first + (u32)q;
        u64 at = (u64)id * order + s;
        keys[at] = keys[(u64)child * order + count[child] - 1];
        slots[at] = child;
        parent[child] = id;
        if (s == 0) {
            count[id] = (u32)size;
            kind[id] = KIND_INTERNAL;
            parent[id] = NIL;
        }
    }
}

// bt_get: one thread per query key (grid-stride): descend from the root,
// lower bound in the leaf; out[i] = value and found[i] = 1 on a hit, else
// 0 and 0. The tree must not be empty.
extern "C" __global__ void bt_get(const u64 *q, u64 n, u32 root, u32 height, u32 order,
                                  const u64 *keys, const u64 *slots, const u32 *count,
                                  u64 *out, u8 *found) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        u64 key = q[i];
        u32 leaf = find_leaf(key, root, height, order, keys, slots, count);
        u64 base = (u64)leaf * order;
        u32 c = count[leaf];
        u32 j = lower_bound(keys + base, c, key);
        bool hit = j < c && keys[base + j] == key;
        out[i] = hit ? slots[base + j] : 0;
        found[i] = hit ? 1 : 0;
    }
}

// bt_range: one thread per range query [lo[i], hi[i]] (grid-stride), at
// most limit pairs (0: no limit), walking the leaf chain from lo's leaf.
// With write == 0 it stores the number of pairs in counts[i]; with write
// == 1 it writes them to outK/outV from offs[i] (the exclusive scan of the
// counts). The tree must not be empty.
extern "C" __global__ void bt_range(const u64 *lo, const u64 *hi, u64 nq, u64 limit, u32 root, u32 height,
                                    u32 order, const u64 *keys, const u64 *slots, const u32 *count,
                                    const u32 *next, int write, u64 *counts, const u64 *offs,
                                    u64 *outK, u64 *outV) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < nq; i += (u64)gridDim.x * blockDim.x) {
        u64 a = lo[i], b = hi[i];
        u64 got = 0;
        u64 w = write ? offs[i] : 0;
        if (a <= b) {
            u32 leaf = find_leaf(a, root, height, order, keys, slots, count);
            u64 base = (u64)leaf * order;
            u32 c = count[leaf];
            u32 j = lower_bound(keys + base, c, a);
            bool done = false;
            while (!done) {
                for (; j < c; j++) {
                    u64 key = keys[base + j];
                    if (key > b || (limit != 0 && got == limit)) {
                        done = true;
                        break;
                    }
                    if (write) {
                        outK[w + got] = key;
                        outV[w + got] = slots[base + j];
                    }
                    got++;
                }
                if (done) break;
                leaf = next[leaf];
                if (leaf == NIL) break;
                base = (u64)leaf * order;
                c = count[leaf];
                j = 0;
            }
        }
        if (!write) counts[i] = got;
    }
}
