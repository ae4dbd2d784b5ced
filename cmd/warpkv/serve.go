package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"warpkv/gpu"
	"warpkv/server"
)

// runServe runs the Mega-KV memcached-compatible server until SIGINT or
// SIGTERM. Its flags follow memcached's where they apply.
func runServe(e *env, args []string) error {
	fs := newFlagSet(e, "serve", "warpkv serve [-p port] [-l addr] [-m MB] [-c conns] [-t threads] [-I size] [--device auto|cpu|gpu|gpu:N] [--batch-interval dur] [--batch-policy load|fixed] [--gpu-search persistent|staged] [--profile] [--cpuprofile FILE]")
	port := fs.Int("p", 11211, "TCP port to listen on")
	listen := fs.String("l", "127.0.0.1", "interface to listen on")
	memMB := fs.Int64("m", 64, "item memory limit in megabytes (a hard cap; CLOCK eviction past it)")
	conns := fs.Int("c", 1024, "maximum simultaneous connections")
	threads := fs.Int("t", 0, "OS threads running Go code (GOMAXPROCS); 0 = all cores")
	itemMax := fs.String("I", "1m", "largest value, with k/m suffix (1k to 1g)")
	factor := fs.Float64("f", 1.25, "slab class growth factor")
	chunk := fs.Int("n", 48, "minimum space for key, value and flags in the smallest slab class")
	device := fs.String("device", "", "index engine: auto, cpu, gpu or gpu:N (default: $"+gpu.EnvDevice+", else auto; auto and gpu shard over every usable GPU)")
	interval := fs.Duration("batch-interval", 0, "batch interval C: the longest a search waits for its batch (fixed policy: searches every C, updates every 2C); 0: 20µs on GPUs, no wait on the CPU")
	buckets := fs.Int("index-buckets", 0, "hash index buckets over all shards (0: sized for the memory limit)")
	policy := fs.String("batch-policy", server.PolicyLoad, "when batches launch: load (the interval follows the load, --batch-interval bounds the wait) or fixed (every --batch-interval)")
	gpuSearch := fs.String("gpu-search", server.GPUSearchPersistent, "how GPU shards run search batches: persistent (a resident kernel polls mapped memory) or staged (copies and a launch per batch)")
	profile := fs.Bool("profile", false, "count the time spent in each stage of serving requests (stats profile)")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the whole run to `FILE` (for go tool pprof)")
	verbose := fs.Bool("v", false, "log debug messages")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("serve takes no arguments")
	}
	size, err := parseSize(*itemMax)
	if err != nil {
		return usagef("-I: %v", err)
	}
	if *memMB <= 0 || *port < 0 || *port > 65535 || *conns <= 0 || *threads < 0 {
		return usagef("-m, -c must be positive; -p a port number; -t not negative")
	}
	if *threads > 0 {
		runtime.GOMAXPROCS(*threads)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("serve: cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("serve: cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	return server.Serve(ctx, server.Config{
		Addr:     net.JoinHostPort(*listen, strconv.Itoa(*port)),
		MaxConns: *conns,
		Version:  version,
		Logger:   log,
		Engine: server.Options{
			MemoryLimit:  *memMB << 20,
			ItemSizeMax:  size,
			GrowthFactor: *factor,
			ChunkMin:     *chunk,
			Device:       *device,
			Interval:     *interval,
			IndexBuckets: *buckets,
			Policy:       *policy,
			GPUSearch:    *gpuSearch,
			Profile:      *profile,
		},
	})
}

// parseSize parses a memcached -I size: a number of bytes with an optional
// k or m (or g) suffix, from 1 KiB to 1 GiB.
func parseSize(s string) (int, error) {
	mult := 1
	t := strings.ToLower(s)
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1<<10, t[:len(t)-1]
	case strings.HasSuffix(t, "m"):
		mult, t = 1<<20, t[:len(t)-1]
	case strings.HasSuffix(t, "g"):
		mult, t = 1<<30, t[:len(t)-1]
	}
	n, err := strconv.Atoi(t)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	v := n * mult
	if v < 1<<10 || v > 1<<30 {
		return 0, fmt.Errorf("size %q out of range 1k..1g", s)
	}
	return v, nil
}
