// Package par is warpkv's one parallel-for for the CPU side of every engine:
// contiguous ranges of an index space run on goroutines, either a fixed
// number of near-equal parts (Ranges, Do) or chunks of a grain taken
// dynamically by a pool of workers (For). Every function returns when all
// the work it started has finished, and runs the work inline when there is
// one part, so small inputs cost no goroutine.
//
// The package functions start new goroutines on every call. Pool runs the
// same shapes of work on persistent workers that spin briefly between
// jobs before they park, for host copies that fan out many times a
// millisecond (the GPU engines' pipelined calls); Shared is the process's
// one Pool, the package's only global state, started on first use.
package par
