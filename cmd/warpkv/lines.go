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

// lineBatcher runs the operation files of "warpkv art run" and "warpkv
// btree run" on a lineReader: one operation a line, blank lines and lines
// starting with # skipped; consecutive operations of one verb go to flush
// as one batch, in file order, at most max of them (0: no limit) and, when
// size is set, of at most budget bytes as size counts them. A line parse
// rejects, or one longer than maxLine, is an error naming its line number,
// after the batch before it has been flushed: the lines before it ran,
// nothing after it does. Memory: the line reader's and one batch.
type lineBatcher[T any] struct {
	tool    string                          // "art", "btree": the errors' prefix
	max     int                             // most operations per batch (0: no limit)
	maxLine int                             // longest line accepted, in bytes
	why     string                          // what bounds a line (newLineReader)
	budget  int                             // most bytes per batch, with size
	size    func(T) int                     // bytes an operation holds (nil: no budget)
	parse   func(string) (T, string, error) // one line: its operation and verb
	flush   func([]T) error                 // applies a batch and prints its answers
	pending []T
	verb    string
	bytes   int // of pending, as size counts them
}

// run reads and applies every line of in. Cost: one parse per line and one
// flush per batch.
func (b *lineBatcher[T]) run(in io.Reader) error {
	lr := newLineReader(in, b.maxLine, b.why)
	for {
		text, line, ok := lr.record()
		if !ok {
			break
		}
		op, verb, err := b.parse(text)
		if err != nil {
			if ferr := b.send(); ferr != nil {
				return ferr
			}
			return fmt.Errorf("%s: line %d: %v (the lines before it ran; nothing after it did)", b.tool, line, err)
		}
		n := 0
		if b.size != nil {
			n = b.size(op)
		}
		if len(b.pending) > 0 && (verb != b.verb || (b.max > 0 && len(b.pending) == b.max) ||
			(b.size != nil && b.bytes+n > b.budget)) {
			if err := b.send(); err != nil {
				return err
			}
		}
		b.pending, b.verb, b.bytes = append(b.pending, op), verb, b.bytes+n
	}
	if err := lr.Err(); err != nil {
		if ferr := b.send(); ferr != nil {
			return ferr
		}
		if errors.Is(err, errLineTooLong) {
			return fmt.Errorf("%s: %v (the lines before it ran; nothing after it did)", b.tool, err)
		}
		return fmt.Errorf("%s: reading input: %w", b.tool, err)
	}
	return b.send()
}

// send flushes the pending batch, if any.
func (b *lineBatcher[T]) send() error {
	ops := b.pending
	b.pending, b.bytes = b.pending[:0], 0
	if len(ops) == 0 {
		return nil
	}
	return b.flush(ops)
}
