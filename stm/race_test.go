//go:build race

package stm

// raceEnabled: the race detector is on (it allocates on sync.Pool use).
const raceEnabled = true
