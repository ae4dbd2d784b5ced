package bench

import (
	"strings"
	"testing"
)

// TestKeepEngines checks the btree suite's --engines choice on the CPU
// engine: cpu keeps it, gpu alone fails naming why there is no GPU, an
// unknown name fails, and "" keeps every engine.
func TestKeepEngines(t *testing.T) {
	for _, tc := range []struct {
		engines string
		impls   int
		err     string
	}{
		{"", 1, ""},
		{"cpu", 1, ""},
		{"cpu,gpu", 1, ""},
		{"gpu", 0, `engines "gpu": no usable GPU: cpu engine: requested`},
		{"tpu", 0, `unknown engine "tpu"`},
	} {
		eng, err := OpenBTreeEngines("cpu")
		if err != nil {
			t.Fatal(err)
		}
		err = keepEngines(&eng.engineSet, tc.engines, noGPUReason(eng.Engines))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("engines %q: error %v, want %q", tc.engines, err, tc.err)
		case tc.err == "" && (err != nil || len(eng.Impls) != tc.impls || eng.Impls[0].Name() != "cpu"):
			t.Errorf("engines %q: error %v, %d engines, want the cpu engine", tc.engines, err, len(eng.Impls))
		}
		if err := eng.Close(); err != nil {
			t.Error(err)
		}
	}
}
