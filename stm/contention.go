package stm

// Contention is how the GPU engine's client warps treat conflicts before
// they ask a commit server (Options.Contention). The CPU engine ignores it.
type Contention int

// The contention modes.
const (
	// ContentionDefault means DefaultContention.
	ContentionDefault Contention = iota
	// ContentionOff sends every update transaction that survives its
	// warp's pre-validation to its servers.
	ContentionOff
	// ContentionCheck: before sending, an update transaction reads the
	// newest logged write (the server's wts word) of each item it
	// accessed; one newer than its snapshot is the conflict the server's
	// first validation would find, so the attempt aborts at once, with
	// the cause the server would give, without the round trip. Cost:
	// one load per access, after a fence.
	ContentionCheck
	// ContentionClaims is ContentionCheck after the transaction claims
	// the items it writes: one compare-and-swap per write on a table of
	// claim words (one per item up to 4Mi items, then shared by items
	// 4Mi apart). An item another transaction claimed holds the attempt
	// back unsent (Result.Server.Deferred; not an abort: the ticket runs
	// again with a new snapshot); claims are released after the
	// transaction's write-back, or kept over an attempt that aborts in
	// the check, so the transaction that held an item back is the next
	// to write it. A transaction held back 64 times in a row goes without
	// claims. Claims are a hint: servers validate every request as
	// before, so they change which transactions are sent, never what
	// commits.
	ContentionClaims
)

// DefaultContention is the GPU engine's mode when Options.Contention is
// ContentionDefault. On an H200 (2026-11-29, 64K accounts, 1-round
// transfers, Zipf 0.99, admission control at its default) claims gave
// 1.00x/1.09x/1.27x/1.24x/1.06x the commits of no contention management
// at 0/10/50/90/99% read-only and 1.45x/2.15x/1.36x on 2-round transfers
// at 0/50/90%; uniform accounts 1.00x and 0.98x at 0 and 90% (64K), and
// 47.4M/166.5M commits/s on 1M accounts (before: 47.4M/164.2M).
const DefaultContention = ContentionClaims

// contentionNames are the modes as ParseContention takes them.
var contentionNames = [...]string{"default", "off", "check", "claims"}

// String names the mode as ParseContention takes it, e.g. "claims".
func (c Contention) String() string { return modeName(contentionNames[:], int(c), "contention") }

// ParseContention returns the mode named s: default, off, check or claims.
func ParseContention(s string) (Contention, error) {
	return parseMode[Contention](contentionNames[:], s, "contention")
}

// contentionMode returns the mode as the kernels take it (g->contention):
// 0 off, 1 check, 2 claims.
func contentionMode(c Contention) int {
	if c == ContentionDefault {
		c = DefaultContention
	}
	return max(0, int(c)-int(ContentionOff))
}

// maxClaimWords bounds the claim table: items beyond it share words.
const maxClaimWords = 1 << 22

// claimWords returns the claim table's size for a store of n items: the
// power of two at least n, at most maxClaimWords.
func claimWords(n int) int { return min(pow2(max(n, 1)), maxClaimWords) }
