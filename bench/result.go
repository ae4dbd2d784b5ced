package bench

import "math"

// Result is one measured operation on one engine.
type Result struct {
	Op        string  `json:"op"`          // what was measured, e.g. "sort pairs u64/u32"
	Engine    string  `json:"engine"`      // "cpu", "gpu", or a more precise name
	Items     int64   `json:"items"`       // elements, records or messages processed per run
	Bytes     int64   `json:"bytes"`       // bytes of memory traffic counted per run
	Seconds   float64 `json:"seconds"`     // median time of one run
	OpsPerSec float64 `json:"ops_per_sec"` // Items / Seconds
	GBps      float64 `json:"gbps"`        // Bytes / Seconds / 1e9
	Ratio     float64 `json:"ratio"`       // throughput relative to RatioTo; 0 when none
	RatioTo   string  `json:"ratio_to"`    // the reference of Ratio, e.g. "gpu copy"
}

// NewResult returns a Result with the derived rates filled in. A
// non-positive time leaves the rates at zero rather than infinite.
func NewResult(op, engine string, items, bytes int64, seconds float64) Result {
	r := Result{Op: op, Engine: engine, Items: items, Bytes: bytes, Seconds: seconds}
	if seconds > 0 {
		r.OpsPerSec = float64(items) / seconds
		r.GBps = float64(bytes) / seconds / 1e9
	}
	return r
}

// VsBandwidth sets the ratio to the achieved bandwidth over a reference
// bandwidth in GB/s (for example the measured copy bandwidth) and names the
// reference. A non-positive reference leaves the ratio unset.
func (r Result) VsBandwidth(to string, refGBps float64) Result {
	if refGBps > 0 {
		r.Ratio, r.RatioTo = r.GBps/refGBps, to
	}
	return r
}

// VsPeer sets the ratio to the throughput (items per second) over the
// throughput of a peer measurement, so 2 means twice as fast as the peer.
func (r Result) VsPeer(to string, peer Result) Result {
	if peer.OpsPerSec > 0 {
		r.Ratio, r.RatioTo = r.OpsPerSec/peer.OpsPerSec, to
	}
	return r
}

// finite reports whether every number of r can be written as JSON.
func (r Result) finite() bool {
	for _, v := range []float64{r.Seconds, r.OpsPerSec, r.GBps, r.Ratio} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
