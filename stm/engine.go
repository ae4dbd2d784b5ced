package stm

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/warpkv/warpkv/engine"
	"github.com/warpkv/warpkv/gpu"
)

// Options configure an Engine.
type Options struct {
	// Device selects the engine as engine.Place does: "auto" (a GPU when
	// one is usable, else the CPU), "cpu", "gpu" or "gpu:N"; "" means the
	// value of WARPKV_DEVICE, else auto. Ignored when GPU is set.
	Device string
	// GPU, when set, is an open device to run the GPU engine on; the
	// caller keeps ownership and must close the Engine before the device.
	GPU *gpu.Device
	Config
	// Workers is the number of goroutines running transactions on the CPU
	// engine; 0 means GOMAXPROCS.
	Workers int
	// GPU engine geometry; zero values choose defaults.
	ClientBlock       int // threads per client block (a multiple of 32; default 32)
	ClientBlocksPerSM int // client blocks per client SM; 0: as many as fit
	// ClientThreads bounds the transactions running at once on the GPU;
	// 0 means about LogSize/16 update transactions in flight per server
	// (LogSize/16 x Servers / the share of update transactions, times up
	// to 4 for update transactions whose warp also runs a read-only one,
	// which wait for it: x3.6 at 10% read-only, x1.3 at 90%; not for a
	// Zipf workload, where more threads mostly make more conflicts, nor
	// for update transactions of more than 4 writes), at most
	// one per two items of the store, at least a warp: more update
	// transactions in flight make more conflicts, and longer final checks
	// (a request's survivors are checked against the entries logged
	// between their first validation and their turn; see Config.LogSize
	// for what happens when the log dropped some of those entries).
	ClientThreads int
	// Throttle is the GPU engine's admission control of client warps:
	// the abort rate (aborted attempts over aborted attempts and commits,
	// read-only ones included) it holds the admitted warps near. Every
	// client warp reports its attempts to one window counter; the warp
	// whose report fills a window (twice the admitted threads, at least
	// 1024 attempts) admits a quarter fewer warps when the window's rate
	// was above Throttle+0.1 and 1/32 of all of them more when it was
	// below Throttle-0.1; a warp not admitted finishes the round it is in,
	// then takes no tickets and runs nothing until it is admitted again
	// (it sleeps), unless every ticket is taken. Cost: one atomic add per
	// warp round. 0 means DefaultThrottle (DefaultThrottleDirect with
	// direct commits for a workload less than ThrottleDirectReadOnly
	// read-only); a negative value turns it off
	// (every warp runs). Hot items (a Zipf law) are where it matters:
	// thousands of transactions in flight on a few items mostly abort.
	Throttle float64
	// Contention is what the GPU engine's client warps do about conflicts
	// before they ask a server (ContentionOff, ContentionCheck,
	// ContentionClaims; ContentionDefault means DefaultContention). Hot
	// items are where it matters: many update transactions in flight on
	// one item, of which at most one commits per turn.
	Contention Contention
	// ServerWarps is the warps per server block: 1 receiver + workers
	// (default 32, fewer when the log leaves less shared memory). Each
	// worker keeps a scratch beside the log in the block's shared memory:
	// 4 KB with up to 16 warps, 2.5 KB (a table of half the items: a
	// request's accesses are validated 64 at a time instead of 128) with
	// more.
	ServerWarps int
	// Stripe is how the GPU engine deals items to its servers: 0 in
	// contiguous partitions of ceil(items/Servers), N > 0 in stripes of N
	// consecutive items dealt to the servers in turn (item i to server
	// (i/N) mod Servers). Contiguous partitions put a Zipf law's hottest
	// blocks, which are numbered first, all on server 0; stripes of a
	// block spread them over the servers and still keep each block in
	// one partition. Not the default: on an H200 (2026-11-29, 64K
	// accounts, Zipf 0.99 over blocks of 100, 1-round transfers, no
	// in-place retries) stripes of 100 committed 3.99M/4.52M/5.16M/23.3M
	// a second at 0/10/50/90% read-only, contiguous partitions
	// 4.07M/4.49M/5.61M/23.09M (main's binary, an earlier run that day).
	// Cost: one division more per access that picks a server.
	Stripe int
	// Refresh is the GPU engine's in-place retries of stale update
	// attempts: after a warp's bodies ran (its read-only lanes' long
	// bodies age the snapshots of its update lanes), an update lane that
	// finds an item it accessed written after its snapshot (the newest
	// logged write, which every server's first validation reads) aborts
	// that attempt (counted and recorded as any abort, with the cause the
	// server would give), the warp waits for the clock to pass the write,
	// and the lane runs its ticket's body again from a new snapshot before
	// the warp commits, up to Refresh times a round. 0 chooses
	// (DefaultRefresh for a skewed workload that does not chain its lost
	// attempts, Chain; else off); negative is off.
	// Under hot items it is what lets the read-only share commit: the
	// update attempts of a warp no longer hold its round back with doomed
	// retries (DefaultRefresh has the figures).
	// Cost: one load per access of an update transaction per retry.
	Refresh int
	// Chain is the GPU engine's passes of chained attempts a round, with
	// direct commits (CommitDirect, or the automatic choice of it): an
	// update attempt that lost inside its warp, or to a newer write at
	// validation, runs again in the same round once the attempts it lost
	// to have committed: it locks the items it wrote (at most
	// STM_CLAIM_BATCH, 4), takes its commit timestamp, and runs its body
	// on the state just before that timestamp, so that it commits without
	// a further validation (ServerStats.Chained, ChainCommits). An
	// attempt held back at its locks chains too when its warp's bodies
	// took longer than its commit that round (long read-only bodies
	// beside the updates: its next try would come after the next ones;
	// on an H200, 2026-11-30, 64K accounts under Zipf 0.99 at 10%
	// read-only, 20.9M commits/s against 17.9M). A lane that did not get
	// its locks may chain in the next pass. 0 chooses
	// (DefaultChain for a skewed workload of write sets of at most
	// ChainAutoWrites items, read sets no larger, below ChainAutoReadOnly
	// read-only; else none),
	// positive is the passes, negative none; ignored with the servers.
	// Cost: a pass of the round for a warp with such attempts (locks, one
	// timestamp add, their bodies, write-back), during which the rest of
	// the warp waits; the commit clock cannot pass a chained attempt's
	// timestamp until its body ends, so a long body delays every warp's
	// publication (and the snapshots after it); two loads and a fence
	// more per read of a chained attempt; and a done marker more per
	// client thread per pass. At most MaxChain passes.
	Chain int
	// Migrate is the GPU engine's migration of held-back tickets, with
	// chained attempts (Chain): a transaction held back at its locks
	// Migrate times in a row, at a lock another warp's lane holds, moves
	// to an inbox of that warp (32 slots a warp), its lane taking a fresh
	// ticket, and so does, at once, one whose attempt lost and whose
	// chained claim then met such a lock; a warp takes the tickets of its
	// inbox before new ones. As in
	// CAR-STM (Dolev, Hendler and Suissa, 2008), the transactions that want
	// the same hot items gather in one warp, where the in-warp check orders
	// them and chained attempts commit them in turn with the words handed
	// over, where across warps they would keep holding each other back
	// (ServerStats.Migrated). 0 chooses (DefaultMigrate for a workload that
	// chains by default and whose update transactions write at least
	// MigrateAutoWrites items; else none), positive is the hold-backs in a
	// row, negative none; ignored without chained attempts.
	// Cost: per migration a compare-and-swap and three stores; per warp
	// round a load of the warp's inbox (and per ticket taken from it three
	// loads and a store, and an atomic AND for the warp); tickets in flight
	// up to twice the client threads, so commit latencies include the time
	// a ticket waited in an inbox (a warp parked by admission control takes
	// its inbox's tickets only once admitted again), and a migrated ticket
	// keeps its first lane's stm_tx.thread, which another ticket in flight
	// may then share.
	Migrate int
	// ServerCommit is the GPU engine servers' share of single-partition
	// commits (ServerCommitOff, the zero value, is the default: the
	// clients write their versions back): ServerCommitWriteBack has the
	// servers write them back and mark their timestamps done after the
	// final check, and ServerCommitRetry also has them run conflicting
	// update attempts again before the request's turn, validated as any
	// attempt (ServerCommit's constants say how). Every guarantee holds.
	// A re-run that commits replaces its first attempt, which is neither
	// counted as an abort nor recorded; one dropped counts as that
	// attempt's abort and is not recorded (its sets were overwritten).
	// Cost: the write-back moves from the client warps to the server's
	// workers; with retries, one 64-bit store per update attempt (its
	// ticket) and a worker that waits for the clock before it runs an
	// attempt again. Not the default: on an H200 (2026-11-29, 64K
	// accounts, Zipf 0.99 over blocks of 100, 1-round transfers)
	// writeback committed 1.9%/3.1%/3.3% more a second than the default
	// at 0/10/50% read-only and retry +9.6%/-0.7%/-6.2%, while writeback
	// cost 15% on uniform accounts at 0% read-only (36.0M against 42.2M:
	// the workers were the bound there).
	ServerCommit ServerCommit
	// Commit is how the GPU engine commits update transactions:
	// CommitAuto (the zero value: direct commits unless the workload is
	// mostly read-only or a server option is set), CommitServers or
	// CommitDirect (CommitPath's constants say how and what each costs).
	// Every guarantee holds on each.
	Commit CommitPath
	table  int // benchmarks: the workers' table size (0: by ServerWarps)

	yield bool // tests: CPU transactions yield on every read
}

