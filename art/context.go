package art

import (
	"context"
	"fmt"

	"github.com/warpkv/warpkv/engine"
)

// chunkKeys is the number of keys a Context call applies at a time.
func (t *Tree) chunkKeys() int { return engine.ChunkKeys(t.chunk) }

// BuildContext is Build that stops when ctx is done. A batch of more than
// engine.ContextChunk keys is built in a new tree beside the old one (on
// the GPU engine, in device memory beside it), a chunk at a time, looking
// at ctx between chunks; when ctx is done first, the new tree is freed and
// the tree is as before the call, and the error wraps ctx's cause;
// otherwise the new tree replaces the old one. The tree is locked for the
// whole call: other calls see it before or after. Cost: Build's for the
// first chunk, Insert's for each later one (with the rebuilds Insert makes
// as the tree doubles), and the memory of both trees until the end.
func (t *Tree) BuildContext(ctx context.Context, keys [][]byte, values []uint64) error {
	chunks, err := t.chunked("build", keys, values)
	if err != nil {
		return err
	}
	if _, err := engine.Lock(&t.Facade, "build"); err != nil {
		return err
	}
	defer engine.Unlock(&t.Facade)
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("art: build: %w", err)
	}
	if len(chunks) == 1 {
		if err := t.eng.build(chunks[0].kb, chunks[0].vals); err != nil {
			return fmt.Errorf("art: build: %w", err)
		}
		t.builtAt = t.eng.size()
		return nil
	}
	fresh, err := t.fresh()
	if err != nil {
		return fmt.Errorf("art: build: %w", err)
	}
	old, oldBuilt := t.eng, t.builtAt
	if og, ok := old.(*gpuEngine); ok {
		fresh.(*gpuEngine).lanes = og.lanes
	}
	t.eng, t.builtAt = fresh, 0
	if err := engine.RunChunks(ctx, "art", "build", len(chunks), func(i int) error {
		return t.insertLocked(chunks[i].kb, chunks[i].vals)
	}, func() error {
		t.eng, t.builtAt = old, oldBuilt
		return fresh.close()
	}); err != nil {
		return err
	}
	engine.Replace(&t.Facade, fresh)
	if err := old.close(); err != nil {
		return fmt.Errorf("art: build: freeing the old tree: %w", err)
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
func (t *Tree) InsertContext(ctx context.Context, keys [][]byte, values []uint64) error {
	chunks, err := t.chunked("insert", keys, values)
	if err != nil {
		return err
	}
	if _, err := engine.Lock(&t.Facade, "insert"); err != nil {
		return err
	}
	defer engine.Unlock(&t.Facade)
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("art: insert: %w", err)
	}
	if len(chunks) == 1 {
		return t.insertLocked(chunks[0].kb, chunks[0].vals)
	}
	var done []undo
	return engine.RunChunks(ctx, "art", "insert", len(chunks), func(i int) error {
		c := chunks[i]
		u := undo{kb: c.kb, vals: make([]uint64, c.kb.Len()), found: make([]bool, c.kb.Len())}
		if t.eng.size() > 0 {
			if err := t.eng.lookup(c.kb, u.vals, u.found); err != nil {
				return fmt.Errorf("art: insert: %w", err)
			}
		}
		if err := t.insertLocked(c.kb, c.vals); err != nil {
			return err
		}
		done = append(done, u)
		return nil
	}, func() error { return t.undo(done) })
}

// chunk is one chunk of a Context call's batch.
type chunk struct {
	kb   Keys
	vals []uint64
}

// chunked checks a batch and splits it into chunks of chunkKeys keys
// (one chunk when it fits). Cost: a packing of the keys.
func (t *Tree) chunked(op string, keys [][]byte, values []uint64) ([]chunk, error) {
	if len(keys) != len(values) {
		return nil, fmt.Errorf("art: %s: %d keys but %d values", op, len(keys), len(values))
	}
	size := t.chunkKeys()
	var cs []chunk
	for a := 0; a < len(keys) || a == 0; a += size {
		b := min(a+size, len(keys))
		kb := Pack(keys[a:b])
		if err := kb.check(op, values[a:b], true); err != nil {
			return nil, err
		}
		cs = append(cs, chunk{kb: kb, vals: values[a:b]})
	}
	return cs, nil
}

// undo is what InsertContext needs to undo one chunk: its keys, and each
// key's value and presence before the chunk.
type undo struct {
	kb    Keys
	vals  []uint64
	found []bool
}

// undo restores the pairs the chunks changed, last chunk first: the keys
// that were absent are deleted, the others get their old values back.
// Callers hold the write lock.
func (t *Tree) undo(done []undo) error {
	for i := len(done) - 1; i >= 0; i-- {
		u := done[i]
		var gone, back [][]byte
		var backVals []uint64
		for j := range u.kb.Len() {
			if u.found[j] {
				back, backVals = append(back, u.kb.At(j)), append(backVals, u.vals[j])
			} else {
				gone = append(gone, u.kb.At(j))
			}
		}
		if _, err := t.deleteLocked(Pack(gone)); err != nil {
			return fmt.Errorf("art: undo of an insert chunk (the tree holds part of the batch): %w", err)
		}
		if err := t.insertLocked(Pack(back), backVals); err != nil {
			return fmt.Errorf("art: undo of an insert chunk (the tree holds part of the batch): %w", err)
		}
	}
	return nil
}
