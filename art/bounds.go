package art

import (
	"errors"
	"fmt"
)

// boundErr is the error of a batch of queries whose query i has a bound of
// n bytes, longer than a key can be (a lower bound of more than MaxKeyLen
// bytes, an upper one of more than MaxKeyLen+1).
type boundErr struct{ i, n int }

func (e *boundErr) Error() string {
	return fmt.Sprintf("query %d: bound of %d bytes: keys have at most %d", e.i, e.n, MaxKeyLen)
}

// boundTooLong reports whether q has a bound longer than a key can be.
func boundTooLong(q *Query) bool { return len(q.Lo) > MaxKeyLen || len(q.Hi) > MaxKeyLen+1 }

// checkBounds returns the boundErr of the first query of qs with a bound
// longer than a key can be, or nil. Cost: one pass over the queries'
// slice headers.
func checkBounds(qs []Query) error {
	for i := range qs {
		if boundTooLong(&qs[i]) {
			return &boundErr{i, max(len(qs[i].Lo), len(qs[i].Hi))}
		}
	}
	return nil
}

// boundChecker is an engine whose range calls check the queries' bound
// lengths themselves, in a pass over the queries they make anyway (the GPU
// engine's packing), returning a *boundErr unwrapped: Tree.query then
// does not make a pass of its own.
type boundChecker interface{ checksBounds() }

// checksBounds reports whether e checks the bounds of its range calls.
func checksBounds(e backend) bool {
	_, ok := e.(boundChecker)
	return ok
}

// asBoundErr returns err's *boundErr when it wraps one, with its query
// index moved by base (the queries before the part of the batch that
// found it), else nil.
func asBoundErr(err error, base int) error {
	var be *boundErr
	if errors.As(err, &be) {
		return &boundErr{be.i + base, be.n}
	}
	return nil
}
