package stm

import (
	"sync"
	"testing"

	"github.com/warpkv/warpkv/internal/gputest"
)

// testBodies are the CUDA bodies the GPU tests run, compile-checked here.
var testBodies = []string{
	twoCounters,
	readManyBody,
	`__device__ void stm_body(stm_tx* tx) { stm_begin(tx, true); for (;;) { stm_read(tx, 0); if (stm_failed(tx)) return; } }`,
}

// TestCUDABodiesCompile compiles the GPU tests' own bodies and the Bank
// body (with its Zipf law), with and without the in-place retries, the
// stripes, the commit latencies and the servers' share of commits
// (write-back, retries) compiled in, so that a GPU run does not meet a compile error
// first.
func TestCUDABodiesCompile(t *testing.T) {
	t.Parallel() // compiles only: beside the other compile-only tests, after the GPU tests
	gputest.NVRTC(t)
	type build struct {
		sp  *workloadSpec
		opt Options
	}
	var builds []build
	for i, body := range testBodies {
		sp, err := CUDA{Body: body, Size: 2, MaxReads: 2, MaxWrites: 2, MaxReadOnlyReads: 2}.spec()
		if err != nil {
			t.Fatal(err)
		}
		// The second body with items in stripes (STM_STRIPES 1), no retries.
		builds = append(builds, build{sp, Options{Stripe: 3 * i, Commit: CommitServers}})
	}
	sp, err := Bank{Accounts: 1000, Initial: 1, ReadSize: 10, Rounds: 2, Zipf: 0.99}.spec()
	if err != nil {
		t.Fatal(err)
	}
	// Zipf: in-place retries by default (STM_REFRESH 1), also with stripes.
	builds = append(builds, build{sp, Options{Commit: CommitServers}}, build{sp, Options{Stripe: 5}})
	// The servers' write-back (STM_POST 1) and retries (STM_RETRY 1) with
	// Zipf, and a CUDA body with retries.
	builds = append(builds, build{sp, Options{ServerCommit: ServerCommitWriteBack}}, build{sp, Options{ServerCommit: ServerCommitRetry}},
		build{builds[0].sp, Options{ServerCommit: ServerCommitRetry}})
	// Direct commits (STM_DIRECT 1) with Zipf and a CUDA body, and in the
	// largest client block (its pre-validation tables and set mirror in
	// the 48 KB of static shared memory).
	builds = append(builds, build{sp, Options{Commit: CommitDirect}}, build{builds[1].sp, Options{Commit: CommitDirect}},
		build{sp, Options{Commit: CommitDirect, ClientBlock: 1024}})
	// Write sets of more than 8 items (their larger pre-validation tables,
	// pvSlots) in the default client block and in larger ones, each with
	// and without the commit latencies (every other build, below).
	big, err := Bank{Accounts: 1000, Initial: 1, ReadSize: 100, Rounds: 32}.spec()
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range []int{0, 0, 128, 128, 1024, 1024} {
		builds = append(builds, build{big, Options{Commit: CommitDirect, ClientBlock: block}})
	}
	// Chained attempts (STM_CHAIN 1) with Zipf and a CUDA body.
	builds = append(builds, build{sp, Options{Commit: CommitDirect, Chain: 1}}, build{builds[1].sp, Options{Commit: CommitDirect, Chain: 3}})
	// The builds compile side by side (NVRTC takes seconds for each: 34 s
	// one after another on the H200 machine, 2026-11-29).
	var wg sync.WaitGroup
	for i, b := range builds {
		sh := gpuShape(b.sp, Config{Servers: 2}.withDefaults(), b.opt, 2)
		sh.latency = i%2 == 0 // the commit latencies (STM_LATENCY 1) in every other build
		wg.Go(func() {
			if _, err := sh.program(b.sp).CompileCUBIN("sm_90"); err != nil {
				t.Errorf("refresh %v, stripes %v, latency %v, post %v, retry %v, direct %v, chain %v: %v", sh.refresh, sh.stripes, sh.latency, sh.post, sh.retry, sh.direct, sh.chain, err)
			}
		})
	}
	wg.Wait()
}
