package main

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// scriptModel applies the lines of "warpkv art run" or "warpkv btree run"
// one at a time to a Go map and prints what the command must print: the
// two scripts share their verbs and output and differ only in how a key is
// written (parse, format) and in art's prefix verb (hasPrefix nil: none).
type scriptModel[K cmp.Ordered] struct {
	m         map[K]uint64
	parse     func(string) K
	format    func(K) string
	hasPrefix func(k, p K) bool
}

// artScriptModel is the model of "warpkv art run": keys written 0x<hex>.
func artScriptModel() *scriptModel[string] {
	return &scriptModel[string]{
		m: map[string]uint64{},
		parse: func(s string) string {
			var b []byte
			fmt.Sscanf(s, "0x%x", &b) // "0x" alone leaves b empty
			return string(b)
		},
		format:    func(k string) string { return fmt.Sprintf("0x%x", k) },
		hasPrefix: strings.HasPrefix,
	}
}

// btreeScriptModel is the model of "warpkv btree run": keys decimal uint64.
func btreeScriptModel() *scriptModel[uint64] {
	return &scriptModel[uint64]{
		m:      map[uint64]uint64{},
		parse:  func(s string) uint64 { return decimal[uint64](s) },
		format: func(k uint64) string { return fmt.Sprint(k) },
	}
}

// decimal parses s as a decimal number (0 when it is not one).
func decimal[T uint64 | int](s string) T {
	var v T
	fmt.Sscan(s, &v)
	return v
}

// pairs prints verb, the count and the sorted pairs that keep accepts, at
// most limit of them (0 or less: no limit).
func (m *scriptModel[K]) pairs(out *strings.Builder, verb string, keep func(K) bool, limit int) {
	keys := make([]K, 0, len(m.m))
	for k := range m.m {
		if keep(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	fmt.Fprintf(out, "%s %d\n", verb, len(keys))
	for _, k := range keys {
		fmt.Fprintf(out, "%s %d\n", m.format(k), m.m[k])
	}
}

// apply applies one script line and writes its output to out.
func (m *scriptModel[K]) apply(line string, out *strings.Builder) {
	f := strings.Fields(line)
	switch f[0] {
	case "put":
		m.m[m.parse(f[1])] = decimal[uint64](f[2])
	case "upd":
		if _, ok := m.m[m.parse(f[1])]; ok {
			m.m[m.parse(f[1])] = decimal[uint64](f[2])
		}
	case "del":
		delete(m.m, m.parse(f[1]))
	case "get":
		k := m.parse(f[1])
		if v, ok := m.m[k]; ok {
			fmt.Fprintf(out, "%s %d\n", m.format(k), v)
		} else {
			fmt.Fprintf(out, "%s -\n", m.format(k))
		}
	case "len":
		fmt.Fprintln(out, len(m.m))
	case "range":
		lo, hi := f[1], f[2]
		m.pairs(out, "range", func(k K) bool {
			return (lo == "*" || k >= m.parse(lo)) && (hi == "*" || k < m.parse(hi))
		}, decimal[int](f[3]))
	case "prefix":
		if m.hasPrefix != nil {
			p := m.parse(f[1])
			m.pairs(out, "prefix", func(k K) bool { return m.hasPrefix(k, p) }, decimal[int](f[2]))
		}
	}
}

// scriptFile returns a random run file of at least n lines and the output
// m prints for it: runs of 1 to 6 lines of one verb drawn from verbs, a
// comment line now and then; a point verb (put, upd, del, get) is written
// by pointLine on a key from key, any other by other. randomARTFile and
// randomBTreeFile are this loop with their keys and their range lines.
func scriptFile[K cmp.Ordered](r *rand.Rand, n int, verbs []string, m *scriptModel[K], key func() string, other func(verb string) string) (string, string) {
	var in, out strings.Builder
	for strings.Count(in.String(), "\n")+1 <= n { // the lines strings.Split would give, without its slice per line
		verb := verbs[r.IntN(len(verbs))]
		for range 1 + r.IntN(6) {
			var line string
			switch verb {
			case "put", "upd", "del", "get":
				line = pointLine(r, verb, key())
			default:
				line = other(verb)
			}
			if r.IntN(20) == 0 {
				in.WriteString("\n# a comment\n")
			}
			in.WriteString(line + "\n")
			m.apply(line, &out)
		}
	}
	return in.String(), out.String()
}
