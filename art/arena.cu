// arena.cu: Arena compaction: ac_* (delete_gpu.go launches them).
// Part of the program art.cu (which includes every part once); the
// layout, the descriptor and the shared helpers are in art.cuh.
#pragma once
#include "art/art.cuh"

// ---------------------------------------------------------------------------
// Arena compaction (arena.go)

// ac_sizes: one thread per LV record: its live rounded length (0 when
// dead), for the exclusive scan of the new offsets; sz[n] = 0.
extern "C" __global__ void ac_sizes(const Tree *t, u64 n, u64 *sz) {
    GRID_STRIDE(i, n + 1) {
        if (i == n) {
            sz[i] = 0;
            continue;
        }
        u64 w = t->pool[K_LV][2 * i + 1];
        sz[i] = w == LV_DEAD ? 0 : round_arena(w >> AUX_SHIFT);
    }
}

// ac_move: one thread per live LV record: its key bytes copied to the new
// arena at its scanned offset, and its arena word updated.
extern "C" __global__ void ac_move(const Tree *t, u64 n, const u64 *off, u8 *na) {
    GRID_STRIDE(i, n) {
        u64 *w = t->pool[K_LV] + 2 * i + 1;
        if (*w == LV_DEAD) continue;
        u64 o = *w & INDEX_MASK, len = *w >> AUX_SHIFT;
        u64 rn = round_arena(len);
        for (u64 b = 0; b < rn; b++) na[off[i] + b] = t->arena[o + b];
        *w = off[i] | (len << AUX_SHIFT);
    }
}
