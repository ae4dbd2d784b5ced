package stm

import (
	"strings"
	"testing"
	"time"
)

func TestStagesString(t *testing.T) {
	s := ServerStats{Requests: 4, LockWait: 8 * time.Microsecond, TurnHold: 4 * time.Microsecond, WorkerTime: 80 * time.Microsecond,
		Stages: RequestStages{Ring: 40 * time.Microsecond, Load: 4 * time.Microsecond,
			Validate: 12 * time.Microsecond, FinalCheck: 2 * time.Microsecond, Reply: 6 * time.Microsecond, Busy: 40 * time.Microsecond,
			InServer: 100 * time.Microsecond, Client: 108 * time.Microsecond, ClientReplies: 4}}
	got := s.String()
	for _, want := range []string{"ring 10µs", "load 1µs", "validate 3µs", "turn wait 2µs", "own turn 1µs",
		"final check 500ns", "reply 1.5µs", "busy 10µs on one (50% of the workers' time)", "reply 27µs after sending (the server replied at 25µs)"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(ServerStats{Requests: 4}.String(), "per request") {
		t.Error("stages printed without being timed")
	}
}

// TestRoundPhasesPer checks a round's split: each phase's mean per round,
// and the rest (the round less its phases), never negative.
func TestRoundPhasesPer(t *testing.T) {
	p := RoundPhases{Ticket: 2 * time.Microsecond, Body: 20 * time.Microsecond, Check: 4 * time.Microsecond, Lock: 6 * time.Microsecond,
		Validate: 2 * time.Microsecond, WriteBack: 4 * time.Microsecond, Publish: 8 * time.Microsecond}
	want := "tickets 1µs, bodies 10µs, check 2µs, lock 3µs, validate 1µs, write-back 2µs, publish 4µs, rest 1µs"
	if got := p.Per(2, 48*time.Microsecond); got != want {
		t.Errorf("Per(2, 48µs) = %q, want %q", got, want)
	}
	if got := p.Per(2, 40*time.Microsecond); !strings.HasSuffix(got, "rest 0s") {
		t.Errorf("Per(2, 40µs), a round shorter than its phases = %q, want rest 0s", got)
	}
	if got := p.Per(0, 0); got != "" {
		t.Errorf("Per(0, 0) = %q, want empty", got)
	}
}

// TestChainString checks the chained attempts' and ticket moves' phrase
// that ServerStats.String and the benchmarks' notes share.
func TestChainString(t *testing.T) {
	for _, c := range []struct {
		name string
		s    ServerStats
		want string
	}{
		{"neither", ServerStats{}, ""},
		{"chained", ServerStats{Chained: 7, ChainCommits: 5}, "7 lost or held-back update attempts chained, 5 of them committed"},
		{"migrated", ServerStats{Migrated: 3}, "3 tickets migrated to the warp holding their lock"},
		{"both", ServerStats{Chained: 2, ChainCommits: 2, Migrated: 9},
			"2 lost or held-back update attempts chained, 2 of them committed; 9 tickets migrated to the warp holding their lock"},
	} {
		if got := c.s.ChainString(); got != c.want {
			t.Errorf("%s: ChainString() = %q, want %q", c.name, got, c.want)
		}
		if got := c.s.String(); c.want != "" && !strings.Contains(got, "; "+c.want) {
			t.Errorf("%s: String() = %q lacks %q", c.name, got, c.want)
		}
	}
}
