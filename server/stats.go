package server

import (
	"math/bits"
	"strconv"
	"time"

	"github.com/warpkv/warpkv/hashindex"
	"github.com/warpkv/warpkv/kv"
)

type kvStat = kv.Stat

// Stats returns a statistics group (kv.Cache): "" for memcached's general
// counters plus the index and latency figures of the Mega-KV pipeline,
// "settings", "items", "slabs", and "latency" (the GET latency histogram:
// non-empty buckets as get_us_le_<upper bound> <count>). Cost: a pass over
// the slab classes and, for latency, over the histogram.
func (e *Engine) Stats(group string) ([]kv.Stat, bool) {
	switch group {
	case "":
		return e.generalStats(), true
	case "settings":
		return e.settingsStats(), true
	case "items":
		return e.itemStats(), true
	case "slabs":
		return e.slabStats(), true
	case "latency":
		return e.latencyStats(), true
	case "profile":
		if e.prof != nil {
			return e.prof.stats(), true
		}
	}
	return nil, false
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }
func i64(v int64) string  { return strconv.FormatInt(v, 10) }

func micros(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e3, 'f', 1, 64) }

func (e *Engine) generalStats() []kv.Stat {
	out := e.memcachedStats()
	out = append(out, e.store.RebalanceStats()...)
	out = append(out, e.hashStats()...)
	out = append(out, e.indexStats()...)
	return append(out, e.latencySummary()...)
}

// memcachedStats are the general group's command and memory counters, in
// memcached's names. Cost: the store's Stats.
func (e *Engine) memcachedStats() []kv.Stat {
	c := &e.counts
	st := e.store.Stats()
	gets, hits := c.gets.Load(), c.getHits.Load()
	out := []kv.Stat{
		{Name: "cmd_get", Value: u64(gets)},
		{Name: "cmd_set", Value: u64(c.sets.Load())},
		{Name: "cmd_flush", Value: u64(c.flushes.Load())},
		{Name: "cmd_touch", Value: u64(c.touches.Load())},
		{Name: "get_hits", Value: u64(hits)},
		{Name: "get_misses", Value: u64(gets - hits)},
		{Name: "get_expired", Value: u64(c.expired.Load())},
		{Name: "get_flushed", Value: u64(c.flushed.Load())},
		{Name: "delete_misses", Value: u64(c.deleteMisses.Load())},
		{Name: "delete_hits", Value: u64(c.deleteHits.Load())},
		{Name: "incr_misses", Value: u64(c.incrMisses.Load())},
		{Name: "incr_hits", Value: u64(c.incrHits.Load())},
		{Name: "decr_misses", Value: u64(c.decrMisses.Load())},
		{Name: "decr_hits", Value: u64(c.decrHits.Load())},
		{Name: "cas_misses", Value: u64(c.casMisses.Load())},
		{Name: "cas_hits", Value: u64(c.casHits.Load())},
		{Name: "cas_badval", Value: u64(c.casBadval.Load())},
		{Name: "touch_hits", Value: u64(c.touchHits.Load())},
		{Name: "touch_misses", Value: u64(c.touches.Load() - c.touchHits.Load())},
		{Name: "limit_maxbytes", Value: i64(st.MemoryLimit)},
		{Name: "bytes", Value: i64(st.ItemBytes)},
		{Name: "curr_items", Value: i64(st.Items)},
		{Name: "total_items", Value: u64(st.Links)},
		{Name: "evictions", Value: u64(st.Evictions)},
		{Name: "evicted_unfetched", Value: u64(st.EvictedUnfetched)},
		{Name: "reclaimed", Value: u64(st.Reclaimed)},
		{Name: "expired_unfetched", Value: u64(st.ExpiredUnfetched)},
		{Name: "total_malloced", Value: i64(st.PageBytes)},
	}
	return out
}

