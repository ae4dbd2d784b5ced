// stm/inbox.cu: migration of held-back tickets (Options.Migrate; compiled
// in with STM_MIGRATE, the hold-backs in a row after which a ticket
// moves): the warps' inboxes, which stm_client fills at a round's end and
// takes from before new tickets. Included by client.cu before stm_client.
#if STM_MIGRATE
// Under hot items most lane-rounds are held back at a lock another warp's
// lane holds (77% at Zipf 0.99, 0% read-only, H200, 2026-11-30), and each
// such ticket keeps its lane round after round. As in CAR-STM (Dolev,
// Hendler and Suissa, 2008), a ticket held back STM_MIGRATE times in a row
// moves to the warp whose lane held the lock (stm_client, at its round's
// end), and so does one whose attempt lost and whose chained claim then
// met another warp's lock: its lane takes a fresh ticket, and the tickets that want the same
// items gather in one warp, where the in-warp check orders them and
// chained attempts commit them in turn with the words handed over
// (stm_unlock_handoff), not against other warps' locks.
//
// A warp's inbox (g->inbox, STM_INBOX_WORDS words): a state word (bit b:
// slot b taken; bit 32: closed, the warp has left) and 32 slots of three
// words (ticket + 1; the ticket's start on the global timer; its thread).
// Invariants: a slot's bit is set from its pusher's compare-and-swap to its
// taker's AND, and only the warp clears bits, only pushers set them; its
// ticket word is nonzero from the pusher's release store to the taker's
// zeroing, which the taker's fence, a warp barrier and lane 0's fence order
// before the bit's clearing; a closed inbox
// takes no push, and a warp closes only an empty one, so no ticket moved
// to a warp is lost unless the run was told to stop.

// stm_inbox returns warp w's inbox.
__device__ __forceinline__ u64* stm_inbox(const stm_globals* g, u32 w) { return (u64*)g->inbox + (u64)w * STM_INBOX_WORDS; }

// stm_inbox_push moves a ticket (its start began, its thread) to warp w's
// inbox: it takes a free slot of an open inbox (compare-and-swap of the
// state word), fences, writes the slot and releases the ticket word.
// Returns false when the inbox is full or closed (the ticket stays). The
// lane calls it alone.
__device__ __forceinline__ bool stm_inbox_push(const stm_globals* g, u32 w, u64 ticket, u64 began, u32 thread) {
	u64* box = stm_inbox(g, w);
	u64 s = ld_relaxed_gpu(box);
	for (;;) {
		if ((s >> 32) || (u32)s == ~0u) return false;
		const u32 b = __ffs(~(u32)s) - 1;
		const u64 seen = atomicCAS((unsigned long long*)box, (unsigned long long)s, (unsigned long long)(s | (1ull << b)));
		if (seen != s) {
			s = seen;
			continue;
		}
		__threadfence(); // the slot's zeroing by its last taker before these stores
		st_relaxed_gpu(box + 2 + 3 * b, began);
		st_relaxed_gpu(box + 3 + 3 * b, (u64)thread);
		st_release_gpu(box + 1 + 3 * b, ticket + 1);
		return true;
	}
}

// stm_inbox_pull gives lanes that want a ticket (wants) those of the
// warp's inbox that are written: the k-th such lane takes the k-th taken
// slot, zeroes its ticket word and fences, and lane 0 frees the slots
// taken (one atomic AND). Returns whether this lane took one (*ticket,
// *began, *thread set). All lanes call it.
__device__ __forceinline__ bool stm_inbox_pull(const stm_globals* g, u32 wid, bool wants, u32 lane, u64* ticket, u64* began, u32* thread) {
	const u32 wm = __ballot_sync(FULL_MASK, wants);
	if (!wm) return false;
	u64* box = stm_inbox(g, wid);
	u64 s = 0;
	if (lane == 0) s = ld_relaxed_gpu(box);
	const u32 taken = (u32)__shfl_sync(FULL_MASK, s, 0);
	if (!taken) return false;
	const u32 k = __popc(wm & lanemask_lt(lane));
	u64 t1 = 0;
	u32 b = 0;
	if (wants && k < (u32)__popc(taken)) {
		b = __fns(taken, 0, (int)k + 1);
		t1 = ld_acquire_gpu(box + 1 + 3 * b);
		if (t1) {
			*ticket = t1 - 1;
			*began = ld_relaxed_gpu(box + 2 + 3 * b);
			*thread = (u32)ld_relaxed_gpu(box + 3 + 3 * b);
			st_relaxed_gpu(box + 1 + 3 * b, 0ull);
			__threadfence(); // the zeroing before the slot is freed
		}
	}
	const u32 took = __reduce_or_sync(FULL_MASK, t1 ? 1u << b : 0u);
	if (took) {
		// Each taker's zeroing and fence, a warp barrier, then lane 0's
		// fence and the AND that frees the slots (the order
		// stm_take_timestamps uses): a pusher that finds a slot free
		// writes it after its zeroing.
		__syncwarp();
		if (lane == 0) {
			__threadfence();
			atomicAnd((unsigned long long*)box, ~(unsigned long long)took);
		}
	}
	return t1 != 0;
}

// stm_inbox_close closes the warp's inbox if it is empty (one
// compare-and-swap by lane 0): a warp leaves only then, so that no ticket
// moved to it is lost. Returns (warp-uniform) whether it closed. All
// lanes call it.
__device__ __forceinline__ bool stm_inbox_close(const stm_globals* g, u32 wid, u32 lane) {
	bool closed = false;
	if (lane == 0) closed = atomicCAS((unsigned long long*)stm_inbox(g, wid), 0ull, 1ull << 32) == 0ull;
	return __shfl_sync(FULL_MASK, closed, 0);
}
#endif

