// mpt.cu: the GPU engine of the Merkle Patricia Trie (gpu.go drives it).
//
// The trie lives in device memory as an array of fixed-size Node records
// (id 0 is the null node, never used) and a value table whose entries point
// into a byte arena. A batch goes through these phases, each a kernel or a
// few, with no locks (PhaseNU, then PhaseHC, after the paper):
//
//   sort      the batch's keys are sorted on the device (prim radix sort on
//             big-endian key words, least significant first, then length),
//             the last operation on each key is kept (mpt_last_flags), and
//             each kept operation learns its longest common prefix with its
//             sorted neighbours (mpt_lcp);
//   expand    every operation walks from the root (mpt_walk); a short node
//             the batch must branch inside is expanded into a chain of
//             one-child branch nodes down to the deepest nibble any key
//             needs (need, an atomicMax), plus the short remainder
//             (mpt_expand_count, scan, mpt_expand); repeated until no walk
//             waits;
//   insert    every operation now ends at a branch slot or an exact leaf;
//             inserts create the branches they share with sorted
//             neighbours with one atomicCAS per child slot, then their leaf
//             (mpt_insert_count, scan, mpt_insert); deletes clear values;
//   compress  touched nodes and their ancestors form the dirty set
//             (mpt_mark_up); bottom-up with per-node counters of dirty
//             children (mpt_count_pending, mpt_starts, mpt_compress), every
//             dirty node is put back into canonical form: empty nodes
//             vanish, one-entry branches become short nodes, short nodes
//             merge with short children (go-ethereum's collapse rules);
//   hash      PhaseHC: counters again (marking), then one warp per walk up
//             from each dirty leaf (computing): the warp RLP-encodes the
//             node and hashes it with a warp-cooperative Keccak-256; only
//             the warp that brings a parent's counter to zero goes on, so
//             every dirty node is hashed exactly once, after its children.
//
// Node allocation: every phase that creates nodes first counts them per
// item, an exclusive scan places each item's nodes, and mpt_alloc_ids
// materializes the ids (from the free list first, then the bump region);
// ids a CAS loser did not publish go back to the free list (mpt_reclaim),
// as do nodes removed by compress.
typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

// Launch constants; each equals the Go constant named beside it (gpu.go).
#define MPT_BLOCK 256      // kernelBlock: threads per block of thread-mapped kernels
#define MPT_WARP_BLOCK 256 // warpBlock: threads per block of warp-mapped kernels
#define MPT_PATH_BYTES 128 // maxKeyBytes: bytes of a node's packed path (two nibbles each)

#define WARP_SIZE 32
#define FULL_MASK 0xffffffffu
#define WARPS_PER_BLOCK (MPT_WARP_BLOCK / WARP_SIZE)

// Node kinds. A free node (in the free list or never used) has kind FREE.
#define KIND_FREE 0
#define KIND_BRANCH 1
#define KIND_EXT 2
#define KIND_LEAF 3

// Node flags.
#define FLAG_DIRTY 1u // in the dirty list of this batch

// Operation states of a walk.
#define ST_ACTIVE 0 // walking
#define ST_TARGET 1 // at its target: a branch slot (missing child or the value slot) or an exact leaf
#define ST_DONE 2   // nothing to do (a delete of an absent key)
#define ST_WAIT 3   // waits at a short node for its expansion

// Control words (ctl[]), read back by the host between phases.
#define CTL_WAIT 0    // walks that wait for an expansion this round
#define CTL_NEXP 1    // nodes in the expansion list
#define CTL_TOUCHED 2 // nodes in the dirty list
#define CTL_FREED 3   // ids appended to the free list
#define CTL_STARTS 4  // nodes in the start list
#define CTL_ERROR 5   // non-zero: an invariant failed (a bug); the code says which
#define CTL_SELECT 6  // count output of the host's prim select calls
#define CTL_LCP 7     // sum over kept operations of their need (decision model)
#define CTL_RESTARTS 8 // LockNU walks restarted from the root
#define CTL_NEXT 9     // nodes handed from mpt_hash_leaves to mpt_hash
#define CTL_POOL 10    // ids taken from mpt_insert's pool
#define CTL_WORDS 12

// Node is one trie node, 256 bytes (nodeBytes in gpu_kernels.go).
// BRANCH: child[0..15] (0: none) and val (slot 16; 0: none).
// EXT: path[0..plen) and child[0]. LEAF: path[0..plen) and val.
// ref/reflen: the node's reference as its parent embeds it (the Keccak-256
// of its encoding, reflen 32, or the encoding itself when shorter than 32
// bytes; the root always holds its hash); valid when the node is not dirty.
struct Node {
    u32 kind;
    u32 parent; // 0 for the root
    u32 child[16];
    u32 val;
    u32 plen;
    u32 reflen;
    u32 flags;
    // need and pending are 0 between batches. PhaseNU uses need (1 + the
    // depth to expand to, 0 when none), compress and PhaseHC use pending
    // (dirty children not yet done), and LockNU uses both as one 64-bit
    // version lock (bit 0: locked; the rest: the version).
    u32 need;    // 8-byte aligned: need and pending form LockNU's version word
    u32 pending;
    u8 path[MPT_PATH_BYTES]; // nibbles, two per byte, high nibble first
    u8 ref[32];
};

static_assert(sizeof(Node) == 256, "Node is nodeBytes long");

// version_of returns LockNU's 64-bit version lock of a node: its need and
// pending words, both 0 between batches.
__device__ __forceinline__ unsigned long long* version_of(Node* n) {
    return (unsigned long long*)&n->need;
}

// Val is one value table entry: bytes arena[off, off+len). Id 0 is none.
struct Val {
    u64 off;
    u32 len;
    u32 pad;
};

// ---------------------------------------------------------------- helpers

__device__ __forceinline__ u32 key_nib(const u8* k, u32 i) {
    const u8 b = k[i >> 1];
    return (i & 1) ? (b & 15) : (b >> 4);
}

__device__ __forceinline__ u32 path_nib(const Node* n, u32 i) {
    const u8 b = n->path[i >> 1];
    return (i & 1) ? (b & 15) : (b >> 4);
}

__device__ __forceinline__ u32 vpath_nib(const volatile Node* n, u32 i) {
    const u8 b = n->path[i >> 1];
    return (i & 1) ? (b & 15) : (b >> 4);
}

__device__ __forceinline__ void set_nib(u8* p, u32 i, u32 v) {
    if (i & 1)
        p[i >> 1] = (p[i >> 1] & 0xf0) | (u8)v;
    else
        p[i >> 1] = (p[i >> 1] & 0x0f) | (u8)(v << 4);
}

// mark adds n to the dirty list the first time it is marked this batch.
__device__ __forceinline__ void mark(Node* nodes, u32 n, u32* touched, u32* ctl) {
    const u32 old = atomicOr(&nodes[n].flags, FLAG_DIRTY);
    if (!(old & FLAG_DIRTY))
        touched[atomicAdd(&ctl[CTL_TOUCHED], 1u)] = n;
}

// init_node resets nd to an empty node of the given kind and parent.
__device__ void init_node(Node* nd, u32 kind, u32 parent) {
    nd->kind = kind;
    nd->parent = parent;
#pragma unroll
    for (int s = 0; s < 16; ++s)
        nd->child[s] = 0;
    nd->val = 0;
    nd->plen = 0;
    nd->reflen = 0;
    nd->need = 0;
    nd->pending = 0;
    // flags are kept: a node being re-shaped may already be in the dirty
    // list, and a fresh node's flags are 0 (free nodes keep them 0).
}

// key_of returns the bytes of operation j's key.
__device__ __forceinline__ const u8* key_of(const u8* keys, u32 stride, const u32* ops, u64 j) {
    return keys + (u64)ops[j] * stride;
}

// ---------------------------------------------------------------- sort and dedupe

// mpt_iota: perm[i] = i. Thread mapping: one thread per element.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK) mpt_iota(u32* perm, u64 n) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < n; i += (u64)gridDim.x * MPT_BLOCK)
        perm[i] = (u32)i;
}

// mpt_key_len: out[j] = len[perm[j]] (the sort's last, least significant
// criterion first). Thread mapping: one thread per element.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_key_len(const u32* __restrict__ lens, const u32* __restrict__ perm, u64 n, u32* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < n; i += (u64)gridDim.x * MPT_BLOCK)
        out[i] = lens[perm[i]];
}

