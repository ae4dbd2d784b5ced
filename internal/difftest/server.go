package difftest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// textSentinel ends every text step: "mn" answers "MN", which nothing else
// does, so the reply of the step's requests is everything before it.
const textSentinel = "mn\r\n"

// server is one side of the comparison: its connections (one text, one
// binary, opened on first use and again after the server closes one) and
// the map between the CAS values it gave and the tokens that stand for
// them in normalized replies.
type server struct {
	name, addr string
	timeout    time.Duration
	text, bin  *conn
	tokens     map[uint64]int // CAS value -> token
	values     []uint64       // token -> CAS value
}

// conn is one connection to a server.
type conn struct {
	nc net.Conn
	r  *bufio.Reader
}

func newServer(name, addr string, timeout time.Duration) *server {
	return &server{name: name, addr: addr, timeout: timeout, tokens: make(map[uint64]int)}
}

// resetTokens forgets every CAS token (after a flush that follows a
// difference, when the two sides' numbering may have diverged).
func (s *server) resetTokens() {
	clear(s.tokens)
	s.values = s.values[:0]
}

// token returns the token of CAS value v, numbering new values in the order
// they first appear.
func (s *server) token(v uint64) int {
	t, ok := s.tokens[v]
	if !ok {
		t = len(s.values)
		s.tokens[v] = t
		s.values = append(s.values, v)
	}
	return t
}

// casOf returns the CAS value of token t.
func (s *server) casOf(t int) (uint64, bool) {
	if t < 0 || t >= len(s.values) {
		return 0, false
	}
	return s.values[t], true
}

// closeConns closes both connections.
func (s *server) closeConns() {
	for _, c := range []**conn{&s.text, &s.bin} {
		if *c != nil {
			(*c).nc.Close()
			*c = nil
		}
	}
}

// connFor returns the open text or binary connection, dialing if needed.
func (s *server) connFor(bin bool) (*conn, error) {
	p := &s.text
	if bin {
		p = &s.bin
	}
	if *p == nil {
		nc, err := net.DialTimeout("tcp", s.addr, s.timeout)
		if err != nil {
			return nil, fmt.Errorf("difftest: dial %s server %s: %w", s.name, s.addr, err)
		}
		*p = &conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	}
	return *p, nil
}

// drop closes and forgets the text or binary connection.
func (s *server) drop(bin bool) {
	p := &s.text
	if bin {
		p = &s.bin
	}
	if *p != nil {
		(*p).nc.Close()
		*p = nil
	}
}

// do sends st followed by the sentinel and returns the normalized reply. A
// closed connection, a timeout or an unparsable reply ends the reply with a
// marker frame (and closes the connection, so that the next step dials
// again).
func (s *server) do(st *step) []frame {
	c, err := s.connFor(st.bin)
	if err != nil {
		return []frame{marker(err.Error())}
	}
	req := st.build(s.casOf)
	if st.bin {
		req = append(req, binSentinel()...)
	} else {
		req = append(req, textSentinel...)
	}
	c.nc.SetDeadline(time.Now().Add(s.timeout))
	// Write while reading: a big request can meet a big reply, and neither
	// side's socket buffers hold both.
	wrote := make(chan error, 1)
	go func() {
		_, err := c.nc.Write(req)
		wrote <- err
	}()
	var frames []frame
	if st.bin {
		frames, err = s.readBinary(c)
	} else {
		frames, err = s.readText(c, st.mn)
	}
	if err != nil {
		c.nc.Close() // unblocks the writer
	}
	<-wrote // a write error shows as a read error or a closed connection
	if err != nil {
		s.drop(st.bin)
		frames = append(frames, marker(describeReadError(err, s.timeout)))
	}
	return collapseStats(frames)
}

// errDesync is returned when a reply cannot be parsed any further.
var errDesync = errors.New("unparsable reply")

// describeReadError names a read error in a marker: a closed connection
// reads the same whether the peer sent FIN or RST.
func describeReadError(err error, timeout time.Duration) string {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection closed"
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Sprintf("no complete reply within %v", timeout)
	}
	return err.Error()
}

// binSentinel is the noop every binary step ends with.
func binSentinel() []byte {
	var b stepBuilder
	b.bin(binReq{op: opNoop, opaque: sentinelOpaque, extLen: -1, bodyLen: -1})
	return b.s.build(func(int) (uint64, bool) { return 0, true })
}
