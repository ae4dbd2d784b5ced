package stm

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// The kernels, split by part (client.cu with its commit path commit.cu,
// direct commits direct.cu, chained attempts chain.cu and the inboxes of
// migrated tickets inbox.cu, server.cu, store.cu) over the
// shared device header device.cuh, the server's log (log.cuh), and the
// device API of bodies (stm.cuh).
var (
	//go:embed stm.cuh
	stmHeader string
	//go:embed device.cuh
	deviceHeader string
	//go:embed client.cu
	clientCUDA string
	//go:embed commit.cu
	commitCUDA string
	//go:embed direct.cu
	directCUDA string
	//go:embed inbox.cu
	inboxCUDA string
	//go:embed chain.cu
	chainCUDA string
	//go:embed server.cu
	serverCUDA string
	//go:embed log.cuh
	logHeader string
	//go:embed store.cu
	storeCUDA string
	//go:embed serve.cu
	serveCUDA string
)

// programSource is the program's one translation unit: the three parts,
// compiled together so that the host loads one module.
const programSource = "// stm: CSMV's kernels, one translation unit of their parts.\n" +
	"#include \"stm/client.cu\"\n#include \"stm/server.cu\"\n#include \"stm/store.cu\"\n"

// Launch configuration of the GPU engine, in one place.
const (
	defaultClientBlock = 32  // threads per client block: one warp, so a bounded grid spreads over the SMs
	defaultServerWarps = 32  // warps per server block: 1 receiver + 31 workers (each validates a request of up to 32 transactions at once), fewer when the log leaves less shared memory
	initBlock          = 256 // threads per block of stm_init and stm_final
	// memShare: per-thread sets and the history may use 1/memShare of the
	// free device memory.
	memShare = 2
	// abortedShare: the aborted attempts' history region (HistoryAborted)
	// holds this many times the committed region, within the memory
	// budget; attempts beyond it are counted, not recorded.
	abortedShare = 8
	// itemsPerThread: without ClientThreads, a store of N items gets at
	// most N/itemsPerThread concurrent transactions (at least a warp), so
	// that a small store is not swamped by attempts that can only conflict.
	itemsPerThread = 2
	// updatesPerLog: without ClientThreads, a server has about
	// LogSize/updatesPerLog update transactions in flight (on an H200,
	// 2026-11-28, 16 servers with 256 transfers in flight each committed
	// 43.8M a second on 1M accounts, with 512 each 37.9M).
	updatesPerLog = 16
	// readOnlyWarpFactor: without ClientThreads, update transactions that
	// share their warp with a read-only one get up to this many times the
	// threads (defaultThreads): on an H200 (2026-11-28, 64K accounts, 10%
	// read-only sums of 100, the first validation reading the items'
	// newest logged writes) 4576 client threads committed 21.4M a second,
	// 9216 33.0M and 18432 41.8M; at 0% read-only 4096 42.0M and 8192
	// 41.1M.
	readOnlyWarpFactor = 4
	// chainedWarpFactor is readOnlyWarpFactor for a skewed workload whose
	// lost attempts chain (Options.Chain): on an H200 (2026-11-30, 64K
	// accounts under Zipf 0.99, read-only sums of 100) at 10% read-only
	// 4576 client threads committed 20.9M a second, 6144 22.3M, 8192
	// 22.5M and 12288 20.5M; at 20% 5120 20.6M, 8192 24.0M, 12288 24.0M.
	chainedWarpFactor = 2
	// chainedFactorReadOnly is the read-only share from which a skewed
	// workload whose lost attempts chain no longer gets chainedWarpFactor
	// (measured at 10% and 20% only; at 50% its threads are those that
	// measured the gain in ChainAutoReadOnly).
	chainedFactorReadOnly = 0.3
	// serverStartTimeout bounds the wait for the server blocks to run
	// before the clients are launched.
	serverStartTimeout = 10 * time.Second
	// stopGrace is how long the host waits for the kernels after asking
	// them to stop, before giving up on the device.
	stopGrace = 15 * time.Second
	pollEvery = 200 * time.Microsecond
	// smsPerServer: without Config.Servers, one commit server per this
	// many SMs (defaultServers).
	smsPerServer = 8
	// spanPerPartition: without Config.Servers, partitions are at least
	// this many times wider than the block an update transaction stays in
	// (at most about 1/8 of the blocks then straddle two partitions: in the
	// H200 run of 2026-11-28, 6000 accounts in blocks of 100 over 5 servers,
	// 4 of 60 blocks straddling, committed 9.0M transfers a second, 1.0M
	// with the one server of the code before).
	spanPerPartition = 8
)

// gpuEngine runs workloads with the CSMV kernels on one device.
type gpuEngine struct {
	dev        *gpu.Device
	opt        Options
	ctl        *gpu.MappedBuffer[uint64] // hctl: flags shared with running kernels
	sSrv, sCli *gpu.Stream
	evA, evB   *gpu.Event
}

func newGPUEngine(d *gpu.Device, o Options) (*gpuEngine, error) {
	g := &gpuEngine{dev: d, opt: o}
	var err error
	if g.ctl, err = gpu.AllocMapped[uint64](d, hctlWords); err != nil {
		return nil, err
	}
	if g.sSrv, err = d.NewStream(); err == nil {
		if g.sCli, err = d.NewStream(); err == nil {
			if g.evA, err = d.NewEvent(); err == nil {
				g.evB, err = d.NewEvent()
			}
		}
	}
	if err != nil {
		return nil, errors.Join(err, g.close())
	}
	return g, nil
}

