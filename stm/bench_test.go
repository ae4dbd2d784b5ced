package stm_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/warpkv/warpkv/internal/bankpeer"
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
			b.ReportAllocs() // per commit, the store's setup included
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
			new  func(stm.Bank) bankpeer.Peer
		}{{"global-lock", bankpeer.NewGlobalLock}, {"item-locks", bankpeer.NewItemLock}} {
			b.Run(name+"/"+peer.name, func(b *testing.B) {
				p := peer.new(bk)
				b.ResetTimer()
				// Run long enough for b.N transactions at the measured rate.
				r, err := bankpeer.RunFor(p, bk, 1, runtime.GOMAXPROCS(0), time.Duration(b.N)*200*time.Nanosecond+time.Millisecond)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(r.Elapsed.Nanoseconds())/float64(r.Stats.Total()), "ns/commit")
			})
		}
	}
}

// BenchmarkStore runs Bank-shaped transactions straight on a Store with
// Atomically and ReadOnly from GOMAXPROCS goroutines (-cpu sets them): a
// transfer of 1 between two random accounts of 1M, and a read-only sum of
// 100 consecutive accounts. ns/op is per committed transaction; allocs/op
// are per commit.
func BenchmarkStore(b *testing.B) {
	const accounts = 1 << 20
	s, err := stm.NewStore(stm.StoreOptions{Items: accounts, Init: func(int) uint64 { return 100 }})
	if err != nil {
		b.Fatal(err)
	}
	for _, ro := range []int{0, 90} {
		b.Run(fmt.Sprintf("ro=%d%%", ro), func(b *testing.B) {
			b.ReportAllocs()
			before := s.Stats()
			b.RunParallel(func(pb *testing.PB) {
				x := uint64(time.Now().UnixNano()) | 1
				next := func() uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
				var from, to, first int
				var sum uint64
				transfer := func(tx *stm.Tx) error {
					tx.Write(from, tx.Read(from)-1)
					tx.Write(to, tx.Read(to)+1)
					return nil
				}
				total := func(tx *stm.Tx) error {
					sum = 0
					for i := first; i < first+100; i++ {
						sum += tx.Read(i)
					}
					return nil
				}
				for pb.Next() {
					r := next()
					if int(r%100) < ro {
						first = int(r>>8) % (accounts - 100)
						if err := s.ReadOnly(total); err != nil {
							b.Fatal(err)
						}
						continue
					}
					from, to = int(r>>8)%accounts, int(r>>32)%accounts
					if from == to {
						to = (to + 1) % accounts
					}
					if err := s.Atomically(transfer); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.ReportMetric(100*s.Stats().Sub(before).AbortRate(), "abort%")
		})
	}
}