// RunOptions say how long a run lasts and what it keeps.
type RunOptions struct {
	// Transactions is the number of transactions to commit (every
	// transaction is retried until it commits). 0 means run for Duration.
	Transactions int64
	// Duration bounds a run without a transaction count.
	Duration time.Duration
	// Seed seeds the workload's transactions.
	Seed uint64
	// History keeps every committed transaction (Result.History);
	// HistoryAborted also keeps aborted attempts' reads. For tests and
	// small runs: memory grows with every commit.
	History, HistoryAborted bool
	// Breakdown measures where commit time goes (Result.Commit); on the
	// CPU engine it costs a few clock reads per transaction.
	Breakdown bool
	// Latency times every committed transaction into Result.Latency. On
	// the CPU engine it costs two clock reads per commit; the GPU engine
	// compiles the timing into the programs of the runs that ask for it
	// only (without it the kernels are the code without the timing): on
	// an H200 (2026-11-29, 1M accounts, read-only sums of 100) it cost
	// nothing measurable at 0% read-only (46.90M commits/s against
	// 46.85M) and 0.8% at 90% (160.4M against 161.7M; runs agree to
	// 0.1%).
	Latency bool
	// Timeout bounds the whole run; a run that does not finish in time
	// fails with an error (on the GPU, through a deadline every kernel
	// loop checks). 0 means Duration plus one minute, or ten minutes.
	Timeout time.Duration

	ctx context.Context // RunContext's; nil: none
}

