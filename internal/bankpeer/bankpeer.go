// Package bankpeer holds the lock-based banks that the STM engines are
// measured against (one global lock; a mutex per account, taken in order)
// and the loop that runs the engines' own bank transactions on them. It is
// shared by bench, compat's stmbench (through bench) and stm's benchmarks,
// so that an engine's tests need not import bench.
package bankpeer

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/stm"
)

// Peer is a bank implemented outside the STM engines, for comparison.
// Every method is safe for concurrent use.
type Peer interface {
	Name() string
	Transfer(moves [][2]int)
	Sum(first, count int) uint64
	Final() []uint64
}

// Run is one measured run of a peer.
type Run struct {
	Stats   stm.Stats // commits, read-only ones apart
	Wrong   uint64    // read-only totals that were wrong
	Elapsed time.Duration
	Workers int // goroutines
	// Latency holds one transaction's latency (read-only and update
	// alike, its draw included), in the engines' histogram (stm.Latency:
	// its quantiles are the upper bounds of their buckets, within 1/8 of
	// an octave).
	Latency stm.Latency
}

// RunFor runs bank transactions (the engines' own, from Bank.Draw) on a
// peer with the given number of goroutines for d, and checks every
// read-only total and the final store. Each transaction is timed with the
// clock read that checks the end of the run. Cost: d of wall time on
// workers goroutines.
func RunFor(p Peer, b stm.Bank, seed uint64, workers int, d time.Duration) (Run, error) {
	var tickets atomic.Uint64
	var commits, ro, wrong atomic.Uint64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lat stm.Latency
	start := time.Now()
	end := start.Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var t stm.BankTx
			var c, r, bad uint64
			var h stm.Latency
			now := time.Now()
			for now.Before(end) {
				b.Draw(seed, tickets.Add(1)-1, w, &t)
				if t.ReadOnly {
					if p.Sum(t.First, t.Count) != uint64(t.Count)*b.Initial {
						bad++
					}
					r++
				} else {
					p.Transfer(t.Moves)
					c++
				}
				t1 := time.Now()
				h.Record(t1.Sub(now))
				now = t1
			}
			mu.Lock()
			lat.Merge(&h)
			mu.Unlock()
			commits.Add(c)
			ro.Add(r)
			wrong.Add(bad)
		}()
	}
	wg.Wait()
	run := Run{Stats: stm.Stats{Commits: commits.Load(), ReadOnlyCommits: ro.Load()}, Wrong: wrong.Load(),
		Elapsed: time.Since(start), Workers: workers, Latency: lat}
	if run.Wrong != 0 {
		return run, fmt.Errorf("%s: %d read-only totals were wrong", p.Name(), run.Wrong)
	}
	var sum uint64
	for _, v := range p.Final() {
		sum += v
	}
	if want := uint64(b.Accounts) * b.Initial; sum != want {
		return run, fmt.Errorf("%s: final total %d, want %d", p.Name(), sum, want)
	}
	return run, nil
}

// globalLockBank is one mutex around the whole bank.
type globalLockBank struct {
	mu  sync.Mutex
	acc []uint64
}

// NewGlobalLock returns a bank whose every transaction holds one lock.
// Cost: b.Accounts words.
func NewGlobalLock(b stm.Bank) Peer {
	g := &globalLockBank{acc: make([]uint64, b.Accounts)}
	for i := range g.acc {
		g.acc[i] = b.Initial
	}
	return g
}

func (g *globalLockBank) Name() string { return "one global lock" }

func (g *globalLockBank) Transfer(moves [][2]int) {
	g.mu.Lock()
	for _, m := range moves {
		g.acc[m[0]]--
		g.acc[m[1]]++
	}
	g.mu.Unlock()
}

func (g *globalLockBank) Sum(first, count int) uint64 {
	g.mu.Lock()
	var s uint64
	for _, v := range g.acc[first : first+count] {
		s += v
	}
	g.mu.Unlock()
	return s
}

func (g *globalLockBank) Final() []uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.acc)
}

// itemLockBank has a mutex per account; a transaction takes the locks of
// its accounts in ascending order (no deadlock) and holds them all.
type itemLockBank struct {
	mu  []sync.Mutex
	acc []uint64
	buf sync.Pool
}

// NewItemLock returns a bank with a mutex per account taken in order.
// Cost: b.Accounts words and mutexes.
func NewItemLock(b stm.Bank) Peer {
	l := &itemLockBank{mu: make([]sync.Mutex, b.Accounts), acc: make([]uint64, b.Accounts)}
	for i := range l.acc {
		l.acc[i] = b.Initial
	}
	l.buf.New = func() any { s := make([]int, 0, 16); return &s }
	return l
}

func (l *itemLockBank) Name() string { return "a mutex per account, in order" }

func (l *itemLockBank) Transfer(moves [][2]int) {
	bp := l.buf.Get().(*[]int)
	ids := (*bp)[:0]
	for _, m := range moves {
		ids = append(ids, m[0], m[1])
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	for _, i := range ids {
		l.mu[i].Lock()
	}
	for _, m := range moves {
		l.acc[m[0]]--
		l.acc[m[1]]++
	}
	for _, i := range ids {
		l.mu[i].Unlock()
	}
	*bp = ids
	l.buf.Put(bp)
}

func (l *itemLockBank) Sum(first, count int) uint64 {
	for i := first; i < first+count; i++ {
		l.mu[i].Lock()
	}
	var s uint64
	for _, v := range l.acc[first : first+count] {
		s += v
	}
	for i := first; i < first+count; i++ {
		l.mu[i].Unlock()
	}
	return s
}

func (l *itemLockBank) Final() []uint64 {
	for i := range l.mu {
		l.mu[i].Lock()
	}
	defer func() {
		for i := range l.mu {
			l.mu[i].Unlock()
		}
	}()
	return slices.Clone(l.acc)
}