// mpt_key_word: out[j] = big-endian 64-bit word w of key perm[j] (keys are
// zero-padded to stride bytes, so the order of the words is the byte order).
// Thread mapping: one thread per element.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_key_word(const u8* __restrict__ keys, u32 stride, const u32* __restrict__ perm, u64 n, u32 w,
             u64* __restrict__ out) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < n; i += (u64)gridDim.x * MPT_BLOCK) {
        const u8* k = keys + (u64)perm[i] * stride + 8 * w;
        u64 v = 0;
#pragma unroll
        for (int b = 0; b < 8; ++b)
            v = (v << 8) | k[b];
        out[i] = v;
    }
}

__device__ __forceinline__ bool same_key(const u8* a, const u8* b, u32 la, u32 lb) {
    if (la != lb)
        return false;
    for (u32 i = 0; i < la; ++i)
        if (a[i] != b[i])
            return false;
    return true;
}

// mpt_last_flags: flags[j] = 1 when sorted operation j is the last of its
// key (the sort is stable, so it is the last in batch order: it wins).
// Thread mapping: one thread per sorted operation.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_last_flags(const u8* __restrict__ keys, u32 stride, const u32* __restrict__ lens,
               const u32* __restrict__ perm, u64 n, u8* __restrict__ flags) {
    for (u64 j = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; j < n; j += (u64)gridDim.x * MPT_BLOCK) {
        bool last = j + 1 == n;
        if (!last) {
            const u32 a = perm[j], b = perm[j + 1];
            last = !same_key(keys + (u64)a * stride, keys + (u64)b * stride, lens[a], lens[b]);
        }
        flags[j] = last;
    }
}

// mpt_op_init: for kept operation j (ops[j] = its batch index), its path
// length in nibbles, its value id (0 for a delete), its need (the longest
// common prefix, in nibbles, with either sorted neighbour: the depth down to
// which it shares branches with other keys of the batch), its prefix shared
// with the previous operation (prev), and a walk from the root. Thread
// mapping: one thread per kept operation.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_op_init(const u8* __restrict__ keys, u32 stride, const u32* __restrict__ lens,
            const u32* __restrict__ vlens, u32 vbase, const u32* __restrict__ ops, u64 m, u32 root,
            u32* __restrict__ klen, u32* __restrict__ vid, u32* __restrict__ need, u32* __restrict__ prev,
            u32* __restrict__ cur, u32* __restrict__ dep, u8* __restrict__ st, u32* __restrict__ ctl) {
    for (u64 j = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; j < m; j += (u64)gridDim.x * MPT_BLOCK) {
        const u32 o = ops[j];
        const u32 len = 2 * lens[o];
        const u8* k = keys + (u64)o * stride;
        u32 best = 0, before = 0;
        for (int side = -1; side <= 1; side += 2) {
            const long long nb = (long long)j + side;
            if (nb < 0 || nb >= (long long)m)
                continue;
            const u32 p = ops[nb];
            const u8* q = keys + (u64)p * stride;
            const u32 lim = min(len, 2 * lens[p]);
            u32 c = 0;
            while (c < lim && key_nib(k, c) == key_nib(q, c))
                ++c;
            best = max(best, c);
            if (side < 0)
                before = c;
        }
        klen[j] = len;
        vid[j] = vlens[o] ? vbase + o : 0;
        need[j] = best;
        prev[j] = before;
        atomicAdd(&ctl[CTL_LCP], best);
        cur[j] = root;
        dep[j] = 0;
        st[j] = ST_ACTIVE;
    }
}

// ---------------------------------------------------------------- PhaseNU: expand

// mpt_walk: every walk not DONE goes on from (cur, dep) down the trie.
// Thread mapping: one thread per kept operation. It stops at its target
// (ST_TARGET: a branch whose slot for the next nibble is empty, a branch
// where the key ends, or a leaf holding exactly the key), at nothing to do
// (ST_DONE: a delete that leaves the trie), or, for an insert that leaves
// the trie inside a short node, at that node (ST_WAIT) after raising the
// node's need to 1 + the nibbles they share; the first walk to raise it
// appends the node to the expansion list. Invariant: nodes are only read
// (need and the lists excepted), so walks are independent.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_walk(Node* nodes, const u8* __restrict__ keys, u32 stride, const u32* __restrict__ ops,
         const u32* __restrict__ klen, const u32* __restrict__ vid, u64 m, u32* __restrict__ cur,
         u32* __restrict__ dep, u8* __restrict__ st, u32* __restrict__ explist, u32* __restrict__ ctl) {
    for (u64 j = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; j < m; j += (u64)gridDim.x * MPT_BLOCK) {
        if (st[j] == ST_DONE)
            continue;
        const u8* k = key_of(keys, stride, ops, j);
        const u32 len = klen[j];
        u32 n = cur[j], d = dep[j];
        u8 state = ST_ACTIVE;
        while (state == ST_ACTIVE) {
            Node* nd = &nodes[n];
            if (nd->kind == KIND_BRANCH) {
                if (d == len) {
                    state = ST_TARGET;
                    break;
                }
                const u32 c = nd->child[key_nib(k, d)];
                if (c == 0) {
                    state = ST_TARGET;
                    break;
                }
                n = c;
                ++d;
                continue;
            }
            const u32 L = nd->plen;
            u32 c = 0;
            const u32 lim = min(L, len - d);
            while (c < lim && path_nib(nd, c) == key_nib(k, d + c))
                ++c;
            if (nd->kind == KIND_EXT && c == L) {
                n = nd->child[0];
                d += L;
                continue;
            }
            if (nd->kind == KIND_LEAF && c == L && d + L == len) {
                state = ST_TARGET;
                break;
            }
            if (vid[j] == 0) {
                state = ST_DONE; // a delete of a key that is not there
                break;
            }
            const u32 old = atomicMax(&nd->need, c + 1);
            if (old == 0)
                explist[atomicAdd(&ctl[CTL_NEXP], 1u)] = n;
            atomicAdd(&ctl[CTL_WAIT], 1u);
            state = ST_WAIT;
        }
        cur[j] = n;
        dep[j] = d;
        st[j] = state;
    }
}

// expand_shape returns, for short node nd expanded to depth m (nd->need-1),
// the number of new nodes: the chain's m branches below nd (nd itself
// becomes the chain's first branch) and the remainder short node, which a
// leaf always keeps below the chain when m < plen and an extension only
// when m + 1 < plen (otherwise its child hangs from the chain directly).
__device__ __forceinline__ u32 expand_count(const Node* nd) {
    const u32 m = nd->need - 1, L = nd->plen;
    const bool rem = nd->kind == KIND_LEAF ? m < L : m + 1 < L;
    return m + (rem ? 1u : 0u);
}

// mpt_expand_count: counts[i] = the new nodes expansion list entry i needs.
// Thread mapping: one thread per listed node.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_expand_count(const Node* __restrict__ nodes, const u32* __restrict__ explist, u64 ne,
                 u32* __restrict__ counts) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < ne; i += (u64)gridDim.x * MPT_BLOCK)
        counts[i] = expand_count(&nodes[explist[i]]);
}

// mpt_alloc_ids: ids[r] for r < total: the free list's ids from its end
// (nfree of them), then the bump region from bump on. Thread mapping: one
// thread per id.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_alloc_ids(const u32* __restrict__ freelist, u32 nfree, u32 bump, u64 total, u32* __restrict__ ids) {
    for (u64 r = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; r < total; r += (u64)gridDim.x * MPT_BLOCK)
        ids[r] = r < nfree ? freelist[nfree - 1 - r] : bump + (u32)(r - nfree);
}

