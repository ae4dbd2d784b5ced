// Command mptbench measures go-ethereum's trie and StackTrie on the pairs
// of warpkv's `warpkv bench mpt` suite (the same data sets, sizes, seed
// and generator: bench.MPTCases and mpt.Generate) and prints the rows in
// the suite's table format, so that the two tables can be put side by
// side. With --ours (the default) it also measures warpkv's CPU engines in
// the same process, each row then carrying its ratio to go-ethereum's
// trie on the same operation.
//
//	cd compat && go run ./cmd/mptbench --size 100000
//
// Rows per data set and size: "geth trie" builds a fresh trie.Trie with
// one Update per pair, then Hash (go-ethereum hashes the root's 16
// children on goroutines when 100 or more nodes are dirty), then looks up
// (Get) and proves (Prove) up to bench.MPTProbes present keys (our
// engines' "lookup into" rows, LookupInto into one reused buffer, are
// compared with its lookup row too);
// "geth stacktrie" feeds the pairs, sorted by key outside the timed
// region, to a StackTrie (which hashes completed subtrees during Update,
// so most of its hashing is in its update row) and reads its root; it has
// no lookups or proofs. Every root is checked against the trie's.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/trie"
	"github.com/ethereum/go-ethereum/triedb"

	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/compat/internal/peerbench"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/workload"
	"github.com/warpkv/warpkv/mpt"
)

func main() {
	size := flag.Int("size", 0, "largest trie in pairs (0: 1M, as warpkv bench mpt)")
	reps := flag.Int("reps", bench.DefaultReps, "timed repetitions behind each median")
	ours := flag.Bool("ours", true, "also measure warpkv's sequential and parallel CPU engines")
	jsonPath := flag.String("json", "", "also write the results as JSON to `FILE`")
	quiet := flag.Bool("quiet", false, "no progress lines on stderr")
	device := flag.String("device", "cpu", "also measure warpkv's GPU engine on this device option (auto, gpu, gpu:N); cpu: no GPU rows")
	warmup := flag.Int("warmup", bench.DefaultWarmup, "untimed runs before the timed ones")
	minSize := flag.Int("min-size", 0, "skip cases smaller than this many pairs")
	datasets := flag.String("datasets", "", "comma-separated data sets to run (default: all)")
	budget := flag.Int64("value-budget", bench.MPTValueBudget, "skip cases whose values exceed this many bytes")
	stack := flag.Bool("stacktrie", true, "also measure go-ethereum's StackTrie")
	sequential := flag.Bool("sequential", true, "with --ours, also measure the sequential CPU engine")
	flag.Parse()
	if flag.NArg() > 0 || *size < 0 || *reps < 1 || *warmup < 0 {
		flag.Usage()
		os.Exit(2)
	}
	cfg := config{size: *size, warmup: *warmup, reps: *reps, ours: *ours, sequential: *sequential, stack: *stack,
		device: *device, minSize: *minSize, budget: *budget}
	if *datasets != "" {
		for _, d := range strings.Split(*datasets, ",") {
			cfg.datasets = append(cfg.datasets, workload.Dataset(d))
		}
	}
	var progress *bench.Progress
	if !*quiet {
		progress = bench.NewProgress(os.Stderr)
	}
	rep, err := run(cfg, progress)
	if err == nil {
		err = peerbench.Print(os.Stdout, rep, fmt.Sprintf("median of %d runs; ratio: throughput relative to the named reference", rep.Reps), *jsonPath)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mptbench:", err)
		os.Exit(1)
	}
}

// config is what the flags select.
type config struct {
	size, warmup, reps, minSize int
	ours, sequential, stack     bool
	device                      string
	datasets                    []workload.Dataset // nil: all
	budget                      int64
}

