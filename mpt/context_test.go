package mpt

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/internal/ctxtest"
)

// TestUpdateContextStopsBetweenChunks stops UpdateContext before each
// chunk in turn, on both CPU engines, and checks that the root hash and
// the pairs are those before the call; then runs it to the end and
// compares with Update.
func TestUpdateContextStopsBetweenChunks(t *testing.T) {
	var keys, vals, batch, batchVals [][]byte
	for i := range 40 {
		keys, vals = append(keys, fmt.Appendf(nil, "k%03d", 2*i)), append(vals, fmt.Appendf(nil, "v%d", i))
	}
	for i := range 50 { // sets, overwrites and deletes (empty values), some keys twice
		v := fmt.Appendf(nil, "w%d", i)
		if i%6 == 0 {
			v = nil
		}
		batch, batchVals = append(batch, fmt.Appendf(nil, "k%03d", i%45)), append(batchVals, v)
	}
	forEngines(t, func(t *testing.T, e testEngine) {
		tr := e.new(Options{})
		defer tr.Close()
		tr.chunk = 7
		if err := tr.Update(keys, vals); err != nil {
			t.Fatal(err)
		}
		root := tr.hash()
		for looks := range 9 {
			if err := tr.UpdateContext(ctxtest.After(looks), batch, batchVals); !errors.Is(err, context.Canceled) {
				t.Fatalf("stopped after %d looks: %v, want context.Canceled", looks, err)
			}
			if got := tr.hash(); got != root {
				t.Fatalf("stopped after %d looks: root %x, want %x", looks, got, root)
			}
			if v, ok := tr.get([]byte("k000")); !ok || string(v) != "v0" {
				t.Fatalf("stopped after %d looks: k000 = %q, %v", looks, v, ok)
			}
		}
		ref := e.new(Options{})
		if err := ref.Update(keys, vals); err != nil {
			t.Fatal(err)
		}
		if err := ref.Update(batch, batchVals); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if err := tr.UpdateContext(ctx, batch, batchVals); err != nil {
			t.Fatal(err)
		}
		if got, want := tr.hash(), ref.hash(); got != want {
			t.Fatalf("to the end: root %x, want Update's %x", got, want)
		}
	})
}

// TestClosedTrie checks that every call on a closed trie returns an error
// matching engine.ErrClosed.
func TestClosedTrie(t *testing.T) {
	tr := mustNew(Options{})
	k := [][]byte{{1}}
	if err := tr.Update(k, [][]byte{{2}}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	_, _, getErr := tr.Get(k[0])
	_, hashErr := tr.Hash()
	_, _, lookupErr := tr.Lookup(k)
	_, proveErr := tr.Prove(k[0])
	var out Values
	for name, err := range map[string]error{
		"update": tr.Update(k, k), "delete": tr.Delete(k), "get": getErr, "hash": hashErr,
		"lookup": lookupErr, "lookup into": tr.LookupInto(k, &out), "prove": proveErr,
		"update context": tr.UpdateContext(context.Background(), k, k), "iterator": tr.NewIterator(nil).Err(),
	} {
		if !errors.Is(err, engine.ErrClosed) {
			t.Errorf("%s after Close: %v, want engine.ErrClosed", name, err)
		}
	}
}
