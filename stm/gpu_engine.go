package stm

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

//go:embed stm.cu
var stmCUDA string

//go:embed stm.cuh
var stmHeader string

// Launch configuration of the GPU engine, in one place.
const (
	defaultClientBlock = 32  // threads per client block: one warp, so a bounded grid spreads over the SMs
	defaultServerWarps = 16  // warps per server block: 1 receiver + 15 workers (each validates a request of up to 32 transactions at once)
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
	// LogSize/updatesPerLog update transactions in flight.
	updatesPerLog = 8
	// serverStartTimeout bounds the wait for the server blocks to run
	// before the clients are launched.
	serverStartTimeout = 10 * time.Second
	// stopGrace is how long the host waits for the kernels after asking
	// them to stop, before giving up on the device.
	stopGrace = 15 * time.Second
	pollEvery = 200 * time.Microsecond
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
	serverSmem                int
}

// serverSmem returns the shared memory the server's log (a ring of logE
// entries and a pool of logA items, powers of two) and control words need
// (an upper bound of the layout of stm_log_ctl in stm.cu, which checks it
// with a static_assert).
func serverSmem(logE, logA, workers int) int {
	return 8*globalWords() + 20*logE + 4*logA + ctlBytes0 + ctlBytesPerWorker*workers
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
	sh.serverSmem = serverSmem(sh.logE, sh.logA, sh.serverWarps-1)
	return sh
}

