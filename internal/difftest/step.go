package difftest

import (
	"encoding/binary"
	"strconv"
	"strings"
)

// badCAS is the CAS a step sends where it wants one that no item has: far
// above any counter a server reaches in a test.
const badCAS uint64 = 1<<60 + 12345

// piece is part of a request: literal bytes, or a CAS value that each
// server gets in its own form (the value it gave for token tok, or badCAS
// when tok < 0), in decimal (text) or as 8 big-endian bytes (binary).
type piece struct {
	lit []byte
	cas bool
	tok int
	bin bool
}

// step is one unit of a sequence: the requests written to a server in one
// write (more than one when pipelined), followed by the connection's
// sentinel, and the reply read up to the sentinel's answer.
type step struct {
	bin    bool    // binary protocol (else text and meta)
	pieces []piece // the bytes to write
	desc   string  // readable form, for binary steps (text steps quote their bytes)
	// keys[i] is the key of binary request with opaque i+1 (binary) or of
	// the step's only meta request (text), for learning CAS tokens.
	keys []string
	// mn is the number of meta no-ops among the requests: their "MN"
	// answers come before the sentinel's.
	mn int
}

// build returns the step's bytes for a server whose CAS for token i is
// cas(i).
func (s *step) build(cas func(tok int) (uint64, bool)) []byte {
	var b []byte
	for _, p := range s.pieces {
		if !p.cas {
			b = append(b, p.lit...)
			continue
		}
		v := badCAS
		if p.tok >= 0 {
			if c, ok := cas(p.tok); ok {
				v = c
			}
		}
		if p.bin {
			b = binary.BigEndian.AppendUint64(b, v)
		} else {
			b = strconv.AppendUint(b, v, 10)
		}
	}
	return b
}

// String renders the step for a report: text steps as quoted bytes (long
// runs shortened) with CAS values as <cas#N>, binary steps by their desc.
func (s *step) String() string {
	if s.bin || len(s.pieces) == 0 {
		return s.desc
	}
	var b strings.Builder
	var lit []byte
	flush := func() {
		if len(lit) > 0 {
			b.WriteString(quoteShort(lit))
			lit = lit[:0]
		}
	}
	for _, p := range s.pieces {
		if !p.cas {
			lit = append(lit, p.lit...)
			continue
		}
		flush()
		b.WriteString(casName(p.tok))
	}
	flush()
	return b.String()
}

// casName names a CAS token in reports.
func casName(tok int) string {
	if tok < 0 {
		return "<bad cas>"
	}
	return "<cas#" + strconv.Itoa(tok) + ">"
}

// quoteShort quotes b as a Go string, keeping only the start and end of
// runs longer than 160 bytes.
func quoteShort(b []byte) string {
	const keep = 160
	if len(b) <= keep {
		return strconv.Quote(string(b))
	}
	return strconv.Quote(string(b[:keep-40])) + "..(" + strconv.Itoa(len(b)-keep) + " bytes).." + strconv.Quote(string(b[len(b)-40:]))
}

// stepBuilder assembles a step.
type stepBuilder struct {
	s step
}

// str appends literal text.
func (b *stepBuilder) str(parts ...string) *stepBuilder {
	for _, p := range parts {
		b.raw([]byte(p))
	}
	return b
}

// raw appends literal bytes.
func (b *stepBuilder) raw(p []byte) *stepBuilder {
	n := len(b.s.pieces)
	if n > 0 && !b.s.pieces[n-1].cas {
		b.s.pieces[n-1].lit = append(b.s.pieces[n-1].lit, p...)
		return b
	}
	b.s.pieces = append(b.s.pieces, piece{lit: append([]byte(nil), p...)})
	return b
}

// cas appends the CAS of token tok (badCAS when tok < 0) in decimal.
func (b *stepBuilder) cas(tok int) *stepBuilder {
	b.s.pieces = append(b.s.pieces, piece{cas: true, tok: tok})
	return b
}

// done returns the step.
func (b *stepBuilder) done() step { return b.s }
