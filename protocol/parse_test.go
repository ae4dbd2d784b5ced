package protocol

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestSafeStrtoNumbers(t *testing.T) {
	tests := []struct {
		in      string
		u64     uint64
		u64ok   bool
		u32     uint32
		i32     int32
		i32ok   bool
		comment string
	}{
		{"0", 0, true, 0, 0, true, ""},
		{"42", 42, true, 42, 42, true, ""},
		{"+7", 7, true, 7, 7, true, "plus sign"},
		{"\t5", 5, true, 5, 5, true, "leading white space"},
		{"5\tjunk", 5, true, 5, 5, true, "white space ends the number"},
		{"5x", 0, false, 0, 0, false, "junk after the digits"},
		{"", 0, false, 0, 0, false, "empty"},
		{"-", 0, false, 0, 0, false, "sign alone"},
		{"-1", 0, false, 0, -1, true, "negative: unsigned refuses"},
		{"-0", 0, true, 0, 0, true, "minus zero"},
		{"4294967296", 4294967296, true, 0, 0, true, "2^32 truncates to 0"},
		{"4294967295", 4294967295, true, 4294967295, -1, true, "truncates to -1 signed"},
		{"18446744073709551615", math.MaxUint64, true, math.MaxUint32, 0, false, "2^64-1: over int64"},
		{"18446744073709551616", 0, false, 0, 0, false, "2^64 overflows"},
		{"9223372036854775808", 1 << 63, true, 0, 0, false, "2^63: over int64"},
		{"-9223372036854775808", 0, false, 0, 0, true, "int64 min, 0 in 32 bits"},
		{"-18446744073709551615", 1, true, 1, 0, false, "negated huge is 1 unsigned, as strtoull"},
	}
	for _, tc := range tests {
		u64, ok := safeStrtoull([]byte(tc.in))
		if ok != tc.u64ok || (ok && u64 != tc.u64) {
			t.Errorf("safeStrtoull(%q) = %d, %v; want %d, %v (%s)", tc.in, u64, ok, tc.u64, tc.u64ok, tc.comment)
		}
		if u32, ok := safeStrtoul([]byte(tc.in)); ok != tc.u64ok || (ok && u32 != tc.u32) {
			t.Errorf("safeStrtoul(%q) = %d, %v; want %d, %v (%s)", tc.in, u32, ok, tc.u32, tc.u64ok, tc.comment)
		}
		if i32, ok := safeStrtol([]byte(tc.in)); ok != tc.i32ok || (ok && i32 != tc.i32) {
			t.Errorf("safeStrtol(%q) = %d, %v; want %d, %v (%s)", tc.in, i32, ok, tc.i32, tc.i32ok, tc.comment)
		}
	}
}

func TestTokenize(t *testing.T) {
	many := strings.TrimSpace(strings.Repeat("k ", 30))
	tests := []struct {
		line     string
		want     []string
		wantRest string
	}{
		{"get a b", []string{"get", "a", "b"}, ""},
		{"  set  a\t0 ", []string{"set", "a\t0"}, ""},
		{"", nil, ""},
		{"   ", nil, ""},
		{many, strings.Fields(many)[:23], strings.Repeat("k ", 6) + "k"},
	}
	for _, tc := range tests {
		toks, rest := tokenize([]byte(tc.line), nil)
		var got []string
		for _, tk := range toks {
			got = append(got, string(tk))
		}
		if !slices.Equal(got, tc.want) || string(rest) != tc.wantRest {
			t.Errorf("tokenize(%q) = %q, rest %q; want %q, rest %q", tc.line, got, rest, tc.want, tc.wantRest)
		}
	}
}

func TestBase64Decode(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"YWJj", "abc", true},
		{"YQ==", "a", true},
		{"YWI=", "ab", true},
		{"YQ", "", false},
		{"YQ=", "", false},
		{"!!YQ==!!", "a", true}, // memcached skips bytes outside the alphabet
		{"YQ==YWJj", "a", true}, // and stops after padding
		{"====", "", false},
		{"A===", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		got, ok := base64Decode(nil, []byte(tc.in))
		if ok != tc.ok || (ok && string(got) != tc.want) {
			t.Errorf("base64Decode(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestItemSizes(t *testing.T) {
	classes := slabClasses(1 << 20)
	tests := []struct {
		nkey        int
		flags       uint32
		vlen        int64
		total       int64
		class       int
		tooLargeFor bool
	}{
		{1, 0, 2, 62, 1, false},
		{1, 1, 2, 66, 1, false},
		{1, 0, 1000, 1060, 12, false},
		{1, 0, 500000, 500060, 39, false},   // chunked: the largest class
		{1, 0, 1048516, 1 << 20, 39, false}, // the largest value memcached -I 1m takes
		{1, 0, 1048517, 1<<20 + 1, 39, true},
		{2, 0, 1048516, 1<<20 + 1, 39, true},
		{1, 0, -1, 59, 1, true},
	}
	for _, tc := range tests {
		if got := itemTotal(tc.nkey, tc.flags, tc.vlen); got != tc.total {
			t.Errorf("itemTotal(%d, %d, %d) = %d, want %d", tc.nkey, tc.flags, tc.vlen, got, tc.total)
		}
		if got := tooLarge(tc.nkey, tc.flags, tc.vlen, 1<<20); got != tc.tooLargeFor {
			t.Errorf("tooLarge(%d, %d, %d) = %v, want %v", tc.nkey, tc.flags, tc.vlen, got, tc.tooLargeFor)
		}
		if got := slabClass(classes, tc.total); tc.vlen >= 0 && got != tc.class {
			t.Errorf("slabClass(total %d) = %d, want %d", tc.total, got, tc.class)
		}
	}
	if len(classes) != 40 || classes[1] != 96 || classes[7] != 384 || classes[39] != 524288 {
		t.Errorf("slab classes %v: want memcached's 39 default classes (96, ..., 384 at 7, 524288 at 39)", classes)
	}
}

// TestAppendDecimal checks the reply's decimal numbers around the short
// paths' bounds against strconv.
func TestAppendDecimal(t *testing.T) {
	for _, v := range []uint64{0, 1, 9, 10, 11, 42, 99, 100, 101, 999, 4294967295, 1<<64 - 1} {
		if got, want := string(appendDecimal([]byte("x"), v)), "x"+strconv.FormatUint(v, 10); got != want {
			t.Errorf("appendDecimal(%d) = %q, want %q", v, got, want)
		}
	}
}
