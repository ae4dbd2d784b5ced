package stm_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/stm"
)

// A transfer and a read-only total on the CPU engine.
func ExampleStore_Atomically() {
	s, err := stm.NewStore(stm.StoreOptions{Items: 3, Init: func(int) uint64 { return 100 }})
	if err != nil {
		panic(err)
	}
	// Retried on conflict; an error or a panic leaves nothing behind.
	err = s.Atomically(func(tx *stm.Tx) error {
		from, to := tx.Read(0), tx.Read(2)
		if from < 30 {
			return fmt.Errorf("insufficient funds: %d", from)
		}
		tx.Write(0, from-30)
		tx.Write(2, to+30)
		return nil
	})
	if err != nil {
		panic(err)
	}
	var total uint64
	_ = s.ReadOnly(func(tx *stm.Tx) error { // reads one snapshot, never validates
		total = 0
		for i := 0; i < 3; i++ {
			total += tx.Read(i)
		}
		return nil
	})
	fmt.Println(s.Load(0), s.Load(2), total, s.Stats().Commits)
	// Output: 70 130 300 1
}

// The Bank workload on whichever engine the machine has.
func ExampleEngine_Run() {
	e, err := stm.Open(stm.Options{Device: "cpu"})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	res, err := e.Run(stm.Bank{Accounts: 100, Initial: 10, ReadOnly: 0.5, ReadSize: 10}, stm.RunOptions{Transactions: 1000, Seed: 1})
	if err != nil {
		panic(err)
	}
	var total uint64
	for _, v := range res.Final {
		total += v
	}
	fmt.Println(res.Total(), res.Wrong, total)
	// Output: 1000 0 1000
}

// Open an engine, run a workload with a context, and close it.
func ExampleEngine() {
	e, err := stm.Open(stm.Options{Device: "cpu"}) // "auto": a GPU when one is usable
	if err != nil {
		panic(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := e.RunContext(ctx, stm.RMW{Size: 1000, Keys: 4, Start: 1}, stm.RunOptions{Transactions: 500, Seed: 7})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Total(), e.LastBatch().Items)
	e.Close()
	_, err = e.Run(stm.RMW{Size: 1000, Keys: 4}, stm.RunOptions{Transactions: 1})
	fmt.Println(errors.Is(err, engine.ErrClosed))
	// Output:
	// 500 500
	// true
}

// A Store is the CPU engine's Go API: transactions as closures.
func ExampleStore() {
	s, err := stm.NewStore(stm.StoreOptions{Items: 2})
	if err != nil {
		panic(err)
	}
	for range 3 {
		if err := s.Atomically(func(tx *stm.Tx) error {
			tx.Write(1, tx.Read(1)+1)
			return nil
		}); err != nil {
			panic(err)
		}
	}
	fmt.Println(s.Load(1))
	// Output: 3
}