// mpt_expand: expands the short node of list entry i into the chain of
// one-child branches nd = b0 -> b1 -> ... -> bm following its path, then
// at bm: the remainder short node (path after nibble m) under nibble m, or
// an extension's child directly, or (m == plen, a leaf) the value in slot
// 16. The new nodes are ids[offs[i] ...]; all of them, and nd, are marked
// dirty. Thread mapping: one thread per listed node; the lists are
// disjoint (a node is listed once), so every write has one writer.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_expand(Node* nodes, const u32* __restrict__ explist, u64 ne, const u32* __restrict__ offs,
           const u32* __restrict__ ids, u32* __restrict__ touched, u32* __restrict__ ctl) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < ne; i += (u64)gridDim.x * MPT_BLOCK) {
        const u32 n = explist[i];
        Node* nd = &nodes[n];
        const u32 m = nd->need - 1, L = nd->plen, kind = nd->kind;
        const u32 tail = kind == KIND_LEAF ? nd->val : nd->child[0];
        u8 path[MPT_PATH_BYTES];
        for (u32 b = 0; b < (L + 1) / 2; ++b)
            path[b] = nd->path[b];
        const u32* my = ids + offs[i];
        const bool hasRem = kind == KIND_LEAF ? m < L : m + 1 < L;
        // nd becomes the chain's first branch.
        init_node(nd, KIND_BRANCH, nd->parent);
        mark(nodes, n, touched, ctl);
        u32 prev = n;
        for (u32 k = 1; k <= m; ++k) {
            const u32 b = my[k - 1];
            init_node(&nodes[b], KIND_BRANCH, prev);
            nodes[prev].child[key_nib(path, k - 1)] = b;
            mark(nodes, b, touched, ctl);
            prev = b;
        }
        if (m == L) { // a leaf whose key ends at the chain's end
            nodes[prev].val = tail;
        } else if (hasRem) {
            const u32 r = my[m];
            Node* rn = &nodes[r];
            init_node(rn, kind, prev);
            rn->plen = L - m - 1;
            for (u32 q = 0; q < rn->plen; ++q)
                set_nib(rn->path, q, key_nib(path, m + 1 + q));
            if (kind == KIND_LEAF) {
                rn->val = tail;
            } else {
                rn->child[0] = tail;
                nodes[tail].parent = r;
            }
            nodes[prev].child[key_nib(path, m)] = r;
            mark(nodes, r, touched, ctl);
        } else { // an extension whose last nibble is the chain's last slot
            nodes[prev].child[key_nib(path, m)] = tail;
            nodes[tail].parent = prev;
        }
    }
}

// ---------------------------------------------------------------- PhaseNU: insert

// insert_count returns the new nodes insert j adds to mpt_insert's pool: none
// at an exact leaf or where its key ends at the branch; otherwise its leaf
// (unless its key ends at depth need, where the last branch holds its
// value), the branches below its target (depths d+1 .. need) that the
// previous operation does not also need (when that one is an insert, it
// stops at the same empty slot and needs the branches down to their shared
// prefix share), and one spare: a thread that loses a CAS keeps the id it
// drew for its next level, so at most one drawn id per thread is left over.
// The sum over the batch bounds the ids the threads draw.
__device__ __forceinline__ u32 insert_count(const Node* nodes, u32 n, u32 d, u32 len, u32 need, u32 share) {
    if (nodes[n].kind != KIND_BRANCH || d == len)
        return 0;
    if (d < need)
        return (need - max(d, min(share, need))) + (need < len ? 1u : 0u) + 1u;
    return 1;
}

// mpt_insert_count: counts[j] = the new nodes operation j needs (0 for
// deletes and finished walks). Thread mapping: one thread per operation.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_insert_count(const Node* __restrict__ nodes, const u32* __restrict__ klen, const u32* __restrict__ vid,
                 const u32* __restrict__ need, const u32* __restrict__ prev, const u32* __restrict__ cur,
                 const u32* __restrict__ dep, const u8* __restrict__ st, u64 m, u32* __restrict__ counts) {
    for (u64 j = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; j < m; j += (u64)gridDim.x * MPT_BLOCK) {
        u32 c = 0;
        if (st[j] == ST_TARGET && vid[j] != 0) {
            const u32 share = j > 0 && vid[j - 1] != 0 ? prev[j] : 0;
            c = insert_count(nodes, cur[j], dep[j], klen[j], need[j], share);
        }
        counts[j] = c;
    }
}

// draw_id takes the next id of mpt_insert's pool, or 0 (and flags the
// error word) when the pool is exhausted, which the counts rule out.
__device__ __forceinline__ u32 draw_id(const u32* ids, u32 total, u32* ctl) {
    const u32 r = atomicAdd(&ctl[CTL_POOL], 1u);
    if (r >= total) {
        atomicMax(&ctl[CTL_ERROR], 2u);
        return 0;
    }
    return ids[r];
}

// mpt_insert: applies operation j at its target. A delete clears the value
// of an exact leaf or of the branch where its key ends. An insert sets that
// value, or, at an empty slot, walks down its key creating each shared
// branch with one atomicCAS on the parent's slot (a loser follows the
// winner's branch and keeps its id for the next level), then hangs its
// leaf in the slot no other key of the batch uses. New ids are drawn from
// one pool for the batch (ids[0, total), sized by mpt_insert_count).
// Thread mapping: one thread per operation. Invariant: a new node is fully
// written and fenced before the CAS that publishes it; child slots are
// only changed by CAS.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_insert(Node* nodes, const u8* __restrict__ keys, u32 stride, const u32* __restrict__ ops,
           const u32* __restrict__ klen, const u32* __restrict__ vid, const u32* __restrict__ need,
           const u32* __restrict__ cur, const u32* __restrict__ dep, const u8* __restrict__ st, u64 m,
           const u32* __restrict__ ids, u32 total, u32* __restrict__ touched, u32* __restrict__ ctl) {
    for (u64 j = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; j < m; j += (u64)gridDim.x * MPT_BLOCK) {
        if (st[j] != ST_TARGET)
            continue;
        const u8* k = key_of(keys, stride, ops, j);
        const u32 len = klen[j], v = vid[j], nd_ = need[j];
        u32 n = cur[j], d = dep[j];
        Node* nd = &nodes[n];
        if (nd->kind == KIND_LEAF) {
            if (nd->val != v) {
                nd->val = v;
                mark(nodes, n, touched, ctl);
            }
            continue;
        }
        if (d == len) {
            if (nd->val != v) {
                nd->val = v;
                mark(nodes, n, touched, ctl);
            }
            continue;
        }
        if (v == 0)
            continue; // a delete at an empty slot: the key is absent
        u32 held = 0; // an id drawn and not yet published
        while (d < nd_) {
            const u32 s = key_nib(k, d);
            const u32 c = ((volatile Node*)nodes)[n].child[s];
            if (c != 0) { // a neighbour already made this branch
                n = c;
                ++d;
                continue;
            }
            if (held == 0 && (held = draw_id(ids, total, ctl)) == 0)
                break;
            const u32 b = held;
            init_node(&nodes[b], KIND_BRANCH, n);
            __threadfence();
            const u32 old = atomicCAS(&nodes[n].child[s], 0u, b);
            if (old == 0) {
                mark(nodes, n, touched, ctl);
                mark(nodes, b, touched, ctl);
                held = 0;
                n = b;
            } else {
                nodes[b].kind = KIND_FREE; // not published: kept for the next level, else reclaimed
                n = old;
            }
            ++d;
        }
        if (d < nd_)
            continue; // pool exhausted (flagged)
        if (d == len) {
            nodes[n].val = v;
            mark(nodes, n, touched, ctl);
            continue;
        }
        const u32 leaf = held != 0 ? held : draw_id(ids, total, ctl);
        if (leaf == 0)
            continue;
        Node* lf = &nodes[leaf];
        init_node(lf, KIND_LEAF, n);
        lf->plen = len - d - 1;
        for (u32 q = 0; q < lf->plen; ++q)
            set_nib(lf->path, q, key_nib(k, d + 1 + q));
        lf->val = v;
        __threadfence();
        const u32 old = atomicCAS(&nodes[n].child[key_nib(k, d)], 0u, leaf);
        if (old != 0)
            atomicMax(&ctl[CTL_ERROR], 1u); // another key took this key's own slot
        mark(nodes, n, touched, ctl);
        mark(nodes, leaf, touched, ctl);
    }
}

// mpt_reclaim: appends every reserved id a CAS loser left unpublished (kind
// FREE) to the free list at base + the CTL_FREED counter. Thread mapping:
// one thread per reserved id.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_reclaim(const Node* __restrict__ nodes, const u32* __restrict__ ids, u64 total, u32* __restrict__ freelist,
            u32 base, u32* __restrict__ ctl) {
    for (u64 r = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; r < total; r += (u64)gridDim.x * MPT_BLOCK) {
        const u32 id = ids[r];
        if (nodes[id].kind == KIND_FREE)
            freelist[base + atomicAdd(&ctl[CTL_FREED], 1u)] = id;
    }
}

// ---------------------------------------------------------------- LockNU

