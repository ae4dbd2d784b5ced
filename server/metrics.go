package server

import (
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/warpkv/warpkv/kv"
	"github.com/warpkv/warpkv/protocol"
)

// metricsCollector is a prometheus.Collector exporting a server's
// statistics under memcached_exporter's names, help strings and labels
// (memcached_*), so that dashboards and alerts written for memcached work
// unchanged, and warpkv's own figures under warpkv_*. It keeps no state:
// every scrape reads the counters that the stats command reads, so serving
// does no work for it. Cost of a scrape: the stats groups "", "items" and
// "slabs" (a pass over the slab classes, each shard's mutex once) and four
// latency histogram snapshots (8 KiB each).
type metricsCollector struct {
	eng      *Engine
	srv      *protocol.Server
	start    time.Time
	version  string // warpkv's
	maxConns int

	general []statMetric
	descs   collectorDescs
}

// statMetric maps one stats line to a metric: a line of the general
// group, or the part after "N:" of a per-class line of "stats items" or
// "stats slabs" (a metric labelled slab="N").
type statMetric struct {
	stat string
	desc *prometheus.Desc
	typ  prometheus.ValueType
}

// metricSink sends constant metrics to a Collect channel.
type metricSink chan<- prometheus.Metric

func (ch metricSink) gauge(desc *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, labels...)
}

func (ch metricSink) counter(desc *prometheus.Desc, v float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, v, labels...)
}

type collectorDescs struct {
	up, uptime, time, version, rusageUser, rusageSystem  *prometheus.Desc
	bytesRead, bytesWritten, currConns, maxConns         *prometheus.Desc
	connsTotal, connsRejected, commands                  *prometheus.Desc
	items, slabs                                         []statMetric
	engineInfo, shards, entries, capacity                *prometheus.Desc
	batches, batchJobs, batchSize, batchMax, batchTime   *prometheus.Desc
	pending, pendingWaits, drops, staleReads, reqLatency *prometheus.Desc
	protoBatches, protoOps                               *prometheus.Desc
}

// memcached_exporter's subsystem of per-class metrics.
const slabSubsystem = "slab"

func newDesc(namespace, subsystem, name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(namespace, subsystem, name), help, labels, nil)
}