func (g *gpuEngine) close() error {
	return errors.Join(g.evA.Close(), g.evB.Close(), g.sCli.Close(), g.sSrv.Close(), g.ctl.Free())
}

// shape is the shape of a run: what the kernels are compiled for (the
// block sizes) and what they are told in stm_globals (the rest).
type shape struct {
	k, logE, logA, r, w, hist int
	serverWarps, clientBlock  int
	table                     int // items of a worker's validation table (tableFor)
	serverSmem                int
	// refresh, stripes, latency: the program has the in-place retries of
	// stale update attempts (Options.Refresh), items in stripes
	// (Options.Stripe) and the commit latencies (RunOptions.Latency);
	// compiled in only when used, so that the programs of other runs keep
	// the code they had without them
	refresh, stripes, latency bool
	// post, retry: the servers write single-partition commits back
	// after their final check, and run conflicting update attempts again
	// before their turn (Options.ServerCommit); compiled in only when
	// used
	post, retry bool
	// direct: the client warps commit without the servers
	// (Options.Commit, Options.direct)
	direct bool
	// chain: the passes of chained attempts a round (Options.Chain,
	// chainFor; direct commits only; 0 none)
	chain int
	// migrate: with chained attempts, a ticket held back at its locks this
	// many times in a row (a lost one whose chained claim met another
	// warp's lock at once) moves to the inbox of the warp whose lane held
	// the lock (Options.Migrate, migrateFor; 0 never)
	migrate int
}

// inboxWords is the words of a client warp's inbox of migrated tickets:
// a state word (bit b: slot b taken; bit 32: closed) and 32 slots of three
// words (ticket + 1, the ticket's start on the global timer, its thread).
const inboxWords = 128

// migrateFor returns the hold-backs in a row after which a ticket
// migrates (Options.Migrate) for Options o, a workload and its chained
// passes (chainFor): none without chained attempts; Migrate when
// positive; for 0, DefaultMigrate for a workload that migrateAuto takes,
// else none.
func migrateFor(o Options, sp *workloadSpec, chain int) int {
	return optionCount(o.Migrate, chain > 0, func() bool { return migrateAuto(sp) }, DefaultMigrate)
}

// optionCount resolves an option counted in passes or times whose zero
// chooses and whose negative is off (Options.Chain, Options.Migrate): 0
// when it does not apply or is negative, the value when positive, def
// when auto says the workload takes it by default, else 0. auto is called
// only for a zero value.
func optionCount(v int, applies bool, auto func() bool, def int) int {
	switch {
	case !applies || v < 0:
		return 0
	case v > 0:
		return v
	case auto():
		return def
	}
	return 0
}

// migrateAuto reports whether a workload migrates its held-back tickets
// by default: one that chains by default (chainAuto) whose update
// transactions write at least MigrateAutoWrites items. DefaultMigrate
// has the figures behind it.
func migrateAuto(sp *workloadSpec) bool {
	return chainAuto(sp) && sp.maxWrites >= MigrateAutoWrites
}

// serverSmem returns the shared memory the server's log (a ring of logE
// entries and a pool of logA items, powers of two) and control words need
// with workers of tables of that size (an upper bound of the layout of
// stm_log_ctl in log.cuh, which checks it with a static_assert).
func serverSmem(logE, logA, workers, table int) int {
	return 8*globalWords() + 20*logE + 4*logA + ctlBytes0 + workerBytes(table)*workers
}

// pow2 returns the smallest power of two >= n (n >= 1).
func pow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// gpuShape returns the shape of a workload's program for a configuration.
func gpuShape(sp *workloadSpec, cfg Config, o Options, hist int) shape {
	sh := shape{k: cfg.Versions, logE: pow2(cfg.LogSize), logA: pow2(cfg.LogWrites), hist: hist,
		serverWarps: o.ServerWarps, clientBlock: o.ClientBlock}
	if sh.serverWarps == 0 {
		sh.serverWarps = defaultServerWarps
	}
	if sh.clientBlock == 0 {
		sh.clientBlock = defaultClientBlock
	}
	sh.r = max(sp.maxReads, 1)
	if hist > 0 {
		sh.r = max(sh.r, sp.maxROReads)
	}
	sh.w = max(sp.maxWrites, 1)
	sh.table = o.table
	if sh.table == 0 {
		sh.table = tableFor(sh.serverWarps)
	}
	sh.serverSmem = serverSmem(sh.logE, sh.logA, sh.serverWarps-1, sh.table)
	sh.refresh = refreshFor(o, sp) > 0
	sh.stripes = o.Stripe > 0
	sh.post = o.ServerCommit == ServerCommitWriteBack || o.ServerCommit == ServerCommitRetry
	sh.retry = o.ServerCommit == ServerCommitRetry
	sh.direct = o.direct(sp)
	sh.chain = chainFor(o, sp)
	sh.migrate = migrateFor(o, sp, sh.chain)
	return sh
}

