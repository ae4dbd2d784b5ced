package difftest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// maxReplyData bounds one value or body read from a reply, so that a
// garbled length cannot make the reader allocate without limit.
const maxReplyData = 64 << 20

// frame is one element of a normalized reply: a text line (without its
// "\r\n") and the data block that follows it, or a rendered binary
// response and its value, or a marker such as "<connection closed>".
type frame struct {
	line    string
	data    []byte
	hasData bool
	// For learning CAS tokens: the token in the frame (-1: none), the key a
	// text VALUE line or binary response names, a binary response's opaque.
	tok    int
	key    string
	opaque uint32
}

// marker is a frame that reports something other than server output.
func marker(what string) frame { return frame{line: "<" + what + ">", tok: -1} }

// String renders the frame for a report.
func (f frame) String() string {
	if !f.hasData {
		return strconv.Quote(f.line)
	}
	return strconv.Quote(f.line) + " + data " + quoteShort(f.data) + " (" + strconv.Itoa(len(f.data)) + " bytes)"
}

// readText reads text and meta replies up to the sentinel's "MN", the
// one after the mn answers of the step's own meta no-ops.
func (s *server) readText(c *conn, mn int) ([]frame, error) {
	var out []frame
	for {
		line, crlf, err := readLine(c)
		if err != nil {
			return out, err
		}
		if line == "MN" && mn > 0 {
			mn--
		} else if line == "MN" {
			if !crlf {
				out = append(out, marker(`"MN" ended by "\n" alone`))
			}
			return out, nil
		}
		f := s.normText(line)
		if !crlf {
			f.line += ` <ended by "\n" alone>`
		}
		if n, ok := dataLen(line); ok {
			buf := make([]byte, n+2)
			if _, err := io.ReadFull(c.r, buf); err != nil {
				return append(out, f), err
			}
			f.data, f.hasData = buf[:n], true
			if string(buf[n:]) != "\r\n" {
				f.line += fmt.Sprintf(" <data followed by %q, not \\r\\n>", buf[n:])
				return append(out, f), errDesync
			}
		}
		out = append(out, f)
	}
}

// readLine reads one line and reports whether it ended in "\r\n".
func readLine(c *conn) (string, bool, error) {
	var line []byte
	for {
		chunk, err := c.r.ReadSlice('\n')
		line = append(line, chunk...)
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull || len(line) > 1<<20 {
			if err == bufio.ErrBufferFull {
				err = errDesync
			}
			return string(line), false, err
		}
	}
	line = line[:len(line)-1]
	crlf := bytes.HasSuffix(line, []byte("\r"))
	if crlf {
		line = line[:len(line)-1]
	}
	return string(line), crlf, nil
}

// dataLen returns the length of the data block that follows a text VALUE
// line or a meta VA line.
func dataLen(line string) (int, bool) {
	f := strings.Split(line, " ")
	var n string
	switch {
	case f[0] == "VALUE" && (len(f) == 4 || len(f) == 5):
		n = f[3]
	case f[0] == "VA" && len(f) >= 2:
		n = f[1]
	default:
		return 0, false
	}
	v, err := strconv.Atoi(n)
	if err != nil || v < 0 || v > maxReplyData {
		return 0, false
	}
	return v, true
}

