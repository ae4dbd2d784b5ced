package difftest

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// replyOf runs the reply reader of a fresh server on raw server output.
func replyOf(t *testing.T, bin bool, mn int, raw []byte) ([]frame, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		b.Write(raw)
		b.Close()
	}()
	s := newServer("test", "pipe", time.Second)
	c := &conn{nc: a, r: bufio.NewReader(a)}
	if bin {
		return s.readBinary(c)
	}
	return s.readText(c, mn)
}

func render(fs []frame) string {
	var s []string
	for _, f := range fs {
		s = append(s, f.String())
	}
	return strings.Join(s, " | ")
}

func TestReadText(t *testing.T) {
	for _, tc := range []struct {
		name string
		raw  string
		mn   int
		want string
		err  bool
	}{
		{name: "stored", raw: "STORED\r\nMN\r\n", want: `"STORED"`},
		{name: "nothing", raw: "MN\r\n", want: ``},
		{name: "value with CRLF inside", raw: "VALUE k 0 4\r\na\r\nb\r\nEND\r\nMN\r\n", want: `"VALUE k 0 4" + data "a\r\nb" (4 bytes) | "END"`},
		{name: "gets cas becomes token", raw: "VALUE k 1 1 77\r\nx\r\nVALUE j 1 1 78\r\ny\r\nVALUE k 1 1 77\r\nx\r\nEND\r\nMN\r\n",
			want: `"VALUE k 1 1 <cas#0>" + data "x" (1 bytes) | "VALUE j 1 1 <cas#1>" + data "y" (1 bytes) | "VALUE k 1 1 <cas#0>" + data "x" (1 bytes) | "END"`},
		{name: "meta c and l flags", raw: "VA 2 c99 l17 t30 s2\r\nhi\r\nHD c100\r\nMN\r\n",
			want: `"VA 2 c<cas#0> l<seconds> t30 s2" + data "hi" (2 bytes) | "HD c<cas#1>"`},
		{name: "version", raw: "VERSION 1.6.18\r\nMN\r\n", want: `"VERSION <version>"`},
		{name: "stats collapse", raw: "STAT pid 1\r\nSTAT uptime 2\r\nEND\r\nMN\r\n", want: `"STAT ... END"`},
		{name: "own mn answers", raw: "MN\r\nHD\r\nMN\r\n", mn: 1, want: `"MN" | "HD"`},
		{name: "LF alone", raw: "STORED\nMN\r\n", want: `"STORED <ended by \"\\n\" alone>"`},
		{name: "bad data end", raw: "VALUE k 0 1\r\nxyz\r\nMN\r\n", want: `"VALUE k 0 1 <data followed by \"yz\", not \\r\\n>" + data "x" (1 bytes)`, err: true},
		{name: "closed", raw: "STORED\r\n", want: `"STORED"`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := replyOf(t, false, tc.mn, []byte(tc.raw))
			if (err != nil) != tc.err {
				t.Errorf("error %v, want error %v", err, tc.err)
			}
			fs = collapseStats(fs)
			if got := render(fs); got != tc.want {
				t.Errorf("reply\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestReadBinary(t *testing.T) {
	res := func(op byte, status uint16, opaque uint32, cas uint64, extras, key, value string) []byte {
		h := make([]byte, binHeader)
		h[0], h[1] = binResMagic, op
		h[2], h[3] = byte(len(key)>>8), byte(len(key))
		h[4] = byte(len(extras))
		h[6], h[7] = byte(status>>8), byte(status)
		n := len(extras) + len(key) + len(value)
		copy(h[8:], be32(uint32(n)))
		copy(h[12:], be32(opaque))
		copy(h[16:], be64(cas))
		return append(h, extras+key+value...)
	}
	sentinel := res(opNoop, 0, sentinelOpaque, 0, "", "", "")
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		raw  []byte
		want string
		err  bool
	}{
		{name: "getk hit", raw: cat(res(opGetK, 0, 1, 5, "\x00\x00\x00\x07", "k", "v"), sentinel),
			want: `"getk status=ok opaque=1 cas=<cas#0> extras=00000007 key=\"k\"" + data "v" (1 bytes)`},
		{name: "miss", raw: cat(res(opGet, 1, 2, 0, "", "", "Not found"), sentinel),
			want: `"get status=key_enoent opaque=2 cas=0" + data "Not found" (9 bytes)`},
		{name: "incr value", raw: cat(res(opIncr, 0, 1, 9, "", "", string(be64(42))), sentinel),
			want: `"incr status=ok opaque=1 cas=<cas#0> value=42"`},
		{name: "version", raw: cat(res(opVersion, 0, 1, 0, "", "", "1.6.18"), sentinel),
			want: `"version status=ok opaque=1 cas=0 value=<version>"`},
		{name: "stats collapse", raw: cat(res(opStat, 0, 1, 0, "", "pid", "1"), res(opStat, 0, 1, 0, "", "", ""), sentinel),
			want: `"stat status=ok ... (ended by the empty-key stat)"`},
		{name: "bad magic", raw: cat([]byte("ERROR\r\n"), make([]byte, 17)), want: `"<bad response magic in header 4552524f520d0a0000000000000000000000000000000000>"`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, err := replyOf(t, true, 0, tc.raw)
			if (err != nil) != tc.err {
				t.Errorf("error %v, want error %v", err, tc.err)
			}
			fs = collapseStats(fs)
			if got := render(fs); got != tc.want {
				t.Errorf("reply\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestSameLine(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"HD t100", "HD t100", true},
		{"HD t100", "HD t102", true},
		{"HD t100", "HD t103", false},
		{"VA 2 t-1 s2", "VA 2 t-1 s2", true},
		{"VA 2 t-1", "VA 2 t1", false},
		{"HD s100", "HD s101", false},
		{"VALUE t100", "VALUE t101", false}, // only meta lines have t flags
		{"HD t100 k", "HD t100", false},
	} {
		if got := sameLine(tc.a, tc.b); got != tc.same {
			t.Errorf("sameLine(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

func TestStepBuildPerServer(t *testing.T) {
	var b stepBuilder
	b.str("cas k 0 0 1 ").cas(1).str("\r\nx\r\n")
	b.bin(binReq{op: opDelete, key: []byte("k"), hasCAS: true, casTok: -1, opaque: 1, extLen: -1, bodyLen: -1})
	st := b.done()
	values := []uint64{10, 20}
	got := st.build(func(tok int) (uint64, bool) { return values[tok], true })
	if !strings.HasPrefix(string(got), "cas k 0 0 1 20\r\nx\r\n") {
		t.Errorf("text part %q, want the CAS of token 1 (20)", got)
	}
	bin := got[len("cas k 0 0 1 20\r\nx\r\n"):]
	hd := parseBinHeader(bin)
	if hd.op != opDelete || hd.keyLen != 1 || hd.bodyLen != 1 || hd.opaque != 1 || hd.cas != badCAS || string(bin[binHeader:]) != "k" {
		t.Errorf("binary part %x: header %+v", bin, hd)
	}
	if s := st.String(); !strings.Contains(s, "<bad cas>") || !strings.Contains(s, "delete opaque=1") {
		t.Errorf("String() = %q", s)
	}
}

func TestGenIsDeterministic(t *testing.T) {
	steps := func() string {
		cfg, _ := Config{Seed: 42}.withDefaults()
		g := newGen(cfg)
		g.now = 1_700_000_000
		var s []string
		for range 300 {
			st := g.next()
			s = append(s, st.String())
		}
		return strings.Join(s, "\n")
	}
	if a, b := steps(), steps(); a != b {
		t.Error("the same seed gave different steps")
	}
}