// LockNU: optimistic lock coupling. A walk reads a node's version word
// (bit 0 set: locked), then the fields it needs, then the version again;
// a locked node or a changed version restarts the walk from the root. A
// change locks the one node it rewrites (CAS of the version it read to
// version | 1), writes, fences, and unlocks with version + 2. Every change
// rewrites its node in place (a short node splits into itself plus new
// nodes below it), so a parent never changes, and the trie stays canonical:
// LockNU needs no expansion or compress. Inserts only (deletes collapse
// branches upward: the decision model sends batches with deletes to
// PhaseNU).

__device__ __forceinline__ u64 read_version(const volatile Node* n) {
    return *(const volatile u64*)&n->need;
}

__device__ __forceinline__ bool try_lock(Node* n, u64 v) { return atomicCAS(version_of(n), v, v | 1ull) == v; }

__device__ __forceinline__ void unlock(Node* n, u64 v) {
    __threadfence();
    atomicExch(version_of(n), v + 2);
}

// new_leaf writes a leaf at id holding key nibbles [from, len) and value v.
__device__ void new_leaf(Node* nodes, u32 id, u32 parent, const u8* k, u32 from, u32 len, u32 v) {
    Node* lf = &nodes[id];
    init_node(lf, KIND_LEAF, parent);
    lf->plen = len - from;
    for (u32 q = 0; q < lf->plen; ++q)
        set_nib(lf->path, q, key_nib(k, from + q));
    lf->val = v;
}

// lock_split rewrites the locked short node n (kind, path P of L nibbles,
// tail = leaf value or extension child) where key nibbles [d, len) share c
// < L nibbles with P, or all L of a leaf's path and go on: n keeps P[0, c)
// as an extension to a new branch B (or becomes B itself when c = 0); B
// holds P's side under P[c] (a remainder short node, or an extension's
// child directly, or in slot 16 a leaf value whose key ends there) and the
// key's side under key[d+c] (a new leaf) or in slot 16. New ids come from
// my[*used ...].
__device__ void lock_split(Node* nodes, u32 n, u32 c, const u8* k, u32 d, u32 len, u32 v, const u32* my, u32* used,
                           u32* touched, u32* ctl) {
    Node* nd = &nodes[n];
    const u32 kind = nd->kind, L = nd->plen;
    const u32 tail = kind == KIND_LEAF ? nd->val : nd->child[0];
    u32 b = n;
    if (c > 0) {
        b = my[(*used)++];
        init_node(&nodes[b], KIND_BRANCH, n);
    }
    // P's side, built below B before B is published.
    u32 pslot = 16, pnode = 0;
    if (c < L) {
        pslot = path_nib(nd, c);
        if (kind == KIND_LEAF || c + 1 < L) {
            const u32 r = my[(*used)++];
            Node* rn = &nodes[r];
            init_node(rn, kind, b);
            rn->plen = L - c - 1;
            for (u32 q = 0; q < rn->plen; ++q)
                set_nib(rn->path, q, path_nib(nd, c + 1 + q));
            if (kind == KIND_LEAF) {
                rn->val = tail;
            } else {
                rn->child[0] = tail;
                nodes[tail].parent = r;
            }
            pnode = r;
            mark(nodes, r, touched, ctl);
        } else {
            pnode = tail;
            nodes[tail].parent = b;
        }
    }
    // The key's side.
    u32 kslot = 16, knode = 0;
    if (d + c < len) {
        kslot = key_nib(k, d + c);
        knode = my[(*used)++];
        new_leaf(nodes, knode, b, k, d + c + 1, len, v);
        mark(nodes, knode, touched, ctl);
    }
    Node* bn = &nodes[b];
    if (b == n) { // n itself becomes the branch
        nd->kind = KIND_BRANCH;
        nd->plen = 0;
        nd->val = 0;
        for (int q = 0; q < 16; ++q)
            nd->child[q] = 0;
    }
    if (pslot < 16)
        bn->child[pslot] = pnode;
    else
        bn->val = tail; // a leaf whose key ends at B
    if (kslot < 16)
        bn->child[kslot] = knode;
    else
        bn->val = v;
    if (b != n) {
        nd->kind = KIND_EXT;
        nd->plen = c;
        nd->val = 0;
        nd->child[0] = b;
        mark(nodes, b, touched, ctl);
    }
    mark(nodes, n, touched, ctl);
}

// mpt_lock_insert: LockNU's batch insert. Thread mapping: one thread per
// kept operation (all inserts); ids[3j ...] are operation j's reserved
// node ids. Invariant: a node is changed only by the thread holding its
// lock, after validating the version it read; a walk that sees a lock or
// a version change restarts from the root (counted in CTL_RESTARTS).
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_lock_insert(Node* nodes, const u8* __restrict__ keys, u32 stride, const u32* __restrict__ ops,
                const u32* __restrict__ klen, const u32* __restrict__ vid, u64 m, u32 root,
                const u32* __restrict__ ids, u32* __restrict__ touched, u32* __restrict__ ctl) {
    for (u64 j = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; j < m; j += (u64)gridDim.x * MPT_BLOCK) {
        const u8* k = key_of(keys, stride, ops, j);
        const u32 len = klen[j], v = vid[j];
        const u32* my = ids + 3 * j;
        u32 used = 0;
        for (u32 attempt = 0;; ++attempt) {
            if (attempt > 0) {
                atomicAdd(&ctl[CTL_RESTARTS], 1u);
                __nanosleep(min(32u << min(attempt, 8u), 4096u));
            }
            bool done = false;
            u32 n = root, d = 0;
            for (;;) {
                const volatile Node* vn = &nodes[n];
                const u64 ver = read_version(vn);
                if (ver & 1ull)
                    break;
                const u32 kind = vn->kind;
                if (kind == KIND_BRANCH) {
                    const u32 c = d == len ? 0 : vn->child[key_nib(k, d)];
                    if (read_version(vn) != ver)
                        break;
                    if (d < len && c != 0) {
                        n = c;
                        ++d;
                        continue;
                    }
                    if (!try_lock(&nodes[n], ver))
                        break;
                    if (d == len) {
                        nodes[n].val = v;
                    } else {
                        const u32 lf = my[used++];
                        new_leaf(nodes, lf, n, k, d + 1, len, v);
                        mark(nodes, lf, touched, ctl);
                        __threadfence();
                        nodes[n].child[key_nib(k, d)] = lf;
                    }
                    mark(nodes, n, touched, ctl);
                    unlock(&nodes[n], ver);
                    done = true;
                    break;
                }
                const u32 L = vn->plen;
                const u32 lim = min(L, len - d);
                u32 c = 0;
                while (c < lim && vpath_nib(vn, c) == key_nib(k, d + c))
                    ++c;
                const u32 next = vn->child[0];
                if (read_version(vn) != ver)
                    break;
                if (kind == KIND_EXT && c == L) {
                    n = next;
                    d += L;
                    continue;
                }
                if (!try_lock(&nodes[n], ver))
                    break;
                if (kind == KIND_LEAF && c == L && d + L == len)
                    nodes[n].val = v;
                else
                    lock_split(nodes, n, c, k, d, len, v, my, &used, touched, ctl);
                mark(nodes, n, touched, ctl);
                unlock(&nodes[n], ver);
                done = true;
                break;
            }
            if (done)
                break;
        }
    }
}

// mpt_reset_versions: zeroes the version word (need and pending) of every
// listed node: after LockNU, and for the nodes an abandoned expansion
// round had listed (their need set). Thread mapping: one thread per listed
// node.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_reset_versions(Node* nodes, const u32* __restrict__ touched, u64 nt) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < nt; i += (u64)gridDim.x * MPT_BLOCK)
        *version_of(&nodes[touched[i]]) = 0;
}

// ---------------------------------------------------------------- dirty set

// mpt_mark_up: for each of the first nt nodes of the dirty list, marks its
// ancestors dirty, appending each newly marked one, and stops at the first
// ancestor already marked (whose own walk covers the rest). Thread mapping:
// one thread per listed node.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_mark_up(Node* nodes, u32* touched, u64 nt, u32* ctl) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < nt; i += (u64)gridDim.x * MPT_BLOCK) {
        u32 p = nodes[touched[i]].parent;
        while (p != 0) {
            const u32 old = atomicOr(&nodes[p].flags, FLAG_DIRTY);
            if (old & FLAG_DIRTY)
                break;
            touched[atomicAdd(&ctl[CTL_TOUCHED], 1u)] = p;
            p = nodes[p].parent;
        }
    }
}

