package loadgen

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Binary protocol opcodes and sizes used here.
const (
	binReqMagic = 0x80
	binResMagic = 0x81
	binHeader   = 24
	opSet       = 0x01
	opGetK      = 0x0c
	opGetKQ     = 0x0d
)

// errDesync is returned for a reply that cannot be parsed, after which
// the connection's stream is lost.
var errDesync = errors.New("unparsable reply")

// codec writes requests and parses replies of one protocol on one
// connection. It reuses its buffers: no allocation per request. One
// goroutine may write while another reads.
type codec struct {
	proto     Protocol
	bw        *bufio.Writer
	br        *bufio.Reader
	key       []byte          // scratch key of the workload's key size
	value     []byte          // the value every set writes
	setSuffix []byte          // text: " 0 0 <len>\r\n"
	metaLen   []byte          // meta: " <len>\r\n"
	whdr      [binHeader]byte // the writer's
	extras    [8]byte         // a binary set's extras: flags 0, no expiry
	rhdr      [binHeader]byte // the reader's
}

func newCodec(proto Protocol, rw io.ReadWriter, keySize int, value []byte) *codec {
	return &codec{
		proto:     proto,
		bw:        bufio.NewWriterSize(rw, 64<<10),
		br:        bufio.NewReaderSize(rw, 64<<10),
		key:       make([]byte, keySize),
		value:     value,
		setSuffix: []byte(" 0 0 " + strconv.Itoa(len(value)) + "\r\n"),
		metaLen:   []byte(" " + strconv.Itoa(len(value)) + "\r\n"),
	}
}

// writeGet buffers a get of the keys next() returns, count of them, with
// opaque tagging the binary requests.
func (c *codec) writeGet(count int, next func() uint64, opaque uint32) {
	if c.proto == Binary {
		for i := range count {
			putKey(c.key, next())
			op := byte(opGetKQ)
			if i == count-1 {
				op = opGetK // not quiet: its answer ends the request's replies
			}
			c.writeBinHeader(op, 0, len(c.key), opaque)
			c.bw.Write(c.key)
		}
		return
	}
	if c.proto == Meta {
		if count == 1 {
			putKey(c.key, next())
			c.bw.WriteString("mg ")
			c.bw.Write(c.key)
			c.bw.WriteString(" v\r\n")
			return
		}
		for range count {
			putKey(c.key, next())
			c.bw.WriteString("mg ")
			c.bw.Write(c.key)
			c.bw.WriteString(" v q\r\n") // q: no reply to a miss
		}
		c.bw.WriteString("mn\r\n")
		return
	}
	c.bw.WriteString("get")
	for range count {
		putKey(c.key, next())
		c.bw.WriteByte(' ')
		c.bw.Write(c.key)
	}
	c.bw.WriteString("\r\n")
}

// writeSet buffers a set of key index i to the workload's value.
func (c *codec) writeSet(i uint64, opaque uint32) {
	putKey(c.key, i)
	if c.proto == Binary {
		c.writeBinHeader(opSet, 8, len(c.key)+len(c.value), opaque)
		c.bw.Write(c.extras[:])
		c.bw.Write(c.key)
		c.bw.Write(c.value)
		return
	}
	if c.proto == Meta {
		c.bw.WriteString("ms ")
		c.bw.Write(c.key)
		c.bw.Write(c.metaLen)
		c.bw.Write(c.value)
		c.bw.WriteString("\r\n")
		return
	}
	c.bw.WriteString("set ")
	c.bw.Write(c.key)
	c.bw.Write(c.setSuffix)
	c.bw.Write(c.value)
	c.bw.WriteString("\r\n")
}

// writeBinHeader buffers a binary request header.
func (c *codec) writeBinHeader(op byte, extLen, keyAndValue int, opaque uint32) {
	h := &c.whdr
	*h = [binHeader]byte{}
	h[0], h[1] = binReqMagic, op
	binary.BigEndian.PutUint16(h[2:], uint16(len(c.key)))
	h[4] = byte(extLen)
	binary.BigEndian.PutUint32(h[8:], uint32(extLen+keyAndValue))
	binary.BigEndian.PutUint32(h[12:], opaque)
	c.bw.Write(h[:])
}

