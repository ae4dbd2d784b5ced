package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strconv"
	"strings"
	"time"

	"warpkv/server"
)

// runBenchServe is "warpkv bench serve": it starts a real memcached and
// warpkv servers (one per engine, in this process) on free localhost ports,
// then runs "warpkv loadgen" against all of them in one run, so their
// throughput and latencies print side by side, memcached first.
//
//	warpkv bench serve [flags] [-- loadgen flags]
func runBenchServe(e *env, args []string) error {
	fs := newFlagSet(e, "bench serve", "warpkv bench serve [--memcached PATH] [--engines gpu,cpu] [-m MB] [-t N] [--batch-interval D] [-- loadgen flags]")
	mcPath := fs.String("memcached", "memcached", "memcached binary to compare with")
	mcThreads := fs.Int("mc-threads", runtime.NumCPU(), "memcached worker threads (-t)")
	engines := fs.String("engines", "gpu,cpu", "warpkv engines to run, in order: gpu, cpu, gpu:N")
	memMB := fs.Int64("m", 1024, "item memory of every server in megabytes")
	interval := fs.Duration("batch-interval", 0, "warpkv batch interval C (0: the engine's default)")
	var rest []string
	for i, a := range args {
		if a == "--" {
			args, rest = args[:i], args[i+1:]
			break
		}
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments: %s (loadgen flags go after --)", strings.Join(fs.Args(), " "))
	}
	mcAddr, stopMC, err := startMemcached(*mcPath, *mcThreads, *memMB)
	if err != nil {
		return err
	}
	defer stopMC()
	lgArgs := append([]string{"--addr", mcAddr, "--name", fmt.Sprintf("memcached -t %d", *mcThreads)}, rest...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var waits []chan error
	var targets [][2]string // name, address of each warpkv server
	for _, dev := range strings.Split(*engines, ",") {
		ready := make(chan net.Addr, 1)
		errc := make(chan error, 1)
		go func() {
			errc <- server.Serve(ctx, server.Config{Addr: "127.0.0.1:0", Version: version, Logger: log,
				Engine: server.Options{Device: dev, MemoryLimit: *memMB << 20, Interval: *interval},
				Ready:  func(a net.Addr) { ready <- a }})
		}()
		select {
		case a := <-ready:
			lgArgs = append(lgArgs, "--addr", a.String(), "--name", "warpkv "+dev)
			targets = append(targets, [2]string{"warpkv " + dev, a.String()})
			waits = append(waits, errc)
			fmt.Fprintf(e.stdout, "warpkv %s on %s\n", dev, a)
		case err := <-errc:
			return fmt.Errorf("bench serve: warpkv %s: %w", dev, err)
		}
	}
	fmt.Fprintf(e.stdout, "memcached (%s, -t %d) on %s; %d CPU cores; load generator in the warpkv process\n", *mcPath, *mcThreads, mcAddr, runtime.NumCPU())
	runErr := runLoadgen(e, lgArgs)
	for _, t := range targets {
		printPipelineStats(e, t[0], t[1])
	}
	cancel()
	for _, w := range waits {
		if err := <-w; err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	return runErr
}

// startMemcached starts memcached on a free localhost port and returns its
// address and a function that stops it.
func startMemcached(path string, threads int, memMB int64) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("bench serve: free port: %w", err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	args := []string{"-U", "0", "-l", "127.0.0.1", "-p", strconv.Itoa(port), "-t", strconv.Itoa(threads),
		"-m", strconv.FormatInt(memMB, 10), "-c", "4096"}
	if u, err := user.Current(); err == nil && u.Uid == "0" {
		args = append(args, "-u", "root")
	}
	cmd := exec.Command(path, args...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, fmt.Errorf("bench serve: start memcached: %w", err)
	}
	stop := func() {
		cmd.Process.Kill()
		cmd.Wait()
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(5 * time.Second); ; {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("bench serve: memcached did not start on %s: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// printPipelineStats prints a warpkv server's engine-side latency and
// batching statistics (its "stats" lines starting get_, set_ and index_).
func printPipelineStats(e *env, name, addr string) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		fmt.Fprintf(e.stdout, "%s: stats: %v\n", name, err)
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("stats\r\n")); err != nil {
		return
	}
	fmt.Fprintf(e.stdout, "\n%s pipeline statistics:\n", name)
	buf := make([]byte, 0, 1<<16)
	tmp := make([]byte, 4096)
	for !strings.HasSuffix(string(buf), "END\r\n") {
		n, err := c.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if err != nil {
			break
		}
	}
	for _, line := range strings.Split(string(buf), "\r\n") {
		f := strings.Fields(line)
		if len(f) == 3 && (strings.HasPrefix(f[1], "get_latency") || strings.HasPrefix(f[1], "set_latency") ||
			strings.HasPrefix(f[1], "index_")) {
			fmt.Fprintf(e.stdout, "  %s %s\n", f[1], f[2])
		}
	}
}
