package main

import (
	"math/rand/v2"
	"os"
	"testing"
)

// runRand returns the random source of a test that makes new random
// files each run: seeded with the process id and stream, and the seed
// logged (shown when the test fails), so that a failing file can be made
// again. Cost: O(1).
func runRand(t testing.TB, stream uint64) *rand.Rand {
	t.Helper()
	seed := uint64(os.Getpid())
	t.Logf("random files of seed %d, stream %d", seed, stream)
	return rand.New(rand.NewPCG(seed, stream))
}