// mpt_count_pending: every live listed node adds one to its parent's
// pending counter (marking). Thread mapping: one thread per listed node.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_count_pending(Node* nodes, const u32* __restrict__ touched, u64 nt) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < nt; i += (u64)gridDim.x * MPT_BLOCK) {
        const Node* nd = &nodes[touched[i]];
        if (nd->kind != KIND_FREE && nd->parent != 0)
            atomicAdd(&nodes[nd->parent].pending, 1u);
    }
}

// mpt_starts: appends every live listed node without pending children to
// the start list. Thread mapping: one thread per listed node.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_starts(const Node* __restrict__ nodes, const u32* __restrict__ touched, u64 nt, u32* __restrict__ starts,
           u32* __restrict__ ctl) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < nt; i += (u64)gridDim.x * MPT_BLOCK) {
        const u32 n = touched[i];
        if (nodes[n].kind != KIND_FREE && nodes[n].pending == 0)
            starts[atomicAdd(&ctl[CTL_STARTS], 1u)] = n;
    }
}

// mpt_live_flags: flags[i] = 1 when listed node i is live (not freed by
// compress), for compacting the dirty list. Thread mapping: one thread per
// listed node.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_live_flags(const Node* __restrict__ nodes, const u32* __restrict__ touched, u64 nt, u8* __restrict__ flags) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < nt; i += (u64)gridDim.x * MPT_BLOCK)
        flags[i] = nodes[touched[i]].kind != KIND_FREE;
}

// ---------------------------------------------------------------- PhaseNU: compress

// free_node returns node c to the free list.
__device__ __forceinline__ void free_node(volatile Node* c, u32 id, u32* freelist, u32 base, u32* ctl) {
    c->kind = KIND_FREE;
    c->flags = 0;
    c->pending = 0;
    freelist[base + atomicAdd(&ctl[CTL_FREED], 1u)] = id;
}

// absorb makes node nd (id n) the short node [first nibble s, if s < 16]
// + child c's path, taking c's child or value, and frees c (a short node).
__device__ void absorb(volatile Node* nodes, u32 n, int s, u32 c, u32* freelist, u32 base, u32* ctl) {
    volatile Node* nd = &nodes[n];
    volatile Node* cn = &nodes[c];
    const u32 cl = cn->plen;
    const u32 off = s >= 0 ? 1 : 0;
    u32 L = off + cl;
    u8 path[MPT_PATH_BYTES];
    if (off)
        set_nib(path, 0, (u32)s);
    // Read the child's path before writing the node's (distinct nodes, but
    // keep the order obvious).
    for (u32 q = 0; q < cl; ++q)
        set_nib(path, off + q, vpath_nib(cn, q));
    const u32 kind = cn->kind;
    if (s < 0) { // an extension absorbing a short child: its own path first
        const u32 pl = nd->plen;
        u8 full[MPT_PATH_BYTES];
        for (u32 q = 0; q < pl; ++q)
            set_nib(full, q, vpath_nib(nd, q));
        for (u32 q = 0; q < cl; ++q)
            set_nib(full, pl + q, vpath_nib(cn, q));
        L = pl + cl;
        for (u32 b = 0; b < (L + 1) / 2; ++b)
            nd->path[b] = full[b];
    } else {
        for (u32 b = 0; b < (L + 1) / 2; ++b)
            nd->path[b] = path[b];
    }
    nd->plen = L;
    nd->kind = kind;
    if (kind == KIND_LEAF) {
        nd->val = cn->val;
        for (int q = 0; q < 16; ++q)
            nd->child[q] = 0;
    } else {
        const u32 g = cn->child[0];
        for (int q = 0; q < 16; ++q)
            nd->child[q] = 0;
        nd->child[0] = g;
        nd->val = 0;
        nodes[g].parent = n;
    }
    free_node(cn, c, freelist, base, ctl);
}

// compress_node puts dirty node n into canonical form, its children being
// canonical already: a branch drops freed children, and with no entry left
// it is freed, with only its value it becomes a leaf of empty path, with
// one child it becomes a short node (merged with a short child); an
// extension merges with a short child or vanishes with an empty one; a
// leaf without value is freed. Returns false when n was freed.
__device__ bool compress_node(volatile Node* nodes, u32 n, u32* freelist, u32 base, u32* ctl) {
    volatile Node* nd = &nodes[n];
    const u32 kind = nd->kind;
    if (kind == KIND_LEAF) {
        if (nd->val == 0) {
            free_node(nd, n, freelist, base, ctl);
            return false;
        }
        return true;
    }
    if (kind == KIND_EXT) {
        const u32 c = nd->child[0];
        const u32 ck = nodes[c].kind;
        if (ck == KIND_FREE) {
            free_node(nd, n, freelist, base, ctl);
            return false;
        }
        if (ck != KIND_BRANCH)
            absorb(nodes, n, -1, c, freelist, base, ctl);
        return true;
    }
    int entries = nd->val != 0 ? 1 : 0, only = -1;
    for (int s = 0; s < 16; ++s) {
        const u32 c = nd->child[s];
        if (c == 0)
            continue;
        if (nodes[c].kind == KIND_FREE) {
            nd->child[s] = 0;
            continue;
        }
        ++entries;
        only = s;
    }
    if (entries == 0) {
        free_node(nd, n, freelist, base, ctl);
        return false;
    }
    if (entries > 1)
        return true;
    if (nd->val != 0) { // only the value: a leaf of empty path
        nd->kind = KIND_LEAF;
        nd->plen = 0;
        return true;
    }
    const u32 c = nd->child[only];
    if (nodes[c].kind == KIND_BRANCH) { // an extension of one nibble
        nd->kind = KIND_EXT;
        nd->plen = 1;
        nd->path[0] = (u8)(only << 4);
        nd->child[only] = 0;
        nd->child[0] = c;
        return true;
    }
    absorb(nodes, n, only, c, freelist, base, ctl);
    return true;
}

// mpt_compress: canonical form, bottom-up. Thread mapping: one thread per
// start (a dirty node without dirty children); after compressing its node
// the thread decrements the parent's counter and goes on with the parent
// only if it brought the counter to zero (its other dirty children are
// done), so every dirty node is compressed once, after its children.
// Freed nodes keep their parent link for that walk. Invariant: node
// writes are fenced before the decrement that may hand the parent on.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_compress(Node* nodes_, const u32* __restrict__ starts, u64 ns, u32* __restrict__ freelist, u32 base,
             u32* __restrict__ ctl) {
    volatile Node* nodes = nodes_;
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < ns; i += (u64)gridDim.x * MPT_BLOCK) {
        u32 n = starts[i];
        for (;;) {
            const u32 p = nodes[n].parent;
            compress_node(nodes, n, freelist, base, ctl);
            __threadfence();
            if (p == 0)
                break;
            if (atomicSub((u32*)&nodes_[p].pending, 1u) != 1u)
                break;
            __threadfence();
            n = p;
        }
    }
}

// ---------------------------------------------------------------- RLP encoding

// rlp_len_bytes returns the bytes of a big-endian length.
__device__ __forceinline__ u32 rlp_len_bytes(u32 v) {
    return v < 0x100 ? 1 : v < 0x10000 ? 2 : v < 0x1000000 ? 3 : 4;
}

// put_header writes an RLP string (base 0x80) or list (base 0xc0) header
// for a payload of size bytes and returns its length.
__device__ u32 put_header(u8* out, u32 base, u32 size) {
    if (size <= 55) {
        out[0] = (u8)(base + size);
        return 1;
    }
    const u32 lb = rlp_len_bytes(size);
    out[0] = (u8)(base + 55 + lb);
    for (u32 b = 0; b < lb; ++b)
        out[1 + b] = (u8)(size >> (8 * (lb - 1 - b)));
    return 1 + lb;
}

__device__ __forceinline__ u32 header_len(u32 size) { return size <= 55 ? 1 : 1 + rlp_len_bytes(size); }

// value_string_len returns the length of the RLP string of value v (0x80
// when v is 0).
__device__ __forceinline__ u32 value_string_len(const Val* vals, const u8* arena, u32 v) {
    if (v == 0)
        return 1;
    const u32 l = vals[v].len;
    if (l == 1 && arena[vals[v].off] < 0x80)
        return 1;
    return header_len(l) + l;
}