// run measures every selected case up to cfg.size.
func run(cfg config, p *bench.Progress) (*bench.Report, error) {
	size, warmup, reps, ours, device := cfg.size, cfg.warmup, cfg.reps, cfg.ours, cfg.device
	rep := bench.NewReport("mpt-geth", reps)
	defer rep.Finish()
	rep.Engines = []string{
		"geth trie: go-ethereum v1.17.10 trie.Trie over an in-memory triedb, one Update per pair, then Hash",
		"geth stacktrie: go-ethereum v1.17.10 trie.StackTrie on the pairs sorted by key (sorting not timed); it hashes during Update, so its hash row is only the root",
	}
	rep.Notes = []string{fmt.Sprintf("same pairs as warpkv bench mpt: mpt.Generate, seed %#x", bench.MPTSeed)}
	if !cfg.stack {
		rep.Engines = slices.DeleteFunc(rep.Engines, func(e string) bool { return strings.HasPrefix(e, "geth stacktrie") })
	}
	if ours {
		rep.Engines = append(rep.Engines, "cpu sequential, cpu parallel: warpkv's mpt engines, as in warpkv bench mpt")
		if !cfg.sequential {
			rep.Engines[len(rep.Engines)-1] = "cpu parallel: warpkv's parallel mpt engine, as in warpkv bench mpt"
		}
	}
	useGPU := false
	if device != "cpu" {
		c, err := gpu.Choose(device)
		if err != nil {
			return nil, err
		}
		if c.Backend == gpu.BackendGPU {
			useGPU = true
			rep.Engines = append(rep.Engines, "gpu: warpkv's mpt.EngineGPU, "+c.Reason+" (end to end includes host<->device transfers)")
			c.Device.Close()
		} else {
			rep.Notes = append(rep.Notes, "no GPU rows: "+c.Reason)
		}
	}
	cases, notes := bench.MPTCasesBudget(size, cfg.budget)
	rep.Notes = append(rep.Notes, notes...)
	for _, c := range cases {
		if c.Size < cfg.minSize || (cfg.datasets != nil && !slices.Contains(cfg.datasets, c.Dataset)) {
			continue
		}
		keys, values, err := c.Input()
		if err != nil {
			return nil, err
		}
		st := workload.DatasetStats(keys, values, nil)
		p.Printf("geth trie: %s", c.Op("pairs"))
		trieRows, root, err := gethTrieRows(c, keys, values, st, warmup, reps)
		if err != nil {
			return nil, fmt.Errorf("geth trie, %s: %w", c.Op(""), err)
		}
		rep.Results = append(rep.Results, trieRows...)
		say(p, trieRows)
		if cfg.stack {
			p.Printf("geth stacktrie: %s", c.Op("pairs"))
			stRows, stRoot, err := stackTrieRows(c, keys, values, st, warmup, reps)
			if err != nil {
				return nil, fmt.Errorf("geth stacktrie, %s: %w", c.Op(""), err)
			}
			if stRoot != root {
				return nil, fmt.Errorf("%s: StackTrie root %x, trie root %x", c.Op(""), stRoot, root)
			}
			for i := range stRows {
				if i != 1 { // its hash row is only the root: the hashing is in its update row
					stRows[i] = stRows[i].VsPeer("geth trie", trieRows[i])
				}
			}
			rep.Results = append(rep.Results, stRows...)
		}
		for _, eng := range mpt.Engines() {
			if !ours || (eng == mpt.EngineSequential && !cfg.sequential) {
				continue
			}
			p.Printf("cpu %s: %s", eng, c.Op("pairs"))
			rows, err := bench.MPTEngineRows(c, eng, keys, values, st, warmup, reps)
			if err != nil {
				return nil, fmt.Errorf("cpu %s, %s: %w", eng, c.Op(""), err)
			}
			tr, err := mpt.Open(mpt.Options{Engine: eng})
			if err != nil {
				return nil, err
			}
			if err := tr.Update(keys, values); err != nil {
				return nil, err
			}
			got, err := tr.Hash()
			if err != nil {
				return nil, err
			}
			if got != root {
				return nil, fmt.Errorf("%s: %s root %x, go-ethereum %x", c.Op(""), eng, got, root)
			}
			vsGeth(rows, trieRows)
			rep.Results = append(rep.Results, rows...)
			say(p, rows)
		}
		if useGPU {
			p.Printf("gpu: %s", c.Op("pairs"))
			rows, note, err := bench.MPTGPURows(c, device, keys, values, st, [32]byte(root), warmup, reps)
			if err != nil {
				return nil, fmt.Errorf("gpu, %s: %w", c.Op(""), err)
			}
			vsGeth(rows, trieRows)
			rep.Results = append(rep.Results, rows...)
			say(p, rows)
			rep.Notes = append(rep.Notes, note)
		}
		runtime.GC()
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("every engine's root equals go-ethereum's trie root on every case; %d untimed warm-up run(s) before the timed ones", warmup))
	return rep, nil
}