// newMetricsCollector returns the collector of srv's and e's statistics;
// version is warpkv's version, maxConns the connection limit (0: the
// protocol's default).
func newMetricsCollector(e *Engine, srv *protocol.Server, start time.Time, version string, maxConns int) *metricsCollector {
	if maxConns <= 0 {
		maxConns = protocol.DefaultMaxConns
	}
	m := func(name, help string, labels ...string) *prometheus.Desc {
		return newDesc("memcached", "", name, help, labels...)
	}
	w := func(name, help string, labels ...string) *prometheus.Desc {
		return newDesc("warpkv", "", name, help, labels...)
	}
	s := func(name, help string) *prometheus.Desc {
		return newDesc("memcached", slabSubsystem, name, help, "slab")
	}
	c := &metricsCollector{eng: e, srv: srv, start: start, version: version, maxConns: maxConns}
	c.general = []statMetric{
		{"bytes", m("current_bytes", "Current number of bytes used to store items."), prometheus.GaugeValue},
		{"limit_maxbytes", m("limit_bytes", "Number of bytes this server is allowed to use for storage."), prometheus.GaugeValue},
		{"curr_items", m("current_items", "Current number of items stored by this instance."), prometheus.GaugeValue},
		{"total_items", m("items_total", "Total number of items stored during the life of this instance."), prometheus.CounterValue},
		{"evictions", m("items_evicted_total", "Total number of valid items removed from cache to free memory for new items."), prometheus.CounterValue},
		{"reclaimed", m("items_reclaimed_total", "Total number of times an entry was stored using memory from an expired entry."), prometheus.CounterValue},
		{"total_malloced", m("malloced_bytes", "Number of bytes of memory allocated to slab pages."), prometheus.GaugeValue},
	}
	d := &c.descs
	d.up = m("up", "Could the memcached server be reached.")
	d.uptime = m("uptime_seconds", "Number of seconds since the server started.")
	d.time = m("time_seconds", "current UNIX time according to the server.")
	d.version = m("version", "The version of this memcached server.", "version")
	d.rusageUser = m("process_user_cpu_seconds_total", "Accumulated user time for this process.")
	d.rusageSystem = m("process_system_cpu_seconds_total", "Accumulated system time for this process.")
	d.bytesRead = m("read_bytes_total", "Total number of bytes read by this server from network.")
	d.bytesWritten = m("written_bytes_total", "Total number of bytes sent by this server to network.")
	d.currConns = m("current_connections", "Current number of open connections.")
	d.maxConns = m("max_connections", "Maximum number of clients allowed.")
	d.connsTotal = m("connections_total", "Total number of connections opened since the server started running.")
	d.connsRejected = m("connections_rejected_total", "Total number of connections rejected due to hitting the memcached's -c limit in maxconns_fast mode.")
	d.commands = m("commands_total", "Total number of all requests broken down by command (get, set, etc.) and status.", "command", "status")
	d.items = []statMetric{
		{"number", s("current_items", "Number of items currently stored in this slab class."), prometheus.GaugeValue},
		{"age", s("items_age_seconds", "Number of seconds the oldest item has been in the slab class."), prometheus.GaugeValue},
		{"evicted", s("items_evicted_total", "Total number of times an item had to be evicted from the LRU before it expired."), prometheus.CounterValue},
		{"evicted_nonzero", s("items_evicted_nonzero_total", "Total number of times an item which had an explicit expire time set had to be evicted from the LRU before it expired."), prometheus.CounterValue},
		{"evicted_time", s("items_evicted_time_seconds", "Seconds since the last access for the most recent item evicted from this class."), prometheus.CounterValue},
		{"evicted_unfetched", s("items_evicted_unfetched_total", "Total nmber of items evicted and never fetched."), prometheus.CounterValue},
		{"expired_unfetched", s("items_expired_unfetched_total", "Total number of valid items evicted from the LRU which were never touched after being set."), prometheus.CounterValue},
		{"outofmemory", s("items_outofmemory_total", "Total number of items for this slab class that have triggered an out of memory error."), prometheus.CounterValue},
		{"reclaimed", s("items_reclaimed_total", "Total number of items reclaimed."), prometheus.CounterValue},
	}
	d.slabs = []statMetric{
		{"chunk_size", s("chunk_size_bytes", "Number of bytes allocated to each chunk within this slab class."), prometheus.GaugeValue},
		{"chunks_per_page", s("chunks_per_page", "Number of chunks within a single page for this slab class."), prometheus.GaugeValue},
		{"total_pages", s("current_pages", "Number of pages allocated to this slab class."), prometheus.GaugeValue},
		{"total_chunks", s("current_chunks", "Number of chunks allocated to this slab class."), prometheus.GaugeValue},
		{"used_chunks", s("chunks_used", "Number of chunks allocated to an item."), prometheus.GaugeValue},
		{"free_chunks", s("chunks_free", "Number of chunks not yet allocated items."), prometheus.GaugeValue},
		{"free_chunks_end", s("chunks_free_end", "Number of free chunks at the end of the last allocated page."), prometheus.GaugeValue},
		{"mem_requested", s("mem_requested_bytes", "Number of bytes of memory actual items take up within a slab."), prometheus.GaugeValue},
	}
	d.engineInfo = w("engine_info", "The index engine serving (cpu or gpu), how GPU shards search (persistent, staged; cpu on the CPU engine) and warpkv's version; the value is 1.", "engine", "gpu_search", "version")
	d.shards = w("index_shards", "Number of index shards (one per GPU on the GPU engine).")
	d.entries = w("index_entries", "Entries in the hash index over all shards.")
	d.capacity = w("index_capacity", "Entries the hash index can hold over all shards.")
	d.batches = w("index_batches_total", "Index batches launched, by operation: search batches, update batches.", "op")
	d.batchJobs = w("index_batch_jobs_total", "Jobs (keys) in the index batches launched, by operation; divided by index_batches_total, the mean batch size.", "op")
	d.batchSize = w("index_search_batch_size", "Jobs per index search batch.")
	d.batchMax = w("index_search_batch_size_max", "Largest index search batch of any shard since the start.")
	d.batchTime = w("index_batch_duration_seconds", "Duration of an index batch call (on the GPU engine, the GPU's time for the batch with its transfers), by operation: a search batch, an update round.", "op")
	d.pending = w("pending_entries", "Writes acknowledged and not yet in the index (the pending table).")
	d.pendingWaits = w("pending_full_waits_total", "Writes that waited for room in the pending table.")
	d.drops = w("index_drops_total", "Locations the index dropped (overwritten or displaced).")
	d.staleReads = w("stale_reads_total", "Reads located again because a write replaced their item.")
	d.reqLatency = w("request_duration_seconds", "Engine-side latency of a run of gets or sets: queueing for a batch, the index call and the item copies.", "command")
	d.protoBatches = w("batches_total", "Cache batches run by connections (one per pipeline round).")
	d.protoOps = w("batched_ops_total", "Operations in the cache batches run by connections.")
	return c
}

