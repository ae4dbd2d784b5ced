package stm_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/stm"
)

// BenchmarkBank compares the CSMV CPU engine with one global lock and a
// mutex per account (taken in order) on the same bank transactions, with
// GOMAXPROCS goroutines: ns/op is per committed transaction.
func BenchmarkBank(b *testing.B) {
	for _, bk := range []stm.Bank{
		{Accounts: 6000, Initial: 100, ReadOnly: 0.9, ReadSize: 100, Rounds: 1},
		{Accounts: 6000, Initial: 100, ReadOnly: 0, ReadSize: 100, Rounds: 1},
		{Accounts: 6000, Initial: 100, ReadOnly: 0, ReadSize: 100, Rounds: 8},
	} {
		name := fmt.Sprintf("ro=%g,rounds=%d", bk.ReadOnly, bk.Rounds)
		b.Run(name+"/csmv", func(b *testing.B) {
			e, err := stm.Open(stm.Options{Device: "cpu"})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			b.ResetTimer()
			res, err := e.Run(bk, stm.RunOptions{Transactions: int64(b.N), Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(100*res.AbortRate(), "abort%")
		})
		for _, peer := range []struct {
			name string
			new  func(stm.Bank) bench.BankPeer
		}{{"global-lock", bench.NewGlobalLockBank}, {"item-locks", bench.NewItemLockBank}} {
			b.Run(name+"/"+peer.name, func(b *testing.B) {
				p := peer.new(bk)
				b.ResetTimer()
				// Run long enough for b.N transactions at the measured rate.
				r, err := bench.RunBankPeer(p, bk, 1, runtime.GOMAXPROCS(0), time.Duration(b.N)*200*time.Nanosecond+time.Millisecond)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(r.Elapsed.Nanoseconds())/float64(r.Stats.Total()), "ns/commit")
			})
		}
	}
}