// done is the channel that closes when the run's context is done (nil,
// which never closes, without one).
func (ro RunOptions) done() <-chan struct{} {
	if ro.ctx == nil {
		return nil
	}
	return ro.ctx.Done()
}

// Result is what a run did.
type Result struct {
	Stats
	// Wrong counts committed transactions whose workload check failed
	// (Bank: read-only totals that differ from the invariant).
	Wrong uint64
	// UserAborts counts transactions their body gave up (stm_abort): not
	// retried, not committed.
	UserAborts uint64
	Elapsed    time.Duration // from the first transaction to the last commit
	Threads    int           // transactions that ran concurrently (goroutines or GPU threads)
	Servers    int           // commit servers the store used (Config.Servers, at most one per item)
	Direct     bool          // the GPU engine committed without its servers (Options.Commit)
	// Stripe is the items of each stripe the GPU engine dealt to its
	// servers in turn (Options.Stripe); 0: contiguous partitions.
	Stripe int
	// HistoryDropped counts aborted attempts left out of History
	// (RunOptions.HistoryAborted) because the GPU engine's region for
	// them was full; committed transactions are never left out.
	HistoryDropped uint64
	// HistoryLimited: a run of a duration with RunOptions.History ended
	// before the duration, when it had committed as many transactions as
	// the GPU engine's history buffer holds.
	HistoryLimited bool
	Final          []uint64    // the store after the run
	History        []Record    // with RunOptions.History
	Commit         Breakdown   // where commit time went
	Server         ServerStats // what the GPU engine's commit servers did (zero on the CPU engine)
	Device         string      // where it ran
	// Latency is, with RunOptions.Latency, the commit latency of every
	// transaction the run committed (update and read-only): from the start of its first
	// attempt to its commit, retries and backoff included. The CPU engine
	// reads the clock before a worker runs a ticket and after it commits;
	// the GPU engine reads the device's global timer (%globaltimer, ns)
	// when a client warp takes the ticket and when the warp's commit round
	// is published (the commit clock passed it), so it includes the
	// warp's wait for its other lanes. Not timed: transactions given up
	// (stm_abort) or abandoned when the run stopped.
	Latency Latency
}