// indexStats are the Mega-KV pipeline's figures: engine, shards, batches,
// jobs and the index's drops.
func (e *Engine) indexStats() []kv.Stat {
	s, entries, capacity := e.indexTotals()
	avg := "0"
	if s.searchBatches > 0 {
		avg = strconv.FormatFloat(float64(s.searchJobs)/float64(s.searchBatches), 'f', 1, 64)
	}
	var ps hashindex.PersistentStats
	broken := ""
	for _, p := range e.persist {
		x := p.Stats()
		ps.Resident += x.Resident
		ps.Launched += x.Launched
		ps.Launches += x.Launches
		ps.Relaunchs += x.Relaunchs
		if x.Broken != "" {
			broken = x.Broken
		}
	}
	out := []kv.Stat{
		{Name: "index_engine", Value: e.backend},
		{Name: "index_shards", Value: strconv.Itoa(len(e.shards))},
		{Name: "index_entries", Value: u64(entries)},
		{Name: "index_capacity", Value: u64(capacity)},
		{Name: "index_search_batches", Value: u64(s.searchBatches)},
		{Name: "index_search_jobs", Value: u64(s.searchJobs)},
		{Name: "index_search_batch_avg", Value: avg},
		{Name: "index_search_batch_max", Value: u64(s.maxSearchBatch)},
		{Name: "index_search_inline_jobs", Value: u64(e.inlineJobs())},
		{Name: "index_update_batches", Value: u64(s.updateBatches)},
		{Name: "index_update_rounds", Value: u64(s.updateRounds)},
		{Name: "index_update_jobs", Value: u64(s.updateJobs)},
		{Name: "index_overwrites", Value: u64(s.overwrites)},
		{Name: "index_displaced", Value: u64(s.displaced)},
		{Name: "index_drops", Value: u64(e.counts.indexDrops.Load())},
		{Name: "index_self_displaced", Value: u64(e.counts.selfDisplaced.Load())},
		{Name: "stale_reads", Value: u64(e.counts.staleReads.Load())},
		{Name: "pending_entries", Value: strconv.Itoa(e.pend.size())},
		{Name: "pending_full_waits", Value: u64(e.counts.pendingFull.Load())},
		{Name: "index_update_inline_rounds", Value: u64(e.counts.updateInline.Load())},
		{Name: "write_search_retries", Value: u64(e.counts.optimisticRetries.Load())},
		{Name: "write_locked_searches", Value: u64(e.counts.lockedSearches.Load())},
		{Name: "index_update_errors", Value: u64(e.counts.updateErrors.Load())},
	}
	if len(e.persist) > 0 {
		out = append(out,
			kv.Stat{Name: "index_resident_batches", Value: u64(ps.Resident)},
			kv.Stat{Name: "index_launched_batches", Value: u64(ps.Launched)},
			kv.Stat{Name: "index_resident_launches", Value: u64(ps.Launches)},
			kv.Stat{Name: "index_resident_relaunches", Value: u64(ps.Relaunchs)})
		if broken != "" {
			out = append(out, kv.Stat{Name: "index_resident_broken", Value: strconv.Quote(broken)})
		}
	}
	for _, sh := range e.shards {
		out = append(out,
			kv.Stat{Name: "index_search_call_us", Value: micros(time.Duration(sh.pol.callNs.Load()))},
			kv.Stat{Name: "index_search_target", Value: strconv.Itoa(sh.pol.target())},
			kv.Stat{Name: "index_update_interval_us", Value: micros(sh.pol.updateInterval())})
		break // the first shard's policy state
	}
	return out
}

// inlineJobs returns the search jobs the shards ran inline.
func (e *Engine) inlineJobs() (n uint64) {
	for _, sh := range e.shards {
		n += sh.ix.Stats().Shared
	}
	return n
}

// indexTotals sums the shards' batch counters (the largest search batch is
// the largest of any shard) and their index entries and capacity. Cost:
// each shard's mutex in turn.
func (e *Engine) indexTotals() (s shardStats, entries, capacity uint64) {
	for _, sh := range e.shards {
		sh.mu.Lock()
		x := sh.stats
		sh.mu.Unlock()
		s.searchBatches += x.searchBatches
		s.searchJobs += x.searchJobs
		s.updateBatches += x.updateBatches
		s.updateRounds += x.updateRounds
		s.updateJobs += x.updateJobs
		s.overwrites += x.overwrites
		s.displaced += x.displaced
		s.maxSearchBatch = max(s.maxSearchBatch, x.maxSearchBatch)
		entries += sh.ix.Stats().Entries
		capacity += uint64(sh.ix.Capacity())
	}
	return s, entries, capacity
}

// latencySummary gives quantiles of the engine-side GET and SET latency
// (from a run's start in Do to its results: queueing for a batch, the
// index call, item copies) and of the index batch calls, in microseconds.
func (e *Engine) latencySummary() []kv.Stat {
	var out []kv.Stat
	for _, h := range []struct {
		name string
		h    *latencyHist
	}{{"get", &e.getLat}, {"set", &e.setLat}, {"index_batch", &e.idxLat}, {"index_update", &e.updLat}} {
		s := h.h.snapshot()
		out = append(out,
			kv.Stat{Name: h.name + "_latency_count", Value: u64(s.n)},
			kv.Stat{Name: h.name + "_latency_mean_us", Value: micros(s.mean())},
			kv.Stat{Name: h.name + "_latency_p50_us", Value: micros(s.quantile(0.50))},
			kv.Stat{Name: h.name + "_latency_p99_us", Value: micros(s.quantile(0.99))},
			kv.Stat{Name: h.name + "_latency_p999_us", Value: micros(s.quantile(0.999))},
			kv.Stat{Name: h.name + "_latency_max_us", Value: micros(time.Duration(s.maxNs))},
		)
	}
	return out
}

