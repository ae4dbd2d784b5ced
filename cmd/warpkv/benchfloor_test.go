package main

import (
	"slices"
	"strings"
	"testing"
)

// TestFloorServe runs the floor server's request handling on whole,
// split and bad inputs: what it answers, what it consumes, when it closes.
func TestFloorServe(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		consumed       int // -1: all of in
		quit           bool
	}{
		{name: "get before any set misses", in: "get k\r\n", want: "END\r\n", consumed: -1},
		{name: "set then multi-get", in: "set k 0 0 3\r\nabc\r\nget k j\r\n",
			want: "STORED\r\nVALUE k 0 3\r\nabc\r\nVALUE j 0 3\r\nabc\r\nEND\r\n", consumed: -1},
		{name: "noreply set", in: "set k 5 0 2 noreply\r\nxy\r\nget k\r\n", want: "VALUE k 0 2\r\nxy\r\nEND\r\n", consumed: -1},
		{name: "value still on its way", in: "get a\r\nset k 0 0 10\r\nabc", want: "END\r\n", consumed: len("get a\r\n")},
		{name: "half a line waits", in: "get a\r\nget b", want: "END\r\n", consumed: len("get a\r\n")},
		{name: "flush, version, stats, unknown", in: "flush_all\r\nversion\r\nstats\r\nbogus\r\n",
			want: "OK\r\nVERSION warpkv-floor\r\nEND\r\nERROR\r\n", consumed: -1},
		{name: "quit stops at once", in: "quit\r\nget a\r\n", want: "", consumed: len("quit\r\n"), quit: true},
		{name: "bad length closes", in: "set k 0 0 x\r\n", want: "CLIENT_ERROR bad data chunk length \"x\"\r\n", consumed: 0, quit: true},
		{name: "short storage command closes", in: "set k 0\r\n", want: "CLIENT_ERROR bad storage command: \"k 0\"\r\n", consumed: 0, quit: true},
		{name: "bare newlines", in: "set k 0 0 1\nz\r\nget k\n", want: "STORED\r\nVALUE k 0 1\r\nz\r\nEND\r\n", consumed: len("set k 0 0 1\nz\r\n") + len("get k\n")},
		{name: "endless line closes", in: strings.Repeat("g", 3000), want: "CLIENT_ERROR line too long\r\n", consumed: 0, quit: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := floorState{shared: new(floorValue)}
			used, out, quit := floorServe(&st, []byte(c.in), nil)
			want := c.consumed
			if want < 0 {
				want = len(c.in)
			}
			if string(out) != c.want || used != want || quit != c.quit {
				t.Errorf("floorServe(%q) = %d, %q, quit %v; want %d, %q, quit %v", c.in, used, out, quit, want, c.want, c.quit)
			}
		})
	}
}

// TestFloorServeByteByByte feeds a stream one byte at a time, as a slow
// client's reads would come, and checks the replies are those of the
// whole stream at once.
func TestFloorServeByteByByte(t *testing.T) {
	stream := "set key1 0 0 5\r\nhello\r\nget key1\r\nset key2 1 2 3 noreply\r\nabc\r\nget key1 key2\r\nversion\r\n"
	whole := floorState{shared: new(floorValue)}
	_, want, _ := floorServe(&whole, []byte(stream), nil)
	st := floorState{shared: new(floorValue)}
	var in, out []byte
	for i := range len(stream) {
		in = append(in, stream[i])
		used, o, quit := floorServe(&st, in, out)
		if quit {
			t.Fatalf("quit at byte %d", i)
		}
		out = o
		in = slices.Delete(in, 0, used)
	}
	if len(in) != 0 || string(out) != string(want) {
		t.Errorf("byte by byte: left %q, replies %q; want nothing left and %q", in, out, want)
	}
}