// Describe sends every metric's description. It implements
// prometheus.Collector.
func (c *metricsCollector) Describe(ch chan<- *prometheus.Desc) {
	d := &c.descs
	for _, x := range []*prometheus.Desc{d.up, d.uptime, d.time, d.version, d.rusageUser, d.rusageSystem,
		d.bytesRead, d.bytesWritten, d.currConns, d.maxConns, d.connsTotal, d.connsRejected, d.commands,
		d.engineInfo, d.shards, d.entries, d.capacity, d.batches, d.batchJobs, d.batchSize, d.batchMax,
		d.batchTime, d.pending, d.pendingWaits, d.drops, d.staleReads, d.reqLatency, d.protoBatches, d.protoOps} {
		ch <- x
	}
	for _, g := range c.general {
		ch <- g.desc
	}
	for _, s := range d.items {
		ch <- s.desc
	}
	for _, s := range d.slabs {
		ch <- s.desc
	}
}

// Collect reads the statistics and sends them as metrics. It implements
// prometheus.Collector.
func (c *metricsCollector) Collect(ch chan<- prometheus.Metric) {
	d := &c.descs
	out := metricSink(ch)
	gauge, counter := out.gauge, out.counter
	conns := c.srv.Stats()
	general := statMap(c.eng.memcachedStats())

	gauge(d.up, 1)
	counter(d.uptime, float64(time.Since(c.start)/time.Second))
	gauge(d.time, float64(time.Now().Unix()))
	gauge(d.version, 1, protocol.DefaultVersion)
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
		counter(d.rusageUser, tv(ru.Utime))
		counter(d.rusageSystem, tv(ru.Stime))
	}
	counter(d.bytesRead, float64(conns.BytesRead))
	counter(d.bytesWritten, float64(conns.BytesWritten))
	gauge(d.currConns, float64(conns.MemcachedCurrConns))
	gauge(d.maxConns, float64(c.maxConns))
	counter(d.connsTotal, float64(conns.MemcachedTotalConns))
	counter(d.connsRejected, float64(conns.RejectedConns))
	for _, g := range c.general {
		if v, ok := general[g.stat]; ok {
			ch <- prometheus.MustNewConstMetric(g.desc, g.typ, v)
		}
	}
	c.collectCommands(ch, general)
	c.collectClasses(ch, d.items, c.eng.itemStats(), "items:")
	c.collectClasses(ch, d.slabs, c.eng.slabStats(), "")
	c.collectIndex(ch)
	counter(d.protoBatches, float64(conns.Batches))
	counter(d.protoOps, float64(conns.BatchedOps))
}

// collectCommands sends memcached_commands_total as memcached_exporter
// derives it from the general group: hits and misses of get, delete, incr,
// decr, cas and touch, cas badval, flush hits, and set hits (cmd_set less
// the cas commands, which memcached and warpkv count in cmd_set too).
func (c *metricsCollector) collectCommands(ch chan<- prometheus.Metric, general map[string]float64) {
	send := func(stat, command, status string) {
		if v, ok := general[stat]; ok {
			ch <- prometheus.MustNewConstMetric(c.descs.commands, prometheus.CounterValue, v, command, status)
		}
	}
	for _, op := range []string{"get", "delete", "incr", "decr", "cas", "touch"} {
		send(op+"_hits", op, "hit")
		send(op+"_misses", op, "miss")
	}
	send("cas_badval", "cas", "badval")
	send("cmd_flush", "flush", "hit")
	if set, ok := general["cmd_set"]; ok {
		cas := general["cas_hits"] + general["cas_misses"] + general["cas_badval"]
		ch <- prometheus.MustNewConstMetric(c.descs.commands, prometheus.CounterValue, set-cas, "set", "hit")
	}
}

