package engine

import (
	"context"
	"errors"
	"fmt"
)

// ContextChunk is the number of keys a ...Context call applies at a time
// before it looks at its context again (a batch of at most ContextChunk
// keys runs whole).
const ContextChunk = 1 << 20

// ChunkKeys returns the keys per chunk of a ...Context call: set when it
// is positive (a structure's own setting, which tests make small), else
// ContextChunk. Cost: O(1).
func ChunkKeys(set int) int {
	if set > 0 {
		return set
	}
	return ContextChunk
}

// RunChunks runs the chunks of a ...Context call in order, chunk i by
// run(i), and looks at ctx before each: when ctx is done before a chunk,
// or run fails, it stops, calls undo (which reverts the chunks that ran:
// the caller's record of them) and returns the error joined with undo's;
// ctx's cause is wrapped as "NAME: OP: stopped before chunk I of N". It
// returns nil when every chunk ran. Cost: run's, and undo's when stopped.
func RunChunks(ctx context.Context, name, op string, chunks int, run func(i int) error, undo func() error) error {
	for i := range chunks {
		err := context.Cause(ctx)
		if err != nil {
			err = fmt.Errorf("%s: %s: stopped before chunk %d of %d: %w", name, op, i+1, chunks, err)
		} else {
			err = run(i)
		}
		if err != nil {
			return errors.Join(err, undo())
		}
	}
	return nil
}
