package stm

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// plannedRun is one GPU run a test makes: its engine's options, the
// workload and the run's options (its seed aside: a seed does not change
// the program).
type plannedRun struct {
	o  Options
	w  Workload
	ro RunOptions
}

// run opens an engine with r's options, makes the run (with its seed) and
// closes the engine.
func (r plannedRun) run() (*Result, error) {
	e, err := Open(r.o)
	if err != nil {
		return nil, err
	}
	defer e.Close()
	return e.Run(r.w, r.ro)
}

// runsOf returns the runs of gpuCases made by runContendedGPU.
func runsOf(cases []gpuCase) []plannedRun {
	out := make([]plannedRun, len(cases))
	for i, x := range cases {
		out[i] = contendedRun(x.o, x.c)
	}
	return out
}

// aheadRuns lists, by test, the GPU runs whose programs loadAhead compiles
// before the tests run: every test of the package that runs a program no
// earlier test ran, each from the same tables and helpers the test runs.
// A run missing here is only slower (its test compiles its program).
func aheadRuns(tb testing.TB, dev *gpu.Device) map[string][]plannedRun {
	var errorRuns []plannedRun
	for i := range misbehavingBodies {
		errorRuns = append(errorRuns, misbehavingRun(dev, i))
	}
	errorRuns = append(errorRuns, afterRun(dev))
	var large []plannedRun
	for _, c := range largeCases {
		large = append(large, largeRun(dev, c))
	}
	var latency []plannedRun
	for _, w := range latencyBanks {
		latency = append(latency, plannedRun{Options{GPU: dev}, w, latencyRun(gpuLatencyRun)})
	}
	var hot []plannedRun
	for _, o := range serverCommitHotOptions(dev) {
		hot = append(hot, hotBankRun(o.opt))
	}
	serverCommit, err := serverCommitGPUCases(dev)
	if err != nil {
		tb.Log(err) // TestServerCommitGPU fails with it
	}
	return map[string][]plannedRun{
		"TestExampleBodyOnTheGPU":              exampleRuns(tb, dev),
		"TestCUDABodyOnTheGPU":                 cudaBodyRuns(dev),
		"TestReadManyAgreesWithReads":          readManyRuns(dev),
		"TestGPUErrorsAreClear":                errorRuns,
		"TestGPUMemcachedAndLargeTransactions": large,
		"TestCommitLatency":                    latency,
		"TestContendedGPU":                     runsOf(contendedGPUCases(dev)),
		"TestStripesGPU":                       runsOf(stripesGPUCases(dev)),
		"TestDirectCommitGPU":                  runsOf(directGPUCases(dev)),
		"TestRefreshGPU":                       runsOf(refreshGPUCases(dev)),
		"TestEnginesAgreeWithSerialRuns":       agreeRuns(dev),
		"TestServerCommitGPU":                  runsOf(serverCommit),
		"TestServerCommitUnderHotAccounts":     hot,
		"TestContentionModesGPU":               runsOf(contentionModesGPUCases(dev)),
		"TestSmallLogValidatesInTurnGPU":       runsOf(smallLogGPUCases(dev)),
	}
}

// selected reports whether this test binary's -test.run and -test.skip
// select the top-level test name (their first '/' element, as testing
// matches it; a pattern that does not compile selects every test).
func selected(name string) bool {
	first := func(flagName string) (*regexp.Regexp, bool) {
		f := flag.Lookup(flagName)
		if f == nil || f.Value.String() == "" {
			return nil, false
		}
		re, err := regexp.Compile(strings.SplitN(f.Value.String(), "/", 2)[0])
		return re, err == nil
	}
	if re, ok := first("test.run"); ok && !re.MatchString(name) {
		return false
	}
	if re, ok := first("test.skip"); ok && re.MatchString(name) {
		return false
	}
	return true
}

var ahead sync.Once

// gpuDevice is gputest.Device; its first call in a test binary also
// compiles ahead the programs of the GPU tests the binary runs
// (loadAhead).
func gpuDevice(tb testing.TB) *gpu.Device {
	tb.Helper()
	dev := gputest.Device(tb)
	compileAhead(tb, dev)
	return dev
}

// compileAhead runs loadAhead on the first call in a test binary.
func compileAhead(tb testing.TB, dev *gpu.Device) {
	ahead.Do(func() { loadAhead(tb, dev) })
}

// loadAhead compiles and loads, up to GOMAXPROCS at a time, the distinct
// programs of the runs of the selected tests (aheadRuns), so that the
// runs find them in the device's module cache: NVRTC takes seconds per
// program, one test after another compiled its own, and the compiles of
// one program each run on a CPU core of their own. It logs how many and
// how long. Without the on-disk kernel cache (WARPKV_CACHE_DIR=off) it
// does nothing: every load would compile again. Cost: the slowest
// program's compile, with the cores to spare.
func loadAhead(tb testing.TB, dev *gpu.Device) {
	if os.Getenv(gpu.EnvCacheDir) == "off" {
		return
	}
	start := time.Now()
	progs := map[string]gpu.Program{}
	planned, failed := 0, 0
	for name, runs := range aheadRuns(tb, dev) {
		if !selected(name) {
			continue
		}
		for _, r := range runs {
			p, err := runProgram(dev, r)
			if err != nil {
				failed++ // its test reports the error
				continue
			}
			planned++
			progs[fmt.Sprint(p.Defines, p.Headers["stm/workload.cuh"])] = p
		}
	}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var slowest time.Duration
	var errs []error
	for _, p := range progs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			t0 := time.Now()
			_, err := dev.Load(p)
			mu.Lock()
			defer mu.Unlock()
			slowest = max(slowest, time.Since(t0))
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	tb.Logf("compiled ahead %d programs of %d runs (%d not planned) in %v, the slowest in %v, %d at a time; %d failed (their tests report it)",
		len(progs), planned, failed, time.Since(start).Round(time.Millisecond), slowest.Round(time.Millisecond), cap(sem), len(errs))
}

// runProgram returns the program a run of r loads (gpuEngine.plan, then
// its shape's program).
func runProgram(dev *gpu.Device, r plannedRun) (gpu.Program, error) {
	sp, err := r.w.spec()
	if err != nil {
		return gpu.Program{}, err
	}
	g := &gpuEngine{dev: dev, opt: r.o}
	pl, err := g.plan(r.w, sp, r.ro)
	if err != nil {
		return gpu.Program{}, err
	}
	return pl.sh.program(sp), nil
}
