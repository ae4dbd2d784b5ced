package main

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/warpkv/warpkv/gpu"
	"github.com/warpkv/warpkv/internal/phrase"
	"github.com/warpkv/warpkv/itemstore"
	"github.com/warpkv/warpkv/protocol"
	"github.com/warpkv/warpkv/server"
)

// runServe runs the Mega-KV memcached-compatible server until SIGINT,
// SIGTERM or SIGUSR1 (a graceful stop, exit 0); SIGHUP is logged and
// ignored, as memcached 1.6.18 does (see serveSignals). Its flags follow
// memcached's where they apply.
func runServe(e *env, args []string) error {
	fs := newFlagSet(e, "serve", "warpkv serve [-p port] [-U 0] [-l addr[,addr...]] [-s socket [-a mask]] [-m MB] [-c conns] [-t threads] [-I size] [-f factor] [-n bytes] [-o opt[,opt...]] [--device auto|cpu|gpu|gpu:N] [--batch-interval dur] [--batch-policy load|fixed] [--gpu-search persistent|staged] [--cpu-search inline|batched] [--search-launch "+strings.Join(server.SearchLaunchNames(), "|")+"] [--round-conns N] [--loop-wait park|block] [--loop-spin DUR] [--loop-io epoll|uring|uringpoll] [--inline-updates cpu|all|off] [--profile] [--cpuprofile FILE] [--blockprofile FILE] [--mutexprofile FILE]")
	port := fs.Int("p", 11211, "TCP port to listen on (0: any free port)")
	udpPort := fs.Int("U", 0, "UDP port: only 0, memcached 1.6's default (UDP off); warpkv serves no UDP")
	var listen listenAddrs
	fs.Var(&listen, "l", "interfaces to listen on, separated by commas or semicolons or repeated, each `addr` with an optional :port (default 127.0.0.1)")
	unixSocket := fs.String("s", "", "unix socket `path` to listen on instead of TCP (disables network support, as memcached's -s)")
	unixMask := fs.String("a", "0700", "access `mask` of the -s socket, in octal")
	memMB := fs.Int64("m", 64, "item memory limit in megabytes (a hard cap; CLOCK eviction and slab rebalancing past it)")
	conns := fs.Int("c", 1024, "maximum simultaneous connections (see README: sizing -c)")
	threads := fs.Int("t", 0, "OS threads running Go code (GOMAXPROCS); 0 = all cores")
	loops := fs.Int("loops", 0, "event loops serving the connections (0: the default, see README; -1: a goroutine per connection)")
	roundConns := fs.Int("round-conns", 0, "connections an event loop runs as one cache batch, each group read, run and answered before the next (0: the engine's default, 4 on the CPU engine's inline searches and a whole round where searches are batched, as on GPU shards; 1: each connection in turn, as memcached; at least the connections: whole rounds)")
	loopSpin := fs.Duration("loop-spin", 0, "how long an event loop polls its connections without waiting after a round before it waits as --loop-wait says (0: never; at most 10ms); a spinning loop is seldom woken by the kernel, at the cost of its core while idle")
	loopWait := fs.String("loop-wait", "", "how an idle event loop waits: park (its goroutine in the Go runtime's poller) or block (its thread in epoll_wait, as memcached's threads); empty: block, on both engines")
	loopIO := fs.String("loop-io", protocol.LoopIOEpoll, "how the event loops make their system calls: epoll (epoll_wait, then a read and a writev per connection), uring (epoll_wait, then a group's reads and its replies each submitted as one batch of io_uring requests with one io_uring_enter) or uringpoll (uring with io_uring's polls and waits instead of epoll's: an idle loop blocks in io_uring_enter, --loop-wait and --loop-spin do not apply); the io_uring modes fall back to epoll with a log line where io_uring is unavailable")
	inlineUpdates := fs.String("inline-updates", server.InlineUpdatesCPU, "on which index shards an event loop that finds the queued index updates overdue applies them itself, as the shard's scheduler would: cpu (the CPU engine's), all (GPU shards too) or off (the schedulers alone)")
	itemMax := fs.String("I", "1m", "largest value, with k/m suffix (1k to 1g)")
	factor := fs.Float64("f", 1.25, "slab class growth factor (greater than 1)")
	chunk := fs.Int("n", 48, "minimum space for key, value and flags in the smallest slab class, in bytes")
	var opts serveOpts
	fs.Var(&opts, "o", "memcached extended options, comma separated: idle_timeout=SECONDS, slab_reassign, no_slab_reassign, slab_automove=0|1|2, slab_automove_ratio=R")
	device := fs.String("device", "", "index engine: auto, cpu, gpu or gpu:N (default: $"+gpu.EnvDevice+", else auto; auto and gpu shard over every usable GPU)")
	interval := fs.Duration("batch-interval", 0, "batch interval C: the longest a search waits for its batch (fixed policy: searches every C, updates every 2C); 0: 20µs on GPUs, no wait on the CPU")
	buckets := fs.Int("index-buckets", 0, "hash index buckets over all shards (0: sized for the memory limit)")
	policy := fs.String("batch-policy", server.PolicyLoad, "when batches launch: load (the interval follows the load, --batch-interval bounds the wait) or fixed (every --batch-interval)")
	gpuSearch := fs.String("gpu-search", server.GPUSearchPersistent, "how GPU shards run search batches: persistent (a resident kernel polls mapped memory) or staged (copies and a launch per batch)")
	cpuSearch := fs.String("cpu-search", server.CPUSearchInline, "how the CPU engine searches its index: inline (each event loop searches the index itself) or batched (through the shard's scheduler, as GPU shards do)")
	searchLaunch := fs.String("search-launch", server.SearchLaunchNames()[0], searchLaunchUsage())
	profile := fs.Bool("profile", false, "count the time spent in each stage of serving requests (stats profile)")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the whole run to `FILE` (for go tool pprof)")
	blockProfile := fs.String("blockprofile", "", "write a Go profile of where goroutines blocked (channels, mutexes, selects) over the whole run to `FILE` at shutdown (for go tool pprof; costs a little on each blocking event)")
	mutexProfile := fs.String("mutexprofile", "", "write a Go profile of contended mutexes over the whole run to `FILE` at shutdown (for go tool pprof)")
	verbose := fs.Bool("v", false, "log debug messages")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at http://`HOST:PORT`/metrics (memcached_exporter's names, then warpkv_*); off when empty")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("serve takes no arguments")
	}
	size, err := parseSize(*itemMax)
	if err != nil {
		return usagef("-I %s: %v", *itemMax, err)
	}
	switch {
	case *port < 0 || *port > 65535:
		return usagef("-p %d: not a TCP port (want 0 to 65535)", *port)
	case *udpPort != 0:
		return usagef("-U %d: warpkv serves no UDP (want 0, memcached's default, which turns UDP off)", *udpPort)
	case *memMB <= 0:
		return usagef("-m %d: the memory limit must be at least 1 megabyte", *memMB)
	case *conns <= 0:
		return usagef("-c %d: the connection limit must be at least 1", *conns)
	case *threads < 0:
		return usagef("-t %d: the thread count must not be negative (0: all cores)", *threads)
	case !(*factor > 1):
		return usagef("-f %v: the growth factor must be greater than 1", *factor)
	case *chunk <= 0:
		return usagef("-n %d: the chunk size must be at least 1 byte", *chunk)
	case *chunk > max(1<<20, size)/2-48:
		return usagef("-n %d: the chunk size must be at most %d bytes (half a slab page less the item header)", *chunk, max(1<<20, size)/2-48)
	case *buckets < 0:
		return usagef("--index-buckets %d: must not be negative", *buckets)
	case *roundConns < 0:
		return usagef("--round-conns %d: must not be negative (0: all of a round's connections)", *roundConns)
	case *loopWait != "" && *loopWait != server.LoopWaitPark && *loopWait != server.LoopWaitBlock:
		return usagef("--loop-wait %q: want park or block", *loopWait)
	case *loopIO != protocol.LoopIOEpoll && *loopIO != protocol.LoopIOUring && *loopIO != protocol.LoopIOUringPoll:
		return usagef("--loop-io %q: want epoll, uring or uringpoll", *loopIO)
	case *loopSpin < 0 || *loopSpin > 10*time.Millisecond:
		return usagef("--loop-spin %v: want 0 to 10ms", *loopSpin)
	case *inlineUpdates != server.InlineUpdatesCPU && *inlineUpdates != server.InlineUpdatesAll && *inlineUpdates != server.InlineUpdatesOff:
		return usagef("--inline-updates %q: want cpu, all or off", *inlineUpdates)
	}
	if err := checkServe(serveFlags{memMB: *memMB, itemMax: size, itemArg: *itemMax, factor: *factor, chunk: *chunk,
		buckets: *buckets, device: *device, policy: *policy, mode: *gpuSearch, cpuSearch: *cpuSearch, launch: *searchLaunch, interval: *interval}); err != nil {
		return err
	}
	mask, err := strconv.ParseUint(*unixMask, 8, 32)
	if err != nil || mask > 0o777 {
		return usagef("-a %s: not an octal access mask (0 to 0777)", *unixMask)
	}
	addrs := listen.addrs(*port)
	if *threads > 0 {
		runtime.GOMAXPROCS(*threads)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	checkFileLimit(log, *conns)
	stopProfiles, err := startServeProfiles(log, *cpuProfile, *blockProfile, *mutexProfile)
	if err != nil {
		return err
	}
	defer stopProfiles()
	ctx, stop := serveSignals(log)
	defer stop()
	return server.Serve(ctx, server.Config{
		Addr:        addrs[0],
		Addrs:       addrs[1:],
		Inter:       listen.String(),
		UnixSocket:  *unixSocket,
		UnixMask:    os.ModeSocket | os.FileMode(mask), // so that -a 0 is 0, not the default
		MaxConns:    *conns,
		Version:     version,
		Logger:      log,
		IdleTimeout: opts.idleTimeout,
		MetricsAddr: *metricsAddr,
		Loops:       *loops,
		RoundConns:  *roundConns,
		LoopWait:    *loopWait,
		LoopSpin:    *loopSpin,
		LoopIO:      *loopIO,
		Ready: func(net.Addr) {
			boundGCSlack(log)
			limitGoMemory(log, *memMB<<20+int64(max(size, 1<<20))+64<<10)
		},
		Engine: server.Options{
			MemoryLimit:   *memMB << 20,
			ItemSizeMax:   size,
			GrowthFactor:  *factor,
			ChunkMin:      *chunk,
			Slabs:         opts.slabs,
			Device:        *device,
			Interval:      *interval,
			IndexBuckets:  *buckets,
			Policy:        *policy,
			GPUSearch:     *gpuSearch,
			CPUSearch:     *cpuSearch,
			SearchLaunch:  *searchLaunch,
			InlineUpdates: *inlineUpdates,
			Profile:       *profile,
		},
	})
}