// latencyStats lists the GET latency histogram's non-empty buckets.
func (e *Engine) latencyStats() []kv.Stat {
	s := e.getLat.snapshot()
	var out []kv.Stat
	for b, c := range s.counts {
		if c > 0 {
			out = append(out, kv.Stat{Name: "get_us_le_" + micros(time.Duration(histUpper(b))), Value: u64(c)})
		}
	}
	return out
}

func (e *Engine) settingsStats() []kv.Stat {
	st := e.store.Stats()
	factor := e.opts.GrowthFactor
	if factor == 0 {
		factor = 1.25
	}
	chunk := e.opts.ChunkMin
	if chunk == 0 {
		chunk = 48
	}
	return append([]kv.Stat{
		{Name: "maxbytes", Value: i64(st.MemoryLimit)},
		{Name: "evictions", Value: "on"},
		{Name: "growth_factor", Value: strconv.FormatFloat(factor, 'f', 2, 64)},
		{Name: "chunk_size", Value: strconv.Itoa(chunk)},
		{Name: "item_size_max", Value: strconv.Itoa(st.ItemSizeMax)},
		{Name: "slab_page_size", Value: strconv.Itoa(st.PageSize)},
		{Name: "cas_enabled", Value: "yes"},
		{Name: "warpkv_engine", Value: e.backend},
		{Name: "warpkv_engine_reason", Value: e.reason},
		{Name: "warpkv_index_shards", Value: strconv.Itoa(len(e.shards))},
		{Name: "warpkv_batch_interval_us", Value: micros(e.interval)},
		{Name: "warpkv_max_batch", Value: strconv.Itoa(e.opts.MaxBatch)},
		{Name: "warpkv_batch_policy", Value: e.opts.Policy},
		{Name: "warpkv_gpu_search", Value: e.gpuSearch()},
		{Name: "warpkv_search_launch", Value: e.searchLaunch()},
	}, e.store.RebalanceSettings()...)
}

// hashStats describes the index as memcached describes its hash table:
// hash_power_level is log2 of the buckets over all shards, hash_bytes the
// table's size (64-byte buckets of 8 cells); the index never grows.
func (e *Engine) hashStats() []kv.Stat {
	var cells uint64
	for _, sh := range e.shards {
		cells += uint64(sh.ix.Capacity())
	}
	buckets := cells / 8
	return []kv.Stat{
		{Name: "hash_power_level", Value: strconv.Itoa(bits.Len64(buckets) - 1)},
		{Name: "hash_bytes", Value: u64(buckets * 64)},
		{Name: "hash_is_expanding", Value: "0"},
	}
}

func (e *Engine) itemStats() []kv.Stat { return e.store.ItemStats(e.clock()) }

func (e *Engine) slabStats() []kv.Stat { return e.store.SlabStats() }

// quiesce waits, up to two seconds, until no update is queued, the pending
// table is empty and the shards have unlinked every dropped location; the
// caller must not be writing. It reports whether the engine got quiet.
func (e *Engine) quiesce() bool {
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if e.inflightItems.Load() != 0 || e.pend.size() != 0 {
			continue
		}
		quiet := true
		for _, sh := range e.shards {
			sh.mu.Lock()
			quiet = quiet && sh.toUnlink.Load() == 0 && sh.upd.jobs() == 0 && !sh.applying && sh.awaitN.Load() == 0
			sh.mu.Unlock()
		}
		if quiet {
			return true
		}
	}
	return false
}

// itemCounts returns the linked items of the store and the entries of the
// index once the engine is quiet; then they are equal (nothing orphaned).
func (e *Engine) itemCounts() (linked, indexed int64) {
	e.quiesce()
	for _, sh := range e.shards {
		indexed += int64(sh.ix.Stats().Entries)
	}
	return e.store.Stats().Items, indexed
}

// searchLaunch says who launches search batches: "inline" when callers
// search the index themselves, else Options.SearchLaunch.
func (e *Engine) searchLaunch() string {
	if e.InlineSearch() {
		return "inline"
	}
	return e.opts.SearchLaunch
}

// gpuSearch says how search batches run: "persistent" or "staged" on the
// GPU engine, "cpu" on the CPU engine.
func (e *Engine) gpuSearch() string {
	switch {
	case e.backend != "gpu":
		return "cpu"
	case len(e.persist) > 0:
		return GPUSearchPersistent
	}
	return GPUSearchStaged
}
