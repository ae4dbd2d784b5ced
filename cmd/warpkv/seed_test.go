package main

import (
	"math/rand/v2"
	"testing"

	"github.com/warpkv/warpkv/internal/enginetest"
)

// runRand returns the random source of a test that makes new random files
// each run: seeded from $WARPKV_TEST_SEED, else the clock
// (enginetest.Seed), and stream, the seed logged (shown when the test
// fails) with how to replay it. Cost: O(1).
func runRand(t testing.TB, stream uint64) *rand.Rand {
	t.Helper()
	seed := enginetest.Seed()
	t.Logf("random files of seed %d, stream %d (%s=%d replays them)", seed, stream, enginetest.EnvSeed, seed)
	return rand.New(rand.NewPCG(seed, stream))
}