// listenAddrs are the -l interfaces (flag.Value): separated by commas or
// semicolons, the flag repeatable, each a host (IPv6 in brackets when it
// has a port) with an optional :port, as memcached's -l.
type listenAddrs []string

func (l *listenAddrs) String() string { return strings.Join(*l, ",") }

// Set adds the interfaces of one -l argument, separated by commas or
// semicolons with empty ones skipped (memcached 1.6.18 splits it with
// strtok_r(list, ";,")); an argument of none is an error. An interface
// an earlier -l already named is left out, as memcached 1.6.18 leaves out
// a repeated -l argument (its check is a substring match of the whole
// argument; this one compares whole interfaces), so that "-l 127.0.0.1 -l
// 127.0.0.1" listens once; one argument naming an interface twice is kept
// as given and fails to listen, as in memcached.
func (l *listenAddrs) Set(arg string) error {
	earlier := slices.Clone(*l)
	list := strings.FieldsFunc(arg, func(r rune) bool { return r == ',' || r == ';' })
	if len(list) == 0 {
		return fmt.Errorf("no interface in %q", arg)
	}
	for _, a := range list {
		if a = strings.TrimSpace(a); a == "" {
			return fmt.Errorf("empty interface in %q", arg)
		}
		if err := checkInterface(a); err != nil {
			return err
		}
		if !slices.Contains(earlier, a) {
			*l = append(*l, a)
		}
	}
	return nil
}

