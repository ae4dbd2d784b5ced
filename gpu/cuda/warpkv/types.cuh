// warpkv/types.cuh: the integer types and small helpers every warpkv kernel
// uses. NVRTC compiles without the standard headers, so the fixed-width
// types are spelled here once.
#pragma once

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef int i32;
typedef long long i64;

// WARP is the number of lanes of a warp on every GPU warpkv supports.
#define WARP 32
// FULL_MASK names all lanes of a warp in the *_sync intrinsics.
#define FULL_MASK 0xffffffffu
