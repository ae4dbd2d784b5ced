package difftest

import (
	"encoding/base64"
	"strconv"
	"strings"
)

// metaStep returns a meta protocol step: one command, or two to four
// pipelined (often quiet) in one write.
func (g *gen) metaStep() step { return g.pipelinedStep(12, false, g.metaCommand) }

// metaKey returns the key token and the b flag for key k: base64 for a
// key that is not text-safe, and sometimes for one that is (memcached
// 1.6.18 marks an item stored with b and returns its key in base64 to mg k
// and me, even to a plain request), else plain.
func (g *gen) metaKey(k string, text bool) (string, string) {
	if !text || g.chance(15) {
		return base64.StdEncoding.EncodeToString([]byte(k)), " b"
	}
	return k, ""
}

// metaFlags returns some of the given flags in random order, each with
// probability pct percent, each preceded by a space.
func (g *gen) metaFlags(bflag string, pct int, flags ...string) string {
	g.r.Shuffle(len(flags), func(i, j int) { flags[i], flags[j] = flags[j], flags[i] })
	s := ""
	for _, f := range flags {
		if g.chance(pct) {
			s += " " + f
		}
	}
	return s
}

// opaque returns an O flag sometimes.
func (g *gen) opaque() string {
	if g.chance(20) {
		return " O" + strconv.Itoa(g.r.IntN(1000))
	}
	return ""
}

// metaCommand appends one meta command on key k, the request at position
// pos of the step, to b and may return a follow-up step (a
// compare-and-swap after an mg that asked for the CAS).
func (g *gen) metaCommand(b *stepBuilder, k string, pos int) func() step {
	text := isTextKey(k)
	kt, bflag := g.metaKey(k, text)
	r := g.r.IntN(100)
	if r >= 75 && r < 95 && !g.counterOK(k, pos) {
		r = 0 // an mg instead of an ma
	}
	switch {
	case r < 35:
		flags := g.metaFlags(bflag, 40, "v", "c", "f", "k", "s", "t", "h", "l") + g.metaFlags(bflag, 15, "q", "u")
		switch {
		case g.chance(10):
			flags += " T" + itoa(g.exptime())
		case g.chance(10):
			// Vivify (never with T: on a miss memcached gives the created
			// item the TTL of whichever of T and N comes last). An expiry
			// already past makes memcached report a TTL counted from its
			// own start: not with t.
			exp := g.exptime()
			if exp < 0 || exp > 30*86400 && exp < g.now {
				if strings.Contains(flags, " t") {
					exp = 3600
				}
			}
			flags += " N" + itoa(exp)
		}
		if g.chance(10) {
			flags += " R" + itoa(g.recache())
		}
		b.str("mg ", kt, bflag, flags, g.opaque(), "\r\n")
		if g.chance(40) {
			return func() step { return g.metaCAS(k) }
		}
	case r < 65:
		g.metaSet(b, k, kt, bflag, false)
	case r < 75:
		b.str("md ", kt, bflag, g.metaFlags(bflag, 20, "q", "k"), g.opaque())
		if g.chance(30) {
			b.str(" C").cas(g.casFor(k))
		}
		if g.chance(15) { // invalidate: mark stale, maybe with a new TTL
			b.str(" I")
			if g.chance(50) {
				b.str(" T" + itoa(g.exptime()))
			}
		}
		b.str("\r\n")
	case r < 95:
		b.str("ma ", kt, bflag, g.metaFlags(bflag, 30, "t", "c", "v", "k")+g.metaFlags(bflag, 15, "q"), g.opaque())
		if g.chance(40) {
			b.str(" N" + itoa(g.exptime()))
		}
		initial, delta, mode := uint64(0), uint64(1), "I"
		if g.chance(40) {
			initial = pick[uint64](g, 0, 13, 1<<64-1)
			b.str(" J" + strconv.FormatUint(initial, 10))
		}
		if g.chance(60) {
			delta = g.delta()
			b.str(" D" + strconv.FormatUint(delta, 10))
		}
		if g.chance(40) {
			mode = pick(g, "I", "i", "+", "D", "d", "-")
			b.str(" M" + mode)
		}
		g.noteCount(k, mode != "D" && mode != "-", delta, initial)
		// No T flag: memcached 1.6.18 applies it only where the new
		// digits fit the old value (in place); a counter that grows keeps
		// its old expiry, though the reply shows the new one.
		if g.chance(15) {
			b.str(" C").cas(g.casFor(k))
		}
		b.str("\r\n")
	default:
		b.str("mn\r\n")
		b.s.mn++
	}
	return nil
}

// metaSet appends an ms on k (key token kt): a mode, flags, TTL, and a CAS
// to compare when withCAS (or sometimes anyway).
func (g *gen) metaSet(b *stepBuilder, k, kt, bflag string, withCAS bool) {
	v := g.value()
	if len(kt) > maxKeyLen && len(v) > 64 {
		// A key token over 250 bytes (a long key in base64) is refused
		// before the value's length is read, so the value is read as
		// commands; how many ERROR lines memcached 1.6.18 sends for a large
		// one before it closes the connection changes from run to run
		// (1094 and 1245 for the same 307,790 bytes), so such a value is
		// kept short.
		v = v[:64]
	}
	b.str("ms ", kt, " ", strconv.Itoa(len(v)), bflag, g.metaFlags(bflag, 30, "c", "k")+g.metaFlags(bflag, 15, "q"), g.opaque())
	if g.chance(40) {
		b.str(" F" + strconv.FormatUint(uint64(g.flags()), 10))
	}
	if g.chance(30) {
		b.str(" T" + itoa(g.exptime()))
	}
	mode := "S"
	if g.chance(50) {
		mode = pick(g, "S", "E", "A", "P", "R", "s", "e", "a", "p", "r")
		b.str(" M" + mode)
	}
	cas := withCAS || g.chance(15)
	if cas {
		b.str(" C").cas(g.casFor(k))
		if g.chance(25) {
			b.str(" I") // an older CAS stores a stale value
		}
	}
	b.str("\r\n").raw(v).str("\r\n")
	switch {
	case mode == "A" || mode == "P":
		g.noteStore(k, storeConcat, v)
	case mode == "S" && !cas:
		g.noteStore(k, storeSet, v)
	default:
		g.noteStore(k, storeMaybe, v)
	}
}

// metaCAS returns a step with an ms, md or ma on k that compares the CAS.
func (g *gen) metaCAS(k string) step {
	var b stepBuilder
	kt, bflag := g.metaKey(k, isTextKey(k))
	switch g.r.IntN(4) {
	case 0:
		b.str("md ", kt, bflag, " C").cas(g.casFor(k)).str("\r\n")
	case 1:
		if !g.counterOK(k, 0) {
			b.str("md ", kt, bflag, " C").cas(g.casFor(k)).str("\r\n")
			break
		}
		b.str("ma ", kt, bflag, " v C").cas(g.casFor(k)).str("\r\n")
	default:
		g.metaSet(&b, k, kt, bflag, true)
	}
	b.s.keys = []string{k}
	return b.done()
}

// isTextKey reports whether k can appear as a text or meta key.
func isTextKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c == ' ' || c == '\r' || c == '\n' || c == 0 {
			return false
		}
	}
	return k != ""
}
