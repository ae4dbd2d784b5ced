// Package bench measures warpkv: the memory limits of the machine (copy
// bandwidth, random gather rate, host transfers) and the throughput of the
// primitives and engines built on them, on the GPU and CPU engines.
//
// A benchmark produces Results, one row per operation and engine. Each row
// may carry a ratio to a reference (the measured copy bandwidth, or a peer
// implementation), so that a number says how close it is to what the
// hardware allows. Results print as a table (PrintTable) or JSON
// (WriteJSON).
package bench
