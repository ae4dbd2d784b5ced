package protocol

import "github.com/warpkv/warpkv/kv"

// SplitCache is a kv.Cache whose batches can run in two steps, so that an
// event loop keeps two batches in flight (Config.RoundOverlap): Start runs
// a batch until it would wait for a device (a GPU search), and the loop
// reads, parses and starts its other group of connections meanwhile
// instead of spinning; Finish completes it.
type SplitCache interface {
	kv.Cache
	// SplitLoops returns how many event loops may each keep two split
	// batches in flight; 0 when splitting gains nothing (a cache whose
	// Do never waits for a device).
	SplitLoops() int
	// NewSplit returns a Split for one loop's group of connections.
	NewSplit() Split
}

// Split runs one batch at a time in two steps, on one goroutine.
type Split interface {
	// Start runs b's Do until it waits for a device, or to its end, and
	// reports whether it ran to its end (Finish then returns at once).
	Start(b *kv.Batch) (done bool)
	// Ready reports whether Finish would not wait for the device.
	Ready() bool
	// Finish runs the batch Start began to its end and returns what Do
	// returned.
	Finish() error
	// Close frees the Split (between batches).
	Close()
}