// TestBenchServeEngineSpecsFloor: --engines floor plans the floor server
// (warpkv bench floor) with the port after its subcommand, and bench serve's
// check takes it.
func TestBenchServeEngineSpecsFloor(t *testing.T) {
	if err := checkBenchServe(64, 0, "floor,cpu", 0, "", "", nil); err != nil {
		t.Fatal(err)
	}
	sv := planServers("none", "floor", "warpkv", 8, 64, 0, "", false)
	if len(sv) != 1 || !sv[0].Floor || sv[0].Warpkv {
		t.Fatalf("planned %+v, want one floor server", sv)
	}
	want := []string{"bench", "floor", "-p", "4242", "-l", "127.0.0.1", "-t", "8"}
	if got := sv[0].args(4242); !slices.Equal(got, want) {
		t.Errorf("floor server args %v, want %v", got, want)
	}
	mc := plannedServer{Args: []string{"-U", "0"}}
	if got := mc.args(7); !slices.Equal(got, []string{"-p", "7", "-U", "0"}) {
		t.Errorf("memcached args %v", got)
	}
	wk := planServers("none", "cpu", "warpkv", 2, 64, 0, "", false)[0]
	if got := wk.args(9); got[0] != "serve" || got[1] != "-p" || got[2] != "9" {
		t.Errorf("warpkv args %v, want serve -p 9 first", got)
	}
}

// TestBenchServeUnpipelinedFloor measures the built binary's floor server
// with bench serve --unpipelined: its rows are measured, and they are not
// taken for memcached's (no "vs mc" ratio of 1.00x without memcached).
func TestBenchServeUnpipelinedFloor(t *testing.T) {
	var rep unpipelinedReport
	_, out, _ := benchServeReport(t, "floor.json", &rep, "--unpipelined", "--engines", "floor", "--memcached", "none",
		"-m", "64", "--unpipelined-conns", "8", "--unpipelined-duration", "300ms", "--crosscheck", "none", "--p99-at", "0")
	if len(rep.Rows) != 2 {
		t.Fatalf("%d rows, want the floor server's two mixes:\n%s", len(rep.Rows), out)
	}
	for _, r := range rep.Rows {
		if !strings.HasPrefix(r.Server, "floor") || r.Err != "" || r.Peak.OpsPerSec <= 0 || r.Peak.Errors != 0 || r.Peak.HitRatio != 1 {
			t.Errorf("row %s %s: err %q, %.0f ops/s, %d errors, hit ratio %.3f; want measured, no errors, every get a hit",
				r.Server, r.Mix, r.Err, r.Peak.OpsPerSec, r.Peak.Errors, r.Peak.HitRatio)
		}
	}
	if strings.Contains(out, "1.00x") {
		t.Errorf("the floor server was taken as memcached's base:\n%s", out)
	}
}

// TestLoadBoundNote: bench serve --unpipelined says when rows ran with the
// load generator at 95% or more, and points to the floor server unless it
// ran.
func TestLoadBoundNote(t *testing.T) {
	row := func(server string, busy float64, err string) unpipelinedRow {
		r := unpipelinedRow{Server: server, Err: err}
		r.Peak.LoadBusy = busy
		return r
	}
	for _, c := range []struct {
		name string
		rows []unpipelinedRow
		want string // a substring; "" for no note
		not  string
	}{
		{name: "no row near the bound", rows: []unpipelinedRow{row("memcached -t 8", 0.90, ""), row("warpkv cpu", 0.94, "")}},
		{name: "a busy load, no floor", rows: []unpipelinedRow{row("memcached -t 8", 0.97, ""), row("warpkv cpu", 0.80, "")},
			want: "in 1 of 2 rows: there the load, not the server, may set the figure; --engines floor"},
		{name: "with the floor", rows: []unpipelinedRow{row("memcached -t 8", 0.96, ""), row("floor -t 8", 0.99, "")},
			want: "in 2 of 2 rows", not: "--engines floor"},
		{name: "failed rows do not count", rows: []unpipelinedRow{row("warpkv gpu", 0.99, "refused")}},
	} {
		got := loadBoundNote(c.rows)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) || (c.not != "" && strings.Contains(got, c.not)) {
			t.Errorf("%s: note %q, want one containing %q (not %q)", c.name, got, c.want, c.not)
		}
	}
}