// ref_len returns the length of a child reference inside its parent.
__device__ __forceinline__ u32 ref_len(const volatile Node* nodes, u32 c) {
    if (c == 0)
        return 1;
    const u32 r = nodes[c].reflen;
    return r == 32 ? 33 : r;
}

// compact_len returns the length of the hex-prefix (compact) encoding of a
// path of L nibbles.
__device__ __forceinline__ u32 compact_len(u32 L) { return L / 2 + 1; }

// Encoding is a node's RLP encoding as prefix bytes (built into a buffer)
// followed by tail bytes of a value in the arena (tail_len 0: none).
struct Encoding {
    u32 prefix_len;
    u64 tail_off;
    u32 tail_len;
};

// encode_prefix writes node n's encoding up to the raw bytes of its value
// (which, for leaves and branches, always come last) into out and
// describes the rest. out holds at least MPT_PREFIX_MAX bytes.
#define MPT_PREFIX_MAX 560
__device__ Encoding encode_prefix(const volatile Node* nodes, const Val* vals, const u8* arena, u32 n, u8* out) {
    const volatile Node* nd = &nodes[n];
    Encoding e;
    e.tail_len = 0;
    e.tail_off = 0;
    u32 v = 0;
    u32 payload = 0;
    const u32 kind = nd->kind;
    if (kind == KIND_BRANCH) {
        for (int s = 0; s < 16; ++s)
            payload += ref_len(nodes, nd->child[s]);
        v = nd->val;
        payload += value_string_len(vals, arena, v);
    } else {
        const u32 L = nd->plen;
        const u32 cl = compact_len(L);
        payload = (cl == 1 ? 1 : header_len(cl) + cl);
        if (kind == KIND_LEAF) {
            v = nd->val;
            payload += value_string_len(vals, arena, v);
        } else {
            payload += ref_len(nodes, nd->child[0]);
        }
    }
    u32 p = put_header(out, 0xc0, payload);
    if (kind == KIND_BRANCH) {
        for (int s = 0; s < 16; ++s) {
            const u32 c = nd->child[s];
            if (c == 0) {
                out[p++] = 0x80;
                continue;
            }
            const u32 r = nodes[c].reflen;
            if (r == 32)
                out[p++] = 0x80 + 32;
            for (u32 b = 0; b < r; ++b)
                out[p++] = nodes[c].ref[b];
        }
    } else {
        const u32 L = nd->plen;
        const u32 cl = compact_len(L);
        const u32 flag = (kind == KIND_LEAF ? 2 : 0) + (L & 1);
        if (cl > 1)
            p += put_header(out + p, 0x80, cl);
        if (L & 1) {
            out[p++] = (u8)((flag << 4) | vpath_nib(nd, 0));
            for (u32 q = 1; q < L; q += 2)
                out[p++] = (u8)((vpath_nib(nd, q) << 4) | vpath_nib(nd, q + 1));
        } else {
            out[p++] = (u8)(flag << 4);
            for (u32 q = 0; q < L; q += 2)
                out[p++] = (u8)((vpath_nib(nd, q) << 4) | vpath_nib(nd, q + 1));
        }
        if (kind == KIND_EXT) {
            const u32 c = nd->child[0];
            const u32 r = nodes[c].reflen;
            if (r == 32)
                out[p++] = 0x80 + 32;
            for (u32 b = 0; b < r; ++b)
                out[p++] = nodes[c].ref[b];
        }
    }
    if (kind != KIND_EXT) {
        if (v == 0) {
            out[p++] = 0x80;
        } else {
            const u32 l = vals[v].len;
            const u64 off = vals[v].off;
            if (l == 1 && arena[off] < 0x80) {
                out[p++] = arena[off];
            } else {
                p += put_header(out + p, 0x80, l);
                e.tail_off = off;
                e.tail_len = l;
            }
        }
    }
    e.prefix_len = p;
    return e;
}

// ---------------------------------------------------------------- PhaseHC: warp Keccak

#define KECCAK_RATE 136
#define KECCAK_RATE_LANES 17
#define KECCAK_LANES 25
#define KECCAK_ROUNDS 24

__constant__ u64 keccak_rc[KECCAK_ROUNDS] = {
    0x0000000000000001ull, 0x0000000000008082ull, 0x800000000000808aull, 0x8000000080008000ull,
    0x000000000000808bull, 0x0000000080000001ull, 0x8000000080008081ull, 0x8000000000008009ull,
    0x000000000000008aull, 0x0000000000000088ull, 0x0000000080008009ull, 0x000000008000000aull,
    0x000000008000808bull, 0x800000000000008bull, 0x8000000000008089ull, 0x8000000000008003ull,
    0x8000000000008002ull, 0x8000000000000080ull, 0x000000000000800aull, 0x800000008000000aull,
    0x8000000080008081ull, 0x8000000000008080ull, 0x0000000080000001ull, 0x8000000080008008ull,
};

__constant__ u32 keccak_rho[KECCAK_LANES] = {
    0, 1, 62, 28, 27, 36, 44, 6, 55, 20, 3, 10, 43, 25, 39, 41, 45, 15, 21, 8, 18, 2, 61, 56, 14,
};

__device__ __forceinline__ u64 rotl64_var(u64 v, u32 n) {
    return n == 0 ? v : (v << n) | (v >> (64 - n));
}

__device__ __forceinline__ u64 shfl64(u64 v, int src) {
    return ((u64)__shfl_sync(FULL_MASK, (u32)(v >> 32), src) << 32) | __shfl_sync(FULL_MASK, (u32)v, src);
}

// msg_byte returns byte q of the message prefix || arena[tail_off ...].
__device__ __forceinline__ u32 msg_byte(const u8* prefix, const Encoding& e, const u8* arena, u32 q) {
    return q < e.prefix_len ? prefix[q] : arena[e.tail_off + (q - e.prefix_len)];
}

// warp_keccak returns, in every lane t < 4, word t of the Keccak-256 of the
// message prefix || tail (all lanes of the warp call it together). Lane
// t < 25 holds state lane t; lane t < 17 gathers its 8 bytes of each block.
__device__ u64 warp_keccak(const u8* prefix, const Encoding& e, const u8* arena) {
    const int t = threadIdx.x % WARP_SIZE;
    const bool live = t < KECCAK_LANES;
    const int x = t % 5, y = t / 5;
    const int col1 = live ? (t + 5) % KECCAK_LANES : t;
    const int col2 = live ? (t + 10) % KECCAK_LANES : t;
    const int col3 = live ? (t + 15) % KECCAK_LANES : t;
    const int col4 = live ? (t + 20) % KECCAK_LANES : t;
    const int west = live ? 5 * y + (x + 4) % 5 : t;
    const int east = live ? 5 * y + (x + 1) % 5 : t;
    const int east2 = live ? 5 * y + (x + 2) % 5 : t;
    const int pi_src = live ? (3 * y + x) % 5 + 5 * x : t;
    const u32 rho = live ? keccak_rho[t] : 0;
    const u32 total = e.prefix_len + e.tail_len;
    const u32 blocks = total / KECCAK_RATE + 1;
    u64 a = 0;
    for (u32 blk = 0; blk < blocks; ++blk) {
        if (t < KECCAK_RATE_LANES) {
            u64 v = 0;
            const u32 base = blk * KECCAK_RATE + 8 * t;
            for (int b = 0; b < 8; ++b) {
                const u32 q = base + b;
                u32 byte = q < total ? msg_byte(prefix, e, arena, q) : 0;
                if (q == total)
                    byte ^= 0x01;
                if (blk + 1 == blocks && q == blk * KECCAK_RATE + KECCAK_RATE - 1)
                    byte ^= 0x80;
                v |= (u64)byte << (8 * b);
            }
            a ^= v;
        }
        for (int r = 0; r < KECCAK_ROUNDS; ++r) {
            const u64 c = a ^ shfl64(a, col1) ^ shfl64(a, col2) ^ shfl64(a, col3) ^ shfl64(a, col4);
            const u64 cw = shfl64(c, west), ce = shfl64(c, east);
            a ^= cw ^ ((ce << 1) | (ce >> 63));
            const u64 b = shfl64(rotl64_var(a, rho), pi_src);
            const u64 b1 = shfl64(b, east), b2 = shfl64(b, east2);
            a = b ^ (~b1 & b2);
            if (t == 0)
                a ^= keccak_rc[r];
        }
    }
    return a;
}

