package stm

import (
	"strings"
	"testing"
)

// TestCommitPathNamesRoundTrip: every path parses from its name, and a
// bad name's error names it and the names taken.
func TestCommitPathNamesRoundTrip(t *testing.T) {
	for _, p := range []CommitPath{CommitAuto, CommitServers, CommitDirect} {
		got, err := ParseCommitPath(p.String())
		if err != nil || got != p {
			t.Errorf("ParseCommitPath(%q) = %v, %v; want %v", p.String(), got, err, p)
		}
	}
	_, err := ParseCommitPath("lazy")
	if err == nil || !strings.Contains(err.Error(), `"lazy"`) || !strings.Contains(err.Error(), "auto, servers or direct") {
		t.Errorf("ParseCommitPath(lazy): %v, want an error naming it and the paths", err)
	}
}

// TestOpenRejectsBadCommitPaths: a path out of range, and direct commits
// with a server commit mode, fail Open with errors that say why.
func TestOpenRejectsBadCommitPaths(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Device: "cpu", Commit: CommitDirect + 1}, "commit path 3"},
		{Options{Device: "cpu", Commit: -1}, "commit path -1"},
		{Options{Device: "cpu", Commit: CommitDirect, ServerCommit: ServerCommitRetry}, "server commit mode retry"},
		{Options{Device: "cpu", Chain: MaxChain + 1}, "9 passes of chained attempts"},
	} {
		e, err := Open(tc.o)
		if err == nil {
			e.Close()
			t.Errorf("Open(%+v) succeeded, want an error containing %q", tc.o, tc.want)
		} else if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%+v): %v, want it to contain %q", tc.o, err, tc.want)
		}
	}
}

// TestCommitAutoChoosesDirectUnlessServersAreAsked: CommitAuto commits
// directly unless the workload is at least AutoServersReadOnly read-only,
// writes more than AutoDirectWrites items or sets an option only the
// servers use; an explicit path wins.
func TestCommitAutoChoosesDirectUnlessServersAreAsked(t *testing.T) {
	spec := func(ro float64, rounds ...int) *workloadSpec {
		b := Bank{Accounts: 1000, Initial: 100, ReadOnly: ro, ReadSize: 10}
		if len(rounds) > 0 {
			b.Rounds = rounds[0]
		}
		sp, err := b.spec()
		if err != nil {
			t.Fatal(err)
		}
		return sp
	}
	updates, mostlyReads := spec(0), spec(0.99)
	for _, tc := range []struct {
		name string
		o    Options
		sp   *workloadSpec
		want bool
	}{
		{"defaults, updates", Options{}, updates, true},
		{"defaults, 90% read-only", Options{}, spec(0.9), true},
		{"defaults, 99% read-only", Options{}, mostlyReads, false},
		{"defaults, 8 rounds (16 writes)", Options{}, spec(0, 8), true},
		{"defaults, 16 rounds (32 writes)", Options{}, spec(0, 16), false},
		{"direct asked, 16 rounds", Options{Commit: CommitDirect}, spec(0, 16), true},
		{"servers set", Options{Config: Config{Servers: 2}}, updates, false},
		{"log size set", Options{Config: Config{LogSize: 64}}, updates, false},
		{"log writes set", Options{Config: Config{LogWrites: 64}}, updates, false},
		{"server warps set", Options{ServerWarps: 8}, updates, false},
		{"stripes set", Options{Stripe: 10}, updates, false},
		{"contention set", Options{Contention: ContentionOff}, updates, false},
		{"server commit set", Options{ServerCommit: ServerCommitWriteBack}, updates, false},
		{"throttle and refresh set", Options{Throttle: 0.5, Refresh: 3}, updates, true},
		{"direct asked, 99% read-only", Options{Commit: CommitDirect}, mostlyReads, true},
		{"direct asked, servers set", Options{Commit: CommitDirect, Config: Config{Servers: 2}}, updates, true},
		{"servers asked, updates", Options{Commit: CommitServers}, updates, false},
	} {
		if got := tc.o.direct(tc.sp); got != tc.want {
			t.Errorf("%s: direct %v, want %v", tc.name, got, tc.want)
		}
	}
}
