package protocol

import (
	"net"
	"strings"
	"testing"

	"github.com/warpkv/warpkv/internal/difftest"
)

// shorthand constructors for binary test tables
func bget(op uint8, key string) binReq { return binReq{op: op, key: key, opaque: 7} }
func bset(op uint8, key, value string, flags, exptime uint32, cas uint64) binReq {
	return binReq{op: op, key: key, extras: setExtras(flags, exptime), value: value, cas: cas, opaque: 7}
}
func bincr(op uint8, key string, delta, initial uint64, exptime uint32, cas uint64) binReq {
	return binReq{op: op, key: key, extras: incrExtras(delta, initial, exptime), cas: cas, opaque: 7}
}
func bres(op uint8, status uint16, extras, key, value string, cas uint64) binRes {
	return binRes{op: op, status: status, extras: extras, key: key, value: value, opaque: 7, cas: cas}
}
func berr(op uint8, status uint16) binRes {
	return bres(op, status, "", "", binStatusText(status), 0)
}

const flags7 = "\x00\x00\x00\x07"
const flags0 = "\x00\x00\x00\x00"

// Responses of memcached 1.6.18 (CAS values are the model's).
var binaryCases = []struct {
	name string
	reqs []binReq
	want []binRes
}{
	{"set then get and getk",
		[]binReq{bset(opSet, "a", "hello", 7, 0, 0), bget(opGet, "a"), bget(opGetK, "a")},
		[]binRes{bres(opSet, stOK, "", "", "", 1), bres(opGet, stOK, flags7, "", "hello", 1), bres(opGetK, stOK, flags7, "a", "hello", 1)}},
	{"get misses",
		[]binReq{bget(opGet, "a"), bget(opGetK, "a")},
		[]binRes{berr(opGet, stKeyENOENT), bres(opGetK, stKeyENOENT, "", "a", "", 0)}},
	{"quiet gets answer only hits",
		[]binReq{bget(opGetQ, "a"), bget(opGetKQ, "a"), bset(opSetQ, "a", "x", 0, 0, 0), bget(opGetQ, "a"), bget(opGetKQ, "a")},
		[]binRes{bres(opGetQ, stOK, flags0, "", "x", 1), bres(opGetKQ, stOK, flags0, "a", "x", 1)}},
	{"add and replace",
		[]binReq{bset(opAdd, "a", "x", 0, 0, 0), bset(opAdd, "a", "y", 0, 0, 0), bset(opReplace, "b", "y", 0, 0, 0), bset(opReplace, "a", "z", 0, 0, 0), bset(opAddQ, "a", "w", 0, 0, 0)},
		[]binRes{bres(opAdd, stOK, "", "", "", 1), berr(opAdd, stKeyEEXISTS), berr(opReplace, stKeyENOENT), bres(opReplace, stOK, "", "", "", 2), berr(opAddQ, stKeyEEXISTS)}},
	{"set with a CAS",
		[]binReq{bset(opSet, "a", "x", 0, 0, 0), bset(opSet, "a", "y", 0, 0, 9), bset(opSet, "a", "y", 0, 0, 1), bset(opSet, "b", "y", 0, 0, 1), bset(opAdd, "a", "z", 0, 0, 2)},
		[]binRes{bres(opSet, stOK, "", "", "", 1), berr(opSet, stKeyEEXISTS), bres(opSet, stOK, "", "", "", 2), berr(opSet, stKeyENOENT), bres(opAdd, stOK, "", "", "", 3)}},
	{"append and prepend",
		[]binReq{bset(opSet, "a", "b", 7, 0, 0), {op: opAppend, key: "a", value: "c", opaque: 7}, {op: opPrepend, key: "a", value: "a", opaque: 7}, {op: opAppendQ, key: "a", value: "d", opaque: 7}, bget(opGet, "a"), {op: opAppend, key: "z", value: "c", opaque: 7}, {op: opAppend, key: "a", value: "c", cas: 99, opaque: 7}},
		[]binRes{bres(opSet, stOK, "", "", "", 1), bres(opAppend, stOK, "", "", "", 2), bres(opPrepend, stOK, "", "", "", 3), bres(opGet, stOK, flags7, "", "abcd", 4), berr(opAppend, stNotStored), berr(opAppend, stKeyEEXISTS)}},
	{"delete",
		[]binReq{bset(opSet, "a", "x", 0, 0, 0), {op: opDelete, key: "a", cas: 9, opaque: 7}, {op: opDelete, key: "a", opaque: 7}, {op: opDelete, key: "a", opaque: 7}, {op: opDeleteQ, key: "a", opaque: 7}},
		[]binRes{bres(opSet, stOK, "", "", "", 1), berr(opDelete, stKeyEEXISTS), bres(opDelete, stOK, "", "", "", 0), berr(opDelete, stKeyENOENT), berr(opDeleteQ, stKeyENOENT)}},
	{"incr and decr",
		[]binReq{bincr(opIncr, "n", 1, 10, 0, 0), bincr(opIncr, "n", 5, 10, 0, 0), bincr(opDecr, "n", 100, 10, 0, 0), bincr(opIncrQ, "n", 1, 0, 0, 0), bget(opGet, "n")},
		[]binRes{bres(opIncr, stOK, "", "", "\x00\x00\x00\x00\x00\x00\x00\x0a", 1), bres(opIncr, stOK, "", "", "\x00\x00\x00\x00\x00\x00\x00\x0f", 2), bres(opDecr, stOK, "", "", "\x00\x00\x00\x00\x00\x00\x00\x00", 3), bres(opGet, stOK, flags0, "", "1 ", 4)}},
	{"incr without vivify, of a non-number, with a CAS",
		[]binReq{bincr(opIncr, "n", 1, 10, 0xffffffff, 0), bset(opSet, "s", "x", 0, 0, 0), bincr(opIncr, "s", 1, 0, 0, 0), bincr(opDecr, "s", 1, 0, 0, 9)},
		[]binRes{berr(opIncr, stKeyENOENT), bres(opSet, stOK, "", "", "", 1), berr(opIncr, stDeltaBadval), berr(opDecr, stKeyEEXISTS)}},
	{"touch and gat",
		[]binReq{bset(opSet, "a", "x", 7, 0, 0), {op: opTouch, key: "a", extras: be32(100), opaque: 7}, {op: opGat, key: "a", extras: be32(100), opaque: 7}, {op: opGatK, key: "a", extras: be32(100), opaque: 7}, {op: opGatQ, key: "z", extras: be32(1), opaque: 7}, {op: opGatKQ, key: "z", extras: be32(1), opaque: 7}, {op: opTouch, key: "z", extras: be32(1), opaque: 7}, {op: opGatK, key: "z", extras: be32(1), opaque: 7}},
		[]binRes{bres(opSet, stOK, "", "", "", 1), bres(opTouch, stOK, flags7, "", "", 1), bres(opGat, stOK, flags7, "", "x", 1), bres(opGatK, stOK, flags7, "a", "x", 1), berr(opTouch, stKeyENOENT), bres(opGatK, stKeyENOENT, "", "z", "", 0)}},
	{"flush",
		[]binReq{bset(opSet, "a", "x", 0, 0, 0), {op: opFlush, opaque: 7}, bget(opGet, "a"), {op: opFlushQ, opaque: 7}, {op: opFlush, extras: be32(0), opaque: 7}},
		[]binRes{bres(opSet, stOK, "", "", "", 1), bres(opFlush, stOK, "", "", "", 0), berr(opGet, stKeyENOENT), bres(opFlush, stOK, "", "", "", 0)}},
	{"version",
		[]binReq{{op: opVersion, opaque: 7}},
		[]binRes{bres(opVersion, stOK, "", "", "1.6.18", 0)}},
	{"unknown opcodes, SASL and verbosity",
		[]binReq{{op: 0x50, opaque: 7}, {op: opSASLList, opaque: 7}, {op: opSASLAuth, key: "PLAIN", value: "xx", opaque: 7}, {op: 0x50, value: "zzzz", opaque: 7}},
		[]binRes{berr(0x50, stUnknown), berr(opSASLList, stUnknown), berr(opSASLAuth, stUnknown), berr(0x50, stUnknown)}},
	{"too large set removes the old item and swallows the value",
		[]binReq{bset(opSet, "a", "x", 0, 0, 0), bset(opSet, "a", strings.Repeat("v", 1048517), 0, 0, 0), bget(opGet, "a"), bset(opAddQ, "b", strings.Repeat("v", 1048517), 0, 0, 0)},
		[]binRes{bres(opSet, stOK, "", "", "", 1), berr(opSet, stE2BIG), berr(opGet, stKeyENOENT), berr(opAddQ, stE2BIG)}},
	{"verbosity is an unknown command",
		[]binReq{{op: opVerbose, opaque: 7}, {op: opVerbose, opaque: 7}, {op: opNoop, opaque: 7}},
		[]binRes{berr(opVerbose, stUnknown), berr(opVerbose, stUnknown), bres(opNoop, stOK, "", "", "", 0)}},
	{"a value length under zero is too large",
		[]binReq{{op: opSet, key: "a", extras: setExtras(0, 0), bodylen: 0xffffffff, opaque: 7}},
		[]binRes{berr(opSet, stE2BIG)}},
}

