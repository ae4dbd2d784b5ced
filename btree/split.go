package btree

// Grains: items handed to a goroutine at a time.
const (
	keyGrain   = 2048 // keys of a batch (search, lookups)
	groupGrain = 16   // touched nodes (merge and write)
)

// pieces returns how many nodes c entries are split into: one if they fit
// in a node of the given order, else enough nodes of at most fill entries.
func pieces(c, order, fill int) int {
	switch {
	case c == 0:
		return 0
	case c <= order:
		return 1
	}
	return (c + fill - 1) / fill
}

// share is the closed-form distribution of n items to p parts as even as
// possible (the first n%p parts get one more): it returns the first item
// of part q. Cost: O(1).
func share(n, p, q int) int {
	base, rem := n/p, n%p
	return q*base + min(q, rem)
}