// Throughput is commits (update and read-only) per second.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Total()) / r.Elapsed.Seconds()
}

// Breakdown is the time transactions spent in the phases of a run, summed
// over all transactions (aborted attempts included), so that shares
// compare phases. Phases an engine does not have are zero.
type Breakdown struct {
	Execute     time.Duration // running transaction bodies
	PreValidate time.Duration // GPU: validation inside the client warp
	WaitServer  time.Duration // from the commit request to a server's answer, less Validate and Insert (CPU and GPU direct commits: locking the write set, taking the timestamp)
	Validate    time.Duration // server validation against the log (CPU: of the reads against the items' versions; GPU direct commits: against the items' locks and newest writes, and raising those)
	Insert      time.Duration // GPU: after the first validation: reserving slots, waiting for the log's turn, timestamps, logging the batch, its final validation
	WriteBack   time.Duration // installing the new versions (CPU: and logging the replaced ones)
	Publish     time.Duration // waiting for earlier commits and advancing the clock
}

// ServerStats describe the work of the GPU engine's commit servers in a
// run.
type ServerStats struct {
	Requests uint64        // commit requests served: a client warp's transactions at one server
	Batched  uint64        // requests validated as a batch (all of them: in table loads of STM_TABLE/2 accesses)
	Scanned  uint64        // log entries the final checks scanned (a first validation reads each accessed item's newest logged write instead, no entry)
	LockWait time.Duration // time workers waited for their turn at the log (slot order), summed; a grouped request's wait includes the wait, after writing its entries, for its group's publication
	Turns    uint64        // turns at the log that single-partition requests took
	Grouped  uint64        // single-partition requests logged in an earlier request's turn (a group), not in one of their own: each writes its own entries there, in parallel with the group's other members
	Early    uint64        // single-partition requests validated in their turn before they were logged (a small log or a long wait)
	TurnHold time.Duration // time single-partition requests held their turn, from taking it to passing it on (a group's: until its last member's entries are written), summed
	// Stages splits the requests' time at the servers (RequestStages).
	Stages RequestStages
	// WorkerTime is the worker warps' time in the run: servers x workers
	// x the run's length; Stages.Busy over it is how busy they were.
	WorkerTime time.Duration
	// Admitted is the client threads the GPU engine's admission control
	// (Options.Throttle) admitted, averaged over its control windows; 0
	// when it was off or closed no window.
	Admitted int
	// Deferred counts update attempts held back unsent because another
	// transaction had claimed an item they write (ContentionClaims): not
	// aborts, each ran again with a new snapshot.
	Deferred uint64
	// Refreshed counts update attempts that aborted stale after their
	// warp's bodies and ran again at once (Options.Refresh); they are
	// among the aborts.
	Refreshed uint64
	// Rerun counts update attempts a server ran again before their
	// turn and committed (ServerCommitRetry).
	Rerun uint64
	// InWarp counts update attempts aborted by their warp's in-warp check
	// (a lower lane that committed wrote an item they read or wrote),
	// among the read-write and write-write aborts.
	InWarp uint64
	// LockMet counts direct commits aborted because another lane held the
	// lock of an item they read, among the read-write aborts. With direct
	// commits the other read-write and write-write aborts, less InWarp,
	// LockMet and Refreshed, lost to a newer write at validation.
	LockMet uint64
	// Chained counts update attempts run again in their round as chained
	// attempts (Options.Chain): lost ones, among the aborts, and ones held
	// back at their locks in a round of long bodies, among Deferred;
	// ChainCommits those chained attempts that committed.
	Chained, ChainCommits uint64
	// Migrated counts the tickets moved to the inbox of the warp whose lane
	// held their lock (Options.Migrate): held back, or lost with a chained
	// claim that met that lock.
	Migrated uint64
	// Rounds counts the client warps' rounds (each a warp's bodies and
	// its commit), and RoundTime their time summed over the warps: a
	// hot item commits at most once a round.
	Rounds    uint64
	RoundTime time.Duration
	// Phases splits RoundTime by where a warp was (direct commits; the
	// rest of a round is its bookkeeping: counters, history records,
	// admission control and back-off sleeps).
	Phases RoundPhases
}