// binaryDiffers names the binaryCases skipped against a real memcached.
var binaryDiffers = map[string]string{
	"set with a CAS": "uses the model's CAS numbering",
	"unknown opcode swallowing into the next request":           "memcached drops replies not yet sent when it closes (see doc.go)",
	"verbosity with its level swallowing into the next request": "memcached drops replies not yet sent when it closes (see doc.go)",
}

func TestBinaryProtocol(t *testing.T) {
	for _, tc := range binaryCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, Config{})
			checkBinary(t, binExchange(t, s.pipe(t), tc.reqs...), tc.want, false)
		})
	}
}

// TestBinaryCasesAgainstMemcached checks binaryCases' expectations on a
// real memcached (started by difftest.Memcached), CAS values aside.
func TestBinaryCasesAgainstMemcached(t *testing.T) {
	addr := difftest.Memcached(t)
	for _, tc := range binaryCases {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := binaryDiffers[tc.name]; ok {
				t.Skip(why)
			}
			checkBinary(t, binExchange(t, dialMemcached(t, addr, true), tc.reqs...), tc.want, true)
		})
	}
}

func checkBinary(t *testing.T, got, want []binRes, ignoreCAS bool) {
	t.Helper()
	if ignoreCAS {
		for i := range got {
			got[i].cas = 0
		}
		want = append([]binRes(nil), want...)
		for i := range want {
			want[i].cas = 0
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d responses, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("response %d\n got %v\nwant %v", i, got[i], want[i])
		}
	}
}

