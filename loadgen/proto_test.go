package loadgen

import (
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"
)

// loopback is an io.ReadWriter whose reads return canned replies and whose
// writes are kept.
type loopback struct {
	out bytes.Buffer
	in  io.Reader
}

func (l *loopback) Read(p []byte) (int, error)  { return l.in.Read(p) }
func (l *loopback) Write(p []byte) (int, error) { return l.out.Write(p) }

func TestCodecText(t *testing.T) {
	value := makeValue(8)
	reply := "VALUE k0000001 0 8\r\n" + string(value) + "\r\nVALUE k0000002 5 8 77\r\n" + string(value) + "\r\nEND\r\n" +
		"STORED\r\nNOT_STORED\r\nEND\r\nSERVER_ERROR out of memory\r\n"
	lb := &loopback{in: strings.NewReader(reply)}
	c := newCodec(Text, lb, 8, value)
	keys := []uint64{1, 2, 3}
	next := func() uint64 { k := keys[0]; keys = keys[1:]; return k }
	c.writeGet(3, next, 0)
	c.writeSet(255, 0)
	c.bw.Flush()
	if want := "get k0000001 k0000002 k0000003\r\nset k00000ff 0 0 8\r\n" + string(value) + "\r\n"; lb.out.String() != want {
		t.Errorf("requests %q, want %q", lb.out.String(), want)
	}
	for i, want := range []struct {
		set        bool
		hits, errs int
		ok         bool
	}{
		{hits: 2}, {set: true, ok: true}, {set: true}, {}, {errs: 1},
	} {
		if want.set {
			ok, err := c.readSet()
			if err != nil || ok != want.ok {
				t.Errorf("reply %d: set stored %v, %v; want %v", i, ok, err, want.ok)
			}
			continue
		}
		hits, errs, err := c.readGet(3)
		if err != nil || hits != want.hits || errs != want.errs {
			t.Errorf("reply %d: get %d hits %d errors, %v; want %d %d", i, hits, errs, err, want.hits, want.errs)
		}
	}
}

func TestCodecBinary(t *testing.T) {
	value := makeValue(4)
	res := func(op byte, status uint16, key, val string) string {
		h := make([]byte, binHeader)
		h[0], h[1] = binResMagic, op
		binary.BigEndian.PutUint16(h[2:], uint16(len(key)))
		h[4] = 4
		binary.BigEndian.PutUint16(h[6:], status)
		binary.BigEndian.PutUint32(h[8:], uint32(4+len(key)+len(val)))
		return string(h) + "\x00\x00\x00\x00" + key + val
	}
	// getkq k1 (hit), getkq k2 (miss: no reply), getk k3 (hit); set.
	reply := res(opGetKQ, 0, "k1", string(value)) + res(opGetK, 0, "k3", string(value)) + res(opSet, 0, "", "") +
		res(opGetK, 1, "k4", "Not found")
	lb := &loopback{in: strings.NewReader(reply)}
	c := newCodec(Binary, lb, 2, value)
	hits, errs, err := c.readGet(3)
	if err != nil || hits != 2 || errs != 0 {
		t.Errorf("get: %d hits %d errors, %v; want 2 0", hits, errs, err)
	}
	if ok, err := c.readSet(); !ok || err != nil {
		t.Errorf("set: %v, %v", ok, err)
	}
	if hits, errs, err := c.readGet(1); err != nil || hits != 0 || errs != 0 {
		t.Errorf("get miss: %d hits %d errors, %v", hits, errs, err)
	}
	c.writeGet(2, func() uint64 { return 7 }, 9)
	c.bw.Flush()
	b := lb.out.Bytes()
	if len(b) != 2*(binHeader+2) || b[1] != opGetKQ || b[binHeader+2+1] != opGetK || binary.BigEndian.Uint32(b[12:]) != 9 || string(b[binHeader:binHeader+2]) != "k7" {
		t.Errorf("binary multi-get requests %x", b)
	}
}

// cycle reads the same bytes over and over and discards writes.
type cycle struct {
	b   []byte
	off int
}

func (c *cycle) Read(p []byte) (int, error) {
	n := copy(p, c.b[c.off:])
	c.off = (c.off + n) % len(c.b)
	return n, nil
}

func (c *cycle) Write(p []byte) (int, error) { return len(p), nil }

func TestCodecAllocatesNothing(t *testing.T) {
	value := makeValue(64)
	var binGet []byte
	{
		h := make([]byte, binHeader)
		h[0], h[1] = binResMagic, opGetK
		binary.BigEndian.PutUint16(h[2:], 16)
		h[4] = 4
		binary.BigEndian.PutUint32(h[8:], 4+16+64)
		binGet = append(append(append(h, 0, 0, 0, 0), strings.Repeat("k", 16)...), value...)
	}
	for _, tc := range []struct {
		proto Protocol
		reply string
	}{
		{Text, "VALUE k000000000000001 0 64\r\n" + string(value) + "\r\nEND\r\n"},
		{Binary, string(binGet)},
	} {
		c := newCodec(tc.proto, &cycle{b: []byte(tc.reply)}, 16, value)
		next := func() uint64 { return 1 }
		allocs := testing.AllocsPerRun(1000, func() {
			c.writeGet(1, next, 1)
			c.writeSet(2, 2)
			c.bw.Flush()
			if hits, _, err := c.readGet(1); hits != 1 || err != nil {
				t.Fatalf("%s get: %d hits, %v", tc.proto, hits, err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per request, want 0", tc.proto, allocs)
		}
	}
}

func TestCodecMeta(t *testing.T) {
	value := makeValue(8)
	reply := "VA 8 t0\r\n" + string(value) + "\r\nVA 8\r\n" + string(value) + "\r\nMN\r\n" + // multi-get: 2 hits, 1 quiet miss
		"EN\r\n" + // single get: miss
		"VA 3\r\nabc\r\n" + // single get: wrong length
		"HD\r\nNS\r\n" + // sets
		"CLIENT_ERROR bad\r\n" // single get: error
	lb := &loopback{in: strings.NewReader(reply)}
	c := newCodec(Meta, lb, 8, value)
	keys := []uint64{1, 2, 3, 4}
	next := func() uint64 { k := keys[0]; keys = keys[1:]; return k }
	c.writeGet(3, next, 0)
	c.writeGet(1, next, 0)
	c.writeSet(255, 0)
	c.bw.Flush()
	want := "mg k0000001 v q\r\nmg k0000002 v q\r\nmg k0000003 v q\r\nmn\r\nmg k0000004 v\r\nms k00000ff 8\r\n" + string(value) + "\r\n"
	if lb.out.String() != want {
		t.Errorf("requests %q, want %q", lb.out.String(), want)
	}
	for i, want := range []struct {
		set, ok    bool
		count      int
		hits, errs int
	}{
		{count: 3, hits: 2}, {count: 1}, {count: 1, errs: 1}, {set: true, ok: true}, {set: true}, {count: 1, errs: 1},
	} {
		if want.set {
			ok, err := c.readSet()
			if err != nil || ok != want.ok {
				t.Errorf("reply %d: set stored %v, %v; want %v", i, ok, err, want.ok)
			}
			continue
		}
		hits, errs, err := c.readGet(want.count)
		if err != nil || hits != want.hits || errs != want.errs {
			t.Errorf("reply %d: get %d hits %d errors, %v; want %d %d", i, hits, errs, err, want.hits, want.errs)
		}
	}
}
