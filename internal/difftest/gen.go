package difftest

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/warpkv/warpkv/kv"
)

// Value size bounds.
const (
	largeMax    = 600 << 10          // largest value that fits under -I 1m
	overLimit   = 1<<20 + 1<<10      // a value just over the 1 MiB limit
	randomBlock = overLimit + 64<<10 // random bytes values are cut from
)

// key is a key of the pool.
type key struct {
	name string
	text bool // usable as a text or meta key (no space, CR or LF)
}

// gen generates steps from a seed. The steps it makes depend on the
// replies only through the CAS tokens it learns, which are equal on both
// servers as long as their replies agree.
type gen struct {
	r       *rand.Rand
	cfg     Config
	keys    []key
	block   []byte         // random bytes for values
	lastCAS map[string]int // key -> token of the CAS last seen for it
	ntok    int            // tokens seen so far
	pending []func() step  // follow-up steps (a cas after a gets)
	now     int64          // unix time at the start, for absolute expiries
	// big marks keys whose value may be a counter of 2^62 or more. No
	// incr or decr goes to them: memcached 1.6.18 checks such a value for
	// a minus sign with strchr, which runs past the value into whatever
	// memory follows, so its answer is not reproducible.
	big map[string]bool
}

func newGen(cfg Config) *gen {
	g := &gen{
		r:       rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15)),
		cfg:     cfg,
		lastCAS: make(map[string]int),
		big:     make(map[string]bool),
		now:     time.Now().Unix(),
	}
	for i := range cfg.Keys {
		g.keys = append(g.keys, key{name: "k" + strconv.Itoa(i), text: true})
	}
	g.keys = append(g.keys,
		key{name: strings.Repeat("L", 250), text: true},
		key{name: "ctl\x01\x7f\tkey", text: true},
		key{name: "sp ace\x00\xff", text: false},
	)
	n := randomBlock
	if cfg.NoLarge {
		n = 8 << 10
	}
	g.block = make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := g.r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			g.block[i+j] = byte(v >> (8 * j))
		}
	}
	return g
}

// reset forgets the learned tokens (after both servers were flushed and
// their token maps reset).
func (g *gen) reset() {
	clear(g.lastCAS)
	g.ntok = 0
	g.pending = nil
}

// endSequence drops follow-ups that belong to the sequence that ended;
// the next starts from an empty cache.
func (g *gen) endSequence() {
	g.pending = nil
	clear(g.big)
}

// next returns the next step.
func (g *gen) next() step {
	if n := len(g.pending); n > 0 {
		f := g.pending[0]
		g.pending = g.pending[1:]
		return f()
	}
	if !g.cfg.NoBadInput && g.r.IntN(100) < 4 {
		return g.badInput()
	}
	var ps []Protocols
	for _, p := range []Protocols{Text, Meta, Binary} {
		if g.cfg.Protocols&p != 0 {
			ps = append(ps, p)
		}
	}
	switch ps[g.r.IntN(len(ps))] {
	case Text:
		return g.textStep()
	case Meta:
		return g.metaStep()
	}
	return g.binaryStep()
}

// learn records the CAS tokens of a reply (the side that was compared, so
// equal on both servers).
func (g *gen) learn(st *step, frames []frame) {
	for _, f := range frames {
		if f.tok < 0 {
			continue
		}
		g.ntok = max(g.ntok, f.tok+1)
		switch {
		case f.key != "":
			g.lastCAS[f.key] = f.tok
		case st.bin && f.opaque >= 1 && int(f.opaque) <= len(st.keys):
			if k := st.keys[f.opaque-1]; k != "" {
				g.lastCAS[k] = f.tok
			}
		case !st.bin && len(st.keys) == 1:
			g.lastCAS[st.keys[0]] = f.tok
		}
	}
}

// counterOK reports whether an incr or decr on key k may be the request at
// position pos of a step. Only the first request of a pipeline may be one:
// memcached rewrites a counter in place (padding with spaces) only when
// nothing else holds the item, and the reply to an earlier get in the same
// pipeline still holds it.
func (g *gen) counterOK(k string, pos int) bool { return pos == 0 && !g.big[k] }

// Ways a request may write a key, for noteStore.
const (
	storeSet    = iota // replaces the value (set)
	storeMaybe         // may replace it (add, replace, cas)
	storeConcat        // adds to it (append, prepend)
)

// noteStore tracks whether key k may now hold a counter of 2^62 or more
// after a request of the given kind with value v.
func (g *gen) noteStore(k string, kind int, v []byte) {
	switch kind {
	case storeSet:
		g.big[k] = isBig(v)
	case storeMaybe:
		g.big[k] = g.big[k] || isBig(v)
	default:
		g.big[k] = g.big[k] || bytes.ContainsAny(v, "0123456789")
	}
}

// noteCount tracks an incr or decr (or a vivifying one with initial) on k.
func (g *gen) noteCount(k string, incr bool, delta, initial uint64) {
	if incr && delta >= 1<<62 || initial >= 1<<62 {
		g.big[k] = true
	}
}

// isBig reports whether v parses as a counter of 2^62 or more.
func isBig(v []byte) bool {
	n, ok := kv.ParseCounter(v)
	return ok && n >= 1<<62
}

// casFor picks the CAS token to send for key k: usually the last one seen
// for it, sometimes another (stale) token or one no item has (-1).
func (g *gen) casFor(k string) int {
	r := g.r.IntN(10)
	if t, ok := g.lastCAS[k]; ok && r < 7 {
		return t
	}
	if g.ntok > 0 && r < 9 {
		return g.r.IntN(g.ntok)
	}
	return -1
}

