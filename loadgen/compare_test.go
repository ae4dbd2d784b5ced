package loadgen

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/difftest"
)

func TestWorkloads(t *testing.T) {
	ws, err := Workloads([]string{"a", "d"}, []float64{0.95, 1}, []bool{false, true}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range ws {
		names = append(names, w.String())
	}
	want := "a 95:5 uniform,a 95:5 zipf,a 100:0 uniform,a 100:0 zipf,d 95:5 uniform,d 95:5 zipf,d 100:0 uniform,d 100:0 zipf"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("workloads %s, want %s", got, want)
	}
	if ws[4].KeySize != 128 || ws[4].ValueSize != 1024 || ws[4].Keys != 1000 || ws[4].GetRatio != 0.95 || ws[4].Zipf {
		t.Errorf("workload d 95:5 uniform = %+v", ws[4])
	}
	if _, err := Workloads([]string{"e"}, []float64{1}, []bool{false}, 10); err == nil {
		t.Error("workload size e accepted")
	}
}

func TestWriteTable(t *testing.T) {
	rows := []Row{
		{Workload: "a 95:5 zipf", Target: "memcached", Ratio: 1, Result: Result{OpsPerSec: 123456, Gets: 10, Hits: 10, HitRatio: 1,
			Latency: Latency{P50: 52 * time.Microsecond, P95: 140 * time.Microsecond, P99: 2500 * time.Microsecond, P999: 3 * time.Millisecond}}},
		{Workload: "a 95:5 zipf", Target: "warpkv", Ratio: 2.5, Result: Result{OpsPerSec: 308640, Gets: 10, Hits: 9, HitRatio: 0.9, Errors: 3,
			Latency: Latency{P50: 8 * time.Microsecond, P95: 9 * time.Microsecond, P99: 10 * time.Microsecond, P999: 11 * time.Microsecond}}},
		{Workload: "a 95:5 zipf", Target: "down", Err: "loadgen: dial: refused"},
	}
	var b strings.Builder
	if err := WriteTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	want := `workload     target      ops/s   hit%  p50µs  p95µs  p99µs  p99.9µs  errors  ratio
a 95:5 zipf  memcached    123k  100.0   52.0    140   2500     3000       0  1.00x
a 95:5 zipf  warpkv       309k   90.0   8.00   9.00   10.0     11.0       3  2.50x
a 95:5 zipf  down       failed
failed: a 95:5 zipf on down: loadgen: dial: refused
`
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestCompare(t *testing.T) {
	targets := []Target{{Name: "memcached", Addr: difftest.Memcached(t, "-t", "2")}, {Name: "protocol+model", Addr: serveModel(t)}}
	ws, err := Workloads([]string{"a", "c"}, []float64{0.95}, []bool{true}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := Compare(context.Background(), targets, ws, Config{Conns: 2, Pipeline: 4, Duration: 200 * time.Millisecond, Warmup: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	for i, r := range rows {
		if r.Err != "" || r.Result.OpsPerSec <= 0 || r.Target != targets[i%2].Name || r.Workload != ws[i/2].Name {
			t.Errorf("row %d: %+v", i, r)
		}
		if i%2 == 0 && r.Ratio != 1 || i%2 == 1 && r.Ratio <= 0 {
			t.Errorf("row %d: ratio %v", i, r.Ratio)
		}
	}
}