// vsGeth gives each of our rows (bench.MPTEngineRows' or MPTGPURows'
// order) its ratio to go-ethereum's trie row of the same operation; all
// our lookup rows (lookup, lookup into, with or without the GPU engine's
// host copy of the values) compare with go-ethereum's lookup.
func vsGeth(rows, trieRows []bench.Result) {
	for i := range rows {
		j := bench.MPTRowPeer(i)
		if j == bench.MPTLookupIntoRow {
			j = bench.MPTLookupRow
		}
		rows[i] = rows[i].VsPeer("geth trie", trieRows[j])
	}
}

// say prints rows as progress lines, so that a run cut short still shows
// what it measured.
func say(p *bench.Progress, rows []bench.Result) {
	for _, r := range rows {
		ratio := ""
		if r.RatioTo != "" {
			ratio = fmt.Sprintf(" (%.2fx %s)", r.Ratio, r.RatioTo)
		}
		p.Printf("  %s, %s: %s/s%s", r.Op, r.Engine, bench.SI(r.OpsPerSec), ratio)
	}
}

// gethTrieRows measures go-ethereum's trie on case c: update, hash, end
// to end, lookup and proof rows, and returns its root.
func gethTrieRows(c bench.MPTCase, keys, values [][]byte, st workload.Stats, warmup, reps int) ([]bench.Result, common.Hash, error) {
	var tr *trie.Trie
	u, h, e2e, err := bench.MPTBuildTimes(warmup, reps, func() (func(), error) {
		tr = trie.NewEmpty(triedb.NewDatabase(rawdb.NewMemoryDatabase(), nil))
		for i := range keys {
			if err := tr.Update(keys[i], values[i]); err != nil {
				return nil, err
			}
		}
		return func() { tr.Hash() }, nil
	}, nil) // a geth trie holds nothing to free
	if err != nil {
		return nil, common.Hash{}, err
	}
	const engine = "geth trie"
	rows := bench.MPTBuildRows(c, engine, st.KeyBytes, st.ValueBytes, u, h, e2e)
	probe := keys[:c.Probes()]
	lookup, err := bench.TimeCPU(warmup, reps, nil, func() error {
		for i, k := range probe {
			v, err := tr.Get(k)
			if err != nil {
				return err
			}
			if !bytes.Equal(v, values[i]) {
				return fmt.Errorf("Get(%x): wrong value", k)
			}
		}
		return nil
	})
	if err != nil {
		return nil, common.Hash{}, err
	}
	proof, err := bench.TimeCPU(warmup, reps, nil, func() error {
		for _, k := range probe {
			var l proofList
			if err := tr.Prove(k, &l); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, common.Hash{}, err
	}
	rows = append(rows,
		bench.NewResult(c.Op("lookup"), engine, int64(len(probe)), 0, lookup),
		bench.NewResult(c.Op("proof"), engine, int64(len(probe)), 0, proof))
	return rows, tr.Hash(), nil
}

// stackTrieRows measures go-ethereum's StackTrie on case c: update, hash
// and end-to-end rows on the pairs sorted by key, and returns its root.
func stackTrieRows(c bench.MPTCase, keys, values [][]byte, st workload.Stats, warmup, reps int) ([]bench.Result, common.Hash, error) {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return bytes.Compare(keys[a], keys[b]) })
	sk, sv := make([][]byte, len(keys)), make([][]byte, len(keys))
	for i, j := range order {
		sk[i], sv[i] = keys[j], values[j]
	}
	var root common.Hash
	u, h, e2e, err := bench.MPTBuildTimes(warmup, reps, func() (func(), error) {
		s := trie.NewStackTrie(nil)
		for i := range sk {
			if err := s.Update(sk[i], sv[i]); err != nil {
				return nil, err
			}
		}
		return func() { root = s.Hash() }, nil
	}, nil)
	if err != nil {
		return nil, common.Hash{}, err
	}
	return bench.MPTBuildRows(c, "geth stacktrie", st.KeyBytes, st.ValueBytes, u, h, e2e), root, nil
}

// proofList collects proof nodes; it is the ethdb.KeyValueWriter Prove
// writes to.
type proofList [][]byte

func (l *proofList) Put(_, value []byte) error {
	*l = append(*l, value)
	return nil
}

func (l *proofList) Delete([]byte) error { return nil }