// checkInterface refuses an -l interface that memcached 1.6.18 refuses and
// Go would take otherwise: an empty host (":11211", which Go reads as
// every interface) and a port that is not a decimal number of 0 to 65535
// ("127.0.0.1:", which Go reads as any free port, and service names).
func checkInterface(a string) error {
	host, p, err := net.SplitHostPort(a)
	if err != nil {
		return nil // no port: a host name, an IPv4 or a bare IPv6 address
	}
	if host == "" {
		return fmt.Errorf("interface %q: no host (memcached refuses it; 0.0.0.0 or :: for every interface)", a)
	}
	if _, err := strconv.ParseUint(p, 10, 16); err != nil {
		return fmt.Errorf("interface %q: invalid port number %q (want 0 to 65535)", a, p)
	}
	return nil
}

// addrs returns the TCP addresses to listen on: each interface with its
// own port, else port (127.0.0.1 when -l was not given).
func (l listenAddrs) addrs(port int) []string {
	list := []string(l)
	if len(list) == 0 {
		list = []string{"127.0.0.1"}
	}
	out := make([]string, 0, len(list))
	for _, a := range list {
		host, p, err := net.SplitHostPort(a)
		if err != nil { // no port: a host name, an IPv4 or a bare IPv6 address
			host, p = strings.Trim(a, "[]"), strconv.Itoa(port)
		}
		out = append(out, net.JoinHostPort(host, p))
	}
	return out
}

// serveOpts are memcached's -o extended options that warpkv knows, parsed
// by Set (flag.Value); -o may be given several times.
type serveOpts struct {
	idleTimeout time.Duration
	slabs       itemstore.SlabPolicy
	given       []string
}

func (o *serveOpts) String() string { return strings.Join(o.given, ",") }