// RoundPhases is the client warps' time summed over their rounds, by
// phase, as lane 0 of each warp saw it.
type RoundPhases struct {
	Ticket    time.Duration // from the round's start to its bodies: control words, tickets
	Body      time.Duration // the bodies, with the in-place retries of stale attempts and their waits
	Check     time.Duration // the in-warp check (Algorithm 1)
	Lock      time.Duration // locks and the commit timestamp
	Validate  time.Duration // validation and the raise of the newest writes
	WriteBack time.Duration // write-back, unlock and the done markers
	Publish   time.Duration // the wait for the commit clock
	Chain     time.Duration // chained attempts (Options.Chain): their locks, bodies and write-back
}

// Per returns the phases' mean per round, e.g. "tickets 1µs, bodies
// 5µs, check 2µs, lock 3µs, validate 1µs, write-back 2µs, publish 4µs,
// rest 1µs" for rounds of total time (the rest is total less the
// phases); "" when n is 0.
func (p RoundPhases) Per(n uint64, total time.Duration) string {
	if n == 0 {
		return ""
	}
	sum := p.Ticket + p.Body + p.Check + p.Lock + p.Validate + p.WriteBack + p.Publish + p.Chain
	r := func(d time.Duration) time.Duration { return meanOf(d, n).Round(10 * time.Nanosecond) }
	chain := ""
	if p.Chain > 0 {
		chain = fmt.Sprintf(", chained %v", r(p.Chain))
	}
	return fmt.Sprintf("tickets %v, bodies %v, check %v, lock %v, validate %v, write-back %v%s, publish %v, rest %v",
		r(p.Ticket), r(p.Body), r(p.Check), r(p.Lock), r(p.Validate), r(p.WriteBack), chain, r(p.Publish), r(max(total-sum, 0)))
}