// Requests after which memcached answers (or not) and closes.
var binaryCloseCases = []struct {
	name string
	reqs []binReq
	want []binRes
}{
	{"quit", []binReq{{op: opQuit, opaque: 7}, {op: opNoop, opaque: 7}}, []binRes{bres(opQuit, stOK, "", "", "", 0)}},
	{"quitq", []binReq{{op: opQuitQ, opaque: 7}, {op: opNoop, opaque: 7}}, nil},
	{"bad magic", []binReq{{op: opNoop, opaque: 7}, {op: opNoop, magic: 0x81, opaque: 7}}, []binRes{bres(opNoop, stOK, "", "", "", 0)}},
	{"key over 250 bytes", []binReq{{op: opGet, key: strings.Repeat("k", 251), opaque: 7}}, []binRes{berr(opGet, stEINVAL)}},
	{"extras on a get", []binReq{{op: opGet, key: "a", extras: []byte("xxxx"), opaque: 7}}, []binRes{berr(opGet, stEINVAL)}},
	{"get without a key", []binReq{{op: opGet, opaque: 7}}, []binRes{berr(opGet, stEINVAL)}},
	{"set without extras", []binReq{{op: opSet, key: "a", value: "x", opaque: 7}}, []binRes{berr(opSet, stEINVAL)}},
	{"incr with short extras", []binReq{{op: opIncr, key: "a", extras: []byte("short"), opaque: 7}}, []binRes{berr(opIncr, stEINVAL)}},
	{"version with a body", []binReq{{op: opVersion, value: "x", opaque: 7}}, []binRes{berr(opVersion, stEINVAL)}},
	{"flush with odd extras", []binReq{{op: opFlush, extras: []byte("12"), opaque: 7}}, []binRes{berr(opFlush, stEINVAL)}},
	{"key longer than the body", []binReq{{op: opGet, key: "abc", bodylen: 1, opaque: 7}}, []binRes{berr(opGet, stUnknown)}},
	{"unknown opcode swallowing into the next request", []binReq{{op: 0x3b, extras: be32(1), opaque: 7}, {op: opNoop, opaque: 7}, {op: opNoop, opaque: 7}}, []binRes{berr(0x3b, stUnknown)}},
	{"verbosity with its level swallowing into the next request", []binReq{{op: opVerbose, extras: be32(1), opaque: 7}, {op: opNoop, opaque: 7}, {op: opNoop, opaque: 7}}, []binRes{berr(opVerbose, stUnknown)}},
}

