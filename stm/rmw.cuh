// stm/rmw.cuh: the read-modify-write mix (stm/rmw.go is the CPU twin and
// must draw the same numbers in the same order). Parameters: 0 read-only
// share in parts per million, 1 keys per transaction, 2 write-only (blind
// writes of the ticket), 3.. the Zipf generator of items.
#pragma once

__device__ void stm_body(stm_tx* tx) {
	const u64 ro_ppm = stm_param(tx, 0), k = stm_param(tx, 1);
	const bool wo = stm_param(tx, 2) != 0;
	const bool ro = stm_below(tx, 1000000) < ro_ppm;
	stm_begin(tx, ro);
	for (u64 j = 0; j < k; j++) {
		const u32 i = (u32)stm_zipf(tx, 3);
		if (ro)
			stm_read(tx, i);
		else if (wo)
			stm_write(tx, i, tx->ticket);
		else
			stm_write(tx, i, stm_read(tx, i) + 1);
		if (stm_failed(tx)) return;
	}
}