// refreshFor returns the in-place retries of a stale update attempt per
// warp round for Options o (Refresh) and a workload: Refresh when
// positive; for 0, DefaultRefresh for a skewed workload without chained
// attempts (chainFor: they take the stale attempts), else 0 (off).
func refreshFor(o Options, sp *workloadSpec) int {
	switch {
	case o.Refresh > 0:
		return o.Refresh
	case o.Refresh == 0 && sp.skewed && chainFor(o, sp) == 0:
		return DefaultRefresh
	}
	return 0
}

// chainFor returns the passes of chained attempts a round for Options o
// (Chain) and a workload: none without direct commits; Chain when
// positive; for 0, DefaultChain for a workload that chainAuto takes,
// else none.
func chainFor(o Options, sp *workloadSpec) int {
	return optionCount(o.Chain, o.direct(sp), func() bool { return chainAuto(sp) }, DefaultChain)
}

// chainAuto reports whether a workload chains its lost update attempts
// by default: a skewed one (a Zipf law) whose update transactions write
// at most ChainAutoWrites items, read no more items than they write (a
// chained read of an item another lane holds fails the attempt: the
// measured workloads, transfers and read-modify-writes, read what they
// write; the memcached workload's PUTs read the other ways of their set)
// and that is less than ChainAutoReadOnly read-only (readOnlyShare).
// DefaultChain has the figures behind it.
func chainAuto(sp *workloadSpec) bool {
	return sp.skewed && sp.maxWrites <= ChainAutoWrites && sp.maxReads <= sp.maxWrites && readOnlyShare(sp, 0) < ChainAutoReadOnly
}

