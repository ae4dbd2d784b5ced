// mpt/encode.cuh: RLP encoding of trie nodes on the device, shared by
// PhaseHC (hash.cu) and proofs (read.cu). A node's encoding is built as a
// prefix in a buffer followed by the raw bytes of its value in the arena,
// which leaf and branch encodings end with.
#pragma once

#include "mpt/mpt.cuh"


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

// msg_byte returns byte q of the message prefix || arena[tail_off ...].
__device__ __forceinline__ u32 msg_byte(const u8* prefix, const Encoding& e, const u8* arena, u32 q) {
    return q < e.prefix_len ? prefix[q] : arena[e.tail_off + (q - e.prefix_len)];
}