// rotl64c rotates left by the compile-time amount N (0 < N < 64).
template <int N>
__device__ __forceinline__ u64 rotl64c(u64 v) {
    return (v << N) | (v >> (64 - N));
}

// keccak_f1600 is the Keccak-f[1600] permutation on a state held in one
// thread's registers.
__device__ __forceinline__ void keccak_f1600(u64 (&a)[KECCAK_LANES]) {
#pragma unroll 1
    for (int r = 0; r < KECCAK_ROUNDS; ++r) {
        const u64 c0 = a[0] ^ a[5] ^ a[10] ^ a[15] ^ a[20];
        const u64 c1 = a[1] ^ a[6] ^ a[11] ^ a[16] ^ a[21];
        const u64 c2 = a[2] ^ a[7] ^ a[12] ^ a[17] ^ a[22];
        const u64 c3 = a[3] ^ a[8] ^ a[13] ^ a[18] ^ a[23];
        const u64 c4 = a[4] ^ a[9] ^ a[14] ^ a[19] ^ a[24];
        const u64 d0 = c4 ^ rotl64c<1>(c1);
        const u64 d1 = c0 ^ rotl64c<1>(c2);
        const u64 d2 = c1 ^ rotl64c<1>(c3);
        const u64 d3 = c2 ^ rotl64c<1>(c4);
        const u64 d4 = c3 ^ rotl64c<1>(c0);
        const u64 b0 = a[0] ^ d0;
        const u64 b1 = rotl64c<44>(a[6] ^ d1);
        const u64 b2 = rotl64c<43>(a[12] ^ d2);
        const u64 b3 = rotl64c<21>(a[18] ^ d3);
        const u64 b4 = rotl64c<14>(a[24] ^ d4);
        const u64 b5 = rotl64c<28>(a[3] ^ d3);
        const u64 b6 = rotl64c<20>(a[9] ^ d4);
        const u64 b7 = rotl64c<3>(a[10] ^ d0);
        const u64 b8 = rotl64c<45>(a[16] ^ d1);
        const u64 b9 = rotl64c<61>(a[22] ^ d2);
        const u64 b10 = rotl64c<1>(a[1] ^ d1);
        const u64 b11 = rotl64c<6>(a[7] ^ d2);
        const u64 b12 = rotl64c<25>(a[13] ^ d3);
        const u64 b13 = rotl64c<8>(a[19] ^ d4);
        const u64 b14 = rotl64c<18>(a[20] ^ d0);
        const u64 b15 = rotl64c<27>(a[4] ^ d4);
        const u64 b16 = rotl64c<36>(a[5] ^ d0);
        const u64 b17 = rotl64c<10>(a[11] ^ d1);
        const u64 b18 = rotl64c<15>(a[17] ^ d2);
        const u64 b19 = rotl64c<56>(a[23] ^ d3);
        const u64 b20 = rotl64c<62>(a[2] ^ d2);
        const u64 b21 = rotl64c<55>(a[8] ^ d3);
        const u64 b22 = rotl64c<39>(a[14] ^ d4);
        const u64 b23 = rotl64c<41>(a[15] ^ d0);
        const u64 b24 = rotl64c<2>(a[21] ^ d1);
        a[0] = b0 ^ (~b1 & b2) ^ keccak_rc[r];
        a[1] = b1 ^ (~b2 & b3);
        a[2] = b2 ^ (~b3 & b4);
        a[3] = b3 ^ (~b4 & b0);
        a[4] = b4 ^ (~b0 & b1);
        a[5] = b5 ^ (~b6 & b7);
        a[6] = b6 ^ (~b7 & b8);
        a[7] = b7 ^ (~b8 & b9);
        a[8] = b8 ^ (~b9 & b5);
        a[9] = b9 ^ (~b5 & b6);
        a[10] = b10 ^ (~b11 & b12);
        a[11] = b11 ^ (~b12 & b13);
        a[12] = b12 ^ (~b13 & b14);
        a[13] = b13 ^ (~b14 & b10);
        a[14] = b14 ^ (~b10 & b11);
        a[15] = b15 ^ (~b16 & b17);
        a[16] = b16 ^ (~b17 & b18);
        a[17] = b17 ^ (~b18 & b19);
        a[18] = b18 ^ (~b19 & b15);
        a[19] = b19 ^ (~b15 & b16);
        a[20] = b20 ^ (~b21 & b22);
        a[21] = b21 ^ (~b22 & b23);
        a[22] = b22 ^ (~b23 & b24);
        a[23] = b23 ^ (~b24 & b20);
        a[24] = b24 ^ (~b20 & b21);
    }
}

// MPT_LEAF_PREFIX_MAX bounds a leaf's encoding prefix: list header (5),
// compact path string (2 + 1 + 128/2), value string header (5).
#define MPT_LEAF_PREFIX_MAX 80

// mpt_hash_leaves: PhaseHC's computing phase for the leaf starts. Thread
// mapping: one thread per start; a leaf (not the root) is encoded into
// thread-local memory and hashed by the thread alone (state in registers,
// one 136-byte block per permutation), which beats a warp per node when
// there are many leaves; then its parent's counter is decremented and a
// parent brought to zero is appended to next. Any other start (a branch
// or extension without dirty children, or the root) is appended to next
// untouched. mpt_hash then runs over next with one warp per walk.
// Invariant: as mpt_hash's.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_hash_leaves(Node* nodes_, const Val* __restrict__ vals, const u8* __restrict__ arena,
                const u32* __restrict__ starts, u64 ns, u32 root, u32* __restrict__ next, u32* __restrict__ ctl) {
    volatile Node* nodes = nodes_;
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < ns; i += (u64)gridDim.x * MPT_BLOCK) {
        const u32 n = starts[i];
        if (n == root || nodes[n].kind != KIND_LEAF) {
            next[atomicAdd(&ctl[CTL_NEXT], 1u)] = n;
            continue;
        }
        u8 prefix[MPT_LEAF_PREFIX_MAX];
        const Encoding e = encode_prefix(nodes, vals, arena, n, prefix);
        const u32 total = e.prefix_len + e.tail_len;
        if (total < 32) {
            for (u32 q = 0; q < total; ++q)
                nodes[n].ref[q] = (u8)msg_byte(prefix, e, arena, q);
            nodes[n].reflen = total;
        } else {
            u64 a[KECCAK_LANES];
#pragma unroll
            for (int k = 0; k < KECCAK_LANES; ++k)
                a[k] = 0;
            const u32 blocks = total / KECCAK_RATE + 1;
            for (u32 blk = 0; blk < blocks; ++blk) {
                const u32 base = blk * KECCAK_RATE;
#pragma unroll
                for (int k = 0; k < KECCAK_RATE_LANES; ++k) {
                    u64 v = 0;
                    const u32 b0 = base + 8 * k;
                    if (b0 >= e.prefix_len && b0 + 8 <= total) {
                        const u8* src = arena + e.tail_off + (b0 - e.prefix_len);
#pragma unroll
                        for (int b = 0; b < 8; ++b)
                            v |= (u64)src[b] << (8 * b);
                    } else {
                        for (int b = 0; b < 8; ++b) {
                            const u32 q = b0 + b;
                            u32 byte = q < total ? msg_byte(prefix, e, arena, q) : 0;
                            if (q == total)
                                byte ^= 0x01;
                            v |= (u64)byte << (8 * b);
                        }
                    }
                    if (blk + 1 == blocks && k == KECCAK_RATE_LANES - 1)
                        v ^= 0x80ull << 56;
                    a[k] ^= v;
                }
                keccak_f1600(a);
            }
            for (int w = 0; w < 4; ++w)
                for (int b = 0; b < 8; ++b)
                    nodes[n].ref[8 * w + b] = (u8)(a[w] >> (8 * b));
            nodes[n].reflen = 32;
        }
        nodes[n].flags = 0;
        __threadfence();
        const u32 p = nodes[n].parent;
        if (p != 0 && atomicSub((u32*)&nodes_[p].pending, 1u) == 1u)
            next[atomicAdd(&ctl[CTL_NEXT], 1u)] = p;
    }
}

