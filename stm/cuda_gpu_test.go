package stm

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
)

// exampleWorkload is the body the package documentation explains
// (testdata/transfer.cu) as a workload of n items starting at 100.
func exampleWorkload(t testing.TB, n int, roPPM uint64) CUDA {
	t.Helper()
	body, err := os.ReadFile("testdata/transfer.cu")
	if err != nil {
		t.Fatal(err)
	}
	return CUDA{Label: "transfer.cu", Body: string(body), Size: n, Init: func(int) uint64 { return 100 },
		Param: []uint64{roPPM, 100}, MaxReads: 8, MaxWrites: 2, MaxReadOnlyReads: 8}
}

// code strips C comments and white space.
func code(s string) string {
	s = regexp.MustCompile(`//[^\n]*`).ReplaceAllString(s, "")
	return strings.Join(strings.Fields(s), "")
}

// TestDocumentedBodyIsTheExample: the body in the package documentation
// is testdata/transfer.cu (but for comments), and both compile: the file
// and the documentation's text exactly as written.
func TestDocumentedBodyIsTheExample(t *testing.T) {
	t.Parallel() // compiles only: beside the other compile-only tests, after the GPU tests
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var body []string
	in := false
	for _, l := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(l, "//\t__device__ void stm_body") {
			in = true
		}
		if in {
			body = append(body, strings.TrimPrefix(l, "//\t"))
			if l == "//\t}" {
				break
			}
		}
	}
	w := exampleWorkload(t, 1024, 0)
	if got, want := code(strings.Join(body, "\n")), code(w.Body); got != want {
		t.Fatalf("doc.go's body differs from testdata/transfer.cu:\n%s\nwant\n%s", got, want)
	}
	gputest.NVRTC(t)
	if err := w.Compile(); err != nil {
		t.Fatal(err)
	}
	// The documentation's exact text, comments included, compiles too.
	w.Label, w.Body = "doc.go's example", strings.Join(body, "\n")+"\n"
	if err := w.Compile(); err != nil {
		t.Fatalf("doc.go's example as written: %v", err)
	}
}

// exampleRuns are TestExampleBodyOnTheGPU's runs: the documented body on
// the device's servers and on 3, every attempt recorded.
func exampleRuns(tb testing.TB, dev *gpu.Device) []plannedRun {
	var out []plannedRun
	for _, servers := range []int{0, 3} {
		out = append(out, plannedRun{o: Options{GPU: dev, Config: Config{Servers: servers}, ClientThreads: 2048}, w: exampleWorkload(tb, 1<<14, 500000),
			ro: RunOptions{Transactions: 50000, Seed: 5, History: true, HistoryAborted: true, Timeout: time.Minute}})
	}
	return out
}

// TestExampleBodyOnTheGPU runs the documented body with every attempt
// recorded: opacity, serial replay, block totals and the abort causes.
func TestExampleBodyOnTheGPU(t *testing.T) {
	for _, r := range exampleRuns(t, gpuDevice(t)) {
		servers, w := r.o.Config.Servers, r.w.(CUDA)
		res, err := r.run()
		if err != nil {
			t.Fatal(err)
		}
		initial := make([]uint64, w.Size)
		for i := range initial {
			initial[i] = 100
		}
		if res.Total() != 50000 || res.Wrong != 0 {
			t.Fatalf("%d servers: %d commits, %d wrong", servers, res.Total(), res.Wrong)
		}
		if err := CheckHistory(initial, res.History, res.Final); err != nil {
			t.Fatal(err)
		}
		if err := CheckOpacity(initial, res.History); err != nil {
			t.Fatal(err)
		}
		for b := 0; b < w.Size; b += 8 {
			var sum uint64
			for _, v := range res.Final[b : b+8] {
				sum += v
			}
			if sum != 800 {
				t.Fatalf("block %d totals %d, want 800", b/8, sum)
			}
		}
		t.Logf("%d servers (%d used): %d commits, aborts %s, %d given up", servers, res.Servers, res.Total(), res.AbortString(), res.UserAborts)
	}
}
