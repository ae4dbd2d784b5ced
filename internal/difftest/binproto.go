package difftest

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
)

// Binary protocol magic bytes and opcodes (memcached's protocol_binary.h).
// They repeat package protocol's on purpose: the differential test encodes
// requests and decodes replies on its own, from memcached's header, so that
// a wrong constant in the server cannot hide behind the same constant in
// its test (and the real memcached the test also talks to checks these).
const (
	binReqMagic = 0x80
	binResMagic = 0x81
	binHeader   = 24

	opGet       = 0x00
	opSet       = 0x01
	opAdd       = 0x02
	opReplace   = 0x03
	opDelete    = 0x04
	opIncr      = 0x05
	opDecr      = 0x06
	opQuit      = 0x07
	opFlush     = 0x08
	opGetQ      = 0x09
	opNoop      = 0x0a
	opVersion   = 0x0b
	opGetK      = 0x0c
	opGetKQ     = 0x0d
	opAppend    = 0x0e
	opPrepend   = 0x0f
	opStat      = 0x10
	opSetQ      = 0x11
	opAddQ      = 0x12
	opReplaceQ  = 0x13
	opDeleteQ   = 0x14
	opIncrQ     = 0x15
	opDecrQ     = 0x16
	opFlushQ    = 0x18
	opAppendQ   = 0x19
	opPrependQ  = 0x1a
	opVerbosity = 0x1b
	opTouch     = 0x1c
	opGAT       = 0x1d
	opGATQ      = 0x1e
	opGATK      = 0x23
	opGATKQ     = 0x24
)

// sentinelOpaque marks the noop a binary step ends with.
const sentinelOpaque = 0x5e771e00

var binOpNames = map[byte]string{
	opGet: "get", opSet: "set", opAdd: "add", opReplace: "replace", opDelete: "delete",
	opIncr: "incr", opDecr: "decr", opQuit: "quit", opFlush: "flush", opGetQ: "getq",
	opNoop: "noop", opVersion: "version", opGetK: "getk", opGetKQ: "getkq",
	opAppend: "append", opPrepend: "prepend", opStat: "stat", opSetQ: "setq",
	opAddQ: "addq", opReplaceQ: "replaceq", opDeleteQ: "deleteq", opIncrQ: "incrq",
	opDecrQ: "decrq", opFlushQ: "flushq", opAppendQ: "appendq", opPrependQ: "prependq",
	opVerbosity: "verbosity", opTouch: "touch", opGAT: "gat", opGATQ: "gatq",
	opGATK: "gatk", opGATKQ: "gatkq",
}

func binOpName(op byte) string {
	if n, ok := binOpNames[op]; ok {
		return n
	}
	return fmt.Sprintf("op%#02x", op)
}

var binStatusNames = map[uint16]string{
	0x00: "ok", 0x01: "key_enoent", 0x02: "key_eexists", 0x03: "e2big", 0x04: "einval",
	0x05: "not_stored", 0x06: "delta_badval", 0x20: "auth_error", 0x81: "unknown_command",
	0x82: "enomem",
}

func binStatusName(s uint16) string {
	if n, ok := binStatusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("status%#04x", s)
}

// binReq is one binary request.
type binReq struct {
	op     byte
	key    []byte
	extras []byte
	value  []byte
	casTok int  // token of the CAS to send when hasCAS (< 0: badCAS)
	hasCAS bool // send a CAS (else 0)
	opaque uint32
	// extLen and bodyLen, when not -1, override the lengths written in the
	// header (bad input).
	extLen, bodyLen int
}

// bin appends a binary request and its description.
func (b *stepBuilder) bin(r binReq) *stepBuilder {
	b.s.bin = true
	h := make([]byte, 16, binHeader)
	h[0], h[1] = binReqMagic, r.op
	binary.BigEndian.PutUint16(h[2:], uint16(len(r.key)))
	ext, body := len(r.extras), len(r.extras)+len(r.key)+len(r.value)
	if r.extLen >= 0 {
		ext = r.extLen
	}
	if r.bodyLen >= 0 {
		body = r.bodyLen
	}
	h[4] = byte(ext)
	binary.BigEndian.PutUint32(h[8:], uint32(body))
	binary.BigEndian.PutUint32(h[12:], r.opaque)
	b.raw(h)
	if r.hasCAS {
		b.s.pieces = append(b.s.pieces, piece{cas: true, tok: r.casTok, bin: true})
	} else {
		b.raw(make([]byte, 8))
	}
	b.raw(r.extras).raw(r.key).raw(r.value)
	var d strings.Builder
	if b.s.desc != "" {
		d.WriteString(b.s.desc + "; ")
	}
	fmt.Fprintf(&d, "%s opaque=%d", binOpName(r.op), r.opaque)
	if len(r.key) > 0 {
		d.WriteString(" key=" + quoteShort(r.key))
	}
	if len(r.extras) > 0 {
		fmt.Fprintf(&d, " extras=%x", r.extras)
	}
	if len(r.value) > 0 {
		d.WriteString(" value=" + quoteShort(r.value))
	}
	if r.hasCAS {
		d.WriteString(" cas=" + casName(r.casTok))
	}
	if r.extLen >= 0 || r.bodyLen >= 0 {
		fmt.Fprintf(&d, " (header says extlen=%d bodylen=%d)", ext, body)
	}
	b.s.desc = d.String()
	return b
}

// binHeaderOf is a decoded binary response header.
type binHeaderOf struct {
	magic, op byte
	keyLen    uint16
	extLen    byte
	dataType  byte
	status    uint16
	bodyLen   uint32
	opaque    uint32
	cas       uint64
}

func parseBinHeader(h []byte) binHeaderOf {
	return binHeaderOf{
		magic:    h[0],
		op:       h[1],
		keyLen:   binary.BigEndian.Uint16(h[2:]),
		extLen:   h[4],
		dataType: h[5],
		status:   binary.BigEndian.Uint16(h[6:]),
		bodyLen:  binary.BigEndian.Uint32(h[8:]),
		opaque:   binary.BigEndian.Uint32(h[12:]),
		cas:      binary.BigEndian.Uint64(h[16:]),
	}
}

// be32 and be64 encode extras fields.
func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// itoa is strconv.Itoa for int64s.
func itoa(v int64) string { return strconv.FormatInt(v, 10) }
