package art

import (
	"fmt"
	"os"
	"strings"
)

// EnvRangeOptions names the options of the GPU engine's pipelined range
// and prefix calls to turn on, comma-separated, read when a GPU tree is
// opened: oneScan, fillOnce, lazyTimes, packAhead, pairsEarly (rangePipe),
// or "none" for none of them. Unset or empty: defaultRangeOptions. For
// the benchmarks' A/B of whole binaries (artbench, warpkv bench art); an
// unknown name fails Open.
const EnvRangeOptions = "WARPKV_ART_RANGE_OPTS"

// defaultRangeOptions are the options a GPU tree opens with: all five.
// On the H200 (2026-11-29 19:38 UTC, 100M keys, BenchmarkGPURangeChunks,
// 5 interleaved rounds) they took a call of 64Ki ranges of 16 from 0.764
// to 0.674 ms at 3 chunks and to 0.622 ms at 4 (rangeChunkSlots), and 64Ki
// prefix scans of 64 from 2.258 to 2.149 ms; artbench's whole call read
// 94.4 and 99.0 M ranges/s against 85.9 and 87.3 without them.
const defaultRangeOptions = "oneScan,fillOnce,lazyTimes,packAhead,pairsEarly"

// setOptions turns on the options named in the comma-separated list s
// (EnvRangeOptions) and off the others. Cost: O(len(s)).
func (p *rangePipe) setOptions(s string) error {
	p.oneScan, p.fillOnce, p.lazyTimes, p.packAhead, p.pairsEarly = false, false, false, false, false
	for _, name := range strings.Split(s, ",") {
		switch strings.TrimSpace(name) {
		case "", "none":
		case "oneScan":
			p.oneScan = true
		case "fillOnce":
			p.fillOnce = true
		case "lazyTimes":
			p.lazyTimes = true
		case "packAhead":
			p.packAhead = true
		case "pairsEarly":
			p.pairsEarly = true
		default:
			return fmt.Errorf("art: %s: unknown option %q (want oneScan, fillOnce, lazyTimes, packAhead, pairsEarly)", EnvRangeOptions, name)
		}
	}
	return nil
}

// rangeOptionsFromEnv sets p's options from EnvRangeOptions, or to
// defaultRangeOptions when it is unset or empty. Cost: O(len of the
// variable).
func (p *rangePipe) rangeOptionsFromEnv() error {
	s := os.Getenv(EnvRangeOptions)
	if s == "" {
		s = defaultRangeOptions
	}
	return p.setOptions(s)
}