// String summarizes the stats, e.g. "1000 requests (990 batched, 120
// entries scanned each), turn wait 2ms; 400 turns held 1.2µs each, 550
// requests logged in another's turn, 3 validated in their turn", then,
// when the stages were timed, a request's mean time in each
// (stagesString).
func (s ServerStats) String() string {
	per := uint64(0)
	if s.Batched > 0 {
		per = s.Scanned / s.Batched
	}
	str := fmt.Sprintf("%d requests (%d batched, %d entries scanned each), turn wait %v; %d turns held %v each, %d requests logged in another's turn, %d validated in their turn",
		s.Requests, s.Batched, per, s.LockWait.Round(time.Microsecond), s.Turns, meanOf(s.TurnHold, s.Turns), s.Grouped, s.Early)
	if st := s.stagesString(); st != "" {
		str += "; " + st
	}
	if s.Admitted > 0 {
		str += fmt.Sprintf("; admission control: %d client threads admitted on average", s.Admitted)
	}
	if s.Deferred > 0 {
		str += fmt.Sprintf("; %d update attempts held back by claims", s.Deferred)
	}
	if s.Refreshed > 0 {
		str += fmt.Sprintf("; %d stale update attempts run again at once", s.Refreshed)
	}
	if s.Rerun > 0 {
		str += fmt.Sprintf("; %d conflicting update attempts run again and committed by the servers", s.Rerun)
	}
	if s.InWarp > 0 {
		str += fmt.Sprintf("; %d update attempts aborted by the in-warp check", s.InWarp)
	}
	if c := s.ChainString(); c != "" {
		str += "; " + c
	}
	if s.Rounds > 0 {
		str += fmt.Sprintf("; %d client warp rounds of %v", s.Rounds, meanOf(s.RoundTime, s.Rounds))
	}
	return str
}

// ChainString says what a run's chained attempts and ticket moves did
// (Options.Chain, Options.Migrate): the lost or held-back update attempts
// chained and how many of them committed, and the tickets migrated to the
// warp holding their lock; "" when neither happened. String and the
// benchmarks' notes share it. Cost: formatting only.
func (s ServerStats) ChainString() string {
	var parts []string
	if s.Chained > 0 {
		parts = append(parts, fmt.Sprintf("%d lost or held-back update attempts chained, %d of them committed", s.Chained, s.ChainCommits))
	}
	if s.Migrated > 0 {
		parts = append(parts, fmt.Sprintf("%d tickets migrated to the warp holding their lock", s.Migrated))
	}
	return strings.Join(parts, "; ")
}

// Engine runs workloads on the GPU or the CPU engine. It is safe for
// concurrent use: runs take turns. It implements engine.Reporter through
// its embedded engine.Facade (Backend, Reason, LastBatch, Close; a run is
// its batch, and LastBatch is the breakdown of the last run: Upload the
// initial store, Work the transactions, Download the results); after Close
// every call returns an error matching engine.ErrClosed.
type Engine struct {
	engine.Facade[runner]
	opt Options
}

// runner is one engine of an Engine: the CPU engine (cpuEngine,
// cpu_run.go) or the GPU engine (gpuEngine, engine_gpu.go). Both run a
// workload from its initial store to the same kind of Result, and report
// the run's timings.
type runner interface {
	run(w Workload, sp *workloadSpec, ro RunOptions) (*Result, engine.Timings, error)
	close() error
}

var _ engine.Reporter = (*Engine)(nil)

