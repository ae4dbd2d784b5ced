package btree

import (
	"context"
	"fmt"
	"time"

	"github.com/warpkv/warpkv/engine"
)

// chunkKeys is the number of keys a Context call applies at a time.
func (t *Tree) chunkKeys() int { return engine.ChunkKeys(t.chunk) }

// BuildContext is Build that stops when ctx is done. A batch of more than
// engine.ContextChunk keys is built in a new tree beside the old one (on
// the GPU engine, in device memory beside it): the first chunk by a build,
// the others by inserts, looking at ctx between chunks; when ctx is done
// first, the new tree is freed and the tree is as before the call, and the
// error wraps ctx's cause; otherwise the new tree replaces the old one.
// Its layout is then the one inserts make (leaves split rather than filled
// to Build's fill factor); Check holds either way. The tree is locked for
// the whole call: other calls see it before or after. Cost: Build's for
// the first chunk, Insert's for each later one, and the memory of both
// trees until the end.
func (t *Tree) BuildContext(ctx context.Context, keys, values []uint64) error {
	if len(keys) != len(values) {
		return fmt.Errorf("btree: build: %d keys but %d values", len(keys), len(values))
	}
	if _, err := engine.Lock(&t.Facade, "build"); err != nil {
		return err
	}
	defer engine.Unlock(&t.Facade)
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("btree: build: %w", err)
	}
	size := t.chunkKeys()
	if len(keys) <= size {
		tm, err := t.e.build(keys, values)
		if err != nil {
			return fmt.Errorf("btree: build: %w", err)
		}
		engine.Record(&t.Facade, tm)
		return nil
	}
	fresh, err := t.fresh()
	if err != nil {
		return fmt.Errorf("btree: build: %w", err)
	}
	t0 := time.Now()
	if err := engine.RunChunks(ctx, "btree", "build", (len(keys)+size-1)/size, func(i int) error {
		a, b := i*size, min((i+1)*size, len(keys))
		var err error
		if i == 0 {
			_, err = fresh.build(keys[a:b], values[a:b])
		} else {
			_, err = fresh.insert(keys[a:b], values[a:b])
		}
		return err
	}, fresh.close); err != nil {
		return err
	}
	old := t.e
	t.e = fresh
	engine.Replace(&t.Facade, fresh)
	d := time.Since(t0)
	engine.Record(&t.Facade, engine.Timings{Op: "build", Items: len(keys), Work: d, Total: d})
	if err := old.close(); err != nil {
		return fmt.Errorf("btree: build: freeing the old tree: %w", err)
	}
	return nil
}

// InsertContext is Insert that stops when ctx is done. A batch of more than
// engine.ContextChunk keys is inserted a chunk at a time (of equal keys the
// last still wins), looking at ctx between chunks; each chunk's keys are
// looked up first, and when ctx is done before the last chunk, the chunks
// inserted are undone (their new keys deleted, the old values of the
// others put back, last chunk first): the tree holds the same pairs as
// before the call, and the error wraps ctx's cause. The tree is locked for
// the whole call: other calls see it before or after. Cost: Insert's, plus
// a lookup of every chunk's keys when there is more than one chunk, plus
// the undo when stopped.
func (t *Tree) InsertContext(ctx context.Context, keys, values []uint64) error {
	if len(keys) != len(values) {
		return fmt.Errorf("btree: insert: %d keys but %d values", len(keys), len(values))
	}
	if _, err := engine.Lock(&t.Facade, "insert"); err != nil {
		return err
	}
	defer engine.Unlock(&t.Facade)
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("btree: insert: %w", err)
	}
	if len(keys) == 0 {
		t.idle("insert", 0, time.Now())
		return nil
	}
	size := t.chunkKeys()
	if len(keys) <= size {
		tm, err := t.e.insert(keys, values)
		if err != nil {
			return fmt.Errorf("btree: insert: %w", err)
		}
		engine.Record(&t.Facade, tm)
		return nil
	}
	t0 := time.Now()
	var done []undo
	if err := engine.RunChunks(ctx, "btree", "insert", (len(keys)+size-1)/size, func(i int) error {
		a, b := i*size, min((i+1)*size, len(keys))
		u := undo{keys: keys[a:b], vals: make([]uint64, b-a), found: make([]bool, b-a)}
		if t.e.state().root != nilNode {
			if _, err := t.e.lookup(u.keys, u.vals, u.found); err != nil {
				return fmt.Errorf("btree: insert: %w", err)
			}
		}
		if _, err := t.e.insert(keys[a:b], values[a:b]); err != nil {
			return fmt.Errorf("btree: insert: %w", err)
		}
		done = append(done, u)
		return nil
	}, func() error { return t.undo(done) }); err != nil {
		return err
	}
	d := time.Since(t0)
	engine.Record(&t.Facade, engine.Timings{Op: "insert", Items: len(keys), Work: d, Total: d})
	return nil
}

// undo is what InsertContext needs to undo one chunk: its keys, and each
// key's value and presence before the chunk.
type undo struct {
	keys, vals []uint64
	found      []bool
}

// undo restores the pairs the chunks changed, last chunk first: the keys
// that were absent are deleted, the others get their old values back.
// Callers hold the write lock.
func (t *Tree) undo(done []undo) error {
	for i := len(done) - 1; i >= 0; i-- {
		u := done[i]
		var gone, back, backVals []uint64
		for j, k := range u.keys {
			if u.found[j] {
				back, backVals = append(back, k), append(backVals, u.vals[j])
			} else {
				gone = append(gone, k)
			}
		}
		if len(gone) > 0 && t.e.state().root != nilNode {
			if _, err := t.e.remove(gone); err != nil {
				return fmt.Errorf("btree: undo of an insert chunk (the tree holds part of the batch): %w", err)
			}
		}
		if len(back) > 0 {
			if _, err := t.e.insert(back, backVals); err != nil {
				return fmt.Errorf("btree: undo of an insert chunk (the tree holds part of the batch): %w", err)
			}
		}
	}
	return nil
}
