// Command stmbench measures the bank cases of warpkv's `warpkv bench stm`
// suite (the same transactions, from bench.STMCases and stm.Bank.Draw) on
// warpkv's CSMV CPU engine and its peers, side by side in one run:
// github.com/anacrolix/stm (one stm.Var per account), a mutex per account
// taken in ascending order, and one global lock, each with GOMAXPROCS
// goroutines; and, when the device option resolves to a GPU, warpkv's GPU
// engine. Every row carries its ratio to anacrolix/stm on the same case;
// a note per case gives the GPU engine's ratio to the CPU engine.
//
//	cd compat && go run ./cmd/stmbench --size 6000 --duration 200ms
//	cd compat && go run ./cmd/stmbench --device gpu --reps 3
//
// Every implementation checks every read-only total and the final total of
// the bank; a wrong one posts no figure but a FAILED note, and the command
// exits with status 1 after printing the rest.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	astm "github.com/anacrolix/stm"

	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/compat/internal/peerbench"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/stm"
)

func main() {
	size := flag.Int("size", bench.STMBigBank, "accounts of the large bank")
	reps := flag.Int("reps", 1, "runs behind each median")
	duration := flag.Duration("duration", bench.STMRunCPU, "length of one run of a peer or the CPU engine")
	gpuDuration := flag.Duration("gpu-duration", bench.STMRunGPU, "length of one run of the GPU engine")
	device := flag.String("device", "auto", "warpkv engines: cpu, or auto, gpu, gpu:N to add the GPU engine")
	peers := flag.String("peers", "anacrolix,item-locks,global-lock", "peers to measure, comma-separated (anacrolix, item-locks, global-lock; empty: none)")
	only := flag.String("cases", "", "only cases whose name contains this")
	jsonPath := flag.String("json", "", "also write the results as JSON to `FILE`")
	quiet := flag.Bool("quiet", false, "no progress lines on stderr")
	flag.Parse()
	if flag.NArg() > 0 || *size < 100 || *reps < 1 || *duration <= 0 || *gpuDuration <= 0 {
		flag.Usage()
		os.Exit(2)
	}
	cfg := config{size: *size, reps: *reps, d: *duration, gpuD: *gpuDuration, device: *device, peers: *peers, only: *only}
	var progress io.Writer
	if !*quiet {
		progress = os.Stderr
	}
	rep, err := run(cfg, progress)
	if rep != nil {
		header := fmt.Sprintf("median of %d runs; ratio: commits/s relative to the named reference", rep.Reps)
		if perr := peerbench.Print(os.Stdout, rep, header, *jsonPath); perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stmbench:", err)
		os.Exit(1)
	}
}

type config struct {
	size, reps  int
	d, gpuD     time.Duration
	device      string
	peers, only string
}

// peer names and constructors.
var peerKinds = map[string]func(stm.Bank) bench.BankPeer{
	"anacrolix":   newAnacrolixBank,
	"item-locks":  bench.NewItemLockBank,
	"global-lock": bench.NewGlobalLockBank,
}