// pick returns a random element of xs.
func pick[T any](g *gen, xs ...T) T { return xs[g.r.IntN(len(xs))] }

// chance reports true with probability pct percent.
func (g *gen) chance(pct int) bool { return g.r.IntN(100) < pct }

// key returns a key from the pool, text-safe when text is set; ordinary
// keys are drawn far more often than the special ones.
func (g *gen) key(text bool) string {
	for {
		var k key
		if g.chance(90) {
			k = g.keys[g.r.IntN(g.cfg.Keys)]
		} else {
			k = g.keys[g.cfg.Keys+g.r.IntN(len(g.keys)-g.cfg.Keys)]
		}
		if k.text || !text {
			return k.name
		}
	}
}

// counterValues are values that incr and decr parse, or almost do.
var counterValues = []string{
	"0", "1", "42", "100", "18446744073709551615", "9223372036854775807",
	" 12", "12 ", "-0", "-1", "+5", "007", "1.5", "abc", "12abc", "",
	"18446744073709551616", "\t7", "99999999999999999999", "4611686018427387903",
}

// trickyValues look like replies or commands.
var trickyValues = []string{
	"a\r\nb", "END\r\n", "VALUE k0 0 1\r\nx\r\nEND\r\n", "MN\r\n", "HD\r\n",
	"STORED", "x\r\n\r\n", "\r\nEND",
}

// value returns a random value: counters, short text, binary bytes,
// reply-like text, up to 4 KiB random bytes, and rarely large ones. It
// never returns a value of white space only: memcached 1.6.18's incr and
// decr parse such a value past its end, into whatever memory follows, so
// their answer is not reproducible.
func (g *gen) value() []byte {
	for {
		v := g.anyValue()
		if len(v) == 0 || !allSpace(v) {
			return v
		}
	}
}

// allSpace reports whether b holds only C white space.
func allSpace(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\v', '\f', '\r':
		default:
			return false
		}
	}
	return true
}

// anyValue returns a random value for value.
func (g *gen) anyValue() []byte {
	r := g.r.IntN(1000)
	switch {
	case r < 250:
		return []byte(pick(g, counterValues...))
	case r < 450:
		b := make([]byte, g.r.IntN(33))
		for i := range b {
			b[i] = byte('a' + g.r.IntN(26))
		}
		return b
	case r < 600:
		return append([]byte(nil), g.slice(g.r.IntN(65))...)
	case r < 680:
		return []byte(pick(g, trickyValues...))
	case r < 960 || g.cfg.NoLarge:
		return g.slice(33 + g.r.IntN(4096-32))
	case r < 995:
		return g.slice(4096 + g.r.IntN(largeMax-4096))
	}
	return g.slice(overLimit)
}

// slice returns n bytes of the random block at a random offset.
func (g *gen) slice(n int) []byte {
	off := g.r.IntN(len(g.block) - n + 1)
	return g.block[off : off+n : off+n]
}

// exptime returns a memcached expiry: mostly none; expired at once
// (negative, or an absolute time in the past); an hour, or the longest
// relative expiry, or an absolute time two hours ahead. Nothing expires
// during a test.
func (g *gen) exptime() int64 {
	switch r := g.r.IntN(100); {
	case r < 70:
		return 0
	case r < 76:
		return -1
	case r < 79:
		return -1 - g.r.Int64N(1<<31-1)
	case r < 87:
		return 3600
	case r < 90:
		return 30 * 86400
	case r < 95:
		return g.now + 7200
	}
	return 30*86400 + 1 // absolute: 1970
}

// recache returns an mg R token: an expiry as exptime draws it, but never
// one of exptime's relative expiries (an hour, 30 days), which an item may
// have been stored with: such an item wins the token exactly when the
// server's clock ticked between the store and the get, and the two servers
// need not agree on that (seed 6091209679446812591 once failed so, and
// passed when replayed). Half an hour more keeps the decision the same
// for every stored expiry: an hour's item wins, a 30-day one does not (30
// days and a half hour is an absolute time in 1970, which no item outlives).
func (g *gen) recache() int64 {
	r := g.exptime()
	if r == 3600 || r == 30*86400 {
		r += 1800
	}
	return r
}

// flags returns item flags: mostly 0, else small or any 32-bit value.
func (g *gen) flags() uint32 {
	switch r := g.r.IntN(10); {
	case r < 6:
		return 0
	case r < 8:
		return uint32(g.r.IntN(100))
	}
	return g.r.Uint32()
}

// delta returns an incr or decr amount.
func (g *gen) delta() uint64 {
	switch r := g.r.IntN(10); {
	case r < 6:
		return uint64(1 + g.r.IntN(10))
	case r < 8:
		return uint64(g.r.IntN(1000))
	case r < 9:
		return 1 << 63
	}
	return 1<<64 - 1
}

// pipelinedStep returns a step of one command or, with probability pct
// percent, of two to four pipelined in one write. command appends the
// command at position pos of the step on key k (text-safe when textKeys)
// to b and may return a follow-up step, which is queued when the step has
// one command; a one-command step records its key.
func (g *gen) pipelinedStep(pct int, textKeys bool, command func(b *stepBuilder, k string, pos int) func() step) step {
	var b stepBuilder
	n := 1
	if g.chance(pct) {
		n = 2 + g.r.IntN(3)
	}
	for pos := range n {
		k := g.key(textKeys)
		follow := command(&b, k, pos)
		if n == 1 {
			b.s.keys = []string{k}
			if follow != nil {
				g.pending = append(g.pending, follow)
			}
		}
	}
	return b.done()
}
