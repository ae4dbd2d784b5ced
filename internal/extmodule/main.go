// Command warpkvuser is a program outside the warpkv module, as a user
// writes one: it requires github.com/warpkv/warpkv (through a replace to
// this checkout) and uses the five engines through their public API only,
// on the CPU engine: Open, the batches, the iterators, the Context calls,
// Close and engine.ErrClosed. It prints one line per engine and "ok", and
// exits 1 naming the first thing that went wrong. .ci/run and
// internal/enginetest's TestExternalModule run it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/warpkv/warpkv/art"
	"github.com/warpkv/warpkv/btree"
	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/hashindex"
	"github.com/warpkv/warpkv/mpt"
	"github.com/warpkv/warpkv/stm"
)

func main() {
	for _, step := range []struct {
		name string
		run  func(context.Context) (string, error)
	}{
		{"art", useART}, {"btree", useBTree}, {"hashindex", useHashIndex}, {"mpt", useMPT}, {"stm", useSTM},
	} {
		line, err := step.run(context.Background())
		if err != nil {
			fmt.Fprintf(os.Stderr, "warpkvuser: %s: %v\n", step.name, err)
			os.Exit(1)
		}
		fmt.Printf("%s: %s\n", step.name, line)
	}
	fmt.Println("ok")
}

// closedErr checks that err, a call's on a closed engine, matches
// engine.ErrClosed.
func closedErr(call string, err error) error {
	if !errors.Is(err, engine.ErrClosed) {
		return fmt.Errorf("%s after Close: %v, want engine.ErrClosed", call, err)
	}
	return nil
}

func useART(ctx context.Context) (string, error) {
	t, err := art.Open(art.Options{Device: "cpu"})
	if err != nil {
		return "", err
	}
	defer t.Close()
	keys := [][]byte{[]byte("ant"), []byte("bee"), []byte("bear"), []byte("cat")}
	if err := t.InsertContext(ctx, keys, []uint64{1, 2, 3, 4}); err != nil {
		return "", err
	}
	var all, scan, prefix []string
	for k := range t.All() {
		all = append(all, string(k))
	}
	for k := range t.Scan([]byte("b"), []byte("c")) {
		scan = append(scan, string(k))
	}
	for k := range t.ScanPrefix([]byte("be")) {
		prefix = append(prefix, string(k))
	}
	if !slices.Equal(all, []string{"ant", "bear", "bee", "cat"}) || !slices.Equal(scan, []string{"bear", "bee"}) || !slices.Equal(prefix, scan) {
		return "", fmt.Errorf("All %v, Scan %v, ScanPrefix %v", all, scan, prefix)
	}
	n, err := t.Delete([][]byte{[]byte("ant"), []byte("zzz")})
	if err != nil || n != 1 {
		return "", fmt.Errorf("Delete: %d, %v", n, err)
	}
	reason := t.Reason()
	if err := t.Close(); err != nil {
		return "", err
	}
	_, _, err = t.Get(keys)
	return reason, closedErr("Get", err)
}

func useBTree(ctx context.Context) (string, error) {
	t, err := btree.Open(btree.Options{Device: "cpu"})
	if err != nil {
		return "", err
	}
	defer t.Close()
	if err := t.BuildContext(ctx, []uint64{1, 2, 3, 5}, []uint64{10, 20, 30, 50}); err != nil {
		return "", err
	}
	keys, _, err := t.Range(1, 3, 0)
	if err != nil || !slices.Equal(keys, []uint64{1, 2}) {
		return "", fmt.Errorf("Range(1, 3, 0) = %v, %v; want [1 2] (half-open)", keys, err)
	}
	var all []uint64
	for k := range t.All() {
		all = append(all, k)
	}
	var scan []uint64
	for k := range t.Scan(2, 5) {
		scan = append(scan, k)
	}
	if !slices.Equal(all, []uint64{1, 2, 3, 5}) || !slices.Equal(scan, []uint64{2, 3}) {
		return "", fmt.Errorf("All %v, Scan(2, 5) %v", all, scan)
	}
	n, err := t.Delete([]uint64{1, 9})
	if err != nil || n != 1 {
		return "", fmt.Errorf("Delete: %d, %v", n, err)
	}
	reason := t.Reason()
	if err := t.Close(); err != nil {
		return "", err
	}
	_, _, err = t.Get([]uint64{2})
	return reason, closedErr("Get", err)
}

func useHashIndex(context.Context) (string, error) {
	ix, err := hashindex.Open(hashindex.Options{Buckets: 1 << 8, Device: "cpu"})
	if err != nil {
		return "", err
	}
	defer ix.Close()
	h := []uint64{hashindex.Hash([]byte("a")), hashindex.Hash([]byte("b"))}
	if _, err := ix.Insert(h, []uint32{1, 2}, nil); err != nil {
		return "", err
	}
	out := make([]uint32, 2)
	if err := ix.Search(h, out); err != nil || out[0] != 1 || out[1] != 2 {
		return "", fmt.Errorf("Search: %v, %v", out, err)
	}
	reason := ix.Reason()
	if err := ix.Close(); err != nil {
		return "", err
	}
	return reason, closedErr("Search", ix.Search(h, out))
}

func useMPT(ctx context.Context) (string, error) {
	t, err := mpt.Open(mpt.Options{Device: "cpu"})
	if err != nil {
		return "", err
	}
	defer t.Close()
	keys := [][]byte{[]byte("doe"), []byte("dog"), []byte("dogglesworth")}
	vals := [][]byte{[]byte("reindeer"), []byte("puppy"), []byte("cat")}
	if err := t.UpdateContext(ctx, keys, vals); err != nil {
		return "", err
	}
	root, err := t.Hash()
	if err != nil {
		return "", err
	}
	if got := fmt.Sprintf("%x", root); got != "8aad789dff2f538bca5d8ea56e8abe10f4c7ba3a5dea95fea4cd6e7c3a1168d3" {
		return "", fmt.Errorf("root %s, want go-ethereum's", got)
	}
	if v, ok, err := t.Get([]byte("dog")); err != nil || !ok || string(v) != "puppy" {
		return "", fmt.Errorf("Get(dog) = %q, %v, %v", v, ok, err)
	}
	reason := t.Reason()
	if err := t.Close(); err != nil {
		return "", err
	}
	_, err = t.Hash()
	return reason, closedErr("Hash", err)
}

func useSTM(ctx context.Context) (string, error) {
	e, err := stm.Open(stm.Options{Device: "cpu", Workers: 2})
	if err != nil {
		return "", err
	}
	defer e.Close()
	res, err := e.RunContext(ctx, stm.Bank{Accounts: 64, Initial: 10}, stm.RunOptions{Transactions: 1000, Seed: 1})
	if err != nil {
		return "", err
	}
	if res.Total() != 1000 || res.Wrong != 0 {
		return "", fmt.Errorf("run: %d commits, %d wrong", res.Total(), res.Wrong)
	}
	s, err := stm.NewStore(stm.StoreOptions{Items: 2})
	if err != nil {
		return "", err
	}
	if err := s.Atomically(func(tx *stm.Tx) error { tx.Write(0, tx.Read(0)+5); return nil }); err != nil || s.Load(0) != 5 {
		return "", fmt.Errorf("Store: %d, %v", s.Load(0), err)
	}
	reason := e.Reason()
	if err := e.Close(); err != nil {
		return "", err
	}
	_, err = e.Run(stm.Bank{Accounts: 64, Initial: 10}, stm.RunOptions{Transactions: 1})
	return reason, closedErr("Run", err)
}
