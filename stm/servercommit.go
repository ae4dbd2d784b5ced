package stm

import "fmt"

// ServerCommit is who finishes the GPU engine's single-partition commits
// (Options.ServerCommit).
type ServerCommit int

const (
	// ServerCommitOff is the default: a server logs a request's survivors
	// in its turn (or in an earlier request's group) and gives them their
	// final check after passing the turn on; the clients write their
	// versions back and mark their timestamps done after the reply.
	ServerCommitOff ServerCommit = iota
	// ServerCommitWriteBack commits as the default protocol does (groups
	// included), but after a single-partition request's final check its
	// server writes back the survivors' versions and marks every
	// timestamp the request took done (holes too) before the reply; the
	// clients skip their write-back. No client round trip then stands
	// between a commit and its publication.
	ServerCommitWriteBack
	// ServerCommitRetry is ServerCommitWriteBack, and a server's worker
	// also runs again, before the request takes any
	// slot, each update attempt of a single-partition request (of one
	// table load) that failed its first validation for a read-write or
	// write-write conflict: it waits until the commit clock passes the
	// writes the attempt conflicted with, runs its body for its ticket
	// from the clock as snapshot, as the client would, and validates the
	// request again (up to twice). The client's round trip is what it
	// saves; the re-run is validated as any attempt (ServerStats.Rerun).
	ServerCommitRetry
	// ServerCommitPartitionClock keeps the default commit and has the
	// servers keep a clock per partition: the newest timestamp at or
	// before which every commit of the partition is done (each worker,
	// after its reply, walks the log's entries found done since). An
	// update attempt's first access raises its snapshot to its
	// partition's clock when that is newer, so that a transaction of one
	// partition sees its partition's newest commits without waiting for
	// the commit clock, which waits for every partition's; an access to
	// another partition afterwards waits for the commit clock to reach
	// the snapshot. The in-place retries (Options.Refresh) wait for the
	// partition's clock too.
	ServerCommitPartitionClock
	// ServerCommitPartitionClockWriteBack is ServerCommitPartitionClock
	// and ServerCommitWriteBack together.
	ServerCommitPartitionClockWriteBack
)

// serverCommitNames are the modes as ParseServerCommit takes them.
var serverCommitNames = [...]string{"off", "writeback", "retry", "pclock", "pclock-writeback"}

// String names the mode as ParseServerCommit takes it, e.g. "rerun".
func (m ServerCommit) String() string {
	if m >= 0 && int(m) < len(serverCommitNames) {
		return serverCommitNames[m]
	}
	return fmt.Sprintf("servercommit(%d)", int(m))
}

// ParseServerCommit returns the mode named s: off, writeback, retry,
// pclock or pclock-writeback.
func ParseServerCommit(s string) (ServerCommit, error) {
	for i, n := range serverCommitNames {
		if s == n {
			return ServerCommit(i), nil
		}
	}
	return 0, fmt.Errorf("stm: server commit mode %q: want off, writeback, retry, pclock or pclock-writeback", s)
}
