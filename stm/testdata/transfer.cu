// transfer.cu: a transaction body for "warpkv stm run" (the package
// documentation explains it line by line). Items are grouped in blocks of
// 8. An update transaction moves 1 between two items of a random block
// (and gives up, stm_abort, when the source is 0); a read-only one, with
// the share --read-only gives as stm_param(tx, 0) in parts per million,
// sums a block, which must stay 8 times the initial value that --param
// gives as stm_param(tx, 1).
//
//   warpkv stm run --body transfer.cu --items 1000000 --init 100 --param 100 --read-only 90
__device__ void stm_body(stm_tx* tx) {
	const u64 blocks = stm_items(tx) / 8;
	const bool ro = stm_below(tx, 1000000) < stm_param(tx, 0);
	stm_begin(tx, ro);
	const u32 base = (u32)(stm_below(tx, blocks) * 8);
	if (ro) {
		u64 sum = 0;
		for (u32 i = 0; i < 8; i++) sum += stm_read(tx, base + i);
		if (stm_failed(tx)) return;
		stm_check(tx, sum == 8 * stm_param(tx, 1));
		return;
	}
	const u32 from = base + (u32)stm_below(tx, 8);
	const u32 to = base + (u32)((from - base + 1 + stm_below(tx, 7)) % 8);
	const u64 a = stm_read(tx, from);
	if (stm_failed(tx)) return;
	if (a == 0) {
		stm_abort(tx);
		return;
	}
	stm_write(tx, from, a - 1);
	stm_write(tx, to, stm_read(tx, to) + 1);
}
