package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// lineReader reads the numbered lines of an input file for "warpkv art
// run" and "warpkv mpt": lines of any length up to max bytes (without the
// line ending), and a clear error naming the line and the limit for a
// longer one, where bufio.Scanner would stop at its buffer size with
// "token too long". Memory: a 64 KiB buffer plus the longest line read.
type lineReader struct {
	r    *bufio.Reader
	max  int
	why  string // what bounds a line, said when one is too long
	line int    // number of the last line read (from 1)
	buf  []byte
	err  error
}

// errLineTooLong is wrapped by the error of a line longer than the limit.
var errLineTooLong = errors.New("line too long")

// newLineReader returns a reader of in's lines of at most max bytes; why
// says what bounds them ("keys are at most 65535 bytes").
func newLineReader(in io.Reader, max int, why string) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(in, 1<<16), max: max, why: why}
}

// next returns the next line without its "\n" or "\r\n" and its number
// (from 1); ok is false at the end of the input or on an error (Err). The
// line is valid until the next call.
func (l *lineReader) next() (text []byte, number int, ok bool) {
	if l.err != nil {
		return nil, l.line, false
	}
	l.buf = l.buf[:0]
	long := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !long {
			if len(l.buf)+len(chunk) > l.max+2 { // room for "\r\n"
				long = true
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil && err != io.EOF {
			l.err = err
			return nil, l.line, false
		}
		if err == io.EOF && len(chunk) == 0 && len(l.buf) == 0 && !long {
			l.err = io.EOF
			return nil, l.line, false
		}
		l.line++
		if err == io.EOF {
			l.err = io.EOF // the last line has no newline
		}
		break
	}
	text = l.buf
	if n := len(text); n > 0 && text[n-1] == '\n' {
		text = text[:n-1]
		if n := len(text); n > 0 && text[n-1] == '\r' {
			text = text[:n-1]
		}
	}
	if long || len(text) > l.max {
		l.err = fmt.Errorf("line %d: %w: longer than %d bytes (%s)", l.line, errLineTooLong, l.max, l.why)
		return nil, l.line, false
	}
	return text, l.line, true
}

// record returns the next line that holds something, trimmed of white
// space: blank lines and lines starting with # (comments) are skipped. Its
// number and ok are as next's.
func (l *lineReader) record() (text string, number int, ok bool) {
	for {
		raw, n, ok := l.next()
		if !ok {
			return "", n, false
		}
		if t := strings.TrimSpace(string(raw)); t != "" && !strings.HasPrefix(t, "#") {
			return t, n, true
		}
	}
}

// Err returns the error that ended the reading, nil at the end of the
// input.
func (l *lineReader) Err() error {
	if l.err == io.EOF {
		return nil
	}
	return l.err
}