// collectClasses sends the per-class lines of a stats group ("PREFIX N:stat
// value") that metrics name, labelled slab="N".
func (c *metricsCollector) collectClasses(ch chan<- prometheus.Metric, metrics []statMetric, stats []kv.Stat, prefix string) {
	byStat := make(map[string]*statMetric, len(metrics))
	for i := range metrics {
		byStat[metrics[i].stat] = &metrics[i]
	}
	for _, st := range stats {
		rest, ok := strings.CutPrefix(st.Name, prefix)
		if !ok {
			continue
		}
		class, stat, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		m := byStat[stat]
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(st.Value, 64)
		if err != nil {
			continue
		}
		ch <- prometheus.MustNewConstMetric(m.desc, m.typ, v, class)
	}
}

// collectIndex sends warpkv's own metrics: the engine, the index batches
// and the latency histograms.
func (c *metricsCollector) collectIndex(ch chan<- prometheus.Metric) {
	d := &c.descs
	e := c.eng
	out := metricSink(ch)
	gauge, counter := out.gauge, out.counter
	gauge(d.engineInfo, 1, e.backend, e.gpuSearch(), c.version)
	s, entries, capacity := e.indexTotals()
	gauge(d.shards, float64(len(e.shards)))
	gauge(d.entries, float64(entries))
	gauge(d.capacity, float64(capacity))
	counter(d.batches, float64(s.searchBatches), "search")
	counter(d.batches, float64(s.updateBatches), "update")
	counter(d.batchJobs, float64(s.searchJobs), "search")
	counter(d.batchJobs, float64(s.updateJobs), "update")
	gauge(d.batchMax, float64(s.maxSearchBatch))
	gauge(d.pending, float64(e.pend.size()))
	counter(d.pendingWaits, float64(e.counts.pendingFull.Load()))
	counter(d.drops, float64(e.counts.indexDrops.Load()))
	counter(d.staleReads, float64(e.counts.staleReads.Load()))
	ch <- e.idxSize.snapshot().promHistogram(d.batchSize, batchSizeBounds, 1)
	ch <- e.idxLat.snapshot().promHistogram(d.batchTime, latencyBounds, 1e-9, "search")
	ch <- e.updLat.snapshot().promHistogram(d.batchTime, latencyBounds, 1e-9, "update")
	ch <- e.getLat.snapshot().promHistogram(d.reqLatency, latencyBounds, 1e-9, "get")
	ch <- e.setLat.snapshot().promHistogram(d.reqLatency, latencyBounds, 1e-9, "set")
}

// latencyBounds are the upper bounds, in seconds, of the latency
// histograms' Prometheus buckets: 1 µs to 10 s, 1-2.5-5 per decade.
var latencyBounds = []float64{
	1e-6, 2.5e-6, 5e-6, 10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 500e-3, 1, 2.5, 5, 10,
}

// batchSizeBounds are the upper bounds of the batch size histogram's
// buckets: powers of two to 65536 jobs.
var batchSizeBounds = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}

// promHistogram converts the snapshot to a Prometheus histogram with upper
// bounds bounds (in units of scale times the recorded values: 1e-9 turns
// nanoseconds into seconds). A log-linear bucket counts under the first
// bound at or above its largest value, which is within 6% above the values
// it holds: a value just under a bound may count under the next one.
func (s *histSnapshot) promHistogram(desc *prometheus.Desc, bounds []float64, scale float64, labels ...string) prometheus.Metric {
	cum := make(map[float64]uint64, len(bounds))
	var total uint64
	i := 0
	for b, n := range s.counts {
		if n == 0 {
			continue
		}
		upper := float64(histUpper(b)) * scale
		for i < len(bounds) && bounds[i] < upper {
			cum[bounds[i]] = total
			i++
		}
		total += n
	}
	for ; i < len(bounds); i++ {
		cum[bounds[i]] = total
	}
	return prometheus.MustNewConstHistogram(desc, total, float64(s.sumNs)*scale, cum, labels...)
}

// statMap parses the numeric lines of a stats group.
func statMap(stats []kv.Stat) map[string]float64 {
	out := make(map[string]float64, len(stats))
	for _, st := range stats {
		if v, err := strconv.ParseFloat(st.Value, 64); err == nil {
			out[st.Name] = v
		}
	}
	return out
}
