// mpt/mpt.cuh: the GPU engine's device data structures and the helpers
// every kernel file of the Merkle Patricia Trie shares (sort.cu, update.cu,
// lock.cu, compress.cu, hash.cu, read.cu; the *_gpu.go files beside them
// launch them).
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
//             sorted neighbours (mpt_op_init);
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
//
// Constants shared with Go (launch configuration, node kinds and flags,
// control words, layout sizes) are defined by Go (kernels_gpu.go) and
// passed to NVRTC as -D options; this header only checks them.
#pragma once

#include "warpkv/types.cuh"

#define WARPS_PER_BLOCK (MPT_WARP_BLOCK / WARP)

// Operation states of a walk (device only: the host never reads them).
#define ST_ACTIVE 0 // walking
#define ST_TARGET 1 // at its target: a branch slot (missing child or the value slot) or an exact leaf
#define ST_DONE 2   // nothing to do (a delete of an absent key)
#define ST_WAIT 3   // waits at a short node for its expansion

// Node is one trie node, MPT_NODE_BYTES (256) bytes.
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

static_assert(sizeof(Node) == MPT_NODE_BYTES, "Node is nodeBytes long");
// The host reads node records at the MPT_OFF_* offsets (gpu.go's
// node*Offset): the u32 fields in declaration order, then path and ref.
// NVRTC has no offsetof, so the offsets are checked against that order.
static_assert(MPT_OFF_KIND == 0 && MPT_OFF_PARENT == 4 && MPT_OFF_CHILD == 8, "kind, parent, child offsets");
static_assert(MPT_OFF_VAL == MPT_OFF_CHILD + 16 * 4 && MPT_OFF_PLEN == MPT_OFF_VAL + 4, "val, plen offsets");
static_assert(MPT_OFF_REFLEN == MPT_OFF_PLEN + 4 && MPT_OFF_FLAGS == MPT_OFF_REFLEN + 4, "reflen, flags offsets");
static_assert(MPT_OFF_PATH == MPT_OFF_FLAGS + 3 * 4, "path offset (after flags, need, pending)");
static_assert(MPT_OFF_REF == MPT_OFF_PATH + MPT_PATH_BYTES && MPT_OFF_REF + 32 == MPT_NODE_BYTES, "ref offset");

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

static_assert(sizeof(Val) == MPT_VAL_BYTES, "Val is valBytes long");

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

// init_short makes node id a short node of kind (KIND_LEAF or KIND_EXT)
// under parent, holding nibbles [from, from+plen) of the packed nibble
// string src (a key, or a node's path) and tail: a leaf's value id, or an
// extension's child, which it re-parents. Every node that PhaseNU or LockNU
// creates below a branch slot is written by it.
__device__ void init_short(Node* nodes, u32 id, u32 kind, u32 parent, const u8* src, u32 from, u32 plen, u32 tail) {
    Node* sn = &nodes[id];
    init_node(sn, kind, parent);
    sn->plen = plen;
    for (u32 q = 0; q < plen; ++q)
        set_nib(sn->path, q, key_nib(src, from + q));
    if (kind == KIND_LEAF) {
        sn->val = tail;
    } else {
        sn->child[0] = tail;
        nodes[tail].parent = id;
    }
}

// key_of returns the bytes of operation j's key.
__device__ __forceinline__ const u8* key_of(const u8* keys, u32 stride, const u32* ops, u64 j) {
    return keys + (u64)ops[j] * stride;
}
