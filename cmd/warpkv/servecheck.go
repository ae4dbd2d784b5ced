package main

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/warpkv/warpkv/hashindex"
	"github.com/warpkv/warpkv/internal/phrase"
	"github.com/warpkv/warpkv/itemstore"
	"github.com/warpkv/warpkv/server"
)

// serveMaxMB is the largest -m: 2^18 pages of 1 MiB, what the 32-bit item
// locations address with the default smallest chunk (-n 48: 14-bit chunk
// numbers); itemstore.New refuses more.
const serveMaxMB = 1 << 18

// serveFlags are serve's flags that checkServe checks together.
type serveFlags struct {
	memMB                int64
	itemMax              int // -I in bytes
	itemArg              string
	factor               float64
	chunk                int
	buckets              int
	device, policy, mode string
	cpuSearch            string
	launch               string
	interval             time.Duration
}

// checkServe checks serve's memory and engine flags before anything is
// allocated, as usage errors naming the flag: -m in range and -I at most
// half of it (memcached refuses more: "Cannot set item size limit higher
// than 1/2 of memory max"), the slab classes of -m, -I, -f and -n
// addressable (itemstore.New, which maps no memory), the device, batch
// policy and GPU search mode known, and, on the CPU engine, the hash index
// sized for -m (or --index-buckets) within the available memory.
func checkServe(f serveFlags) error {
	if err := inRange("-m", f.memMB, 1, serveMaxMB); err != nil {
		return usagef("%v (megabytes; %d MB is what 32-bit item locations address)", err, serveMaxMB)
	}
	if half := f.memMB << 20 / 2; int64(f.itemMax) > half {
		return usagef("-I %s: higher than half the memory limit (-m %d: at most %s), as memcached refuses too: lower -I or raise -m to %d",
			f.itemArg, f.memMB, sizeName(half), (2*int64(f.itemMax)+1<<20-1)>>20)
	}
	st, err := itemstore.New(itemstore.Options{MemoryLimit: f.memMB << 20, ItemSizeMax: f.itemMax, GrowthFactor: f.factor, ChunkMin: f.chunk})
	if err != nil {
		return usagef("-m %d with -I %s, -n %d: %v", f.memMB, f.itemArg, f.chunk, err)
	}
	st.Close()
	if err := inRange("--index-buckets", f.buckets, 0, hashindex.MaxBuckets); err != nil {
		return err
	}
	if err := checkDevice("--device", f.device); err != nil {
		return err
	}
	if f.policy != server.PolicyLoad && f.policy != server.PolicyFixed {
		return usagef("--batch-policy %q: want %s or %s", f.policy, server.PolicyLoad, server.PolicyFixed)
	}
	if f.interval < 0 {
		return usagef("--batch-interval %v: want 0 (the engine's default) or a positive duration", f.interval)
	}
	if f.mode != server.GPUSearchPersistent && f.mode != server.GPUSearchStaged {
		return usagef("--gpu-search %q: want %s or %s", f.mode, server.GPUSearchPersistent, server.GPUSearchStaged)
	}
	if f.cpuSearch != server.CPUSearchInline && f.cpuSearch != server.CPUSearchBatched {
		return usagef("--cpu-search %q: want %s or %s", f.cpuSearch, server.CPUSearchInline, server.CPUSearchBatched)
	}
	if !server.IsSearchLaunch(f.launch) {
		return usagef("--search-launch %q: want %s", f.launch, phrase.Or(server.SearchLaunchNames()))
	}
	if !onCPU(f.device) {
		return nil // the index lives in device memory
	}
	// The CPU engine's index, as server.Engine sizes it (openIndex): every
	// item -m could hold at 96 bytes, at most 6 an 8-cell bucket, rounded
	// up to a power of two.
	b := f.buckets
	flag, value := "--index-buckets", any(f.buckets)
	if b == 0 {
		b = int(min(f.memMB<<20/96/6, hashindex.MaxBuckets))
		flag, value = "-m", f.memMB
	}
	b = 1 << bits.Len(uint(max(b, 1<<12)-1))
	return fits(flag, value, mul(uint64(b), hashindex.BucketBytes),
		fmt.Sprintf("the CPU engine's hash index of %d buckets of %d bytes", b, hashindex.BucketBytes))
}

// sizeName writes bytes as memcached's -I does: 512k, 1m.
func sizeName(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dm", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dk", n>>10)
	}
	return fmt.Sprint(n)
}