// Open places an engine (engine.Place: auto, cpu, gpu or gpu:N; "" means
// WARPKV_DEVICE, else auto). Close it to free the device it opened. Cost:
// opening the device for a GPU; kernels are compiled on the first run of
// each workload shape.
func Open(o Options) (*Engine, error) {
	if err := o.Config.withDefaults().validate(MaxItems); err != nil {
		return nil, err
	}
	if o.Throttle >= 1 || o.Throttle != o.Throttle {
		return nil, fmt.Errorf("stm: throttle abort rate %g: want below 1 (0 default, negative off)", o.Throttle)
	}
	if o.Contention < ContentionDefault || o.Contention > ContentionClaims {
		return nil, fmt.Errorf("stm: contention mode %d: want %d to %d", int(o.Contention), int(ContentionDefault), int(ContentionClaims))
	}
	if o.ServerCommit < ServerCommitOff || o.ServerCommit > ServerCommitRetry {
		return nil, fmt.Errorf("stm: server commit mode %d: want %d to %d", int(o.ServerCommit), int(ServerCommitOff), int(ServerCommitRetry))
	}
	if o.Commit < CommitAuto || o.Commit > CommitDirect {
		return nil, fmt.Errorf("stm: commit path %d: want %d to %d", int(o.Commit), int(CommitAuto), int(CommitDirect))
	}
	if o.Commit == CommitDirect && o.ServerCommit != ServerCommitOff {
		return nil, fmt.Errorf("stm: direct commits have no server: server commit mode %s does not apply", o.ServerCommit)
	}
	if o.Chain > MaxChain {
		return nil, fmt.Errorf("stm: %d passes of chained attempts: want at most %d", o.Chain, MaxChain)
	}
	if o.Workers < 0 || o.ClientBlock < 0 || o.ClientBlocksPerSM < 0 || o.ClientThreads < 0 || o.ServerWarps < 0 {
		return nil, fmt.Errorf("stm: negative option in %+v", o)
	}
	e := &Engine{opt: o}
	err := engine.Open(&e.Facade, engine.Spec[runner]{
		Name: "stm", Device: o.Device, GPU: o.GPU,
		Start: func(p engine.Placement) (runner, error) {
			if p.Backend != gpu.BackendGPU {
				return &cpuEngine{opt: o}, nil
			}
			return newGPUEngine(p.Device, o)
		},
		Free: func(r runner) error { return r.close() },
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Run runs workload w from its initial store for ro.Transactions
// transactions or for ro.Duration and returns what happened. It fails if
// the workload's final-state check fails or the run exceeds its timeout.
// Cost: the run's; runs on one Engine take turns.
func (e *Engine) Run(w Workload, ro RunOptions) (*Result, error) {
	return e.RunContext(context.Background(), w, ro)
}

// RunContext is Run that stops when ctx is done: the CPU engine's workers
// stop between chunks of transactions and the run returns an error that
// wraps ctx's cause; the GPU engine's run is bounded by ctx's deadline
// (through RunOptions.Timeout, which every kernel loop checks) and a ctx
// done before the launch stops it there, but a cancel without a deadline
// is not seen by kernels already running. A stopped run changes nothing
// the Engine keeps (every run starts from a fresh store; LastBatch keeps
// the previous run's).
func (e *Engine) RunContext(ctx context.Context, w Workload, ro RunOptions) (*Result, error) {
	if ro.Transactions < 0 || ro.Duration < 0 || (ro.Transactions == 0 && ro.Duration == 0) {
		return nil, fmt.Errorf("stm: run %s: want a positive number of transactions or a duration", w.Name())
	}
	sp, err := w.spec()
	if err != nil {
		return nil, err
	}
	if ro.Timeout == 0 {
		ro.Timeout = 10 * time.Minute
		if ro.Transactions == 0 {
			ro.Timeout = ro.Duration + time.Minute
		}
	}
	if d, ok := ctx.Deadline(); ok {
		ro.Timeout = max(min(ro.Timeout, time.Until(d)), time.Millisecond)
	}
	ro.ctx = ctx
	r, err := engine.Lock(&e.Facade, "run "+w.Name())
	if err != nil {
		return nil, err
	}
	defer engine.Unlock(&e.Facade)
	if err := context.Cause(ctx); err != nil {
		return nil, fmt.Errorf("stm: run %s: %w", w.Name(), err)
	}
	res, tm, err := r.run(w, sp, ro)
	if err != nil {
		if cerr := context.Cause(ctx); cerr != nil && !errors.Is(err, cerr) {
			err = fmt.Errorf("%w (%w)", err, cerr)
		}
		return res, fmt.Errorf("stm: run %s: %w", w.Name(), err)
	}
	engine.Record(&e.Facade, tm)
	if sp.check != nil {
		if err := sp.check(res.Final, res.Stats); err != nil {
			return res, fmt.Errorf("stm: run %s: final store: %w", w.Name(), err)
		}
	}
	return res, nil
}
