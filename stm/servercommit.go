package stm

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
)

// serverCommitNames are the modes as ParseServerCommit takes them.
var serverCommitNames = [...]string{"off", "writeback", "retry"}

// String names the mode as ParseServerCommit takes it, e.g. "retry".
func (m ServerCommit) String() string {
	return modeName(serverCommitNames[:], int(m), "servercommit")
}

// ParseServerCommit returns the mode named s: off, writeback or retry.
func ParseServerCommit(s string) (ServerCommit, error) {
	return parseMode[ServerCommit](serverCommitNames[:], s, "server commit")
}
