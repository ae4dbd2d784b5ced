package art

import (
	"fmt"
	"os"
	"strings"
)

// EnvRangeOptions names the options of the GPU engine's pipelined range
// and prefix calls to turn on, comma-separated, read when a GPU tree is
// opened: oneScan, fillOnce, lazyTimes, packAhead, pairsEarly (rangePipe;
// unset or empty: none, the measured path). For the benchmarks' A/B of
// whole binaries (artbench, warpkv bench art) before an option becomes a
// default; an unknown name fails Open.
const EnvRangeOptions = "WARPKV_ART_RANGE_OPTS"

// setOptions turns on the options named in the comma-separated list s
// (EnvRangeOptions). Cost: O(len(s)).
func (p *rangePipe) setOptions(s string) error {
	for _, name := range strings.Split(s, ",") {
		switch strings.TrimSpace(name) {
		case "":
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

// rangeOptionsFromEnv applies EnvRangeOptions to p. Cost: O(len of the
// variable).
func (p *rangePipe) rangeOptionsFromEnv() error { return p.setOptions(os.Getenv(EnvRangeOptions)) }
