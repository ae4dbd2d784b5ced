package protocol

import (
	"io"
	"net"
	"slices"
	"strconv"
)

// inlineMax is the longest value copied into the reply buffer; longer ones
// are written from the batch's memory without a copy.
const inlineMax = 2048

// output collects one round's replies in request order: small pieces are
// copied into buf, large values are referenced, and writeTo sends it all
// with one vectored write. The zero value is ready to use.
type output struct {
	buf  []byte
	segs []segment
	mark int // start of the bytes in buf not yet in segs
	n    int // total bytes
	vecs net.Buffers
	wv   net.Buffers // vecs being written (WriteTo consumes its receiver)
}

// segment is a run of buf (ext nil) or an external slice.
type segment struct {
	off, end int
	ext      []byte
}

func (o *output) str(s string) {
	o.buf = append(o.buf, s...)
	o.n += len(s)
}

func (o *output) bytes(b []byte) {
	o.buf = append(o.buf, b...)
	o.n += len(b)
}

func (o *output) byte1(c byte) {
	o.buf = append(o.buf, c)
	o.n++
}

func (o *output) uint(v uint64) {
	l := len(o.buf)
	o.buf = strconv.AppendUint(o.buf, v, 10)
	o.n += len(o.buf) - l
}

func (o *output) int(v int64) {
	l := len(o.buf)
	o.buf = strconv.AppendInt(o.buf, v, 10)
	o.n += len(o.buf) - l
}

// base64 adds the padded base64 encoding of b.
func (o *output) base64(b []byte) {
	l := len(o.buf)
	o.buf = appendBase64(o.buf, b)
	o.n += len(o.buf) - l
}

// value adds an item value, referencing it when large: it must stay
// unchanged until writeTo returns.
func (o *output) value(b []byte) {
	if len(b) <= inlineMax {
		o.bytes(b)
		return
	}
	o.cut()
	o.segs = append(o.segs, segment{ext: b})
	o.n += len(b)
}

// valueLine adds a text get hit: "VALUE <key> <flags> <bytes>[ <cas>]",
// the value and their line ends, with one check of the buffer's room.
func (o *output) valueLine(key []byte, flags uint32, value []byte, cas uint64, withCAS bool) {
	need := len("VALUE ") + len(key) + len(" 4294967295 ") + 10 + len(" 18446744073709551615") + 2*len("\r\n")
	inline := len(value) <= inlineMax
	if inline {
		need += len(value)
	}
	o.buf = slices.Grow(o.buf, need)
	l := len(o.buf)
	b := append(o.buf, "VALUE "...)
	b = append(b, key...)
	b = append(b, ' ')
	b = appendDecimal(b, uint64(flags))
	b = append(b, ' ')
	b = appendDecimal(b, uint64(len(value)))
	if withCAS {
		b = append(b, ' ')
		b = strconv.AppendUint(b, cas, 10)
	}
	b = append(b, "\r\n"...)
	if inline {
		b = append(b, value...)
		b = append(b, "\r\n"...)
	}
	o.buf = b
	o.n += len(b) - l
	if !inline {
		o.value(value)
		o.str("\r\n")
	}
}

// appendDecimal appends v in decimal: numbers under 100 (most flags, short
// values' lengths) without a call.
func appendDecimal(b []byte, v uint64) []byte {
	switch {
	case v < 10:
		return append(b, byte('0'+v))
	case v < 100:
		return append(b, byte('0'+v/10), byte('0'+v%10))
	}
	return strconv.AppendUint(b, v, 10)
}

// cut closes the pending run of buf into a segment.
func (o *output) cut() {
	if len(o.buf) > o.mark {
		o.segs = append(o.segs, segment{off: o.mark, end: len(o.buf)})
		o.mark = len(o.buf)
	}
}

// len returns the number of bytes collected.
func (o *output) len() int { return o.n }

// writeTo writes everything collected to w and empties o.
func (o *output) writeTo(w io.Writer) (int64, error) {
	o.cut()
	o.vecs = o.vecs[:0]
	for _, s := range o.segs {
		if s.ext != nil {
			o.vecs = append(o.vecs, s.ext)
		} else {
			o.vecs = append(o.vecs, o.buf[s.off:s.end])
		}
	}
	o.wv = o.vecs
	n, err := o.wv.WriteTo(w)
	o.reset()
	return n, err
}

// reset empties o, dropping buffers that grew large so that one big reply
// does not pin memory for the life of the connection.
func (o *output) reset() {
	const keep = 256 << 10
	if cap(o.buf) > keep {
		o.buf = nil
	}
	clear(o.segs)
	clear(o.vecs)
	o.buf, o.segs, o.vecs, o.wv = o.buf[:0], o.segs[:0], o.vecs[:0], nil
	o.mark, o.n = 0, 0
}