// Set parses one -o argument: options separated by commas, each NAME or
// NAME=VALUE. An unknown option or a bad value is an error naming it (the
// flag package quotes the whole argument before it).
func (o *serveOpts) Set(arg string) error {
	for _, opt := range strings.Split(arg, ",") {
		if err := o.set(opt); err != nil {
			if opt != arg {
				return fmt.Errorf("%s: %w", opt, err)
			}
			return err
		}
	}
	o.given = append(o.given, arg)
	return nil
}

// set parses one option.
func (o *serveOpts) set(opt string) error {
	if opt == "" {
		return nil
	}
	name, value, hasValue := strings.Cut(opt, "=")
	need := func() error {
		if !hasValue || value == "" {
			return fmt.Errorf("missing value (%s=...)", name)
		}
		return nil
	}
	switch name {
	case "idle_timeout":
		if err := need(); err != nil {
			return err
		}
		n, err := strconv.Atoi(value)
		if err != nil || n < 0 {
			return fmt.Errorf("idle_timeout wants a number of seconds, 0 for none")
		}
		o.idleTimeout = time.Duration(n) * time.Second
	case "slab_reassign":
		o.slabs.NoReassign = false
	case "no_slab_reassign":
		o.slabs.NoReassign = true
	case "slab_automove":
		level := 1
		if hasValue {
			n, err := strconv.Atoi(value)
			if err != nil || n < 0 || n > 2 {
				return fmt.Errorf("slab_automove wants 0, 1 or 2")
			}
			level = n
		}
		o.slabs.Automove = level
		if level == 0 {
			o.slabs.Automove = itemstore.AutomoveOff
		}
	case "no_slab_automove":
		o.slabs.Automove = itemstore.AutomoveOff
	case "slab_automove_ratio":
		if err := need(); err != nil {
			return err
		}
		r, err := strconv.ParseFloat(value, 64)
		if err != nil || !(r > 0 && r <= 1) {
			return fmt.Errorf("slab_automove_ratio wants a number in (0, 1]")
		}
		o.slabs.Ratio = r
	default:
		return fmt.Errorf("unknown option %s (warpkv knows idle_timeout, slab_reassign, no_slab_reassign, slab_automove, no_slab_automove, slab_automove_ratio)", name)
	}
	return nil
}

// gcSlack is the garbage the Go heap may hold beyond its live data: the
// fixed part of the server's memory overhead (see README, "Memory").
const gcSlack = 32 << 20

// boundGCSlack sets the garbage collector's target so that the heap grows
// by at most gcSlack over the live heap of a started server, most of which
// is the CPU engine's hash index (pointer-free, so collections stay cheap).
// With the default GOGC=100 the heap could grow by the index's size again:
// 128 MB more at -m 512. A GOGC set in the environment is left alone.
func boundGCSlack(log *slog.Logger) {
	if os.Getenv("GOGC") != "" {
		return
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	live := max(ms.HeapAlloc, 1<<20)
	percent := min(max(int(gcSlack*100/live), 10), 100)
	debug.SetGCPercent(percent)
	log.Debug("garbage collector target", "live_heap", live, "gogc", percent)
}

// reservedFDs are the file descriptors serve keeps for itself besides
// connections (listener, logs, the spare descriptor the protocol layer
// holds to refuse connections when out of descriptors, the GPU driver),
// as memcached's reserved_fds.
const reservedFDs = 20

// checkFileLimit raises the soft open-file limit to the hard limit, and
// warns when -c connections (plus reservedFDs) do not fit in it: clients
// past the limit are then refused with "ERROR Too many open connections".
func checkFileLimit(log *slog.Logger, conns int) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("cannot read the open-file limit", "err", err)
		return
	}
	if lim.Cur < lim.Max {
		raised := lim
		raised.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			lim = raised
		}
	}
	if need := uint64(conns) + reservedFDs; need > lim.Cur {
		log.Warn(fmt.Sprintf("-c %d needs %d open files but the limit is %d: connections past about %d will be refused with \"ERROR Too many open connections\"; raise the limit (ulimit -n %d) or lower -c",
			conns, need, lim.Cur, int64(lim.Cur)-reservedFDs, need),
			"soft_limit", lim.Cur, "hard_limit", lim.Max)
	}
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
		return 0, fmt.Errorf("bad size %q: want bytes with an optional k, m or g suffix, 1k to 1g", s)
	}
	v := n * mult
	if v < 1<<10 || v > 1<<30 {
		return 0, fmt.Errorf("size %q out of range 1k..1g", s)
	}
	return v, nil
}

// searchLaunchUsage is serve's --search-launch help, from
// server.SearchLaunchModes: "who launches ...: callers (...), concurrent
// (...) or scheduler (...)".
func searchLaunchUsage() string {
	var modes []string
	for _, m := range server.SearchLaunchModes() {
		modes = append(modes, m.Name+" ("+m.Doc+")")
	}
	return "who launches batched index searches (GPU shards, --cpu-search batched): " + phrase.Or(modes)
}
