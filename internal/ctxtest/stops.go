package ctxtest

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// Stops checks the ...Context calls of an index that a context stops
// between chunks: each of calls, given a context done after 0, 1, ...,
// looks-1 looks (After), must fail with context.Canceled and leave the
// pairs the index holds (pairs, read before the first call and after each)
// as they were, and check (the index's invariants) nil after it. Cost:
// looks runs of each call, a read of the pairs and a check after each.
func Stops[K, V comparable](t testing.TB, looks int, calls map[string]func(context.Context) error, pairs func() ([]K, []V), check func() error) {
	t.Helper()
	wantK, wantV := pairs()
	for n := range looks {
		for name, call := range calls {
			if err := call(After(n)); !errors.Is(err, context.Canceled) {
				t.Fatalf("%s stopped after %d looks: %v, want context.Canceled", name, n, err)
			}
			gotK, gotV := pairs()
			if !slices.Equal(gotK, wantK) || !slices.Equal(gotV, wantV) {
				t.Fatalf("%s stopped after %d looks: %d pairs, want the %d before the call", name, n, len(gotK), len(wantK))
			}
			if err := check(); err != nil {
				t.Fatalf("%s stopped after %d looks: %v", name, n, err)
			}
		}
	}
}
