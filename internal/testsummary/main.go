// Command testsummary reads "go test -json" output on standard input and
// prints what "go test" prints (a line per package, the output of failing
// tests), then says once how many tests skipped for lack of a usable GPU,
// why, and how to run them. It exits 1 when a test or package failed.
//
//	go test -json ./... | go run ./internal/testsummary
//
// Plain "go test ./..." shows nothing of a passing package but its "ok"
// line, so the count of GPU tests it skipped needs this second look.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one test2json event.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

// gpuSkip marks the skip message of internal/gputest.Unavailable.
const gpuSkip = "no usable GPU: "

func main() {
	os.Exit(summarize(os.Stdin, os.Stdout))
}

// summarize reads events from in, writes the summary to out and returns the
// exit status.
func summarize(in io.Reader, out io.Writer) int {
	type key struct{ pkg, test string }
	outputs := map[key][]string{}
	gpuSkips := map[string]int{} // reason -> tests
	failed := false
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			fmt.Fprintln(out, sc.Text()) // not an event: build errors and the like
			continue
		}
		k := key{e.Package, e.Test}
		switch e.Action {
		case "output":
			outputs[k] = append(outputs[k], e.Output)
		case "skip":
			if e.Test != "" {
				for _, line := range outputs[k] {
					if i := strings.Index(line, gpuSkip); i >= 0 {
						gpuSkips[strings.TrimSpace(line[i+len(gpuSkip):])]++
						break
					}
				}
			}
			delete(outputs, k)
		case "pass":
			delete(outputs, k)
			if e.Test == "" {
				fmt.Fprintf(out, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
			}
		case "fail":
			failed = true
			if e.Test == "" {
				fmt.Fprint(out, strings.Join(outputs[k], ""))
				fmt.Fprintf(out, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
			} else {
				fmt.Fprint(out, strings.Join(outputs[k], ""))
			}
			delete(outputs, k)
		}
	}
	total := 0
	for _, n := range gpuSkips {
		total += n
	}
	if total > 0 {
		fmt.Fprintf(out, "%d tests skipped for lack of a usable GPU", total)
		if len(gpuSkips) == 1 {
			for why := range gpuSkips {
				fmt.Fprintf(out, " (%s)", why)
			}
		}
		fmt.Fprintln(out, "; to run them, on a GPU machine: WARPKV_REQUIRE_GPU=1 go test ./..., or scripts/pack-gpu.sh here and .gpu/run-tests.sh there (README, Testing on a GPU)")
	}
	if failed {
		return 1
	}
	return 0
}
