package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestLineReader checks line endings, lines longer than the reader's
// buffer, a last line without a newline, and a line over the limit
// (refused with its number, nothing after it read).
func TestLineReader(t *testing.T) {
	long := strings.Repeat("x", 200<<10) // over the 64 KiB buffer
	for _, tc := range []struct {
		name, in string
		max      int
		want     []string
		tooLong  int // line number of the refused line, 0 for none
	}{
		{"empty", "", 10, nil, 0},
		{"endings", "a\r\nb\n\nc", 10, []string{"a", "b", "", "c"}, 0},
		{"one newline", "\n", 10, []string{""}, 0},
		{"long lines", long + "\n" + long, len(long), []string{long, long}, 0},
		{"at the limit with CRLF", "12345\r\n", 5, []string{"12345"}, 0},
		{"one past the limit", "1\n123456\n2\n", 5, []string{"1"}, 2},
		{"far past the limit", "1\n" + long + "\n2\n", 100, []string{"1"}, 2},
		{"last line past the limit", "1\n" + long, 100, []string{"1"}, 2},
	} {
		lr := newLineReader(strings.NewReader(tc.in), tc.max, "why")
		var got []string
		for {
			text, n, ok := lr.next()
			if !ok {
				break
			}
			if n != len(got)+1 {
				t.Errorf("%s: line %d numbered %d", tc.name, len(got)+1, n)
			}
			got = append(got, string(text))
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: lines %.80q, want %.80q", tc.name, got, tc.want)
		}
		err := lr.Err()
		switch {
		case tc.tooLong == 0 && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.tooLong != 0 && (!errors.Is(err, errLineTooLong) ||
			!strings.Contains(err.Error(), fmt.Sprintf("line %d: line too long: longer than %d bytes (why)", tc.tooLong, tc.max))):
			t.Errorf("%s: error %v, want line %d too long", tc.name, err, tc.tooLong)
		}
	}
}

// TestLineReaderRecord checks that record skips blank and comment lines,
// trims white space and keeps the lines' numbers.
func TestLineReaderRecord(t *testing.T) {
	lr := newLineReader(strings.NewReader("\n# c\n  a b \r\n\t\n #x\nc"), 10, "why")
	var got []string
	for {
		text, n, ok := lr.record()
		if !ok {
			break
		}
		got = append(got, fmt.Sprintf("%d:%s", n, text))
	}
	if want := "[3:a b 6:c]"; fmt.Sprint(got) != want || lr.Err() != nil {
		t.Fatalf("records %q, err %v; want %s", got, lr.Err(), want)
	}
}

// TestLineBatcher checks how lineBatcher cuts batches (by verb, by count,
// by bytes) and that a bad line and a line over the limit end the run with
// their numbers after the batch before them ran.
func TestLineBatcher(t *testing.T) {
	for _, tc := range []struct {
		name, in    string
		max, budget int // budget 0: no size function
		want        string
		err         string
	}{
		{"by verb", "a 1\na 2\n# c\n\nb 3\na 4\n", 0, 0, "[a1 a2] [b3] [a4]", ""},
		{"by count", "a 1\na 2\na 3\na 4\na 5\n", 2, 0, "[a1 a2] [a3 a4] [a5]", ""},
		{"by bytes", "a 1\na 22\na 3\na 4444\na 5\n", 0, 3, "[a1 a22] [a3] [a4444] [a5]", ""},
		{"bad line", "a 1\na 2\nbad\na 3\n", 0, 0, "[a1 a2]", "demo: line 3: bad line (the lines before it ran; nothing after it did)"},
		{"too long", "a 1\n" + strings.Repeat("a", 20) + "\na 2\n", 0, 0, "[a1]",
			"demo: line 2: line too long: longer than 10 bytes (why) (the lines before it ran; nothing after it did)"},
	} {
		var got []string
		b := &lineBatcher[string]{tool: "demo", max: tc.max, maxLine: 10, why: "why",
			parse: func(text string) (string, string, error) {
				verb, arg, ok := strings.Cut(text, " ")
				if !ok {
					return "", "", errors.New("bad line")
				}
				return verb + arg, verb, nil
			},
			flush: func(ops []string) error { got = append(got, fmt.Sprint(ops)); return nil }}
		if tc.budget > 0 {
			b.size, b.budget = func(op string) int { return len(op) - 1 }, tc.budget
		}
		msg := ""
		if err := b.run(strings.NewReader(tc.in)); err != nil {
			msg = err.Error()
		}
		if strings.Join(got, " ") != tc.want || msg != tc.err {
			t.Errorf("%s: batches %q, error %q; want %s and %q", tc.name, got, msg, tc.want, tc.err)
		}
	}
}