func TestBinaryProtocolErrorsClose(t *testing.T) {
	for _, tc := range binaryCloseCases {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t, Config{})
			checkBinaryClose(t, s.pipe(t), tc.reqs, tc.want)
		})
	}
}

// TestBinaryCloseCasesAgainstMemcached checks binaryCloseCases on a real
// memcached (started by difftest.Memcached).
func TestBinaryCloseCasesAgainstMemcached(t *testing.T) {
	addr := difftest.Memcached(t)
	for _, tc := range binaryCloseCases {
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := binaryDiffers[tc.name]; ok {
				t.Skip(why)
			}
			checkBinaryClose(t, dialMemcached(t, addr, true), tc.reqs, tc.want)
		})
	}
}

func checkBinaryClose(t *testing.T, nc net.Conn, reqs []binReq, want []binRes) {
	t.Helper()
	var b []byte
	for _, r := range reqs {
		b = append(b, r.bytes()...)
	}
	send(nc, b)
	got, rest, err := parseBinRes([]byte(readAll(t, nc)))
	if err != nil || len(rest) != 0 {
		t.Fatalf("responses %v, then %q: %v", got, rest, err)
	}
	checkBinary(t, got, want, false)
}

func TestBinaryStats(t *testing.T) {
	s := newTestServer(t, Config{})
	nc := s.pipe(t)
	res := binExchange(t, nc, bset(opSet, "a", "x", 0, 0, 0), binReq{op: opStat, opaque: 7})
	stats := map[string]string{}
	for _, r := range res[1 : len(res)-1] {
		if r.op != opStat || r.status != stOK || r.opaque != 7 {
			t.Fatalf("stat response %v", r)
		}
		stats[r.key] = r.value
	}
	if end := res[len(res)-1]; end != bres(opStat, stOK, "", "", "", 0) {
		t.Errorf("last stat response %v, want an empty one", end)
	}
	if stats["cmd_set"] != "1" || stats["version"] != "1.6.18" || stats["curr_items"] != "1" {
		t.Errorf("stats cmd_set %q version %q curr_items %q", stats["cmd_set"], stats["version"], stats["curr_items"])
	}
	for _, tc := range []struct {
		group string
		want  func([]binRes) bool
	}{
		{"settings", func(r []binRes) bool { return len(r) > 2 && r[0].key != "" && r[len(r)-1].key == "" }},
		{"reset", func(r []binRes) bool { return len(r) == 1 && r[0] == bres(opStat, stOK, "", "", "", 0) }},
		{"nosuch", func(r []binRes) bool { return len(r) == 1 && r[0] == berr(opStat, stKeyENOENT) }},
		{"items", func(r []binRes) bool { return len(r) == 1 && r[0] == bres(opStat, stOK, "", "", "", 0) }},
	} {
		if got := binExchange(t, nc, binReq{op: opStat, key: tc.group, opaque: 7}); !tc.want(got) {
			t.Errorf("stat %q: %v", tc.group, got)
		}
	}
}
