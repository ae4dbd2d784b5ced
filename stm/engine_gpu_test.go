package stm

import (
	"strings"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
)

// A CUDA body: a counter incremented by every transaction, and a
// read-only check that the two counters agree.
const twoCounters = `
__device__ void stm_body(stm_tx* tx) {
	const bool ro = stm_below(tx, 4) == 0;
	stm_begin(tx, ro);
	const u64 a = stm_read(tx, 0), b = stm_read(tx, 1);
	if (ro) {
		stm_check(tx, a == b);
		return;
	}
	stm_write(tx, 0, a + 1);
	stm_write(tx, 1, b + 1);
}
`

// cudaBodyRuns are TestCUDABodyOnTheGPU's runs: the two counters on 1 and
// 2 servers, every attempt recorded.
func cudaBodyRuns(dev *gpu.Device) []plannedRun {
	var out []plannedRun
	for _, servers := range []int{1, 2} {
		out = append(out, plannedRun{o: Options{GPU: dev, Config: Config{Servers: servers}},
			w:  CUDA{Label: "two counters", Body: twoCounters, Size: 2, MaxReads: 2, MaxWrites: 2, MaxReadOnlyReads: 2},
			ro: RunOptions{Transactions: 20000, Seed: 3, History: true, HistoryAborted: true, Timeout: time.Minute}})
	}
	return out
}

func TestCUDABodyOnTheGPU(t *testing.T) {
	for _, r := range cudaBodyRuns(gpuDevice(t)) {
		servers := r.o.Config.Servers
		res, err := r.run()
		if err != nil {
			t.Fatal(err)
		}
		if res.Total() != 20000 || res.Wrong != 0 || res.Final[0] != res.Commits || res.Final[1] != res.Commits {
			t.Fatalf("%d servers: %d commits (%d updates), %d wrong, final %v", servers, res.Total(), res.Commits, res.Wrong, res.Final)
		}
		if err := CheckHistory([]uint64{0, 0}, res.History, res.Final); err != nil {
			t.Fatal(err)
		}
		if err := CheckOpacity([]uint64{0, 0}, res.History); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d servers: %d commits, aborts %s", servers, res.Total(), res.AbortString())
	}
}

// readManyBody checks stm_read_many against stm_read on 64 hot items: an
// update transaction first adds one to three items (read, then write), and
// every transaction reads 12 items (two chunks, with its own writes among
// them) both ways; a transaction that sees them differ is counted wrong.
const readManyBody = `
__device__ void stm_body(stm_tx* tx) {
	const bool ro = stm_below(tx, 3) == 0;
	stm_begin(tx, ro);
	if (!ro)
		for (u32 j = 0; j < 3; j++) {
			const u32 i = (u32)stm_below(tx, 64);
			stm_write(tx, i, stm_read(tx, i) + 1);
		}
	u32 items[12];
	u64 many[12];
	for (u32 j = 0; j < 12; j++) items[j] = (u32)stm_below(tx, 64);
	stm_read_many(tx, items, 12, many);
	bool same = true;
	for (u32 j = 0; j < 12; j++) same &= stm_read(tx, items[j]) == many[j];
	if (stm_failed(tx)) return;
	stm_check(tx, same);
}
`

// readManyRuns are TestReadManyAgreesWithReads's runs: 64 items under
// every client thread the device's default gives, every attempt recorded.
func readManyRuns(dev *gpu.Device) []plannedRun {
	return []plannedRun{{o: Options{GPU: dev},
		w:  CUDA{Label: "read many", Body: readManyBody, Size: 64, MaxReads: 27, MaxWrites: 3, MaxReadOnlyReads: 24},
		ro: RunOptions{Transactions: 40000, Seed: 5, History: true, HistoryAborted: true, Timeout: time.Minute}}}
}

func TestReadManyAgreesWithReads(t *testing.T) {
	for _, r := range readManyRuns(gpuDevice(t)) {
		res, err := r.run()
		if err != nil {
			t.Fatal(err)
		}
		if res.Total() != 40000 || res.Wrong != 0 {
			t.Fatalf("%d commits (%d updates), %d saw stm_read_many differ from stm_read", res.Total(), res.Commits, res.Wrong)
		}
		initial := make([]uint64, 64)
		if err := CheckHistory(initial, res.History, res.Final); err != nil {
			t.Fatal(err)
		}
		if err := CheckOpacity(initial, res.History); err != nil {
			t.Fatal(err)
		}
		t.Logf("%d commits (%d updates), aborts %s", res.Total(), res.Commits, res.AbortString())
	}
}

// misbehavingBodies are TestGPUErrorsAreClear's bodies, each with what
// its run's error must say.
var misbehavingBodies = []struct {
	name, body string
	want       string
}{
	{"item outside the store", `__device__ void stm_body(stm_tx* tx) { stm_begin(tx, false); stm_write(tx, 5, 1); }`, "outside the store of 2 items"},
	{"write in a read-only transaction", `__device__ void stm_body(stm_tx* tx) { stm_begin(tx, true); stm_write(tx, 0, 1); }`, "read-only transaction"},
	{"no begin", `__device__ void stm_body(stm_tx* tx) { stm_read(tx, 0); }`, "stm_begin"},
	{"more writes than declared", `__device__ void stm_body(stm_tx* tx) { stm_begin(tx, false); stm_write(tx, 0, 1); stm_write(tx, 1, 1); }`, "write set holds"},
	{"never finishes", `__device__ void stm_body(stm_tx* tx) { stm_begin(tx, true); for (;;) { stm_read(tx, 0); if (stm_failed(tx)) return; } }`, "deadline"},
}

