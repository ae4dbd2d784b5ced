package stm

// CommitPath is how the GPU engine commits update transactions
// (Options.Commit). The CPU engine has one path and ignores it.
type CommitPath int

const (
	// CommitAuto is the default: direct commits (CommitDirect), unless
	// the workload is at least AutoServersReadOnly read-only (its first
	// tickets say), its update transactions may write more than
	// AutoDirectWrites items, or an option only the servers use is set
	// (Config.Servers, Config.LogSize, Config.LogWrites, ServerWarps,
	// Stripe, Contention, ServerCommit): then the servers (CommitServers).
	// Result.Direct says which a run took. Measured on an H200
	// (2026-11-30; BENCHMARKS.md, "CSMV commits without servers by
	// default"): direct commits committed 1.66x the servers' rate at 0%
	// read-only of 1M uniform accounts, 1.18x at 90%, 0.95x-1.94x under
	// Zipf 0.99 on 64K accounts (1.94x at 0% read-only) and 1.4x-3.8x on
	// 2 to 8-round transfers at 90% read-only; the servers 1.09x the
	// direct rate at 99% read-only and 1.41x on 16-round transfers at 0%.
	CommitAuto CommitPath = iota
	// CommitServers is CSMV's client-server commit: the client warps send
	// their update transactions to the commit servers, which validate
	// them against their log, order and log them.
	CommitServers
	// CommitDirect has the client warps commit their update transactions
	// themselves, with no server: each locks the words of its write items
	// in the claim table, takes a timestamp (one atomic add a warp),
	// validates its reads against the items' newest writes and locks,
	// installs its versions and releases the locks (TL2's commit over
	// CSMV's multi-version store; the clock still passes timestamps in
	// order). Every guarantee holds. Contention, ServerCommit and the
	// log's size do not apply; the server blocks still start, one SM
	// each, and stay idle. Cost: no server round trip; a lock per written
	// item and one load more per read item.
	CommitDirect
)

// AutoDirectWrites is the largest write set for which CommitAuto chooses
// direct commits: their in-warp check (stm_prevalidate) scans the sets of
// every other lane from memory above 4 items, and on 16-round transfers
// (32 writes) of 1M accounts at 0% read-only the servers committed 1.41x
// the direct rate (8 rounds, 16 writes: direct commits made 0.82x the
// servers' rate at 0% read-only, 1.97x at 90%).
const AutoDirectWrites = 16

// AutoServersReadOnly is the read-only share from which CommitAuto
// chooses the servers: at 99% read-only they committed 1.09x the direct
// commits' rate (H200, 2026-11-30, 64K uniform accounts), at 90% 0.77x.
const AutoServersReadOnly = 0.95

// commitPathNames are the paths as ParseCommitPath takes them.
var commitPathNames = [...]string{"auto", "servers", "direct"}

// String names the path as ParseCommitPath takes it, e.g. "direct".
func (p CommitPath) String() string { return modeName(commitPathNames[:], int(p), "commitpath") }

// ParseCommitPath returns the path named s: auto, servers or direct.
func ParseCommitPath(s string) (CommitPath, error) {
	return parseMode[CommitPath](commitPathNames[:], s, "commit path")
}

// serversOnly reports whether o sets an option that only the commit
// servers use (CommitAuto then chooses them).
func (o Options) serversOnly() bool {
	return o.Config.Servers != 0 || o.Config.LogSize != 0 || o.Config.LogWrites != 0 || o.ServerWarps != 0 ||
		o.Stripe != 0 || o.Contention != ContentionDefault || o.ServerCommit != ServerCommitOff
}

// direct reports whether the GPU engine commits the workload's update
// transactions directly (Options.Commit). Cost: CommitAuto samples 4096
// tickets' read-only choice (readOnlyShare).
func (o Options) direct(sp *workloadSpec) bool {
	switch o.Commit {
	case CommitDirect:
		return true
	case CommitServers:
		return false
	}
	return !o.serversOnly() && sp.maxWrites <= AutoDirectWrites && readOnlyShare(sp, 0) < AutoServersReadOnly
}
