// stm/memcached.cuh: MemcachedGPU's GET and PUT as transaction bodies
// (stm/memcached.go is the CPU twin and must draw the same numbers in the
// same order). A slot is 4 items: key word 0, key word 1, LRU stamp, value
// handle. Parameters: 0 sets, 1 ways, 2 GET share in parts per million,
// 3.. the Zipf generator of key ranks.
#pragma once

__device__ __forceinline__ void mc_key(u64 rank, u64* k0, u64* k1) {
	*k0 = stm_mix(rank + 0x51ED27ull) | 1;
	*k1 = stm_mix(rank + 0xC0FFEEull);
}

__device__ void stm_body(stm_tx* tx) {
	const u64 sets = stm_param(tx, 0), ways = stm_param(tx, 1), get_ppm = stm_param(tx, 2);
	const bool get = stm_below(tx, 1000000) < get_ppm;
	stm_begin(tx, get);
	const u64 rank = stm_zipf(tx, 3);
	u64 k0, k1;
	mc_key(rank, &k0, &k1);
	const u32 base = (u32)((rank % sets) * ways * 4);
	if (get) {
		// GET: scan the set; on a hit read the value handle.
		for (u32 w = 0; w < ways; w++) {
			const u32 s = base + w * 4;
			if (stm_read(tx, s) == k0 && stm_read(tx, s + 1) == k1) {
				stm_read(tx, s + 3);
				return;
			}
			if (stm_failed(tx)) return;
		}
		return;
	}
	// PUT: the key's slot, else the least recently put one; 4 metadata writes.
	u32 target = base;
	u64 oldest = ~0ull;
	for (u32 w = 0; w < ways; w++) {
		const u32 s = base + w * 4;
		if (stm_read(tx, s) == k0 && stm_read(tx, s + 1) == k1) {
			target = s;
			break;
		}
		const u64 lru = stm_read(tx, s + 2);
		if (lru < oldest) {
			target = s;
			oldest = lru;
		}
		if (stm_failed(tx)) return;
	}
	stm_write(tx, target, k0);
	stm_write(tx, target + 1, k1);
	stm_write(tx, target + 2, tx->ticket + 1);
	stm_write(tx, target + 3, stm_mix(rank ^ tx->ticket));
}
