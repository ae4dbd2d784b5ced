package bench

import (
	"bytes"
	"strings"
	"testing"
)

// TestARTSuiteCPU runs the art suite on the CPU engine at a small size:
// every case answers (Validate) and has its row.
func TestARTSuiteCPU(t *testing.T) {
	rep, err := RunART(Options{Device: "cpu", Size: 4000, Reps: 1})
	if err != nil {
		t.Fatal(err)
	}
	cases := ARTCases(4000)
	if len(rep.Results) != len(cases) {
		t.Fatalf("%d rows for %d cases", len(rep.Results), len(cases))
	}
	for i, c := range cases {
		if rep.Results[i].Op != c.Name() || rep.Results[i].OpsPerSec <= 0 {
			t.Fatalf("row %d: %+v for case %s", i, rep.Results[i], c.Name())
		}
	}
	var buf bytes.Buffer
	if err := PrintTable(&buf, rep.Results); err != nil || !strings.Contains(buf.String(), "lookup") {
		t.Fatalf("table: %v\n%s", err, buf.String())
	}
}

// TestARTKeys checks the key shapes: lengths, distinct keys.
func TestARTKeys(t *testing.T) {
	for _, k := range []ARTKeys{ARTKeys8, ARTKeys16, ARTKeys32, ARTKeysText, ARTKeysLong3, ARTKeysLong30} {
		seen := map[string]bool{}
		long := 0
		for i := range 2000 {
			key := ARTKey([]byte("x"), k, uint64(i))[1:]
			if seen[string(key)] {
				t.Fatalf("%s: key %d repeats", k, i)
			}
			seen[string(key)] = true
			switch k {
			case ARTKeys8, ARTKeys16, ARTKeys32:
				if want := map[ARTKeys]int{ARTKeys8: 8, ARTKeys16: 16, ARTKeys32: 32}[k]; len(key) != want {
					t.Fatalf("%s: key of %d bytes", k, len(key))
				}
			}
			if len(key) > 32 {
				long++
			}
		}
		if k == ARTKeysLong30 && (long < 400 || long > 800) {
			t.Fatalf("%s: %d of 2000 long", k, long)
		}
	}
}
