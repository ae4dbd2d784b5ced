package difftest

import (
	"strconv"
)

// textStep returns a text protocol step: one command, or two to four
// pipelined in one write.
func (g *gen) textStep() step { return g.pipelinedStep(10, true, g.textCommand) }

// noreply returns " noreply" sometimes.
func (g *gen) noreply() string {
	if g.chance(15) {
		return " noreply"
	}
	return ""
}

// textCommand appends one text command on key k, the request at position
// pos of the step, to b and may return a follow-up step (a cas on the key
// after a gets).
func (g *gen) textCommand(b *stepBuilder, k string, pos int) func() step {
	r := g.r.IntN(100)
	if r >= 64 && r < 72 && !g.counterOK(k, pos) {
		r = 0 // a get instead of incr or decr
	}
	switch {
	case r < 10:
		b.str("get ", g.textKeys(k), "\r\n")
	case r < 16:
		b.str("gets ", g.textKeys(k), "\r\n")
		if g.chance(50) {
			return func() step { return g.textCAS(k) }
		}
	case r < 19:
		b.str("gat ", itoa(g.exptime()), " ", g.textKeys(k), "\r\n")
	case r < 22:
		b.str("gats ", itoa(g.exptime()), " ", g.textKeys(k), "\r\n")
	case r < 36:
		g.textStore(b, "set", k, storeSet)
	case r < 40:
		g.textStore(b, "add", k, storeMaybe)
	case r < 44:
		g.textStore(b, "replace", k, storeMaybe)
	case r < 49:
		g.textStore(b, "append", k, storeConcat)
	case r < 53:
		g.textStore(b, "prepend", k, storeConcat)
	case r < 58:
		s := g.textCAS(k)
		b.s.pieces = append(b.s.pieces, s.pieces...)
	case r < 64:
		b.str("delete ", k, g.noreply(), "\r\n")
	case r < 72:
		cmd, d := pick(g, "incr", "decr"), g.delta()
		g.noteCount(k, cmd == "incr", d, 0)
		b.str(cmd, " ", k, " ", strconv.FormatUint(d, 10), g.noreply(), "\r\n")
	case r < 76:
		b.str("touch ", k, " ", itoa(g.exptime()), g.noreply(), "\r\n")
	case r < 78:
		b.str(pick(g, "flush_all", "flush_all 0", "flush_all -1", "flush_all noreply", "flush_all 0 noreply"), "\r\n")
	case r < 80:
		b.str("version\r\n")
	case r < 82:
		b.str("verbosity ", pick(g, "0", "1", "0 noreply"), "\r\n")
	case r < 84:
		b.str("stats\r\n")
	default:
		// Counters: set a number, then incr or decr it, so that the
		// in-place rewrite with trailing spaces and the wrap at 2^64
		// show.
		v := pick(g, "100", "10", "9223372036854775807", "5", "1000000")
		b.str("set ", k, " 0 0 ", strconv.Itoa(len(v)), "\r\n", v, "\r\n")
		cmd, d := pick(g, "incr", "decr"), g.delta()
		b.str(cmd, " ", k, " ", strconv.FormatUint(d, 10), "\r\n")
		b.str("get ", k, "\r\n")
		n, _ := strconv.ParseUint(v, 10, 64)
		if cmd == "incr" {
			n += d
		} else {
			n -= min(n, d)
		}
		g.big[k] = n >= 1<<62
	}
	return nil
}

// textKeys returns k, sometimes followed by up to five more keys
// (duplicates allowed) for a multi-key get.
func (g *gen) textKeys(k string) string {
	if !g.chance(30) {
		return k
	}
	s := k
	for range 1 + g.r.IntN(5) {
		s += " " + g.key(true)
	}
	return s
}

// textStore appends a set, add, replace, append or prepend on k, a store
// of the given kind (see noteStore).
func (g *gen) textStore(b *stepBuilder, cmd, k string, kind int) {
	v := g.value()
	g.noteStore(k, kind, v)
	b.str(cmd, " ", k, " ", strconv.FormatUint(uint64(g.flags()), 10), " ", itoa(g.exptime()), " ",
		strconv.Itoa(len(v)), g.noreply(), "\r\n")
	b.raw(v).str("\r\n")
}

// textCAS returns a step with a cas command on k.
func (g *gen) textCAS(k string) step {
	var b stepBuilder
	v := g.value()
	g.noteStore(k, storeMaybe, v)
	b.str("cas ", k, " ", strconv.FormatUint(uint64(g.flags()), 10), " ", itoa(g.exptime()), " ",
		strconv.Itoa(len(v)), " ")
	if g.chance(10) {
		b.str("0")
	} else {
		b.cas(g.casFor(k))
	}
	b.str(g.noreply(), "\r\n").raw(v).str("\r\n")
	b.s.keys = []string{k}
	return b.done()
}