// readGet reads the replies of a get of count keys and returns the hits and
// the replies that were errors (a hit of the wrong length, or an error
// line).
func (c *codec) readGet(count int) (hits, errs int, err error) {
	if c.proto == Binary {
		for {
			op, status, valueLen, err := c.readBinary()
			if err != nil {
				return hits, errs, err
			}
			switch {
			case status == 1: // not found: a miss
			case status == 0 && valueLen == len(c.value):
				hits++
			default:
				errs++
			}
			if op == opGetK {
				return hits, errs, nil
			}
			if op != opGetKQ || hits+errs > count {
				return hits, errs, fmt.Errorf("binary get: response opcode %#x: %w", op, errDesync)
			}
		}
	}
	if c.proto == Meta {
		return c.readMetaGet(count)
	}
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return hits, errs, fmt.Errorf("get: %w", err)
		}
		switch {
		case bytes.HasPrefix(line, []byte("VALUE ")):
			n, ok := valueLen(line)
			if !ok {
				return hits, errs, fmt.Errorf("get: line %q: %w", line, errDesync)
			}
			if _, err := c.br.Discard(n + 2); err != nil {
				return hits, errs, fmt.Errorf("get: %w", err)
			}
			if n == len(c.value) {
				hits++
			} else {
				errs++
			}
		case string(line) == "END\r\n":
			return hits, errs, nil
		default: // an error line ends the reply
			return hits, errs + 1, nil
		}
	}
}

// readMetaGet reads the replies of a meta get of count keys: "VA <len>"
// and the value per hit, "EN" for the miss of a single get; a multi-get
// ends at "MN" (its misses are quiet).
func (c *codec) readMetaGet(count int) (hits, errs int, err error) {
	for {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			return hits, errs, fmt.Errorf("meta get: %w", err)
		}
		switch {
		case bytes.HasPrefix(line, []byte("VA ")):
			n, ok := metaValueLen(line)
			if !ok {
				return hits, errs, fmt.Errorf("meta get: line %q: %w", line, errDesync)
			}
			if _, err := c.br.Discard(n + 2); err != nil {
				return hits, errs, fmt.Errorf("meta get: %w", err)
			}
			if n == len(c.value) {
				hits++
			} else {
				errs++
			}
		case string(line) == "EN\r\n":
		case string(line) == "MN\r\n":
			return hits, errs, nil
		default: // an error line
			errs++
		}
		if count == 1 && string(line) != "MN\r\n" {
			return hits, errs, nil
		}
		if hits+errs > count {
			return hits, errs, fmt.Errorf("meta get: more than %d replies: %w", count, errDesync)
		}
	}
}

// metaValueLen parses the length of "VA <len> <flags>*\r\n".
func metaValueLen(line []byte) (int, bool) {
	n := -1
	for _, c := range line[3:] {
		if c < '0' || c > '9' {
			break
		}
		n = max(n, 0)*10 + int(c-'0')
		if n > 1<<30 {
			return 0, false
		}
	}
	return n, n >= 0
}

// readSet reads the reply of a set and reports whether it stored.
func (c *codec) readSet() (bool, error) {
	if c.proto == Binary {
		op, status, _, err := c.readBinary()
		if err == nil && op != opSet {
			err = fmt.Errorf("binary set: response opcode %#x: %w", op, errDesync)
		}
		return status == 0, err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return false, fmt.Errorf("set: %w", err)
	}
	if c.proto == Meta {
		return string(line) == "HD\r\n", nil
	}
	return string(line) == "STORED\r\n", nil
}

// readBinary reads one binary response and returns its opcode, status and
// value length, skipping its body.
func (c *codec) readBinary() (op byte, status uint16, valueLen int, err error) {
	h := &c.rhdr
	if _, err := io.ReadFull(c.br, h[:]); err != nil {
		return 0, 0, 0, fmt.Errorf("binary response: %w", err)
	}
	if h[0] != binResMagic {
		return 0, 0, 0, fmt.Errorf("binary response magic %#x: %w", h[0], errDesync)
	}
	body := int(binary.BigEndian.Uint32(h[8:]))
	valueLen = body - int(binary.BigEndian.Uint16(h[2:])) - int(h[4])
	if _, err := c.br.Discard(body); err != nil {
		return 0, 0, 0, fmt.Errorf("binary response: %w", err)
	}
	return h[1], binary.BigEndian.Uint16(h[6:]), valueLen, nil
}

// valueLen parses the byte count of "VALUE <key> <flags> <bytes>[ <cas>]\r\n".
func valueLen(line []byte) (int, bool) {
	field, n := 0, -1
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == ' ' {
			field++
			continue
		}
		if field != 3 {
			continue
		}
		if c == '\r' || c == '\n' {
			break
		}
		if c < '0' || c > '9' {
			return 0, false
		}
		n = max(n, 0)*10 + int(c-'0')
		if n > 1<<30 {
			return 0, false
		}
	}
	return n, n >= 0
}
