package server

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/warpkv/warpkv/kv"
	"github.com/warpkv/warpkv/protocol"
)

// TestPromHistogram checks the conversion of a latency histogram: the
// buckets are cumulative, end at the count, and a value counts under the
// first bound at or above its log-linear bucket's upper end.
func TestPromHistogram(t *testing.T) {
	var h latencyHist
	for _, ns := range []uint64{500, 900, 1000, 3000, 40_000, 2_000_000} {
		h.add(time.Duration(ns))
	}
	desc := prometheus.NewDesc("x_seconds", "x", nil, nil)
	m := h.snapshot().promHistogram(desc, []float64{1e-6, 5e-6, 50e-6, 1e-3}, 1e-9)
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	hist := d.GetHistogram()
	if hist.GetSampleCount() != 6 {
		t.Errorf("count %d, want 6", hist.GetSampleCount())
	}
	// 1000 ns falls in a bucket whose upper end is above 1 µs (1023 ns):
	// it counts under 5 µs with 3000 ns.
	want := map[float64]uint64{1e-6: 2, 5e-6: 4, 50e-6: 5, 1e-3: 5}
	for _, b := range hist.GetBucket() {
		if b.GetCumulativeCount() != want[b.GetUpperBound()] {
			t.Errorf("le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want[b.GetUpperBound()])
		}
	}
	if s := hist.GetSampleSum(); s < 2.04e-3 || s > 2.05e-3 {
		t.Errorf("sum %v, want 2.0454e-3", s)
	}
}

// TestMetricsCollectorLint registers the collector on every engine, runs a
// few operations and checks its output with client_golang's linter and
// registry (consistent descriptions, no duplicate series).
func TestMetricsCollectorLint(t *testing.T) {
	for _, ec := range testEngines {
		t.Run(ec.name, func(t *testing.T) {
			e := newTestEngine(t, ec, Options{MemoryLimit: 8 << 20})
			srv := protocol.NewServer(e, protocol.Config{})
			for i := range 100 {
				b := &kv.Batch{Ops: []kv.Op{{Kind: kv.Set, Key: []byte(fmt.Sprint("k", i)), Value: []byte("v")}}}
				if err := e.Do(b); err != nil {
					t.Fatal(err)
				}
			}
			c := newMetricsCollector(e, srv, e.started, "test", 0)
			reg := prometheus.NewPedanticRegistry()
			if err := reg.Register(c); err != nil {
				t.Fatal(err)
			}
			fams, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			if len(fams) < 30 {
				t.Errorf("%d metric families", len(fams))
			}
			problems, err := testutil.CollectAndLint(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				// memcached_exporter exports these two counters without
				// _total; dashboards use the names as they are.
				if p.Metric != "memcached_uptime_seconds" && p.Metric != "memcached_slab_items_evicted_time_seconds" {
					t.Errorf("lint: %s: %s", p.Metric, p.Text)
				}
			}
			if n := testutil.CollectAndCount(c, "memcached_commands_total"); n != 15 {
				t.Errorf("memcached_commands_total: %d series, want 15", n)
			}
		})
	}
}

// BenchmarkMetricsCollect measures one scrape's collection by the
// collector alone (no HTTP, no encoding), on the CPU engine.
func BenchmarkMetricsCollect(b *testing.B) {
	e := newTestEngine(b, testEngines[0], Options{MemoryLimit: 64 << 20})
	srv := protocol.NewServer(e, protocol.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(newMetricsCollector(e, srv, e.started, "test", 0))
	for b.Loop() {
		if _, err := reg.Gather(); err != nil {
			b.Fatal(err)
		}
	}
}
