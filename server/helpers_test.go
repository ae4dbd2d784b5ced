package server

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/gputest"
	"github.com/warpkv/warpkv/kv"
)

// engineCase is one engine the tests run on.
type engineCase struct {
	name   string
	device string
	shards int    // CPU engine: Options.CPUShards
	search string // GPU engine: Options.GPUSearch
	cpu    string // CPU engine: Options.CPUSearch
	launch string // Options.SearchLaunch (batching shards)
}

// testEngines are the engines every engine test runs on: the CPU engine
// (searches inline, and batched through the schedulers as on a GPU, the
// batches launched by their callers, at the same time by their callers,
// or by the schedulers alone), and
// the GPU engine where one is usable (a failure under
// WARPKV_REQUIRE_GPU=1).
var testEngines = []engineCase{{"cpu", "cpu", 0, "", "", ""}, {"cpu-3-shards", "cpu", 3, "", "", ""},
	{"cpu-batched", "cpu", 0, "", CPUSearchBatched, ""}, {"cpu-3-shards-batched", "cpu", 3, "", CPUSearchBatched, ""},
	{"cpu-3-shards-batched-scheduler", "cpu", 3, "", CPUSearchBatched, SearchLaunchScheduler},
	{"cpu-batched-concurrent", "cpu", 0, "", CPUSearchBatched, SearchLaunchConcurrent},
	{"gpu", "gpu", 0, "", "", ""}, {"gpu-staged", "gpu", 0, GPUSearchStaged, "", ""},
	{"gpu-scheduler", "gpu", 0, "", "", SearchLaunchScheduler},
	{"gpu-concurrent", "gpu", 0, "", "", SearchLaunchConcurrent}}

// newTestEngine starts an engine on ec with opts (Device overridden), or
// skips a GPU case without a GPU. The engine closes at cleanup.
func newTestEngine(t testing.TB, ec engineCase, opts Options) *Engine {
	t.Helper()
	if ec.device != "cpu" {
		if ok, why := gpu.Available(); !ok {
			gputest.Unavailable(t, why)
		}
	}
	opts.Device = ec.device
	opts.CPUShards = ec.shards
	opts.GPUSearch = ec.search
	opts.CPUSearch = ec.cpu
	opts.SearchLaunch = ec.launch
	if opts.Interval == 0 {
		opts.Interval = 50 * time.Microsecond
	}
	e, err := New(opts)
	if err != nil {
		t.Fatalf("New(%s): %v", ec.name, err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return e
}

// fakeClock is a settable clock in unix seconds.
type fakeClock struct{ t atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.t.Store(1_700_000_000)
	return c
}

func (c *fakeClock) now() int64          { return c.t.Load() }
func (c *fakeClock) advance(secs int64)  { c.t.Add(secs) }
func (c *fakeClock) clock() func() int64 { return c.now }

// do runs ops as one batch on c and returns them with their results.
func do(t testing.TB, c kv.Cache, ops ...kv.Op) []kv.Op {
	t.Helper()
	b := &kv.Batch{Ops: ops}
	if err := c.Do(b); err != nil {
		t.Fatalf("Do: %v", err)
	}
	return b.Ops
}

// randomOp returns a random op on a key from a pool of nKeys, with values
// up to maxValue bytes. CAS comparisons use casOf (the CAS this cache last
// reported for the key), off by one half of the time.
func randomOp(r *rand.Rand, nKeys, maxValue int, casOf func(key string) uint64) kv.Op {
	key := fmt.Sprintf("key:%d", r.IntN(nKeys))
	op := kv.Op{Key: []byte(key)}
	switch p := r.IntN(100); {
	case p < 40:
		op.Kind = kv.Get
		op.Touch = r.IntN(10) == 0
		op.Exptime = int64(r.IntN(3)) * 1000
	case p < 55:
		op.Kind = kv.Set
	case p < 60:
		op.Kind = kv.Add
	case p < 64:
		op.Kind = kv.Replace
	case p < 68:
		op.Kind = kv.Append
	case p < 72:
		op.Kind = kv.Prepend
	case p < 78:
		op.Kind = kv.Set
		op.HasCAS = true
		op.CompareCAS = casOf(key) + uint64(r.IntN(2))
	case p < 85:
		op.Kind = kv.Delete
	case p < 90:
		op.Kind = kv.Incr
		op.Delta = r.Uint64N(1000)
		op.Vivify = r.IntN(2) == 0
		op.Initial = r.Uint64N(100)
	case p < 95:
		op.Kind = kv.Decr
		op.Delta = r.Uint64N(1000)
	default:
		op.Kind = kv.Touch
		op.Exptime = int64(r.IntN(3)) * 1000
	}
	if op.Kind.IsStore() {
		n := r.IntN(maxValue + 1)
		if r.IntN(4) == 0 {
			op.Value = []byte(fmt.Sprint(r.Uint64N(1 << 40)))
		} else {
			op.Value = make([]byte, n)
			for i := range op.Value {
				op.Value[i] = byte(r.Uint32())
			}
		}
		op.Flags = r.Uint32()
		op.Exptime = int64(r.IntN(3)) * 1000
	}
	return op
}