// program returns the kernels of a workload for a shape: one program per
// body, block sizes, compiled-in options and, above 8 items, write-set
// size (its in-warp check's table, pvSlots); the rest of the shape is a
// run's parameter. A larger table takes more of an SM's shared memory, so
// fewer client blocks may fit on it (BlocksPerSM; by shared memory
// alone, an H200 SM's 228 KB hold 6 one-warp blocks of about 36 KB, the
// static shared memory of 64-item write sets).
func (sh shape) program(sp *workloadSpec) gpu.Program {
	defs := append(layoutDefines(),
		gpu.Def("STM_SERVER_WARPS", sh.serverWarps), gpu.Def("STM_CLIENT_BLOCK", sh.clientBlock), gpu.Def("STM_PV_SLOTS", pvSlots(sh.clientBlock, sh.w)), gpu.Def("STM_SET_SMEM", setMirror(sh.clientBlock)),
		gpu.Def("STM_TABLE", sh.table), gpu.Def("STM_CTL_BYTES_PER_WORKER", workerBytes(sh.table)),
		gpu.Def("STM_REFRESH", b2i(sh.refresh)), gpu.Def("STM_STRIPES", b2i(sh.stripes)), gpu.Def("STM_LATENCY", b2i(sh.latency)),
		gpu.Def("STM_POST", b2i(sh.post)), gpu.Def("STM_RETRY", b2i(sh.retry)), gpu.Def("STM_DIRECT", b2i(sh.direct)), gpu.Def("STM_CHAIN", sh.chain),
		gpu.Def("STM_MIGRATE", sh.migrate), gpu.Def("STM_INBOX_WORDS", inboxWords))
	p := gpu.NewProgram("stm.cu", programSource, defs...)
	p.Headers["stm/stm.cuh"] = stmHeader
	p.Headers["stm/device.cuh"] = deviceHeader
	p.Headers["stm/client.cu"] = clientCUDA
	p.Headers["stm/commit.cu"] = commitCUDA
	p.Headers["stm/direct.cu"] = directCUDA
	p.Headers["stm/inbox.cu"] = inboxCUDA
	p.Headers["stm/chain.cu"] = chainCUDA
	p.Headers["stm/server.cu"] = serverCUDA
	p.Headers["stm/log.cuh"] = logHeader
	p.Headers["stm/store.cu"] = storeCUDA
	p.Headers["stm/serve.cu"] = serveCUDA
	p.Headers["stm/globals.cuh"] = globalsHeader()
	p.Headers["stm/workload.cuh"] = bodyHeader(sp.cudaName, sp.cuda)
	return p
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// bodyHeader is stm/workload.cuh: the body, with a #line directive so that
// compile errors name the body's own file and line.
func bodyHeader(name, body string) string {
	clean := strings.Map(func(r rune) rune {
		if r == '"' || r == '\\' || r < ' ' {
			return '_'
		}
		return r
	}, name)
	return "#line 1 \"" + clean + "\"\n" + body
}

// Programs returns the kernel programs of the built-in workloads in their
// default shapes (for compile checks).
func Programs() []gpu.Program {
	var out []gpu.Program
	for _, w := range []Workload{
		Bank{Accounts: 1000, Initial: 100, ReadOnly: 0.9, ReadSize: 100},
		Memcached{Slots: 1 << 20, Ways: 16, Gets: 0.998, Zipf: 0.99},
		RMW{Size: 1 << 20, Keys: 4, ReadOnly: 0.5, Zipf: 0.99},
	} {
		sp, err := w.spec()
		if err != nil {
			panic(err)
		}
		out = append(out, gpuShape(sp, Config{}.withDefaults(), Options{}, 0).program(sp))
	}
	return out
}

// defaultThreads is the number of client threads of a run without
// Options.ClientThreads: about LogSize/updatesPerLog update transactions
// in flight per server, so more threads when most transactions are
// read-only; at most one per itemsPerThread items of the store; at least a
// warp. A warp commits its 32 transactions together, so an update
// transaction whose warp also runs a read-only one (of a share r of the
// transactions: 1-(1-r)^32 of the warps) waits for it, out of flight:
// those update transactions, a share (1-r)(1-(1-r)^32) of all, count
// readOnlyWarpFactor times (x3.6 at 10% read-only, x2.5 at 50%, x1.3 at
// 90%, none at 0% or 100%), unless the workload is skewed (a Zipf law:
// on the H200 the 64K bank at 10% read-only ran 2.72M commits/s with
// 4576 threads and 1.59M with 16448, 95% and 98% of the attempts
// aborting; chainedWarpFactor when its lost attempts chain, chained,
// below chainedFactorReadOnly read-only: a chained attempt commits in the
// round of its warp's read-only bodies)
// or its update transactions write more than STM_SPL items
// (the factor was measured on transfers of 1 and 2 rounds only; a
// transaction of 64 rounds with a log of 16 took too long to commit with
// it). Concurrency costs conflicts, and final checks over the entries
// logged while a request waited for its turn (the first validation reads
// the items' newest logged writes, whatever the concurrency; until
// 2026-11-28 it scanned the entries newer than the snapshots, and on an
// H100 4096 concurrent transfers at one server gave 2.0M commits/s with
// 3965 entries scanned per request).
func defaultThreads(sp *workloadSpec, cfg Config, n int, seed uint64, chained bool) int {
	ro := readOnlyShare(sp, seed)
	upd := max(1-ro, 1.0/64)
	waiting := (1 - ro) * (1 - math.Pow(1-ro, 32))
	factor := float64(readOnlyWarpFactor)
	switch {
	case sp.maxWrites > stmSPL:
		waiting = 0
	case sp.skewed && chained && ro < chainedFactorReadOnly:
		factor = chainedWarpFactor
	case sp.skewed:
		waiting = 0
	}
	want := int(float64(max(cfg.LogSize/updatesPerLog, 32)*cfg.Servers) / upd * (1 + (factor-1)*waiting))
	return max(32, min(want, n/itemsPerThread))
}

// readOnlyShare estimates the share of read-only transactions of a
// workload from its first tickets (0 when the workload cannot say).
func readOnlyShare(sp *workloadSpec, seed uint64) float64 {
	if sp.readOnly == nil {
		return 0
	}
	const n = 4096
	ro := 0
	for t := uint64(0); t < n; t++ {
		if sp.readOnly(seed, t, 0, 1) {
			ro++
		}
	}
	return float64(ro) / n
}

// describe turns a kernel's error code into an error.
func (g *gpuEngine) describe(code, d0, d1 uint64, n int, ro RunOptions) error {
	switch code {
	case errItem:
		return fmt.Errorf("transaction %d used item %d, outside the store of %d items", d0, d1, n)
	case errReads:
		return fmt.Errorf("transaction %d read more than the %d items its read set holds", d0, d1)
	case errWrites:
		return fmt.Errorf("transaction %d wrote more than the %d items its write set holds", d0, d1)
	case errROWrite:
		return fmt.Errorf("read-only transaction %d wrote item %d", d0, d1)
	case errNoBegin:
		return fmt.Errorf("transaction %d: the body did not call stm_begin before its first access", d0)
	case errDeadline:
		where := "running"
		if d0 < uint64(len(deadlineWhere)) {
			where = deadlineWhere[d0]
		}
		return fmt.Errorf("the kernels passed the run's deadline (%v) while %s", ro.Timeout, where)
	case errHistory:
		return fmt.Errorf("the history buffer (%d words) is full: record fewer transactions", d0)
	case errAborted:
		return fmt.Errorf("the host stopped the kernels after the run's timeout (%v)", ro.Timeout)
	case errSmem:
		return fmt.Errorf("the log needs %d bytes of shared memory, a server block has %d: lower LogSize or LogWrites", d0, d1)
	case errFinalize:
		return fmt.Errorf("server %d got a finalize from client warp %d, whose prepare does not hold its log's turn (a protocol bug)", d0, d1)
	}
	return fmt.Errorf("kernel error %d (%d, %d)", code, d0, d1)
}

// run runs a workload on the device in named steps: plan the shape, load
// the kernels, size the grid and the memory, allocate, initialize the
// store, launch (the server kernel on one stream, the client kernel on
// another once every server block runs; the host sets the stop flag after
// the duration and bounds everything by the timeout) and collect.
func (g *gpuEngine) run(w Workload, sp *workloadSpec, ro RunOptions) (*Result, engine.Timings, error) {
	var tm engine.Timings
	pl, err := g.plan(w, sp, ro)
	if err != nil {
		return nil, tm, err
	}
	var clk engine.Clock
	clk.Start()
	clk.Mark(nil, engine.MarkStart)
	k, err := g.load(pl, sp)
	if err != nil {
		return nil, tm, err
	}
	if err := g.size(pl, k, sp, ro); err != nil {
		return nil, tm, err
	}
	mem, err := g.allocate(pl, sp, ro)
	if err != nil {
		return nil, tm, err
	}
	defer mem.release()
	if err := g.initStore(w, pl, mem, k); err != nil {
		return nil, tm, err
	}
	clk.Mark(nil, engine.MarkUploaded)
	clk.Mark(nil, engine.MarkSorted)
	if err := g.startServers(pl, mem, k, ro); err != nil {
		return nil, tm, err
	}
	elapsed, err := g.runClients(pl, mem, k, ro)
	if err != nil {
		return nil, tm, err
	}
	clk.Mark(nil, engine.MarkWorked)
	res, err := g.collect(pl, mem, k, ro, elapsed)
	if err != nil {
		return nil, tm, err
	}
	clk.Mark(nil, engine.MarkDone)
	return res, clk.Timings(w.Name(), int(res.Total())), nil
}

// runPlan is what one run decided: the store's configuration, the
// kernels' shape, the grid and the sizes of its memory.
type runPlan struct {
	cfg  Config
	n    int // items
	part int // items per partition (the last may have fewer); contiguous partitions only
	// stripe: items per stripe dealt to the servers in turn (0:
	// contiguous partitions of part items)
	stripe int
	// refresh: in-place retries of a stale update attempt per warp round
	// (Options.Refresh; 0 off)
	refresh int
	hist    int // history mode: 0 none, 1 committed, 2 also aborted attempts
	sh      shape
	props   gpu.Properties
	// the grid (size)
	blocks, threads, clientWarps int
	throttle                     int   // the abort rate admission control holds, in thousandths (0: off)
	contention, claimWords       int   // Options.Contention as the kernels take it (0 off, 1 check, 2 claims); the claim table's words (claims only, else 0)
	ring, doneRing               int   // request rings' and done markers' slots (powers of two)
	nTickets                     int64 // tickets handed out (0: no bound)
	histWords, abWords           int64 // history regions, in words
}

// plan checks the configuration and the options against the device and
// chooses the shape of the kernels; Config.Servers 0 is chosen from the
// device (defaultServers).
func (g *gpuEngine) plan(w Workload, sp *workloadSpec, ro RunOptions) (*runPlan, error) {
	n := w.Items()
	props := g.dev.Properties()
	cfg := g.opt.Config
	auto := cfg.Servers == 0
	cfg = cfg.withDefaults()
	if auto {
		cfg.Servers = defaultServers(props.SMs, cfg, n, sp.span)
	}
	if err := cfg.validate(n); err != nil {
		return nil, err
	}
	cfg = cfg.forItems(n)
	part := cfg.partSize(n)
	if auto {
		part, cfg.Servers = alignedPartitions(n, cfg.Servers, sp.span)
	}
	stripe, err := chooseStripe(g.opt.Stripe, n)
	if err != nil {
		return nil, err
	}
	if stripe > 0 {
		cfg.Servers = min(cfg.Servers, (n+stripe-1)/stripe)
	}
	refresh := refreshFor(g.opt, sp)
	if sp.cuda == "" {
		return nil, fmt.Errorf("the workload has no CUDA body")
	}
	if os.Getenv(gpu.EnvDebugSync) == "1" {
		return nil, fmt.Errorf("the server kernel runs until its clients finish, so %s=1 (synchronize after every launch) would wait for it forever: unset it", gpu.EnvDebugSync)
	}
	hist := 0
	if ro.History {
		hist = 1
	}
	if ro.HistoryAborted {
		hist = 2
	}
	sh := gpuShape(sp, cfg, g.opt, hist)
	direct := sh.direct // the user's options choose the path, not the fitting below (ServerWarps is a server option)
	for g.opt.ServerWarps == 0 && sh.serverSmem > props.SharedPerBlockOptin && sh.serverWarps > 2 {
		o := g.opt // the default: as many workers as fit beside the log
		o.ServerWarps = sh.serverWarps - 1
		sh = gpuShape(sp, cfg, o, hist)
	}
	sh.direct = direct
	sh.latency = ro.Latency
	switch {
	case sh.serverWarps < 2 || sh.serverWarps > 32:
		return nil, fmt.Errorf("%d server warps: want 2 to 32 (a receiver and workers)", sh.serverWarps)
	case sh.clientBlock < 32 || sh.clientBlock%32 != 0 || sh.clientBlock > props.MaxThreadsPerBlock:
		return nil, fmt.Errorf("client block of %d threads: want a multiple of 32 up to %d", sh.clientBlock, props.MaxThreadsPerBlock)
	case sh.serverSmem > props.SharedPerBlockOptin:
		return nil, fmt.Errorf("a log of %d entries and %d items with %d server warps needs %d bytes of shared memory, %s gives a block %d: lower LogSize, LogWrites or ServerWarps",
			cfg.LogSize, cfg.LogWrites, sh.serverWarps, sh.serverSmem, g.dev, props.SharedPerBlockOptin)
	case cfg.Servers >= props.SMs:
		return nil, fmt.Errorf("%d servers leave none of the %d SMs of %s to clients", cfg.Servers, props.SMs, g.dev)
	case len(sp.params) > maxParams:
		return nil, fmt.Errorf("%d workload parameters, at most %d", len(sp.params), maxParams)
	}
	return &runPlan{cfg: cfg, n: n, part: part, stripe: stripe, refresh: refresh, hist: hist, sh: sh, props: props}, nil
}

// chooseStripe returns the items per stripe dealt to the servers in turn
// for Options.Stripe opt (0: contiguous partitions), at most the store's
// n items. Stripes of a workload's block (span) spread a Zipf law's
// hottest blocks, numbered first, over the servers (64K accounts in
// blocks of 100 over 16 servers, Zipf 0.99: by Zipf's law 60% of the
// transfers fall in server 0's 41 blocks of contiguous partitions, 17.5%
// in its blocks of stripes). Cost: O(1).
func chooseStripe(opt int, n int) (int, error) {
	if opt < 0 {
		return 0, fmt.Errorf("stripe %d: want 0 (contiguous partitions) or the items of a stripe", opt)
	}
	return min(opt, n), nil
}

// alignedPartitions returns the items per partition of n items over a
// chosen number of servers, and the servers that leaves non-empty: ceil(n
// / servers) rounded up to a multiple of span, the block of items an
// update transaction stays in (blocks start at multiples of span; span
// 0, 1 or n: no rounding), so that no block is split between two
// partitions. A transaction of several partitions holds each server's
// turn while it prepares at the next: with 8 servers over 65,536 accounts
// in blocks of 100, partitions of 8,192 split 7 of the 655 blocks (by
// arithmetic, 0.4% of uniform transfers cross, and one warp of 32 in 8
// prepares), and 0% read-only ran at 4.9M commits/s on an H200,
// 2026-11-28, against 17M on 1M accounts, whose partitions of 125,000
// split none. Cost: O(1).
func alignedPartitions(n, servers, span int) (part, used int) {
	part = (n + servers - 1) / servers
	if span > 1 && span < n && part%span != 0 {
		part += span - part%span
	}
	return part, (n + part - 1) / part
}

// defaultServers is Config.Servers 0 on the GPU: one commit server per
// smsPerServer SMs (16 on an H100 or H200: a server block takes an SM of
// its own; on an H200, 2026-11-28, 8 servers committed 17M transfers a
// second inside blocks of 100 of 1M accounts against 8.4M with one, and
// after the parallel group writes 16 servers 43.8M against 8's 32.8M), but
// no more than the store can keep busy (each wants about
// LogSize/updatesPerLog transactions in flight, and a store of n items
// runs at most n/itemsPerThread, so a small store keeps one), and
// partitions at least spanPerPartition times wider than the block an
// update transaction stays in (span; 0: unknown, no bound), so that few
// transactions cross partitions: one that does holds each server's turn
// while it prepares at the next, and transfers between any two of 1M
// accounts ran at 149k commits/s with 8 servers in that run (one server
// takes them on its single-partition path).
func defaultServers(sms int, cfg Config, n, span int) int {
	s := sms / smsPerServer
	s = min(s, n/itemsPerThread/max(cfg.LogSize/updatesPerLog, 32))
	if span > 0 {
		s = min(s, n/(span*spanPerPartition))
	}
	return max(1, min(s, MaxServers))
}

// kernels are the functions of a run's module.
type kernels struct {
	init, client, server, final *gpu.Function
	perSM                       int // client blocks per client SM
}

// load compiles (through the cache) and loads the run's program and finds
// how many client blocks an SM holds.
func (g *gpuEngine) load(pl *runPlan, sp *workloadSpec) (*kernels, error) {
	mod, err := g.dev.Load(pl.sh.program(sp))
	if err != nil {
		return nil, err
	}
	fns, err := mod.Functions("stm_init", "stm_client", "stm_server", "stm_final")
	if err != nil {
		return nil, err
	}
	k := &kernels{init: fns[0], client: fns[1], server: fns[2], final: fns[3]}
	if err := k.server.SetMaxDynamicShared(pl.props.SharedPerBlockOptin); err != nil {
		return nil, fmt.Errorf("server shared memory: %w", err)
	}
	if k.perSM, err = k.client.BlocksPerSM(pl.sh.clientBlock, 0); err != nil {
		return nil, fmt.Errorf("client occupancy: %w", err)
	}
	if k.perSM < 1 {
		return nil, fmt.Errorf("no client block of %d threads fits on an SM of %s", pl.sh.clientBlock, g.dev)
	}
	if g.opt.ClientBlocksPerSM > 0 {
		k.perSM = min(k.perSM, g.opt.ClientBlocksPerSM)
	}
	return k, nil
}

// size chooses the grid and the history's regions: the client SMs'
// occupancy, the wanted concurrency (Options.ClientThreads or
// defaultThreads) and the device memory bound the client threads (their
// read and write sets); the history takes what the run needs.
func (g *gpuEngine) size(pl *runPlan, k *kernels, sp *workloadSpec, ro RunOptions) error {
	sh, cfg, n := pl.sh, pl.cfg, pl.n
	blocks := k.perSM * (pl.props.SMs - cfg.Servers)
	want := g.opt.ClientThreads
	if want == 0 {
		want = defaultThreads(sp, cfg, n, ro.Seed, sh.chain > 0)
	}
	blocks = max(1, min(blocks, (want+sh.clientBlock-1)/sh.clientBlock))
	free, _, err := g.dev.MemInfo()
	if err != nil {
		return err
	}
	budget := int64(free) / memShare
	storeBytes := int64(n) * int64(cfg.Versions) * 16
	perThread := int64(sh.r)*4 + int64(sh.w)*12 + 32
	if pl.hist > 0 {
		perThread += int64(sh.r) * 8
	}
	pl.contention = contentionMode(g.opt.Contention)
	if pl.contention >= 2 || pl.sh.direct { // claims, or the direct commits' locks
		pl.claimWords = claimWords(n)
		perThread += int64(sh.w) * 4 // the slots each thread claimed
		budget -= int64(pl.claimWords) * 4
	}
	// The history: a committed record takes at most rec words (a
	// transaction cannot read or write more than its sets hold), and a run
	// commits at most one record per ticket, so the committed region holds
	// every ticket the run hands out: all of ro.Transactions, or, for a run
	// of a duration, as many as fit (the run then ends when they are
	// committed: Result.HistoryLimited). The aborted attempts' region
	// stops taking records when full (Result.HistoryDropped).
	pl.nTickets = ro.Transactions
	if pl.hist > 0 {
		rec := int64(4 + 2*(sh.r+sh.w))
		if ro.Transactions > 0 {
			pl.histWords = ro.Transactions * rec
		} else {
			pl.nTickets = max(budget/4/8/rec, 1)
			pl.histWords = pl.nTickets * rec
		}
		if pl.histWords*8 > budget/2 {
			return fmt.Errorf("the history of %d transactions needs %d MB of device memory, more than the %d MB available for it: run fewer transactions",
				ro.Transactions, pl.histWords*8>>20, budget>>21)
		}
		budget -= (pl.histWords + markWords(pl.histWords)) * 8
		if pl.hist == 2 {
			pl.abWords = min(abortedShare*pl.histWords, budget/2/8)
			budget -= (pl.abWords + markWords(pl.abWords)) * 8
		}
	}
	budget -= storeBytes
	if maxBlocks := budget / (perThread * int64(sh.clientBlock)); int64(blocks) > maxBlocks {
		if maxBlocks < 1 {
			return fmt.Errorf("transactions of %d reads and %d writes leave no device memory for client threads", sh.r, sh.w)
		}
		blocks = int(maxBlocks)
	}
	pl.blocks = blocks
	pl.threads = blocks * sh.clientBlock
	pl.throttle = throttleMille(g.opt.Throttle, pl.sh.direct && readOnlyShare(sp, 0) < ThrottleDirectReadOnly)
	pl.clientWarps = pl.threads / 32
	pl.ring = pow2(pl.clientWarps)
	// Timestamps reserved but not published are held by update threads:
	// one each, and one more for each pass of chained attempts (a lane
	// that lost to a newer write may take a timestamp in its round's
	// commit and in every pass, all published at the round's end). The
	// done markers' ring has twice as many slots: with one a thread, a
	// run of 3 passes marked a timestamp over one the clock had not yet
	// passed, and the clock stopped (H200, 2026-11-30).
	pl.doneRing = pow2(2 * pl.threads * (1 + pl.sh.chain))
	return nil
}

// collect reads the run's error word, counters, final store and history
// into a Result.
func (g *gpuEngine) collect(pl *runPlan, m *runMemory, k *kernels, ro RunOptions, elapsed time.Duration) (*Result, error) {
	dc := make([]uint64, dctlWords)
	if err := m.dctl.Read(nil, 0, dc); err != nil {
		return nil, err
	}
	cnt := make([]uint64, numCounters)
	if err := m.counters.Read(nil, 0, cnt); err != nil {
		return nil, err
	}
	if code := dc[dctlError]; code != 0 {
		return nil, fmt.Errorf("%w (%s)", g.describe(code, dc[dctlDetail0], dc[dctlDetail1], pl.n, ro), progress(cnt, ro))
	}
	res := &Result{Elapsed: elapsed, Threads: pl.threads, Device: g.dev.String(), UserAborts: cnt[cntUser], Wrong: cnt[cntWrong],
		Servers: pl.cfg.Servers, Direct: pl.sh.direct, Stripe: pl.stripe, HistoryDropped: cnt[cntHistDropped]}
	res.HistoryLimited = pl.hist > 0 && ro.Transactions == 0 && dc[dctlTicketsOut] != 0
	res.Commits, res.ReadOnlyCommits = cnt[cntCommits], cnt[cntReadOnly]
	if pl.sh.latency {
		lat := make([]uint64, latWords)
		if err := m.counters.Read(nil, numCounters, lat); err != nil {
			return nil, err
		}
		copy(res.Latency.Buckets[:], lat[:latencyDeviceBuckets])
		res.Latency.Sum = time.Duration(lat[latencyDeviceBuckets])
	}
	for c := range NumCauses {
		res.Aborts[c] = cnt[cntAbort0+int(c)]
	}
	var err error
	if res.Final, err = g.readFinal(pl, m, k); err != nil {
		return nil, err
	}
	if pl.hist > 0 {
		if res.History, err = g.readHistory(pl, m, dc); err != nil {
			return nil, err
		}
	}
	res.Commit, res.Server = breakdown(cnt, pl.props.ClockKHz, pl.sh.direct)
	if steps := dc[dctlSteps]; steps > 0 {
		res.Server.Admitted = int(dc[dctlAdmittedSum] * 32 / steps)
	}
	res.Server.WorkerTime = elapsed * time.Duration(pl.cfg.Servers*(pl.sh.serverWarps-1))
	return res, nil
}

// progress says how far a failed run got, from the counters its kernels
// added to as they left: commits (of RunOptions.Transactions when set),
// aborts by cause and requests served, so that a run that passed its
// deadline tells a stalled commit path (no requests) from one that
// aborts all it serves; with direct commits the attempts held back by
// locks, those aborted on a held lock, the chained attempts, the migrated
// tickets and the client warps' rounds (a commit path that stopped making rounds, or that
// keeps meeting a lock). Cost: formatting only.
func progress(cnt []uint64, ro RunOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d commits", cnt[cntCommits]+cnt[cntReadOnly])
	if ro.Transactions > 0 {
		fmt.Fprintf(&b, " of %d", ro.Transactions)
	}
	fmt.Fprintf(&b, " (%d read-only)", cnt[cntReadOnly])
	var total uint64
	parts := make([]string, 0, NumCauses)
	for c := range NumCauses {
		total += cnt[cntAbort0+int(c)]
		if n := cnt[cntAbort0+int(c)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	fmt.Fprintf(&b, ", %d aborts", total)
	if len(parts) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, ", %d server requests", cnt[cntRequests])
	if n := cnt[cntDeferred]; n > 0 {
		fmt.Fprintf(&b, ", %d attempts held back by locks or claims", n)
	}
	if n := cnt[cntLockMet]; n > 0 {
		fmt.Fprintf(&b, ", %d aborted on a held lock", n)
	}
	if n := cnt[cntChained]; n > 0 {
		fmt.Fprintf(&b, ", %d lost or held-back attempts chained (%d committed)", n, cnt[cntChainCommits])
	}
	if n := cnt[cntMigrated]; n > 0 {
		fmt.Fprintf(&b, ", %d tickets migrated", n)
	}
	if n := cnt[cntRounds]; n > 0 {
		fmt.Fprintf(&b, ", %d client warp rounds", n)
	}
	return b.String()
}

// breakdown converts the kernels' cycle counters to where commit time went.
// With direct commits the round-trip counter holds the locking and the
// timestamp, and the validation counter the clients' own validation.
func breakdown(cnt []uint64, clockKHz int, direct bool) (Breakdown, ServerStats) {
	cycle := func(c uint64) time.Duration {
		if clockKHz <= 0 {
			return 0
		}
		return time.Duration(float64(c) / float64(clockKHz) * 1e6)
	}
	b := Breakdown{
		Execute: cycle(cnt[cntCyExecute]), PreValidate: cycle(cnt[cntCyPreValidate]),
		Validate: cycle(cnt[cntCyValidate]), Insert: cycle(cnt[cntCyInsert]),
		WriteBack: cycle(cnt[cntCyWriteBack]), Publish: cycle(cnt[cntCyPublish]),
	}
	s := ServerStats{Requests: cnt[cntRequests], Batched: cnt[cntBatched], Scanned: cnt[cntScanned], LockWait: cycle(cnt[cntCyLock]),
		Turns: cnt[cntTurns], Grouped: cnt[cntGrouped], Early: cnt[cntEarly], TurnHold: cycle(cnt[cntCyHold]), Deferred: cnt[cntDeferred], Refreshed: cnt[cntRefreshed], Rerun: cnt[cntRerun],
		InWarp: cnt[cntInWarp], LockMet: cnt[cntLockMet], Rounds: cnt[cntRounds], RoundTime: cycle(cnt[cntCyRound]),
		Phases: RoundPhases{Ticket: cycle(cnt[cntPhTicket]), Body: cycle(cnt[cntPhBody]), Check: cycle(cnt[cntPhCheck]), Lock: cycle(cnt[cntPhLock]),
			Validate: cycle(cnt[cntPhValidate]), WriteBack: cycle(cnt[cntPhWriteback]), Publish: cycle(cnt[cntPhPublish]), Chain: cycle(cnt[cntPhChain])},
		Chained: cnt[cntChained], ChainCommits: cnt[cntChainCommits], Migrated: cnt[cntMigrated],
		Stages: RequestStages{
			Ring: time.Duration(cnt[cntNsRing]), Load: cycle(cnt[cntCyLoad]),
			Validate: cycle(cnt[cntCyVal]), FinalCheck: cycle(cnt[cntCyFinal]), Reply: cycle(cnt[cntCyReply]),
			Busy: cycle(cnt[cntCyBusy]), InServer: time.Duration(cnt[cntNsServer]),
			Client: time.Duration(cnt[cntNsClient]), ClientReplies: cnt[cntClientReplies],
		}}
	if rt := cycle(cnt[cntCyRoundTrip]); direct {
		b.WaitServer = rt
	} else if rt > b.Validate+b.Insert {
		b.WaitServer = rt - b.Validate - b.Insert
	}
	return b, s
}

// throttleMille returns Options.Throttle as the kernels take it: the abort
// rate in thousandths, 0 when off; 0 takes DefaultThrottle, or
// DefaultThrottleDirect with direct (direct commits of a workload less
// than ThrottleDirectReadOnly read-only, as the caller decides).
func throttleMille(t float64, direct bool) int {
	if t == 0 {
		t = DefaultThrottle
		if direct {
			t = DefaultThrottleDirect
		}
	}
	if t <= 0 {
		return 0
	}
	return max(1, int(t*1000+0.5))
}