// misbehavingRun is TestGPUErrorsAreClear's run of body i.
func misbehavingRun(dev *gpu.Device, i int) plannedRun {
	x := misbehavingBodies[i]
	return plannedRun{o: Options{GPU: dev}, w: CUDA{Label: x.name, Body: x.body, Size: 2, MaxReads: 2, MaxWrites: 1, MaxReadOnlyReads: 2},
		ro: RunOptions{Transactions: 1000, Timeout: time.Second}}
}

// afterRun is the run TestGPUErrorsAreClear makes after each failure.
func afterRun(dev *gpu.Device) plannedRun {
	return plannedRun{o: Options{GPU: dev}, w: Bank{Accounts: 64, Initial: 1, ReadOnly: 0.5}, ro: RunOptions{Transactions: 1000}}
}

// TestGPUErrorsAreClear: a body that misbehaves ends the run with an error
// that says what happened, and a body that never finishes hits the run's
// deadline instead of hanging the device.
func TestGPUErrorsAreClear(t *testing.T) {
	dev := gpuDevice(t)
	for i, tc := range misbehavingBodies {
		t.Run(tc.name, func(t *testing.T) {
			r := misbehavingRun(dev, i)
			e, err := Open(r.o)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			start := time.Now()
			_, err = e.Run(r.w, r.ro)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if time.Since(start) > 30*time.Second {
				t.Fatalf("took %v", time.Since(start))
			}
			// The device still works afterwards.
			a := afterRun(dev)
			res, err := e.Run(a.w, a.ro)
			if err != nil || res.Total() != 1000 {
				t.Fatalf("a run after the failure: %v", err)
			}
		})
	}
}

// TestGPUDurationStopsThroughTheMappedFlag: a run of a duration ends soon
// after it, through the stop flag in mapped memory.
func TestGPUDurationStopsThroughTheMappedFlag(t *testing.T) {
	dev := gpuDevice(t)
	e, err := Open(Options{GPU: dev, Config: Config{Servers: 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	start := time.Now()
	res, err := e.Run(Bank{Accounts: 100000, Initial: 100, ReadOnly: 0.9, ReadSize: 100}, RunOptions{Duration: 300 * time.Millisecond, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 20*time.Second || res.Total() == 0 || res.Wrong != 0 {
		t.Fatalf("took %v, %d commits, %d wrong", took, res.Total(), res.Wrong)
	}
	t.Logf("%d commits in %v (%.3g/s) on %d threads, aborts %s, commit %+v, servers: %v", res.Total(), res.Elapsed, res.Throughput(), res.Threads, res.AbortString(), res.Commit, res.Server)
}

// largeCases are TestGPUMemcachedAndLargeTransactions' cases.
var largeCases = []runCase{
	{name: "memcached 64 ways", w: Memcached{Slots: 1 << 16, Ways: 64, Gets: 0.998, Zipf: 0.99}, n: 50000},
	{name: "transfers of 64 rounds, small log", cfg: Config{LogSize: 16, LogWrites: 64}, w: Bank{Accounts: 5000, Initial: 100, ReadOnly: 0.5, ReadSize: 100, Rounds: 64}, n: 5000},
	{name: "1000 accounts read-only totals of all", cfg: Config{Servers: 4}, w: Bank{Accounts: 1000, Initial: 100, ReadOnly: 0.9}, n: 5000},
}

// largeRun is TestGPUMemcachedAndLargeTransactions' run of case c.
func largeRun(dev *gpu.Device, c runCase) plannedRun {
	return plannedRun{o: Options{GPU: dev, Config: c.cfg}, w: c.w, ro: RunOptions{Transactions: c.n, Seed: 11, History: true, Latency: true, Timeout: time.Minute}}
}

// TestGPUMemcachedAndLargeTransactions runs MemcachedGPU and transfers
// larger than the log on the GPU engine.
func TestGPUMemcachedAndLargeTransactions(t *testing.T) {
	dev := gpuDevice(t)
	for _, c := range largeCases {
		t.Run(c.name, func(t *testing.T) {
			res, err := largeRun(dev, c).run()
			if err != nil {
				t.Fatal(err)
			}
			checkRun(t, c, res, 11)
		})
	}
}

// TestGPUTransfersAcrossPartitionsUnderLoad: transfers between any two of
// 6000 accounts over 5 servers (80% of them across partitions) at full
// speed keep the bank's total. The receivers log a finalized transaction
// from its client's write set, so a client that went on to its next
// transaction before they did lost updates (an H200 run of bench stm,
// 2026-11-28, ended 1259 over the total).
func TestGPUTransfersAcrossPartitionsUnderLoad(t *testing.T) {
	dev := gpuDevice(t)
	for _, servers := range []int{5, 16} {
		e, err := Open(Options{GPU: dev, Config: Config{Servers: servers}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(Bank{Accounts: 6000, Initial: 100}, RunOptions{Duration: 500 * time.Millisecond, Seed: 9, Timeout: time.Minute})
		e.Close()
		if err != nil { // Run checks the final total
			t.Fatalf("%d servers: %v", servers, err)
		}
		t.Logf("%d servers: %d commits in %v (%.3g/s), aborts %s", res.Servers, res.Total(), res.Elapsed, res.Throughput(), res.AbortString())
	}
}
