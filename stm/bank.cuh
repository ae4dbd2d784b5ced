// stm/bank.cuh: the Bank workload's transaction body (stm/bank.go is its
// CPU twin and must draw the same numbers in the same order).
// Parameters: 0 accounts, 1 initial balance, 2 read-only share in parts per
// million, 3 block size, 4 blocks, 5 rounds, 6 sharded (block = thread),
// 7-12 the Zipf law of the block (stm_zipf; exponent 0: uniform).
#pragma once

__device__ void stm_body(stm_tx* tx) {
	const u64 n = stm_param(tx, 0), v = stm_param(tx, 1), ro_ppm = stm_param(tx, 2);
	const u64 size = stm_param(tx, 3), nb = stm_param(tx, 4), k = stm_param(tx, 5);
	const bool sharded = stm_param(tx, 6) != 0;
	const bool ro = stm_below(tx, 1000000) < ro_ppm;
	stm_begin(tx, ro);
	const u64 blk = sharded ? (u64)tx->thread % nb : stm_zipf(tx, 7);
	const u64 lo = blk * size;
	const u64 sz = blk == nb - 1 ? n - lo : size;
	if (ro) {
		// A read-only transaction sums its block: the total is invariant.
		// Its reads go STM_READ_MANY at a time (stm_read_many).
		u64 sum = 0;
		for (u64 i = lo; i < lo + sz; i += STM_READ_MANY) {
			const u32 c = (u32)min((u64)STM_READ_MANY, lo + sz - i);
			u32 items[STM_READ_MANY];
			u64 got[STM_READ_MANY];
#pragma unroll
			for (u32 j = 0; j < STM_READ_MANY; j++) items[j] = (u32)(i + j);
			stm_read_many(tx, items, c, got);
#pragma unroll
			for (u32 j = 0; j < STM_READ_MANY; j++)
				if (j < c) sum += got[j];
			if (stm_failed(tx)) return;
		}
		stm_check(tx, sum == sz * v);
		return;
	}
	// A transfer of k rounds: each moves 1 between two accounts of the
	// block, whose balances it reads together (stm_read_many).
	for (u64 r = 0; r < k; r++) {
		u32 items[2];
		items[0] = (u32)(lo + stm_below(tx, sz));
		u32 to = (u32)(lo + stm_below(tx, sz - 1));
		if (to >= items[0]) to++;
		items[1] = to;
		u64 got[2];
		stm_read_many(tx, items, 2, got);
		stm_write(tx, items[0], got[0] - 1);
		stm_write(tx, items[1], got[1] + 1);
		if (stm_failed(tx)) return;
	}
}