// mpt_hash: PhaseHC's computing phase. Thread mapping: one warp per start
// (a dirty node without dirty children). The warp's lane 0 builds the
// node's encoding prefix in shared memory; if the encoding is under 32
// bytes and the node is not the root, the encoding itself is the node's
// reference; otherwise all lanes hash it (warp_keccak) and lanes 0..3 store
// the digest. Then lane 0 clears the node's dirty flag, fences, and
// decrements the parent's counter; the warp goes on with the parent only
// when it brought the counter to zero. Invariant: a node is encoded only
// after all its dirty children stored their references; every dirty node
// is hashed exactly once.
extern "C" __global__ void __launch_bounds__(MPT_WARP_BLOCK)
mpt_hash(Node* nodes_, const Val* __restrict__ vals, const u8* __restrict__ arena, const u32* __restrict__ starts,
         u64 ns, u32 root) {
    volatile Node* nodes = nodes_;
    __shared__ u8 prefix_buf[WARPS_PER_BLOCK][MPT_PREFIX_MAX];
    __shared__ Encoding enc_buf[WARPS_PER_BLOCK];
    const int w = threadIdx.x / WARP_SIZE, t = threadIdx.x % WARP_SIZE;
    u8* prefix = prefix_buf[w];
    const u64 warps = (u64)gridDim.x * WARPS_PER_BLOCK;
    for (u64 i = (u64)blockIdx.x * WARPS_PER_BLOCK + w; i < ns; i += warps) {
        u32 n = starts[i];
        for (;;) {
            if (t == 0)
                enc_buf[w] = encode_prefix(nodes, vals, arena, n, prefix);
            __syncwarp();
            const Encoding e = enc_buf[w];
            const u32 total = e.prefix_len + e.tail_len;
            if (total < 32 && n != root) {
                if (t < (int)total)
                    nodes[n].ref[t] = (u8)msg_byte(prefix, e, arena, t);
                if (t == 0)
                    nodes[n].reflen = total;
            } else {
                const u64 a = warp_keccak(prefix, e, arena);
                if (t < 4)
                    for (int b = 0; b < 8; ++b)
                        nodes[n].ref[8 * t + b] = (u8)(a >> (8 * b));
                if (t == 0)
                    nodes[n].reflen = 32;
            }
            u32 go = 0;
            const u32 p = nodes[n].parent;
            __threadfence(); // this lane's reference bytes before the hand-off
            __syncwarp();
            if (t == 0) {
                nodes[n].flags = 0;
                __threadfence();
                go = p != 0 && atomicSub((u32*)&nodes_[p].pending, 1u) == 1u;
                if (go)
                    __threadfence();
            }
            go = __shfl_sync(FULL_MASK, go, 0);
            __syncwarp();
            if (!go)
                break;
            n = p;
        }
    }
}

// ---------------------------------------------------------------- lookups and proofs

// lookup returns the value id stored under key k (len nibbles) below root.
__device__ u32 lookup(const Node* nodes, u32 root, const u8* k, u32 len) {
    u32 n = root, d = 0;
    while (n != 0) {
        const Node* nd = &nodes[n];
        if (nd->kind == KIND_BRANCH) {
            if (d == len)
                return nd->val;
            n = nd->child[key_nib(k, d)];
            ++d;
            continue;
        }
        const u32 L = nd->plen;
        if (len - d < L)
            return 0;
        for (u32 q = 0; q < L; ++q)
            if (path_nib(nd, q) != key_nib(k, d + q))
                return 0;
        d += L;
        if (nd->kind == KIND_LEAF)
            return d == len ? nd->val : 0;
        n = nd->child[0];
    }
    return 0;
}

// mpt_lookup: vid[i] and vlen[i] of key i (0 and 0 when absent). Thread
// mapping: one thread per key.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_lookup(const Node* __restrict__ nodes, const Val* __restrict__ vals, u32 root, const u8* __restrict__ keys,
           u32 stride, const u32* __restrict__ lens, u64 n, u32* __restrict__ vid, u64* __restrict__ vlen) {
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < n; i += (u64)gridDim.x * MPT_BLOCK) {
        const u32 v = root ? lookup(nodes, root, keys + i * stride, 2 * lens[i]) : 0;
        vid[i] = v;
        vlen[i] = v ? vals[v].len : 0;
    }
}

// mpt_gather: copies the value of result i to out[offs[i] ...]. Thread
// mapping: one warp per result, lanes copying consecutive bytes.
extern "C" __global__ void __launch_bounds__(MPT_WARP_BLOCK)
mpt_gather(const Val* __restrict__ vals, const u8* __restrict__ arena, const u32* __restrict__ vid, u64 n,
           const u64* __restrict__ offs, u8* __restrict__ out) {
    const u64 warps = (u64)gridDim.x * WARPS_PER_BLOCK;
    const int t = threadIdx.x % WARP_SIZE;
    for (u64 i = ((u64)blockIdx.x * MPT_WARP_BLOCK + threadIdx.x) / WARP_SIZE; i < n; i += warps) {
        const u32 v = vid[i];
        if (v == 0)
            continue;
        const u8* src = arena + vals[v].off;
        u8* dst = out + offs[i];
        for (u32 b = t; b < vals[v].len; b += WARP_SIZE)
            dst[b] = src[b];
    }
}

// proof_step advances a proof walk past node n for key k at nibble depth
// d; returns the next node (0: the walk ends).
__device__ u32 proof_step(const Node* nodes, u32 n, const u8* k, u32 len, u32* d) {
    const Node* nd = &nodes[n];
    if (nd->kind == KIND_BRANCH) {
        if (*d == len)
            return 0;
        const u32 c = nd->child[key_nib(k, *d)];
        ++*d;
        return c;
    }
    if (nd->kind == KIND_LEAF)
        return 0;
    const u32 L = nd->plen;
    if (len - *d < L)
        return 0;
    for (u32 q = 0; q < L; ++q)
        if (path_nib(nd, q) != key_nib(k, *d + q))
            return 0;
    *d += L;
    return nd->child[0];
}

// mpt_proof_size: count[i] and bytes[i] of key i's proof: the nodes on its
// path from the root that are hashed in their parent (reflen 32; the root
// always), as go-ethereum's Prove lists them. Thread mapping: one thread
// per key.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_proof_size(const Node* __restrict__ nodes, const Val* __restrict__ vals, const u8* __restrict__ arena,
               u32 root, const u8* __restrict__ keys, u32 stride, const u32* __restrict__ lens, u64 n,
               u32* __restrict__ count, u64* __restrict__ bytes) {
    u8 scratch[MPT_PREFIX_MAX];
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < n; i += (u64)gridDim.x * MPT_BLOCK) {
        const u8* k = keys + i * stride;
        const u32 len = 2 * lens[i];
        u32 c = 0, d = 0;
        u64 b = 0;
        for (u32 nd = root; nd != 0; nd = proof_step(nodes, nd, k, len, &d)) {
            if (nd != root && nodes[nd].reflen != 32)
                continue;
            const Encoding e = encode_prefix(nodes, vals, arena, nd, scratch);
            ++c;
            b += e.prefix_len + e.tail_len;
        }
        count[i] = c;
        bytes[i] = b;
    }
}

// mpt_proof_write: writes key i's proof nodes at out[boffs[i] ...] and the
// end offset of each at ends[noffs[i] ...] (relative to boffs[i]). Thread
// mapping: one thread per key.
extern "C" __global__ void __launch_bounds__(MPT_BLOCK)
mpt_proof_write(const Node* __restrict__ nodes, const Val* __restrict__ vals, const u8* __restrict__ arena,
                u32 root, const u8* __restrict__ keys, u32 stride, const u32* __restrict__ lens, u64 n,
                const u64* __restrict__ boffs, const u32* __restrict__ noffs, u8* __restrict__ out,
                u32* __restrict__ ends) {
    u8 scratch[MPT_PREFIX_MAX];
    for (u64 i = (u64)blockIdx.x * MPT_BLOCK + threadIdx.x; i < n; i += (u64)gridDim.x * MPT_BLOCK) {
        const u8* k = keys + i * stride;
        const u32 len = 2 * lens[i];
        u8* o = out + boffs[i];
        u32* en = ends + noffs[i];
        u32 d = 0, c = 0;
        u64 b = 0;
        for (u32 nd = root; nd != 0; nd = proof_step(nodes, nd, k, len, &d)) {
            if (nd != root && nodes[nd].reflen != 32)
                continue;
            const Encoding e = encode_prefix(nodes, vals, arena, nd, scratch);
            for (u32 q = 0; q < e.prefix_len; ++q)
                o[b++] = scratch[q];
            for (u32 q = 0; q < e.tail_len; ++q)
                o[b++] = arena[e.tail_off + q];
            en[c++] = (u32)b;
        }
    }
}