// program returns the kernels of a workload for a shape: one program per
// body and block sizes (the rest of the shape is a run's parameter).
func (sh shape) program(sp *workloadSpec) gpu.Program {
	defs := append(layoutDefines(),
		gpu.Def("STM_SERVER_WARPS", sh.serverWarps), gpu.Def("STM_CLIENT_BLOCK", sh.clientBlock))
	p := gpu.NewProgram("stm.cu", stmCUDA, defs...)
	p.Headers["stm/stm.cuh"] = stmHeader
	p.Headers["stm/globals.cuh"] = globalsHeader()
	p.Headers["stm/workload.cuh"] = "// " + sp.cudaName + "\n" + sp.cuda
	return p
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

// runBuffers are the device memory of one run.
type runBuffers struct {
	free []func() error
}

func (b *runBuffers) release() error {
	var err error
	for _, f := range b.free {
		err = errors.Join(err, f())
	}
	b.free = nil
	return err
}

func alloc[T any](d *gpu.Device, b *runBuffers, n int) (*gpu.Buffer[T], error) {
	buf, err := gpu.Alloc[T](d, max(n, 1))
	if err != nil {
		return nil, err
	}
	b.free = append(b.free, buf.Free)
	return buf, nil
}

// run runs a workload on the device: the server kernel on one stream, the
// client kernel on another once every server block runs; the host sets the
// stop flag after the duration and bounds everything by the timeout.
func (g *gpuEngine) run(w Workload, sp *workloadSpec, ro RunOptions) (*Result, engine.Timings, error) {
	var tm engine.Timings
	cfg := g.opt.Config.withDefaults()
	n := w.Items()
	if err := cfg.validate(n); err != nil {
		return nil, tm, err
	}
	cfg = cfg.forItems(n)
	if sp.cuda == "" {
		return nil, tm, fmt.Errorf("the workload has no CUDA body")
	}
	if os.Getenv(gpu.EnvDebugSync) == "1" {
		return nil, tm, fmt.Errorf("the server kernel runs until its clients finish, so %s=1 (synchronize after every launch) would wait for it forever: unset it", gpu.EnvDebugSync)
	}
	hist := 0
	if ro.History {
		hist = 1
	}
	if ro.HistoryAborted {
		hist = 2
	}
	props := g.dev.Properties()
	sh := gpuShape(sp, cfg, g.opt, hist)
	if sh.serverWarps < 2 || sh.serverWarps > 32 {
		return nil, tm, fmt.Errorf("%d server warps: want 2 to 32 (a receiver and workers)", sh.serverWarps)
	}
	if sh.clientBlock < 32 || sh.clientBlock%32 != 0 || sh.clientBlock > props.MaxThreadsPerBlock {
		return nil, tm, fmt.Errorf("client block of %d threads: want a multiple of 32 up to %d", sh.clientBlock, props.MaxThreadsPerBlock)
	}
	if sh.serverSmem > props.SharedPerBlockOptin {
		return nil, tm, fmt.Errorf("a log of %d entries and %d items with %d server warps needs %d bytes of shared memory, %s gives a block %d: lower LogSize, LogWrites or ServerWarps",
			cfg.LogSize, cfg.LogWrites, sh.serverWarps, sh.serverSmem, g.dev, props.SharedPerBlockOptin)
	}
	if cfg.Servers >= props.SMs {
		return nil, tm, fmt.Errorf("%d servers leave none of the %d SMs of %s to clients", cfg.Servers, props.SMs, g.dev)
	}
	var clk engine.Clock
	clk.Start()
	clk.Mark(nil, engine.MarkStart)
	mod, err := g.dev.Load(sh.program(sp))
	if err != nil {
		return nil, tm, err
	}
	fns, err := mod.Functions("stm_init", "stm_client", "stm_server", "stm_final")
	if err != nil {
		return nil, tm, err
	}
	fInit, fClient, fServer, fFinal := fns[0], fns[1], fns[2], fns[3]
	if err := fServer.SetMaxDynamicShared(props.SharedPerBlockOptin); err != nil {
		return nil, tm, fmt.Errorf("server shared memory: %w", err)
	}
	perSM, err := fClient.BlocksPerSM(sh.clientBlock, 0)
	if err != nil {
		return nil, tm, fmt.Errorf("client occupancy: %w", err)
	}
	if perSM < 1 {
		return nil, tm, fmt.Errorf("no client block of %d threads fits on an SM of %s", sh.clientBlock, g.dev)
	}
	if g.opt.ClientBlocksPerSM > 0 {
		perSM = min(perSM, g.opt.ClientBlocksPerSM)
	}
	blocks := perSM * (props.SMs - cfg.Servers)
	want := g.opt.ClientThreads
	if want == 0 {
		want = defaultThreads(sp, cfg, n, ro.Seed)
	}
	blocks = max(1, min(blocks, (want+sh.clientBlock-1)/sh.clientBlock))

	// Memory: per-thread sets bound the number of client threads; the
	// history takes what the run needs.
	free, _, err := g.dev.MemInfo()
	if err != nil {
		return nil, tm, err
	}
	budget := int64(free) / memShare
	storeBytes := int64(n) * int64(cfg.Versions) * 16
	perThread := int64(sh.r)*4 + int64(sh.w)*12 + 32
	if hist > 0 {
		perThread += int64(sh.r) * 8
	}
	// The history: a committed record takes at most rec words (a
	// transaction cannot read or write more than its sets hold), and a run
	// commits at most one record per ticket, so the committed region holds
	// every ticket the run hands out: all of ro.Transactions, or, for a run
	// of a duration, as many as fit (the run then ends when they are
	// committed: Result.HistoryLimited). The aborted attempts' region
	// stops taking records when full (Result.HistoryDropped).
	var histWords, abWords, nTickets int64
	nTickets = ro.Transactions
	if hist > 0 {
		rec := int64(4 + 2*(sh.r+sh.w))
		if ro.Transactions > 0 {
			histWords = ro.Transactions * rec
		} else {
			nTickets = max(budget/4/8/rec, 1)
			histWords = nTickets * rec
		}
		if histWords*8 > budget/2 {
			return nil, tm, fmt.Errorf("the history of %d transactions needs %d MB of device memory, more than the %d MB available for it: run fewer transactions",
				ro.Transactions, histWords*8>>20, budget>>21)
		}
		budget -= histWords * 8
		if hist == 2 {
			abWords = min(abortedShare*histWords, budget/2/8)
			budget -= abWords * 8
		}
	}
	budget -= storeBytes
	if maxBlocks := budget / (perThread * int64(sh.clientBlock)); int64(blocks) > maxBlocks {
		if maxBlocks < 1 {
			return nil, tm, fmt.Errorf("transactions of %d reads and %d writes leave no device memory for client threads", sh.r, sh.w)
		}
		blocks = int(maxBlocks)
	}
	threads := blocks * sh.clientBlock
	clientWarps := threads / 32
	ring := pow2(clientWarps)
	// Timestamps reserved but not published are held by update threads,
	// one each: the done markers' ring has twice as many slots.
	doneRing := pow2(2 * threads)

	var bufs runBuffers
	defer bufs.release()
	a64 := func(n int) (*gpu.Buffer[uint64], error) { return alloc[uint64](g.dev, &bufs, n) }
	a32 := func(n int) (*gpu.Buffer[uint32], error) { return alloc[uint32](g.dev, &bufs, n) }
	var (
		vals, vers, tsnap, wsVal, rsVal, resBuf, reqRing, finRing, reqTail, finTail, words, counters, dctl, hbuf, abuf, done, final, initv *gpu.Buffer[uint64]
		head, rsItem, wsItem, txNR, txNW, reply                                                                                            *gpu.Buffer[uint32]
		globals                                                                                                                            *gpu.Buffer[uint64]
	)
	steps := []func() error{
		func() (err error) { vals, err = a64(n * cfg.Versions); return },
		func() (err error) { vers, err = a64(n * cfg.Versions); return },
		func() (err error) { head, err = a32(n); return },
		func() (err error) { rsItem, err = a32(threads * sh.r); return },
		func() (err error) {
			if hist > 0 {
				rsVal, err = a64(threads * sh.r)
			} else {
				rsVal, err = a64(1)
			}
			return
		},
		func() (err error) { wsItem, err = a32(threads * sh.w); return },
		func() (err error) { wsVal, err = a64(threads * sh.w); return },
		func() (err error) { tsnap, err = a64(threads); return },
		func() (err error) { txNR, err = a32(threads); return },
		func() (err error) { txNW, err = a32(threads); return },
		func() (err error) { resBuf, err = a64(threads); return },
		func() (err error) { reqRing, err = a64(cfg.Servers * ring * 3); return }, // stm_req: 24 bytes
		func() (err error) { finRing, err = a64(cfg.Servers * ring * 4); return }, // stm_fin: 32 bytes
		func() (err error) { reqTail, err = a64(cfg.Servers * ctlSpacing); return },
		func() (err error) { finTail, err = a64(cfg.Servers * ctlSpacing); return },
		func() (err error) { reply, err = a32(clientWarps * cfg.Servers); return },
		func() (err error) { words, err = a64(2 * ctlSpacing); return }, // clock, next
		func() (err error) { dctl, err = a64(dctlWords); return },
		func() (err error) { counters, err = a64(numCounters); return },
		func() (err error) { hbuf, err = a64(int(max(histWords, 1))); return },
		func() (err error) { abuf, err = a64(int(max(abWords, 1))); return },
		func() (err error) { done, err = a64(doneRing); return },
		func() (err error) { final, err = a64(n); return },
		func() (err error) { initv, err = a64(n); return },
		func() (err error) { globals, err = a64(globalWords()); return },
	}
	for _, f := range steps {
		if err := f(); err != nil {
			return nil, tm, fmt.Errorf("allocating the run's device memory: %w", err)
		}
	}
	for _, b := range []interface{ FillBytes(*gpu.Stream, byte) error }{reqRing, finRing, reqTail, finTail, reply, words, dctl, counters, resBuf, done} {
		if err := b.FillBytes(g.sSrv, 0); err != nil {
			return nil, tm, err
		}
	}
	gl := make([]uint64, globalWords())
	set := func(name string, v uint64) { gl[globalIndex(name)] = v }
	set("vals", uint64(vals.Ptr()))
	set("vers", uint64(vers.Ptr()))
	set("head", uint64(head.Ptr()))
	set("n_items", uint64(n))
	set("part_size", uint64(cfg.partSize(n)))
	set("servers", uint64(cfg.Servers))
	set("k", uint64(sh.k))
	set("r_cap", uint64(sh.r))
	set("w_cap", uint64(sh.w))
	set("hist_mode", uint64(hist))
	set("log_e", uint64(sh.logE))
	set("log_n", uint64(cfg.LogSize))
	set("log_a", uint64(sh.logA))
	set("log_w", uint64(cfg.LogWrites))
	set("smem", uint64(props.SharedPerBlockOptin))
	set("rs_item", uint64(rsItem.Ptr()))
	set("rs_val", uint64(rsVal.Ptr()))
	set("ws_item", uint64(wsItem.Ptr()))
	set("ws_val", uint64(wsVal.Ptr()))
	set("tx_snap", uint64(tsnap.Ptr()))
	set("tx_nr", uint64(txNR.Ptr()))
	set("tx_nw", uint64(txNW.Ptr()))
	set("res", uint64(resBuf.Ptr()))
	set("req_ring", uint64(reqRing.Ptr()))
	set("req_tail", uint64(reqTail.Ptr()))
	set("fin_ring", uint64(finRing.Ptr()))
	set("fin_tail", uint64(finTail.Ptr()))
	set("ring_mask", uint64(ring-1))
	set("reply", uint64(reply.Ptr()))
	set("clock", uint64(words.PtrAt(0)))
	set("next", uint64(words.PtrAt(ctlSpacing)))
	set("done", uint64(done.Ptr()))
	set("done_mask", uint64(doneRing-1))
	set("dctl", uint64(dctl.Ptr()))
	set("hctl", uint64(g.ctl.Ptr()))
	set("counters", uint64(counters.Ptr()))
	set("n_tx", uint64(nTickets))
	set("seed", ro.Seed)
	set("limit_ns", uint64(ro.Timeout.Nanoseconds()))
	set("client_warps", uint64(clientWarps))
	set("threads", uint64(threads))
	set("hist", uint64(hbuf.Ptr()))
	set("hist_cap", uint64(histWords))
	set("hist_off", uint64(dctl.PtrAt(dctlHistOff)))
	set("hist_ab", uint64(abuf.Ptr()))
	set("hist_ab_cap", uint64(abWords))
	set("hist_ab_off", uint64(dctl.PtrAt(dctlHistAbOff)))
	set("hist_ab_end", uint64(dctl.PtrAt(dctlHistAbEnd)))
	if len(sp.params) > maxParams {
		return nil, tm, fmt.Errorf("%d workload parameters, at most %d", len(sp.params), maxParams)
	}
	copy(gl[globalIndex("params"):], sp.params)
	if err := globals.Write(g.sSrv, 0, gl); err != nil {
		return nil, tm, err
	}
	iv := make([]uint64, n)
	for i := range iv {
		iv[i] = w.InitialValue(i)
	}
	if err := initv.Write(g.sSrv, 0, iv); err != nil {
		return nil, tm, err
	}
	if err := fInit.Launch(g.sSrv, gpu.D1(gpu.Grid(n, initBlock)), gpu.D1(initBlock), 0, globals, initv); err != nil {
		return nil, tm, err
	}
	if err := g.sSrv.Synchronize(); err != nil {
		return nil, tm, fmt.Errorf("initializing the store: %w", err)
	}
	clk.Mark(nil, engine.MarkUploaded)
	clk.Mark(nil, engine.MarkSorted)

	ctl := g.ctl.Slice()
	for i := range ctl {
		atomic.StoreUint64(&ctl[i], 0)
	}
	if err := fServer.Launch(g.sSrv, gpu.D1(cfg.Servers), gpu.D1(sh.serverWarps*32), props.SharedPerBlockOptin, globals); err != nil {
		return nil, tm, fmt.Errorf("launching %d server blocks: %w", cfg.Servers, err)
	}
	if err := g.awaitServers(cfg.Servers); err != nil {
		dc := make([]uint64, dctlWords)
		if rerr := dctl.Read(nil, 0, dc); rerr == nil && dc[dctlError] != 0 {
			return nil, tm, g.describe(dc[dctlError], dc[dctlDetail0], dc[dctlDetail1], n, ro)
		}
		return nil, tm, err
	}
	if err := g.evA.Record(g.sCli); err != nil {
		return nil, tm, err
	}
	started := time.Now()
	if err := fClient.Launch(g.sCli, gpu.D1(blocks), gpu.D1(sh.clientBlock), 0, globals); err != nil {
		atomic.StoreUint64(&ctl[hctlAbort], 1)
		g.drain(started, ro)
		return nil, tm, fmt.Errorf("launching %d client blocks: %w", blocks, err)
	}
	if err := g.evB.Record(g.sCli); err != nil {
		return nil, tm, err
	}
	if err := g.wait(started, ro); err != nil {
		return nil, tm, err
	}
	elapsed, err := gpu.Elapsed(g.evA, g.evB)
	if err != nil || elapsed <= 0 {
		elapsed = time.Since(started)
	}
	clk.Mark(nil, engine.MarkWorked)

	// Results.
	dc := make([]uint64, dctlWords)
	if err := dctl.Read(nil, 0, dc); err != nil {
		return nil, tm, err
	}
	if code := dc[dctlError]; code != 0 {
		return nil, tm, g.describe(code, dc[dctlDetail0], dc[dctlDetail1], n, ro)
	}
	cnt := make([]uint64, numCounters)
	if err := counters.Read(nil, 0, cnt); err != nil {
		return nil, tm, err
	}
	if err := fFinal.Launch(g.sSrv, gpu.D1(gpu.Grid(n, initBlock)), gpu.D1(initBlock), 0, globals, final); err != nil {
		return nil, tm, err
	}
	res := &Result{Elapsed: elapsed, Threads: threads, Device: g.dev.String(), UserAborts: cnt[cntUser], Wrong: cnt[cntWrong],
		Servers: cfg.Servers, HistoryDropped: cnt[cntHistDropped]}
	res.HistoryLimited = hist > 0 && ro.Transactions == 0 && dc[dctlTicketsOut] != 0
	res.Commits, res.ReadOnlyCommits = cnt[cntCommits], cnt[cntReadOnly]
	for c := range NumCauses {
		res.Aborts[c] = cnt[cntAbort0+int(c)]
	}
	res.Final = make([]uint64, n)
	if err := final.Read(g.sSrv, 0, res.Final); err != nil {
		return nil, tm, err
	}
	if err := g.sSrv.Synchronize(); err != nil {
		return nil, tm, fmt.Errorf("reading the final store: %w", err)
	}
	if hist > 0 {
		for _, region := range []struct {
			buf  *gpu.Buffer[uint64]
			used int64
		}{{hbuf, min(int64(dc[dctlHistOff]), histWords)}, {abuf, min(int64(dc[dctlHistAbEnd]), abWords)}} {
			words := make([]uint64, region.used)
			if err := region.buf.Read(nil, 0, words); err != nil {
				return nil, tm, err
			}
			recs, err := parseHistory(words)
			if err != nil {
				return nil, tm, err
			}
			res.History = append(res.History, recs...)
		}
	}
	cycle := func(c uint64) time.Duration {
		if props.ClockKHz <= 0 {
			return 0
		}
		return time.Duration(float64(c) / float64(props.ClockKHz) * 1e6)
	}
	res.Commit = Breakdown{
		Execute: cycle(cnt[cntCyExecute]), PreValidate: cycle(cnt[cntCyPreValidate]),
		Validate: cycle(cnt[cntCyValidate]), Insert: cycle(cnt[cntCyInsert]),
		WriteBack: cycle(cnt[cntCyWriteBack]), Publish: cycle(cnt[cntCyPublish]),
	}
	res.Server = ServerStats{Requests: cnt[cntRequests], Batched: cnt[cntBatched], Scanned: cnt[cntScanned], LockWait: cycle(cnt[cntCyLock])}
	if rt := cycle(cnt[cntCyRoundTrip]); rt > res.Commit.Validate+res.Commit.Insert {
		res.Commit.WaitServer = rt - res.Commit.Validate - res.Commit.Insert
	}
	clk.Mark(nil, engine.MarkDone)
	tm = clk.Timings(w.Name(), int(res.Total()))
	return res, tm, nil
}

// defaultThreads is the number of client threads of a run without
// Options.ClientThreads: about LogSize/updatesPerLog update transactions
// in flight per server, so more threads when most transactions are
// read-only; at most one per itemsPerThread items of the store; at least a
// warp. A request is validated against the log entries newer than its
// transactions' snapshots, about one per update transaction in flight, so
// a server's capacity falls as concurrency grows: on an H100 (2026-11-26)
// 4096 concurrent transfers at one server gave 2.0M commits/s with 3965
// entries scanned per request (and more than LogSize in flight makes
// commits abort spuriously, LogFull, as the thesis saw).
func defaultThreads(sp *workloadSpec, cfg Config, n int, seed uint64) int {
	upd := max(1-readOnlyShare(sp, seed), 1.0/64)
	want := int(float64(max(cfg.LogSize/updatesPerLog, 32)*cfg.Servers) / upd)
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

// awaitServers waits until every server block has said it runs.
func (g *gpuEngine) awaitServers(p int) error {
	ctl := g.ctl.Slice()
	end := time.Now().Add(serverStartTimeout)
	for {
		up := 0
		for i := 0; i < p; i++ {
			if atomic.LoadUint64(&ctl[hctlServersUp+i]) != 0 {
				up++
			}
		}
		if up == p {
			return nil
		}
		if done, err := g.sSrv.Done(); err != nil || done {
			return fmt.Errorf("the server kernel ended before the clients started (%d of %d blocks ran): %v", up, p, err)
		}
		if time.Now().After(end) {
			atomic.StoreUint64(&ctl[hctlAbort], 1)
			g.drain(time.Now(), RunOptions{Timeout: time.Second})
			return fmt.Errorf("only %d of %d server blocks became resident within %v", up, p, serverStartTimeout)
		}
		time.Sleep(pollEvery)
	}
}

// wait polls the client stream until the clients finish, stopping them
// after the run's duration and aborting at its timeout, then waits for the
// servers.
func (g *gpuEngine) wait(started time.Time, ro RunOptions) error {
	ctl := g.ctl.Slice()
	stopAt := started.Add(ro.Duration)
	abortAt := started.Add(ro.Timeout + stopGrace/3) // after the kernels' own deadline
	stopped := false
	for {
		done, err := g.sCli.Done()
		if err != nil {
			atomic.StoreUint64(&ctl[hctlAbort], 1)
			g.drain(time.Now(), ro)
			return fmt.Errorf("client kernel: %w", err)
		}
		if done {
			break
		}
		now := time.Now()
		if ro.Transactions == 0 && !stopped && now.After(stopAt) {
			atomic.StoreUint64(&ctl[hctlStop], 1)
			stopped = true
		}
		if now.After(abortAt) {
			atomic.StoreUint64(&ctl[hctlAbort], 1)
			if err := g.drain(now, ro); err != nil {
				return err
			}
			return fmt.Errorf("timed out after %v", ro.Timeout)
		}
		time.Sleep(pollEvery)
	}
	end := time.Now().Add(stopGrace)
	for {
		done, err := g.sSrv.Done()
		if err != nil {
			return fmt.Errorf("server kernel: %w", err)
		}
		if done {
			return nil
		}
		if time.Now().After(end) {
			atomic.StoreUint64(&ctl[hctlAbort], 1)
			return g.drain(time.Now(), ro)
		}
		time.Sleep(pollEvery)
	}
}

// drain waits up to stopGrace for both streams after an abort.
func (g *gpuEngine) drain(from time.Time, _ RunOptions) error {
	end := from.Add(stopGrace)
	for time.Now().Before(end) {
		a, errA := g.sCli.Done()
		b, errB := g.sSrv.Done()
		if errA != nil || errB != nil {
			return errors.Join(errA, errB)
		}
		if a && b {
			return nil
		}
		time.Sleep(pollEvery)
	}
	return fmt.Errorf("the kernels did not stop within %v of being told to: %s may need a reset", stopGrace, g.dev)
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
	}
	return fmt.Errorf("kernel error %d (%d, %d)", code, d0, d1)
}

// parseHistory decodes the history the kernels wrote (see stm_record).
func parseHistory(words []uint64) ([]Record, error) {
	var out []Record
	for i := 0; i < len(words); {
		if i+4 > len(words) {
			return nil, fmt.Errorf("history: truncated record at word %d", i)
		}
		kind, cause := words[i]&0xFF, (words[i]>>8)&0xFF
		nr, nw := int(words[i+1]>>32), int(uint32(words[i+1]))
		r := Record{TS: words[i+2], Snapshot: words[i+3], ReadOnly: kind == 1, Aborted: kind == 2, Cause: Cause(cause)}
		i += 4
		if kind > 2 || i+2*(nr+nw) > len(words) {
			return nil, fmt.Errorf("history: bad record at word %d", i-4)
		}
		r.Reads = make([]Access, nr)
		for j := range r.Reads {
			r.Reads[j] = Access{Item: uint32(words[i]), Value: words[i+1]}
			i += 2
		}
		if nw > 0 {
			r.Writes = make([]Access, nw)
			for j := range r.Writes {
				r.Writes[j] = Access{Item: uint32(words[i]), Value: words[i+1]}
				i += 2
			}
		}
		if r.Aborted && r.Writes != nil && len(r.Writes) == 0 {
			r.Writes = nil
		}
		out = append(out, r)
	}
	return out, nil
}
