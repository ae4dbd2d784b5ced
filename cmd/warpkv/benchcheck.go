package main

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/warpkv/warpkv/bench"
	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/hashindex"
	"github.com/warpkv/warpkv/server"
)

// benchMinSize is the smallest --size each suite takes (0 is always its
// default); a suite not listed takes any positive size.
var benchMinSize = map[string]int{
	"limits": 16, // bytes of a copy
	"btree":  bench.BTreeMinSize,
	"art":    bench.ARTMinSize,
	"stm":    100, // accounts of the large bank (RunSTM)
}

// benchFloor returns a lower bound of the host memory a suite allocates
// at --size n (n > 0) and what it counts: the inputs of its largest case
// alone, on any engine (the CPU engine's structures come on top). These
// are floors, read from each suite's allocations in package bench, so
// that a size refused here could never have run.
func benchFloor(suite string, n uint64, cpu bool) (uint64, string) {
	switch suite {
	case "limits":
		if !cpu {
			return 0, "" // the GPU run fits its copy into device memory
		}
		return mul(2, n), "the CPU engine's copy: a source and a destination of --size bytes"
	case "prim":
		return mul(8, n), "8 bytes an element of the largest input"
	case "index":
		b := uint64(1) << min(bits.Len64(max(n, 2)-1), 62)
		b = min(max(b, 1<<10), hashindex.MaxBuckets)
		return add(mul(b, hashindex.BucketBytes), mul(8, n)), fmt.Sprintf("a table of %d buckets of %d bytes and an 8-byte hash a job of the largest batch", b, hashindex.BucketBytes)
	case "mpt":
		return mul(8, n), "8 bytes of key a pair of the largest trie"
	case "btree":
		return mul(40, n), "40 bytes a key of the largest tree for the sorted pairs and a build's pairs"
	case "stm":
		if cpu {
			return mul(16*8+20, n), "the CPU engine's 148 bytes an account of the large bank"
		}
		return mul(8, n), "8 bytes an account of the large bank for its balances"
	case "art":
		return mul(16, n), "an 8-byte key and an 8-byte value a key of the largest tree"
	}
	return 0, ""
}

// checkBench checks bench's flags for suite before anything runs: the
// size's range and memory, the engines the suite can choose, the device
// option and the JSON output file.
func checkBench(suite, device, engines, jsonPath string, size, reps int) error {
	if err := checkDevice("--device", device); err != nil {
		return err
	}
	if err := atLeast("--reps", reps, 1); err != nil {
		return err
	}
	if size < 0 {
		return usagef("--size %d: want 0 (the suite's default) or a size", size)
	}
	if lo := benchMinSize[suite]; size > 0 && size < lo {
		return usagef("--size %d: the %s suite wants 0 (its default) or at least %d", size, suite, lo)
	}
	if size > 0 {
		need, what := benchFloor(suite, uint64(size), onCPU(device))
		if err := fits("--size", size, need, what); err != nil {
			return err
		}
	}
	if engines != "" {
		if !slices.Contains(bench.EngineSuites, suite) {
			return usagef("--engines %s: the %s suite runs every engine the device option allows; --engines chooses among the %s suites' engines (--device cpu: the CPU engine alone)",
				engines, suite, strings.Join(bench.EngineSuites, " and "))
		}
		wantCPU, wantGPU, err := bench.ParseARTEngines(engines)
		if err != nil {
			return usagef("--engines: %v", err)
		}
		if wantGPU && !wantCPU && onCPU(device) {
			why := "device option cpu"
			if spec, _ := gpu.ParseSpec(device); spec.Auto {
				_, why = gpu.Available()
			}
			return fmt.Errorf("bench %s: --engines %s: no usable GPU (%s): nothing was run", suite, engines, why)
		}
	}
	return checkOutput("bench "+suite, "--json", jsonPath)
}

// checkBenchServe checks bench serve's flags before any server starts:
// -m as serve takes it, -t not negative, every --engines entry a device
// option with an optional /persistent or /staged, the batch interval and
// policy as serve takes them, the JSON output file, and the loadgen flags
// after -- as loadgen checks them.
func checkBenchServe(memMB int64, threads int, engines string, interval time.Duration, policy, jsonPath string, loadgenArgs []string) error {
	if err := inRange("-m", memMB, 1, serveMaxMB); err != nil {
		return err
	}
	if err := atLeast("-t", threads, 0); err != nil {
		return err
	}
	for _, spec := range strings.Split(engines, ",") {
		if spec = strings.TrimSpace(spec); spec == "" || spec == floorEngine {
			continue
		}
		dev, _, ok := engineSpecFlags(spec)
		if _, err := gpu.ParseSpec(dev); err != nil || !ok {
			return usagef("--engines: %q: want floor or a device option (cpu, gpu, gpu:N, auto), optionally with /%s, /%s, %s, /roundN (N 1, 2, 4, 8, 16 or all), /block, /park, /loopsN (N 1 to 1024), /epoll, /uring or /uringpoll, options joined by +", spec,
				server.GPUSearchPersistent, server.GPUSearchStaged, "/"+strings.Join(server.SearchLaunchNames(), ", /"))
		}
	}
	if interval < 0 {
		return usagef("--batch-interval %v: want 0 (the engine's default) or a positive duration", interval)
	}
	if policy != "" && policy != server.PolicyLoad && policy != server.PolicyFixed {
		return usagef("--batch-policy %q: want %s or %s (default: the engine's)", policy, server.PolicyLoad, server.PolicyFixed)
	}
	quiet := &env{stdout: io.Discard, stderr: io.Discard}
	if _, err := planLoadgen(quiet, append([]string{"--addr", "127.0.0.1:0"}, loadgenArgs...)); err != nil {
		if ue := (*usageError)(nil); errors.As(err, &ue) {
			return usagef("loadgen flags after --: %v", err)
		}
		return err
	}
	return checkOutput("bench serve", "--json", jsonPath)
}
