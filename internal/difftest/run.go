package difftest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// Run sends random command sequences to two memcached-compatible servers,
// want (the reference, usually a real memcached) and got, and fails tb
// where their replies differ, reporting the seed, the failing sequence's
// steps from its start (an empty cache and fresh connections), the command
// and both replies. Replies are compared after normalization: CAS values
// become tokens numbered in order of first appearance (a CAS sent back to a
// server is the one that server gave), version strings and stats bodies
// are dropped, meta t flags may differ by 2 s and l flags are ignored.
// Run owns both servers while it runs: it flushes them before every
// sequence. Cost: about two round trips per step, plus the values.
func Run(tb testing.TB, want, got string, cfg Config) {
	tb.Helper()
	cfg, err := cfg.withDefaults()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("difftest: seed %d (replay with %s=%d): %d sequences of %d steps, %v, want %s, got %s",
		cfg.Seed, EnvSeed, cfg.Seed, cfg.Sequences, cfg.OpsPerSequence, cfg.Protocols, want, got)
	res := run(want, got, cfg)
	for _, d := range res.diffs {
		tb.Error(d)
	}
	if res.fatal != "" {
		tb.Fatal(res.fatal)
	}
	tb.Logf("difftest: %d steps in %d sequences, %d differences", res.steps, res.sequences, len(res.diffs))
}

// result is what run found.
type result struct {
	steps, sequences int
	diffs            []string // reports of differences
	fatal            string   // why run stopped early, if it did
}

// maxTimeouts is the number of steps that may end in a timeout before run
// gives up on a server that stopped answering.
const maxTimeouts = 3

// run is Run without the testing.TB.
func run(want, got string, cfg Config) result {
	a, b := newServer("want", want, cfg.Timeout), newServer("got", got, cfg.Timeout)
	defer a.closeConns()
	defer b.closeConns()
	g := newGen(cfg)
	var res result
	reported := make(map[string]bool)
	timeouts := 0
	for seq := 1; seq <= cfg.Sequences; seq++ {
		res.sequences++
		if err := startSequence(a, b); err != "" {
			res.fatal = err
			return res
		}
		var hist []string
		used := [2]bool{} // text, binary connections used
		diverged := false
		for i := 1; i <= cfg.OpsPerSequence+2; i++ {
			var st step
			switch {
			case i <= cfg.OpsPerSequence:
				st = g.next()
				used[b2i(st.bin)] = true
			case !used[i-cfg.OpsPerSequence-1]:
				continue
			default:
				// An empty step on each connection used: nothing may be
				// left over before its sentinel's answer.
				st = step{bin: i == cfg.OpsPerSequence+2, desc: "(nothing: checks that no reply is left over)"}
			}
			ra, rb := a.do(&st), b.do(&st)
			res.steps++
			// A step the reference leaves unanswered is a fault of the
			// generator (or of the reference), even where both agree.
			if sameReply(ra, rb) && !hasTimeout(ra) {
				g.learn(&st, ra)
				hist = append(hist, fmt.Sprintf("%3d. %s\n     -> %s", i, st.String(), renderReply(ra)))
				continue
			}
			name := commandName(&st) + diffSignature(ra, rb)
			if !reported[name] {
				reported[name] = true
				res.diffs = append(res.diffs, diffReport(cfg, a, b, seq, i, &st, ra, rb, hist))
			}
			if hasTimeout(ra) || hasTimeout(rb) {
				timeouts++
			}
			diverged = true
			break
		}
		g.endSequence()
		if len(res.diffs) >= cfg.MaxDiffs {
			return res
		}
		if timeouts >= maxTimeouts {
			res.fatal = fmt.Sprintf("difftest: stopped after %d steps that timed out", timeouts)
			return res
		}
		if diverged {
			// The servers may have diverged: the next sequence starts
			// from a flush, and the CAS numbering starts over.
			a.resetTokens()
			b.resetTokens()
			g.reset()
		}
	}
	return res
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// startSequence closes the servers' connections and flushes both over a
// fresh text connection; it returns why it failed, or "".
func startSequence(a, b *server) string {
	flush := (&stepBuilder{}).str("flush_all\r\n").done()
	for _, s := range []*server{a, b} {
		s.closeConns()
		r := s.do(&flush)
		if len(r) != 1 || r[0].line != "OK" {
			return fmt.Sprintf("difftest: flush_all on %s server %s answered %s, want \"OK\"", s.name, s.addr, renderReply(r))
		}
	}
	return ""
}

// commandName names a step's first command, for reporting each kind of
// difference once: "text get", "meta ms", "binary setq".
func commandName(st *step) string {
	if st.bin {
		name, _, _ := strings.Cut(st.desc, " ")
		return "binary " + name
	}
	b := st.build(func(int) (uint64, bool) { return 0, true })
	w, _, _ := strings.Cut(string(b), " ")
	w, _, _ = strings.Cut(w, "\r")
	w, _, _ = strings.Cut(w, "\n")
	if len(w) == 2 && w[0] == 'm' {
		return "meta " + w
	}
	return "text " + w
}

// diffSignature describes where two replies first differ, coarsely enough
// that one fault met again with other keys, values or flags reads the
// same: the first letters of the first words that differ.
func diffSignature(ra, rb []frame) string {
	for i := 0; i < min(len(ra), len(rb)); i++ {
		if ra[i].line == rb[i].line {
			if !bytes.Equal(ra[i].data, rb[i].data) {
				return ": data"
			}
			continue
		}
		wa, wb := strings.Fields(ra[i].line), strings.Fields(rb[i].line)
		for j := 0; j < min(len(wa), len(wb)); j++ {
			if wa[j] != wb[j] {
				return ": " + first(wa[j]) + "/" + first(wb[j])
			}
		}
		return ": words"
	}
	return ": frames"
}

// first returns the letters a word starts with.
func first(w string) string {
	for i, c := range w {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '<') {
			return w[:i]
		}
	}
	return w
}

func hasTimeout(r []frame) bool {
	return len(r) > 0 && strings.HasPrefix(r[len(r)-1].line, "<no complete reply")
}

// renderReply renders a normalized reply on one line.
func renderReply(r []frame) string {
	if len(r) == 0 {
		return "(nothing)"
	}
	s := make([]string, len(r))
	for i, f := range r {
		s[i] = f.String()
	}
	return strings.Join(s, ", ")
}

// diffReport describes a difference.
func diffReport(cfg Config, a, b *server, seq, i int, st *step, ra, rb []frame, hist []string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "difftest: replies differ at sequence %d step %d (seed %d; replay with %s=%d)\n",
		seq, i, cfg.Seed, EnvSeed, cfg.Seed)
	fmt.Fprintf(&s, "the sequence from an empty cache (flush_all) on fresh connections, with want's replies:\n")
	for _, h := range hist {
		s.WriteString(h + "\n")
	}
	fmt.Fprintf(&s, "%3d. %s\n", i, st.String())
	fmt.Fprintf(&s, "     want (%s): %s\n", a.addr, renderReply(ra))
	fmt.Fprintf(&s, "     got  (%s): %s", b.addr, renderReply(rb))
	return s.String()
}
