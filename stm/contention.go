package stm

import "fmt"

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
// ContentionDefault.
const DefaultContention = ContentionOff

// contentionNames are the modes as ParseContention takes them.
var contentionNames = [...]string{"default", "off", "check", "claims"}

// String names the mode as ParseContention takes it, e.g. "claims".
func (c Contention) String() string {
	if c >= 0 && int(c) < len(contentionNames) {
		return contentionNames[c]
	}
	return fmt.Sprintf("contention(%d)", int(c))
}

// ParseContention returns the mode named s: default, off, check or claims.
func ParseContention(s string) (Contention, error) {
	for i, n := range contentionNames {
		if s == n {
			return Contention(i), nil
		}
	}
	return 0, fmt.Errorf("stm: contention mode %q: want default, off, check or claims", s)
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
