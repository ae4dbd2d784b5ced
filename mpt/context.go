package mpt

import (
	"context"
	"fmt"

	"github.com/warpkv/warpkv/engine"
)

// UpdateContext is Update that stops when ctx is done. A batch of more
// than engine.ContextChunk keys is applied a chunk at a time (the last
// operation on a key still wins), looking at ctx between chunks; each
// chunk's keys are looked up first, and when ctx is done before the last
// chunk, the chunks applied are undone (each key set back to its old
// value, or deleted where it was absent, last chunk first): the trie holds
// the same pairs as before the call, so its root hash is the same, and the
// error wraps ctx's cause. The trie is locked for the whole call. Cost:
// Update's, plus a lookup of every chunk's keys when there is more than
// one chunk, plus the undo when stopped.
func (t *Trie) UpdateContext(ctx context.Context, keys, values [][]byte) error {
	e, err := t.lockUpdate(keys, values)
	if err != nil {
		return err
	}
	defer t.unlock()
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("mpt: update: %w", err)
	}
	size := engine.ChunkKeys(t.chunk)
	if len(keys) <= size {
		return t.update(e, keys, values)
	}
	type undo struct{ keys, old [][]byte }
	var done []undo
	restore := func() error {
		for i := len(done) - 1; i >= 0; i-- {
			if err := t.update(e, done[i].keys, done[i].old); err != nil {
				return fmt.Errorf("mpt: undo of an update chunk (the trie holds part of the batch): %w", err)
			}
		}
		return nil
	}
	return engine.RunChunks(ctx, "mpt", "update", (len(keys)+size-1)/size, func(i int) error {
		a, b := i*size, min((i+1)*size, len(keys))
		old, found, err := e.lookup(keys[a:b])
		if err != nil {
			return fmt.Errorf("mpt: update: %w", err)
		}
		u := undo{keys: keys[a:b], old: make([][]byte, b-a)}
		for j := range old {
			if found[j] {
				u.old[j] = append([]byte(nil), old[j]...) // a copy: on the GPU engine old may alias a reused buffer
			}
		}
		if err := t.update(e, keys[a:b], values[a:b]); err != nil {
			return err
		}
		done = append(done, u)
		return nil
	}, restore)
}
