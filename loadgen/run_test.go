package loadgen

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/difftest"
	"github.com/warpkv/warpkv/kv"
	"github.com/warpkv/warpkv/protocol"
)

// serveModel serves a kv.Model through package protocol for the test.
func serveModel(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := protocol.NewServer(kv.NewModel(nil), protocol.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		if err := <-done; err != nil && !errors.Is(err, net.ErrClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func TestRun(t *testing.T) {
	servers := map[string]string{"memcached": difftest.Memcached(t, "-t", "2"), "protocol+model": serveModel(t)}
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"text 95:5 uniform", Config{Conns: 4, Pipeline: 8, Workload: Workload{GetRatio: 0.95, KeySize: 8, ValueSize: 8, Keys: 2000}}},
		{"text 100:0 zipf multiget", Config{Conns: 3, Pipeline: 4, MultiGet: 10, Workload: Workload{GetRatio: 1, Zipf: true, KeySize: 32, ValueSize: 512, Keys: 2000}}},
		{"binary 95:5 zipf multiget", Config{Conns: 2, Pipeline: 16, MultiGet: 4, Protocol: Binary, Workload: Workload{GetRatio: 0.95, Zipf: true, KeySize: 16, ValueSize: 64, Keys: 2000}}},
		{"binary 50:50", Config{Conns: 2, Pipeline: 1, Protocol: Binary, Workload: Workload{GetRatio: 0.5, KeySize: 128, ValueSize: 1024, Keys: 500}}},
		{"meta 95:5 uniform", Config{Conns: 3, Pipeline: 8, Protocol: Meta, Workload: Workload{GetRatio: 0.95, KeySize: 8, ValueSize: 8, Keys: 2000}}},
		{"meta 90:10 zipf multiget", Config{Conns: 2, Pipeline: 4, MultiGet: 10, Protocol: Meta, Workload: Workload{GetRatio: 0.9, Zipf: true, KeySize: 16, ValueSize: 64, Keys: 2000}}},
	} {
		for name, addr := range servers {
			for _, driver := range drivers() {
				t.Run(tc.name+" on "+name+" by "+string(driver), func(t *testing.T) {
					cfg := tc.cfg
					cfg.Addr, cfg.Duration, cfg.Warmup, cfg.Driver = addr, 300*time.Millisecond, 50*time.Millisecond, driver
					res, err := Run(context.Background(), cfg)
					if err != nil {
						t.Fatal(err)
					}
					checkResult(t, cfg, res)
				})
			}
		}
	}
}

// drivers are the drivers of unpaced runs this platform has.
func drivers() []Driver {
	if loopsSupported {
		return []Driver{Goroutines, Loops}
	}
	return []Driver{Goroutines}
}

// TestRunRepliesInPieces runs every protocol's loads through a proxy that
// passes the server's replies on a few bytes at a time, so that the
// drivers parse replies cut anywhere, and checks the results.
func TestRunRepliesInPieces(t *testing.T) {
	addr := dribbleProxy(t, difftest.Memcached(t, "-t", "2"))
	for _, proto := range []Protocol{Text, Binary, Meta} {
		for _, driver := range drivers() {
			t.Run(string(proto)+" by "+string(driver), func(t *testing.T) {
				cfg := Config{Addr: addr, Conns: 3, Pipeline: 2, MultiGet: 3, Protocol: proto, Driver: driver,
					Duration: 300 * time.Millisecond, Warmup: 50 * time.Millisecond,
					Workload: Workload{GetRatio: 0.9, KeySize: 16, ValueSize: 100, Keys: 300}}
				res, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				checkResult(t, cfg, res)
			})
		}
	}
}

// dribbleProxy listens on a port of its own and relays each connection to
// target, passing the requests on whole and the replies in writes of 1 to
// 7 bytes, each sent on its own (TCP_NODELAY).
func dribbleProxy(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() {
				io.Copy(s, c)
				s.Close()
			}()
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for k := n; ; {
					m, err := s.Read(buf)
					for p := buf[:m]; len(p) > 0; k++ {
						step := min(len(p), 1+k%7)
						if _, err := c.Write(p[:step]); err != nil {
							return
						}
						p = p[step:]
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

// checkResult checks a result for consistency with its config.
func checkResult(t *testing.T, cfg Config, res Result) {
	t.Helper()
	w := cfg.Workload
	if res.Preload == nil || res.Preload.HitRatio != 1 || res.Preload.Errors != 0 || res.Preload.Checked != w.Keys {
		t.Errorf("preload %+v, want all %d keys stored and found", res.Preload, w.Keys)
	}
	if res.Ops < 100 || res.OpsPerSec <= 0 || res.Errors != 0 {
		t.Fatalf("ops %d, %.0f ops/s, %d errors", res.Ops, res.OpsPerSec, res.Errors)
	}
	if res.Gets+res.Sets != res.Ops || res.Hits+res.Misses != res.Gets {
		t.Errorf("counts do not add up: %+v", res)
	}
	if res.HitRatio != 1 { // every key was preloaded and nothing evicts
		t.Errorf("hit ratio %v, want 1", res.HitRatio)
	}
	if got := float64(res.Gets) / float64(res.Ops); got < w.GetRatio-0.05 || got > w.GetRatio+0.05 {
		t.Errorf("gets are %.3f of the operations, want %.2f", got, w.GetRatio)
	}
	if mg := max(cfg.MultiGet, 1); w.GetRatio == 1 && res.Ops != res.Requests*uint64(mg) {
		t.Errorf("%d ops in %d requests, want %d keys per request", res.Ops, res.Requests, mg)
	}
	l := res.Latency
	if !(0 < l.P50 && l.P50 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.P999 && l.P999 <= l.Max) {
		t.Errorf("latencies out of order: %+v", l)
	}
}

// TestRunPacedAndMeasured runs a load against memcached with its CPU time
// and statistics measured, then a paced run: the paced run does the rate
// it was asked for (within 15%), the server's CPU time is positive, and
// the statistics' cmd_get change counts the gets.
func TestRunPacedAndMeasured(t *testing.T) {
	addr, pid := startMemcachedProcess(t)
	cfg := Config{Addr: addr, Conns: 8, Pipeline: 4, Duration: 400 * time.Millisecond, Warmup: 100 * time.Millisecond,
		RateFraction: 0.25, ServerPID: pid, ServerStats: "-",
		Workload: Workload{GetRatio: 0.9, KeySize: 8, ValueSize: 8, Keys: 1000}}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, cfg, res)
	if res.ServerCPU <= 0 || res.ServerCPUPerMop <= 0 {
		t.Errorf("server cpu %v, %v per million ops: want both positive", res.ServerCPU, res.ServerCPUPerMop)
	}
	// The window's edges cut differently through requests in flight: the
	// server counts a get when it runs it, loadgen when its reply arrives.
	if got := res.ServerStats["cmd_get"]; got < 0.95*float64(res.Gets) || got > 1.05*float64(res.Gets) {
		t.Errorf("cmd_get grew by %v during the window, not within 5%% of the %d gets counted", got, res.Gets)
	}
	p := res.Paced
	if p == nil {
		t.Fatal("no paced result")
	}
	// Within 40%: a loaded test machine delays a paced run, which then
	// drains its backlog in the window.
	want := 0.25 * res.OpsPerSec
	if p.Rate != want || p.OpsPerSec < 0.6*want || p.OpsPerSec > 1.4*want {
		t.Errorf("paced at %.0f ops/s (asked %.0f): did %.0f, want within 40%% of %.0f", p.Rate, p.Rate, p.OpsPerSec, want)
	}
	t.Logf("peak %.0f ops/s p99 %v; paced %.0f ops/s p99 %v; server cpu %v per Mop", res.OpsPerSec, res.Latency.P99,
		p.OpsPerSec, p.Latency.P99, res.ServerCPUPerMop)
}

// TestRunConnectionCounts drives one and a thousand connections.
func TestRunConnectionCounts(t *testing.T) {
	addr, _ := startMemcachedProcess(t)
	for _, conns := range []int{1, 1000} {
		t.Run(strconv.Itoa(conns), func(t *testing.T) {
			// A thousand connections' first rounds take a loaded 2-core
			// machine a while (once 0 ops in a 300 ms window): a longer
			// window for them.
			window := time.Duration(conns/1000+1) * 300 * time.Millisecond
			cfg := Config{Addr: addr, Conns: conns, Pipeline: 2, MultiGet: 3, Duration: window, Warmup: window / 3,
				Workload: Workload{GetRatio: 0.95, KeySize: 8, ValueSize: 8, Keys: 5000}}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkResult(t, cfg, res)
			if res.Conns != conns {
				t.Errorf("result says %d connections, want %d", res.Conns, conns)
			}
		})
	}
}

// TestRunPacedOverload paces far above what the server can do: the
// connections' backlogs fill up, and the run must still end on time, with
// each driver.
func TestRunPacedOverload(t *testing.T) {
	addr, _ := startMemcachedProcess(t)
	for _, driver := range drivers() {
		t.Run(string(driver), func(t *testing.T) {
			cfg := Config{Addr: addr, Conns: 2, Pipeline: 1, Rate: 50e6, Duration: 300 * time.Millisecond, Warmup: 100 * time.Millisecond,
				Driver: driver, Workload: Workload{GetRatio: 1, KeySize: 8, ValueSize: 8, Keys: 100}}
			done := make(chan struct{})
			var res Result
			var err error
			go func() {
				res, err = Run(context.Background(), cfg)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("an overloaded paced run did not end")
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.OpsPerSec <= 0 || res.OpsPerSec >= cfg.Rate/2 || res.Latency.P99 < 10*time.Millisecond {
				t.Errorf("%.0f ops/s, p99 %v: want far below the asked %.0f and the backlog charged as latency", res.OpsPerSec, res.Latency.P99, cfg.Rate)
			}
		})
	}
}

func TestProcessCPU(t *testing.T) {
	burn := time.Now()
	for time.Since(burn) < 50*time.Millisecond {
	}
	d, err := ProcessCPU(os.Getpid())
	if err != nil || d < 20*time.Millisecond {
		t.Errorf("ProcessCPU(self) = %v, %v; want at least 20ms after a 50ms spin", d, err)
	}
	if _, err := ProcessCPU(1 << 30); err == nil {
		t.Error("ProcessCPU of a process that does not exist: no error")
	}
}

func TestRunFailsWithoutServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Run(context.Background(), Config{Addr: addr, Workload: Workload{KeySize: 8, ValueSize: 8, Keys: 10}})
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Run against a closed port: %v, want connection refused", err)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no address", Config{Workload: Workload{KeySize: 8, Keys: 10}}, "no address"},
		{"key too short for the keys", Config{Addr: "x:1", Workload: Workload{KeySize: 4, Keys: 1 << 20}}, "key size 4"},
		{"bad ratio", Config{Addr: "x:1", Workload: Workload{GetRatio: 1.5, KeySize: 8}}, "get ratio"},
		{"bad protocol", Config{Addr: "x:1", Protocol: "udp", Workload: Workload{KeySize: 8}}, "protocol"},
		{"huge value", Config{Addr: "x:1", Workload: Workload{KeySize: 8, ValueSize: 2 << 20}}, "value size"},
		{"bad driver", Config{Addr: "x:1", Driver: "threads", Workload: Workload{KeySize: 8}}, `driver "threads"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.cfg.withDefaults()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one that mentions %q", err, tc.want)
			}
		})
	}
}

// startMemcachedProcess starts a memcached of the test's own (skipping the
// test without the binary, failing it under WARPKV_REQUIRE_MEMCACHED=1)
// and returns its address and process id.
func startMemcachedProcess(t *testing.T) (string, int) {
	t.Helper()
	path, err := exec.LookPath("memcached")
	if err != nil {
		if os.Getenv(difftest.EnvRequireMemcached) == "1" {
			t.Fatalf("memcached required: %v", err)
		}
		t.Skipf("no memcached: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	args := []string{"-U", "0", "-l", "127.0.0.1", "-p", strconv.Itoa(port), "-t", "1", "-m", "64", "-c", "4096"}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root")
	}
	cmd := exec.Command(path, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr, cmd.Process.Pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("memcached on %s did not start", addr)
		}
	}
}

// TestPacersSplitTheSchedule checks how many pacers share a schedule and
// that a paced run with several of them (GOMAXPROCS 8: two) still does
// the rate it was asked for, each token's time on the one schedule.
func TestPacersSplitTheSchedule(t *testing.T) {
	for _, c := range []struct{ conns, procs, want int }{
		{64, 8, 2}, {64, 16, 4}, {64, 2, 1}, {1, 16, 1}, {3, 64, 3},
	} {
		if got := pacers(c.conns, c.procs); got != c.want {
			t.Errorf("pacers(%d conns, %d procs) = %d, want %d", c.conns, c.procs, got, c.want)
		}
	}
	addr, _ := startMemcachedProcess(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(8))
	cfg := Config{Addr: addr, Conns: 8, Pipeline: 2, Rate: 4000, Duration: 500 * time.Millisecond, Warmup: 100 * time.Millisecond,
		Workload: Workload{GetRatio: 1, KeySize: 8, ValueSize: 8, Keys: 1000}}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.OpsPerSec < 0.8*cfg.Rate || res.OpsPerSec > 1.2*cfg.Rate {
		t.Errorf("paced at %.0f ops/s by two pacers: did %.0f, want within 20%%", cfg.Rate, res.OpsPerSec)
	}
	if res.Latency.P50 > 20*time.Millisecond {
		t.Errorf("p50 %v at a light paced load: the pacers' schedules do not add up to one", res.Latency.P50)
	}
}

// TestScheduledConnectionsKeepTheRate paces connections with one request
// in flight, each on its own schedule (worker.writeScheduled, or its event
// loop's pacer): together they do the rate asked for, at a light load's
// latency, for few and for many connections, with each driver.
func TestScheduledConnectionsKeepTheRate(t *testing.T) {
	addr, _ := startMemcachedProcess(t)
	for _, driver := range drivers() {
		for _, c := range []struct {
			conns int
			rate  float64
		}{{1, 2000}, {8, 4000}, {64, 8000}} {
			cfg := Config{Addr: addr, Conns: c.conns, Pipeline: 1, Rate: c.rate, Duration: time.Second, Warmup: 100 * time.Millisecond,
				Driver: driver, Workload: Workload{GetRatio: 0.9, KeySize: 8, ValueSize: 8, Keys: 1000}, NoPreload: true}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			// Open loop: a connection held off in the warm-up (a loaded
			// CI machine) sends its backlog at once in the window, up to
			// Warmup's worth of the schedule (CI read 4956 ops/s at 4000
			// with a 500 ms window).
			hi := (1.2 + cfg.Warmup.Seconds()/cfg.Duration.Seconds()) * cfg.Rate
			if res.OpsPerSec < 0.8*cfg.Rate || res.OpsPerSec > hi {
				t.Errorf("%s: %d connections paced at %.0f ops/s: did %.0f, want %.0f to %.0f", driver, c.conns, cfg.Rate, res.OpsPerSec, 0.8*cfg.Rate, hi)
			}
			if res.Latency.P50 > 20*time.Millisecond {
				t.Errorf("%s: %d connections: p50 %v at a light paced load", driver, c.conns, res.Latency.P50)
			}
		}
	}
}

// TestScheduledRunEndsOnTime paces one-request-in-flight connections at a
// rate so low that each waits seconds between its requests: the run must
// still end with its measurement, not with the connections' next times,
// with each driver.
func TestScheduledRunEndsOnTime(t *testing.T) {
	addr, _ := startMemcachedProcess(t)
	for _, driver := range drivers() {
		cfg := Config{Addr: addr, Conns: 4, Pipeline: 1, Rate: 1, Duration: 200 * time.Millisecond, Warmup: 50 * time.Millisecond,
			Driver: driver, Workload: Workload{GetRatio: 1, KeySize: 8, ValueSize: 8, Keys: 100}, NoPreload: true}
		start := time.Now()
		if _, err := Run(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: a run of 250 ms at 1 op/s over 4 connections took %v: the connections waited out their schedules", driver, d)
		}
	}
}
