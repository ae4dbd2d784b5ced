//go:build !race

package btree

// raceEnabled shortens the randomized tests under the race detector.
const raceEnabled = false
