// Command stmmodel is a model, not a measurement: it simulates an
// optimistic STM running warpkv's Bank transactions (stm.Bank.Draw, the
// same tickets the engines run) on T client threads, where an update
// attempt holds a window of W from its snapshot to its commit and commits
// only if no account it touched was committed by another transaction
// inside that window (first committer wins, as CSMV's validation); an
// aborted attempt runs again at once with a new snapshot, and a read-only
// transaction takes Wro and never aborts (a multi-version snapshot). It
// prints commits a second and the abort rate for every window of --w and
// thread count of --threads, so that the commit window a target needs can
// be read off: the rate scales as 1/W at a fixed thread count, and what
// bounds it under hot accounts is how many attempts on the hottest block
// overlap in one window.
//
//	stmmodel --accounts 65536 --zipf 0.99 --ro 0 --w 58us,20us,6us --threads 256,1024,4096
//
// The model leaves out what a device adds (queueing at the servers, the
// warps' lock-step, admission control and claims), so its rates are upper
// bounds for a given window; BENCHMARKS.md compares it with measured rows.
//
// With --warps it runs the warp model instead (simulateWarps): rounds of
// warps in lock-step, Algorithm 1 inside each warp, first committer wins
// between warps, for a losing transaction that keeps its lane (as the
// engine), one dealt to another warp and one chained after the lower lane
// of its warp it conflicts with (committed in the same round, a chain
// level up); it prints commits a round, a second at --round a round, and
// the chains' mean levels a round.
//
//	stmmodel --warps 32,128,256 --zipf 0.99 --rounds 1
package main

import (
	"container/heap"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/warpkv/warpkv/stm"
)

// finish is a thread's attempt ending at time t (seconds).
type finish struct {
	t  float64
	th int
}

// finishes is a min-heap of attempts by end time.
type finishes []finish

func (f finishes) Len() int           { return len(f) }
func (f finishes) Less(i, j int) bool { return f[i].t < f[j].t }
func (f finishes) Swap(i, j int)      { f[i], f[j] = f[j], f[i] }
func (f *finishes) Push(x any)        { *f = append(*f, x.(finish)) }
func (f *finishes) Pop() any {
	old := *f
	x := old[len(old)-1]
	*f = old[:len(old)-1]
	return x
}

// result is one simulated configuration's outcome.
type result struct {
	commits, aborts float64
}

// simulate runs threads client threads for span seconds of model time with
// update window w and read-only time wro, each attempt's window drawn
// uniformly in [0.75w, 1.25w].
func simulate(b stm.Bank, threads int, w, wro, span float64, seed uint64) result {
	last := make([]float64, b.Accounts) // when each account's last commit happened
	for i := range last {
		last[i] = -1
	}
	txs := make([]stm.BankTx, threads)
	start := make([]float64, threads)
	r := rand.New(rand.NewPCG(seed, 1))
	ticket := uint64(0)
	draw := func(th int, now float64) {
		b.Draw(seed, ticket, th, &txs[th])
		ticket++
		start[th] = now
	}
	length := func(th int) float64 {
		if txs[th].ReadOnly {
			return wro
		}
		return w * (0.75 + 0.5*r.Float64())
	}
	h := &finishes{}
	for th := range threads {
		draw(th, r.Float64()*w)
		heap.Push(h, finish{start[th] + length(th), th})
	}
	var res result
	for h.Len() > 0 {
		e := heap.Pop(h).(finish)
		if e.t > span {
			break
		}
		tx := &txs[e.th]
		ok := true
		for _, m := range tx.Moves {
			if last[m[0]] > start[e.th] || last[m[1]] > start[e.th] {
				ok = false
			}
		}
		if ok {
			res.commits++
			for _, m := range tx.Moves {
				last[m[0]], last[m[1]] = e.t, e.t
			}
			draw(e.th, e.t)
		} else {
			res.aborts++
			start[e.th] = e.t // the same transaction again, from a new snapshot
		}
		heap.Push(h, finish{e.t + length(e.th), e.th})
	}
	return res
}

// list parses a comma-separated list with parse, naming flag name in its
// error.
func list[T any](name, s string, parse func(string) (T, error)) []T {
	var out []T
	for _, f := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			fmt.Fprintf(os.Stderr, "stmmodel: --%s: %v\n", name, err)
			os.Exit(2)
		}
		out = append(out, v)
	}
	return out
}

func main() {
	accounts := flag.Int("accounts", 65536, "accounts of the bank")
	block := flag.Int("block", 100, "accounts of a block (a read-only sum's size; transfers stay inside a block)")
	zipf := flag.Float64("zipf", 0.99, "Zipf exponent of the block a transaction uses (0 uniform)")
	rounds := flag.Int("rounds", 1, "rounds of a transfer")
	ro := flag.Float64("ro", 0, "read-only share, 0 to 1")
	windows := flag.String("w", "58us,40us,20us,10us,6us", "update attempt windows, comma-separated durations")
	wro := flag.Duration("wro", 20*time.Microsecond, "a read-only transaction's time")
	threads := flag.String("threads", "256,1024,4096", "client thread counts, comma-separated")
	span := flag.Duration("span", 100*time.Millisecond, "model time simulated per configuration")
	warps := flag.String("warps", "", "instead of threads and windows: the warp model (simulateWarps) with these warp counts, comma-separated (128 is the GPU engine's 4096 client threads)")
	roundTime := flag.Duration("round", 20*time.Microsecond, "with --warps: a warp round's time, which turns commits a round into commits a second")
	modelRounds := flag.Int("model-rounds", 2000, "with --warps: rounds simulated per configuration")
	flag.Parse()
	b := stm.Bank{Accounts: *accounts, Initial: 100, ReadOnly: *ro, ReadSize: *block, Rounds: *rounds, Zipf: *zipf}
	if err := b.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, "stmmodel:", err)
		os.Exit(2)
	}
	if *warps != "" {
		fmt.Printf("warp model: %s; rounds of %v; %d rounds simulated each\n", b.Name(), *roundTime, *modelRounds)
		fmt.Printf("%6s %-28s %12s %12s %9s %9s %7s\n", "warps", "a losing transaction", "commits/rnd", "commits/s", "in-warp", "cross", "levels")
		for _, n := range list("warps", *warps, strconv.Atoi) {
			for _, policy := range []warpPolicy{keepLane, spreadLosers, chainInWarp} {
				res := simulateWarps(b, n, *modelRounds, policy, 0x57a5eed)
				att := res.commits + res.inWarp + res.cross
				lv := "-"
				if policy == chainInWarp {
					lv = fmt.Sprintf("%.2f", res.meanLevels(n))
				}
				fmt.Printf("%6d %-28s %12.1f %11.3fM %8.1f%% %8.1f%% %7s\n", n, policy, res.perRound(),
					res.perRound()/roundTime.Seconds()/1e6, 100*res.inWarp/att, 100*res.cross/att, lv)
			}
		}
		return
	}
	ws := list("w", *windows, time.ParseDuration)
	ts := list("threads", *threads, strconv.Atoi)
	fmt.Printf("model: %s; read-only time %v; %v simulated each\n", b.Name(), *wro, *span)
	fmt.Printf("%-10s %8s %14s %8s\n", "window", "threads", "commits/s", "aborts")
	for _, w := range ws {
		for _, t := range ts {
			res := simulate(b, t, w.Seconds(), wro.Seconds(), span.Seconds(), 0x57a5eed)
			fmt.Printf("%-10v %8d %13.3fM %7.1f%%\n", w, t, (res.commits/span.Seconds())/1e6, 100*res.aborts/(res.aborts+res.commits))
		}
	}
}