// normText normalizes a text or meta reply line: the CAS of a VALUE line
// (gets, gats) and a meta c flag become tokens, a meta l flag loses its
// value (seconds since last access depend on timing), the version string
// goes.
func (s *server) normText(line string) frame {
	f := frame{line: line, tok: -1}
	w := strings.Split(line, " ")
	switch w[0] {
	case "VALUE":
		if len(w) >= 2 {
			f.key = w[1]
		}
		if len(w) == 5 {
			if v, err := strconv.ParseUint(w[4], 10, 64); err == nil && v != 0 {
				f.tok = s.token(v)
				w[4] = casName(f.tok)
			}
		}
	case "VERSION":
		if len(w) > 1 {
			return frame{line: "VERSION <version>", tok: -1}
		}
	case "VA", "HD", "EN", "NF", "NS", "EX":
		for i := 1; i < len(w); i++ {
			t := w[i]
			if len(t) < 2 || !isDigits(t[1:]) {
				continue
			}
			switch t[0] {
			case 'c':
				if v, err := strconv.ParseUint(t[1:], 10, 64); err == nil && v != 0 {
					f.tok = s.token(v)
					w[i] = "c" + casName(f.tok)
				}
			case 'l':
				w[i] = "l<seconds>"
			}
		}
	default:
		return f
	}
	f.line = strings.Join(w, " ")
	return f
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// readBinary reads binary responses up to the sentinel noop's.
func (s *server) readBinary(c *conn) ([]frame, error) {
	var out []frame
	h := make([]byte, binHeader)
	for {
		if _, err := io.ReadFull(c.r, h); err != nil {
			return out, err
		}
		hd := parseBinHeader(h)
		if hd.magic != binResMagic {
			return append(out, marker(fmt.Sprintf("bad response magic in header %x", h))), errDesync
		}
		if hd.bodyLen > maxReplyData {
			return append(out, marker(fmt.Sprintf("body length %d in header %x", hd.bodyLen, h))), errDesync
		}
		body := make([]byte, hd.bodyLen)
		if _, err := io.ReadFull(c.r, body); err != nil {
			return out, err
		}
		if hd.op == opNoop && hd.opaque == sentinelOpaque {
			return out, nil
		}
		out = append(out, s.normBinary(hd, body))
	}
}

// normBinary renders a binary response with its CAS as a token and a
// version string removed.
func (s *server) normBinary(hd binHeaderOf, body []byte) frame {
	f := frame{tok: -1, opaque: hd.opaque}
	var b strings.Builder
	fmt.Fprintf(&b, "%s status=%s opaque=%d cas=", binOpName(hd.op), binStatusName(hd.status), hd.opaque)
	if hd.cas == 0 {
		b.WriteString("0")
	} else {
		f.tok = s.token(hd.cas)
		b.WriteString(casName(f.tok))
	}
	if hd.dataType != 0 {
		fmt.Fprintf(&b, " datatype=%d", hd.dataType)
	}
	ext, key := int(hd.extLen), int(hd.keyLen)
	if ext+key > len(body) {
		fmt.Fprintf(&b, " <extlen %d + keylen %d > bodylen %d> body=%q", ext, key, len(body), body)
		f.line = b.String()
		return f
	}
	if ext > 0 {
		fmt.Fprintf(&b, " extras=%x", body[:ext])
	}
	if key > 0 {
		f.key = string(body[ext : ext+key])
		b.WriteString(" key=" + strconv.Quote(f.key))
	}
	value := body[ext+key:]
	switch {
	case hd.op == opVersion && hd.status == 0:
		b.WriteString(" value=<version>")
	case (hd.op == opIncr || hd.op == opDecr || hd.op == opIncrQ || hd.op == opDecrQ) && hd.status == 0 && len(value) == 8:
		fmt.Fprintf(&b, " value=%d", uint64FromBE(value))
	case len(value) > 0:
		f.data, f.hasData = value, true
	}
	f.line = b.String()
	return f
}

func uint64FromBE(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// collapseStats replaces the body of a stats reply, which differs between
// servers, by one frame: text STAT lines ending with END become
// "STAT ... END"; binary stat responses become one frame that says whether
// the empty-key terminator came.
func collapseStats(frames []frame) []frame {
	out := frames[:0:0]
	for i := 0; i < len(frames); i++ {
		f := frames[i]
		switch {
		case strings.HasPrefix(f.line, "STAT "):
			j := i
			for j < len(frames) && strings.HasPrefix(frames[j].line, "STAT ") {
				j++
			}
			if j < len(frames) && frames[j].line == "END" {
				out = append(out, frame{line: "STAT ... END", tok: -1})
				i = j
				continue
			}
		case strings.HasPrefix(f.line, "stat status=ok "):
			j := i
			for j < len(frames) && strings.HasPrefix(frames[j].line, "stat status=ok ") && frames[j].key != "" {
				j++
			}
			if j < len(frames) && strings.HasPrefix(frames[j].line, "stat status=ok ") {
				out = append(out, frame{line: "stat status=ok ... (ended by the empty-key stat)", tok: -1})
				i = j
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

// sameReply reports whether two normalized replies agree: equal frames,
// except that meta t flags (seconds left to live) may differ by up to 2.
func sameReply(a, b []frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].hasData != b[i].hasData || !bytes.Equal(a[i].data, b[i].data) || !sameLine(a[i].line, b[i].line) {
			return false
		}
	}
	return true
}

// sameLine compares two normalized lines, allowing meta t flags to differ
// by up to 2 seconds.
func sameLine(a, b string) bool {
	if a == b {
		return true
	}
	wa, wb := strings.Split(a, " "), strings.Split(b, " ")
	if len(wa) != len(wb) {
		return false
	}
	switch wa[0] {
	case "VA", "HD", "EN", "NF", "NS", "EX":
	default:
		return false
	}
	for i := range wa {
		if wa[i] == wb[i] {
			continue
		}
		x, y := wa[i], wb[i]
		if i == 0 || len(x) < 2 || len(y) < 2 || x[0] != 't' || y[0] != 't' || !isDigits(x[1:]) || !isDigits(y[1:]) {
			return false
		}
		m, _ := strconv.ParseInt(x[1:], 10, 64)
		n, _ := strconv.ParseInt(y[1:], 10, 64)
		if m-n > 2 || n-m > 2 {
			return false
		}
	}
	return true
}
