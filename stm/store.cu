// stm/store.cu: the store's setup and results: stm_init fills the version
// rings before a run, stm_final reads the newest versions after it.

#include "stm/device.cuh"

// stm_init: one thread per item: version 0 holds init[i], the other slots
// none; no write logged yet (wts 0).
extern "C" __global__ void stm_init(const stm_globals* __restrict__ g, const u64* __restrict__ init) {
	const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= g->n_items) return;
	u64* vals = (u64*)g->vals + i * (u32)g->k;
	u64* vers = (u64*)g->vers + i * (u32)g->k;
	vals[0] = init[i];
	vers[0] = 0;
	for (u32 j = 1; j < (u32)g->k; j++) {
		vals[j] = 0;
		vers[j] = STM_NO_VERSION;
	}
	((u32*)g->head)[i] = 0;
	((u64*)g->wts)[i] = 0;
}

// stm_final: one thread per item: out[i] = the item's newest version (run
// after the kernels have finished).
extern "C" __global__ void stm_final(const stm_globals* __restrict__ g, u64* __restrict__ out) {
	const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= g->n_items) return;
	out[i] = ((const u64*)g->vals)[i * (u32)g->k + ((const u32*)g->head)[i]];
}