// run measures every bank case of the suite on every implementation.
func run(c config, progress io.Writer) (*bench.Report, error) {
	var names []string
	for _, p := range strings.Split(c.peers, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if peerKinds[p] == nil {
			return nil, fmt.Errorf("unknown peer %q (want anacrolix, item-locks or global-lock)", p)
		}
		names = append(names, p)
	}
	ch, err := gpu.Choose(c.device)
	if err != nil {
		return nil, err
	}
	workers := runtime.GOMAXPROCS(0)
	rep := bench.NewReport("stm-peers", c.reps)
	defer rep.Finish()
	rep.Engines = append(rep.Engines, fmt.Sprintf("cpu: warpkv's CSMV CPU engine; peers: %s; %d goroutines each", strings.Join(names, ", "), workers))
	var dev *gpu.Device
	if ch.Backend == gpu.BackendGPU {
		dev = ch.Device
		defer dev.Close()
		rep.Engines = append(rep.Engines, "gpu: "+ch.Reason)
	} else {
		rep.Engines = append(rep.Engines, ch.Reason)
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("runs of %v (GPU engine %v), seed %#x, accounts start at 100; the same transactions on every implementation (stm.Bank.Draw)", c.d, c.gpuD, bench.STMSeed))
	p := bench.NewProgress(progress)
	failed := 0
	for _, cs := range bench.STMCases(c.size) {
		if cs.Kind != "bank" || cs.GPUOnly || (c.only != "" && !strings.Contains(cs.Name(), c.only)) {
			continue
		}
		b := cs.Bank()
		var ref, cpuRow bench.Result
		measure := func(engine string, one func() (bench.STMRun, error)) {
			p.Printf("%s: %s", engine, cs.Name())
			var runs []bench.STMRun
			for range c.reps {
				r, err := one()
				if err != nil {
					rep.Notes = append(rep.Notes, fmt.Sprintf("FAILED %s on %s: %v", cs.Name(), engine, err))
					failed++
					return
				}
				runs = append(runs, r)
			}
			m := bench.MedianSTM(runs)
			row := bench.NewResult(cs.Name(), engine, int64(m.Stats.Total()), 0, m.Elapsed.Seconds())
			if ref.OpsPerSec > 0 {
				row = row.VsPeer("anacrolix/stm", ref)
			}
			if engine == "anacrolix/stm" {
				ref = row
			}
			if engine == "csmv cpu" {
				cpuRow = row
			}
			if engine == "csmv gpu" && cpuRow.OpsPerSec > 0 {
				rep.Notes = append(rep.Notes, fmt.Sprintf("%s: GPU engine %.1fx the CPU engine", cs.Name(), row.OpsPerSec/cpuRow.OpsPerSec))
			}
			if m.Stats.TotalAborts() > 0 || m.Commit != (stm.Breakdown{}) {
				rep.Notes = append(rep.Notes, m.Note(cs.Name(), engine))
			}
			rep.Results = append(rep.Results, row)
		}
		for _, name := range names {
			peer := name
			label := peer
			if peer == "anacrolix" {
				label = "anacrolix/stm"
			}
			measure(label, func() (bench.STMRun, error) {
				return bench.RunBankPeer(peerKinds[peer](b), b, bench.STMSeed, workers, c.d)
			})
		}
		engines := []struct {
			name string
			opt  stm.Options
			d    time.Duration
		}{{"csmv cpu", stm.Options{Device: "cpu"}, c.d}}
		if dev != nil {
			engines = append(engines, struct {
				name string
				opt  stm.Options
				d    time.Duration
			}{"csmv gpu", stm.Options{GPU: dev}, c.gpuD})
		}
		for _, en := range engines {
			e, err := stm.Open(cs.Options(en.opt))
			if err != nil {
				return rep, err
			}
			measure(en.name, func() (bench.STMRun, error) { return bench.RunSTMCase(e, cs, en.d, en.name == "csmv gpu") })
			e.Close()
		}
	}
	if failed > 0 {
		return rep, fmt.Errorf("%d measurements failed (see the FAILED notes)", failed)
	}
	return rep, nil
}

// anacrolixBank is the bank on github.com/anacrolix/stm: one Var per
// account; a transfer and a sum are each one Atomically.
type anacrolixBank struct{ acc []*astm.Var }

func newAnacrolixBank(b stm.Bank) bench.BankPeer {
	a := &anacrolixBank{acc: make([]*astm.Var, b.Accounts)}
	for i := range a.acc {
		a.acc[i] = astm.NewVar(b.Initial)
	}
	return a
}

func (a *anacrolixBank) Name() string { return "anacrolix/stm" }

func (a *anacrolixBank) Transfer(moves [][2]int) {
	astm.Atomically(func(tx *astm.Tx) interface{} {
		for _, m := range moves {
			from, to := a.acc[m[0]], a.acc[m[1]]
			tx.Set(from, tx.Get(from).(uint64)-1)
			tx.Set(to, tx.Get(to).(uint64)+1)
		}
		return nil
	})
}

func (a *anacrolixBank) Sum(first, count int) uint64 {
	return astm.Atomically(func(tx *astm.Tx) interface{} {
		var s uint64
		for _, v := range a.acc[first : first+count] {
			s += tx.Get(v).(uint64)
		}
		return s
	}).(uint64)
}

func (a *anacrolixBank) Final() []uint64 {
	out := make([]uint64, len(a.acc))
	for i, v := range a.acc {
		out[i] = astm.AtomicGet(v).(uint64)
	}
	return slices.Clip(out)
}
