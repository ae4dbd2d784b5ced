package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestRunChunks checks RunChunks' order and its stops: every chunk runs
// with no undo when nothing stops it; a context done before a chunk, or a
// chunk that fails, stops it there, calls undo once, and the error wraps
// the cause (and undo's error beside it).
func TestRunChunks(t *testing.T) {
	errChunk, errUndo, errCause := errors.New("chunk failed"), errors.New("undo failed"), errors.New("the cause")
	for _, tc := range []struct {
		name     string
		cancelAt int   // cancel the context inside this chunk's run (-1: never; 0 before the call)
		failAt   int   // this chunk's run fails (-1: none)
		undoErr  error // what undo returns
		ran      []int
		undos    int
		want     []error // the error matches each (nil: no error)
		wantText string  // the error's text, when not empty
	}{
		{name: "all chunks", cancelAt: -1, failAt: -1, ran: []int{0, 1, 2, 3}},
		{name: "done before the call", cancelAt: 0, failAt: -1, undos: 1, want: []error{errCause},
			wantText: "demo: insert: stopped before chunk 1 of 4: the cause"},
		{name: "done during chunk 2", cancelAt: 2, failAt: -1, ran: []int{0, 1, 2}, undos: 1, want: []error{errCause},
			wantText: "demo: insert: stopped before chunk 4 of 4: the cause"},
		{name: "chunk 1 fails", cancelAt: -1, failAt: 1, ran: []int{0, 1}, undos: 1, want: []error{errChunk}},
		{name: "chunk 1 fails and so does undo", cancelAt: -1, failAt: 1, undoErr: errUndo, ran: []int{0, 1}, undos: 1,
			want: []error{errChunk, errUndo}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			if tc.cancelAt == 0 {
				cancel(errCause)
			}
			var ran []int
			undos := 0
			err := RunChunks(ctx, "demo", "insert", 4, func(i int) error {
				ran = append(ran, i)
				if i == tc.cancelAt && i > 0 {
					cancel(errCause)
				}
				if i == tc.failAt {
					return errChunk
				}
				return nil
			}, func() error {
				undos++
				return tc.undoErr
			})
			if !slices.Equal(ran, tc.ran) || undos != tc.undos {
				t.Errorf("ran chunks %v, %d undos; want %v, %d", ran, undos, tc.ran, tc.undos)
			}
			if (err == nil) != (tc.want == nil) {
				t.Fatalf("error %v, want one matching %v", err, tc.want)
			}
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("error %v does not match %v", err, w)
				}
			}
			if tc.wantText != "" && err.Error() != tc.wantText {
				t.Errorf("error %q, want %q", err, tc.wantText)
			}
		})
	}
}
