package main

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/warpkv/warpkv/internal/difftest"
)

// scrape fetches url and parses it as the Prometheus text format.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// sample returns the value of family name's sample whose labels include
// labels (name=value pairs), the count for a histogram; ok is false when
// there is none.
func sample(fams map[string]*dto.MetricFamily, name string, labels ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		for i := 0; i+1 < len(labels); i += 2 {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// metricsURL returns the /metrics address a server logged.
func metricsURL(t *testing.T, p *difftest.Process) string {
	t.Helper()
	m := regexp.MustCompile(`serving metrics"? addr=(\S+)`).FindStringSubmatch(p.Log())
	if m == nil {
		t.Fatalf("no 'serving metrics' line:\n%s", p.Log())
	}
	return m[1]
}

// TestServeMetrics starts warpkv serve --metrics-addr, runs sets, gets and
// the other commands memcached_exporter counts, scrapes /metrics, parses it
// with the Prometheus text parser and checks the memcached_* and warpkv_*
// samples against the stats groups the same server reports.
func TestServeMetrics(t *testing.T) {
	p := difftest.Serve(t, "--metrics-addr", "127.0.0.1:0", "-m", "16")
	url := metricsURL(t, p)
	c := difftest.NewTextClient(t, p.Addr)
	for i := range 40 {
		if got := c.Set(fmt.Sprintf("key%d", i), strings.Repeat("v", 10+i*40)); got != "STORED" {
			t.Fatalf("set: %q", got)
		}
	}
	for i := range 50 { // 40 hits, 10 misses
		c.Get(fmt.Sprintf("key%d", i))
	}
	for _, req := range []string{"delete key1\r\n", "delete nokey\r\n", "set n 0 0 1\r\n5\r\n", "incr n 2\r\n",
		"decr nokey 1\r\n", "touch key2 100\r\n", "touch nokey 100\r\n", "cas key3 0 0 1 1\r\nx\r\n"} {
		c.Do(req)
	}
	// Wait until the deleted item has left the counts (its index update
	// round runs within a millisecond or so), so that nothing moves
	// between the scrape and the stats below.
	var general map[string]string
	quiet := func(g map[string]string) string {
		return g["pending_entries"] + " " + g["curr_items"] + " " + g["index_update_batches"] + " " + g["index_search_batches"]
	}
	for deadline, last := time.Now().Add(3*time.Second), ""; ; time.Sleep(20 * time.Millisecond) {
		general = c.Stats("")
		q := quiet(general)
		if general["pending_entries"] == "0" && general["curr_items"] == "40" && q == last || time.Now().After(deadline) {
			break
		}
		last = q
	}
	fams := scrape(t, url)
	general = c.Stats("")
	items, slabs, settings := c.Stats("items"), c.Stats("slabs"), c.Stats("settings")
	num := func(group map[string]string, name string) float64 {
		v, err := strconv.ParseFloat(group[name], 64)
		if err != nil {
			t.Fatalf("stats %s = %q: %v", name, group[name], err)
		}
		return v
	}
	cmdSet := num(general, "cmd_set") - num(general, "cas_hits") - num(general, "cas_misses") - num(general, "cas_badval")
	for _, tc := range []struct {
		metric string
		labels []string
		want   float64
	}{
		{"memcached_up", nil, 1},
		{"memcached_commands_total", []string{"command", "get", "status", "hit"}, num(general, "get_hits")},
		{"memcached_commands_total", []string{"command", "get", "status", "miss"}, num(general, "get_misses")},
		{"memcached_commands_total", []string{"command", "set", "status", "hit"}, cmdSet},
		{"memcached_commands_total", []string{"command", "delete", "status", "hit"}, num(general, "delete_hits")},
		{"memcached_commands_total", []string{"command", "delete", "status", "miss"}, num(general, "delete_misses")},
		{"memcached_commands_total", []string{"command", "incr", "status", "hit"}, num(general, "incr_hits")},
		{"memcached_commands_total", []string{"command", "decr", "status", "miss"}, num(general, "decr_misses")},
		{"memcached_commands_total", []string{"command", "touch", "status", "hit"}, num(general, "touch_hits")},
		{"memcached_commands_total", []string{"command", "touch", "status", "miss"}, num(general, "touch_misses")},
		{"memcached_commands_total", []string{"command", "cas", "status", "badval"}, num(general, "cas_badval")},
		{"memcached_commands_total", []string{"command", "flush", "status", "hit"}, num(general, "cmd_flush")},
		{"memcached_current_items", nil, num(general, "curr_items")},
		{"memcached_items_total", nil, num(general, "total_items")},
		{"memcached_current_bytes", nil, num(general, "bytes")},
		{"memcached_limit_bytes", nil, num(general, "limit_maxbytes")},
		{"memcached_current_connections", nil, num(general, "curr_connections")},
		{"memcached_connections_total", nil, num(general, "total_connections")},
		{"memcached_items_evicted_total", nil, num(general, "evictions")},
		{"memcached_malloced_bytes", nil, num(general, "total_malloced")},
		{"memcached_max_connections", nil, num(settings, "maxconns")},
		{"memcached_slab_current_items", []string{"slab", "1"}, num(items, "items:1:number")},
		{"memcached_slab_chunk_size_bytes", []string{"slab", "1"}, num(slabs, "1:chunk_size")},
		{"memcached_slab_chunks_used", []string{"slab", "1"}, num(slabs, "1:used_chunks")},
		{"memcached_slab_current_pages", []string{"slab", "1"}, num(slabs, "1:total_pages")},
		{"warpkv_engine_info", []string{"engine", settings["warpkv_engine"], "gpu_search", settings["warpkv_gpu_search"]}, 1},
		{"warpkv_index_shards", nil, num(general, "index_shards")},
		{"warpkv_index_entries", nil, num(general, "index_entries")},
		{"warpkv_index_batches_total", []string{"op", "search"}, num(general, "index_search_batches")},
		{"warpkv_index_batch_jobs_total", []string{"op", "search"}, num(general, "index_search_jobs")},
		{"warpkv_index_batches_total", []string{"op", "update"}, num(general, "index_update_batches")},
		{"warpkv_index_search_batch_size", nil, num(general, "index_search_batches")},
		{"warpkv_index_batch_duration_seconds", []string{"op", "search"}, num(general, "index_batch_latency_count")},
		{"warpkv_index_batch_duration_seconds", []string{"op", "update"}, num(general, "index_update_latency_count")},
		{"warpkv_pending_entries", nil, num(general, "pending_entries")},
		{"warpkv_request_duration_seconds", []string{"command", "get"}, num(general, "get_latency_count")},
		{"warpkv_request_duration_seconds", []string{"command", "set"}, num(general, "set_latency_count")},
	} {
		got, ok := sample(fams, tc.metric, tc.labels...)
		if !ok {
			t.Errorf("%s%v: no sample", tc.metric, tc.labels)
			continue
		}
		if got != tc.want {
			t.Errorf("%s%v = %v, stats say %v", tc.metric, tc.labels, got, tc.want)
		}
	}
	// The scrape came before the stats command, whose request and reply
	// the byte counters include.
	for metric, stat := range map[string]string{"memcached_read_bytes_total": "bytes_read", "memcached_written_bytes_total": "bytes_written"} {
		got, ok := sample(fams, metric)
		if !ok || got <= 0 || got > num(general, stat) {
			t.Errorf("%s = %v (present %v), stats %s = %s", metric, got, ok, stat, general[stat])
		}
	}
	if got, ok := sample(fams, "memcached_uptime_seconds"); !ok || got > num(general, "uptime") {
		t.Errorf("memcached_uptime_seconds = %v (present %v), stats uptime %s", got, ok, general["uptime"])
	}
	for name, typ := range map[string]dto.MetricType{"memcached_commands_total": dto.MetricType_COUNTER,
		"memcached_current_items": dto.MetricType_GAUGE, "warpkv_request_duration_seconds": dto.MetricType_HISTOGRAM} {
		if f := fams[name]; f == nil || f.GetType() != typ {
			t.Errorf("%s: type %v, want %v", name, f.GetType(), typ)
		}
	}
	if h := fams["memcached_commands_total"].GetHelp(); h != "Total number of all requests broken down by command (get, set, etc.) and status." {
		t.Errorf("memcached_commands_total help %q, not memcached_exporter's", h)
	}
	// Histogram buckets are cumulative and end at the sample count.
	for _, m := range fams["warpkv_request_duration_seconds"].GetMetric() {
		h := m.GetHistogram()
		prev := uint64(0)
		for _, b := range h.GetBucket() {
			if b.GetCumulativeCount() < prev || b.GetCumulativeCount() > h.GetSampleCount() {
				t.Errorf("warpkv_request_duration_seconds%v: bucket le=%v count %d after %d, of %d", m.GetLabel(), b.GetUpperBound(), b.GetCumulativeCount(), prev, h.GetSampleCount())
			}
			prev = b.GetCumulativeCount()
		}
		if h.GetSampleCount() > 0 && h.GetSampleSum() <= 0 {
			t.Errorf("warpkv_request_duration_seconds%v: sum %v of %d samples", m.GetLabel(), h.GetSampleSum(), h.GetSampleCount())
		}
	}
}

// TestServeMetricsOff checks that serve exports nothing without
// --metrics-addr and refuses an address it cannot listen on.
func TestServeMetricsOff(t *testing.T) {
	p := difftest.Serve(t)
	if strings.Contains(p.Log(), "serving metrics") {
		t.Errorf("metrics served without --metrics-addr:\n%s", p.Log())
	}
	code, _, stderr := runCmd("serve", "-p", "0", "--device", "cpu", "--metrics-addr", "256.0.0.1:1")
	if code == 0 || !strings.Contains(stderr, "metrics: listen") {
		t.Errorf("serve --metrics-addr 256.0.0.1:1: exit %d, stderr %q", code, stderr)
	}
}
