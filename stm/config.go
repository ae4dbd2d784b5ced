package stm

import "fmt"

// Defaults of Config.
const (
	DefaultVersions = 8    // versions kept per item (the thesis keeps 10)
	DefaultLogSize  = 4096 // commits each server's log remembers
	// DefaultLogWritesPerEntry sizes a log's item pool: LogSize times this
	// many item numbers, unless Config.LogWrites says otherwise.
	DefaultLogWritesPerEntry = 4
	// DefaultThrottle is the abort rate the GPU engine's admission control
	// holds its client warps near (Options.Throttle). On an H200
	// (2026-11-28, 64K accounts, Zipf 0.99, 1-round transfers) 0.7 gave
	// 1.72x/1.49x/0.68x/1.13x the commits of no control at 0/10/50/90%
	// read-only (0.5: 1.74x/0.99x/0.48x/0.98x), none shed at 99% nor on
	// uniform accounts, whose abort rates stay below 0.8. Direct commits
	// (Options.Commit) of a workload less than ThrottleDirectReadOnly
	// read-only take DefaultThrottleDirect instead.
	DefaultThrottle = 0.7
	// DefaultThrottleDirect is DefaultThrottle for direct commits, where
	// more warps in flight pay: on an H200 (2026-11-30, 64K accounts,
	// Zipf 0.99) 0.85 gave 1.02x/1.12x/1.00x the commits a second of 0.7
	// at 0/10/50% read-only with 1-round transfers and 1.06x/1.26x at
	// 0/10% with 2-round ones, no control at all 1.08x/1.12x/1.00x and
	// 1.10x/1.25x; uniform rows unchanged. Admission control stays on
	// for the worst contention (thousands of lanes on a few items, whose
	// abort rates pass 0.95). Only below ThrottleDirectReadOnly
	// read-only: at 90% with 2-round transfers 0.85 measured 0.76x the
	// commits a second of 0.7 (25.9M against 33.9M; 1-round 1.00x).
	DefaultThrottleDirect = 0.85
	// ThrottleDirectReadOnly is the read-only share of a workload
	// (estimated from its first tickets) from which direct commits take
	// DefaultThrottle rather than DefaultThrottleDirect: between the 50%
	// where 0.85 measured 1.17x with 2-round transfers and the 90% where
	// it measured 0.76x.
	ThrottleDirectReadOnly = 0.75
	// DefaultRefresh is the in-place retries of a stale update attempt
	// per warp round (Options.Refresh) for a skewed workload. On an H200
	// (2026-11-29, 64K accounts, Zipf 0.99 over blocks of 100, 1-round
	// transfers, items in stripes of a block) 2 retries committed
	// 3.93M/4.24M/6.02M/33.5M a second at 0/10/50/90% read-only, 8
	// retries 3.93M/5.59M/9.61M/42.4M, none 3.99M/4.52M/5.16M/23.3M.
	DefaultRefresh = 8
	// DefaultChain is the passes of chained attempts a round (Options.Chain)
	// for a workload that chains by default (chainAuto: skewed, update
	// transactions of at most ChainAutoWrites writes, less than
	// ChainAutoReadOnly read-only, direct commits); the in-place retries
	// (Options.Refresh) are then off by default, as chained attempts take
	// the stale ones. On an H200 (2026-11-30, 64K accounts, Zipf 0.99 over
	// blocks of 100) 2 passes without in-place retries committed
	// 22.39M/17.97M/25.45M a second at 0/10/50% read-only with 1-round
	// transfers, against 15.38M/16.88M/27.74M without chained attempts
	// (in-place retries on); with 2-round transfers 3.46M/3.31M/4.55M
	// against 3.97M/4.12M/7.60M, and with uniform accounts 133.5M/132.7M
	// against 155.4M/134.4M at 0/50%: the lanes that lose there mostly
	// fail to lock their items too, and the warp waits for the few that
	// chain. Since a committed lane hands the words it wrote to a sibling
	// that lost to it in the warp, and a lane that lost to a newer write
	// keeps its locks into its chained attempt (stm_unlock_handoff),
	// 2-round transfers chain too: 4.29M/4.73M at 0/10% read-only against
	// 3.84M/4.05M with the in-place retries (H200, 2026-12-01). With the
	// chained passes' cost cut since (reads under the attempt's own lock
	// words, fewer fences at the timestamp), a third pass gained (H200,
	// 2026-12-01, 64K accounts, Zipf 0.99, 2 runs each): 1-round
	// transfers at 0/30/50% read-only 26.28M/27.52M/29.63M a second
	// against 26.11M/27.17M/28.30M with 2 passes; 2-round transfers at
	// 0/10/30/50% 5.49M/5.71M/6.94M/8.12M against 5.44M/5.73M/6.97M/8.17M.
	DefaultChain = 3
	// MaxChain bounds Options.Chain: each pass adds a done marker per
	// client thread, and no measured run gained past 3 passes (4 measured
	// the same as 3 with 2-round transfers, H200, 2026-12-01).
	MaxChain = 8
	// ChainAutoWrites is the largest write set of a workload that chains
	// by default (DefaultChain): STM_CLAIM_BATCH, the largest a chained
	// attempt locks.
	ChainAutoWrites = 4
	// ChainAutoReadOnly is the read-only share from which a workload does
	// not chain by default (DefaultChain): between the 50% that measured
	// a gain and the 90% that measured a loss. H200, 2026-12-01, 64K
	// accounts, Zipf 0.99, 2 runs each: at 50% read-only 3 passes
	// committed 29.63M 1-round and 8.12M 2-round transfers a second
	// against 27.95M and 7.52M without chained attempts (in-place retries
	// on); at 90% 86.3M and 32.9M against 97.2M and 34.4M. (Until then
	// 0.3: on 2026-11-30, before the chained passes got cheaper, 50%
	// measured a loss.)
	ChainAutoReadOnly = 0.7
	// DefaultMigrate is the hold-backs in a row after which a ticket
	// migrates to the warp whose lane held its lock (Options.Migrate) in a
	// workload that migrates by default (migrateAuto: it chains by default
	// and its update transactions write at least MigrateAutoWrites items).
	// On an H200 (2026-12-01, 64K accounts, Zipf 0.99 over blocks of 100,
	// medians of 2 runs) migration after 2 hold-backs committed 4.82M/4.98M
	// 2-round transfers a second at 0/10% read-only against 4.33M/4.57M
	// without (1 hold-back: 4.82M/5.00M; 4: 4.74M/4.82M); with 1-round
	// transfers it lost: 21.7M/22.4M against 23.3M/23.2M (a transfer's 2
	// items chain inside its warp, and concentrating the hot tickets
	// lengthened the hot warps' rounds from 27 to 45 µs). Migrating also the
	// lost attempts whose chained claim met another warp's lock (the same
	// day, medians of 3 runs) made 4.85M/5.29M against 4.80M/5.15M.
	DefaultMigrate = 2
	// MigrateAutoWrites is the smallest write set of a workload that
	// migrates held-back tickets by default (DefaultMigrate).
	MigrateAutoWrites = 3
	// MaxServers bounds Config.Servers (partitions are a 64-bit mask).
	MaxServers = 64
	// MaxItems bounds a store's size (items are 32-bit numbers on the GPU).
	MaxItems = 1<<31 - 1
)

// Config is the shape of a store, shared by both engines.
type Config struct {
	// Versions is K, the versions each item keeps (its ring depth); 0 means
	// DefaultVersions. 1 keeps only the newest. The CPU engine keeps the
	// newest in the item and up to K-1 older ones in version logs, which
	// also bound how long they stay (see Store).
	Versions int
	// LogSize is the number of recent commits each server's log keeps; 0
	// means DefaultLogSize. GPU engine only: the CPU engine validates
	// against per-item versions and keeps no log. A request's first
	// validation reads each item's newest logged write (a table of every
	// item, which forgets nothing); its final check scans the entries
	// logged since. When the log dropped one of those before it was
	// scanned (or one lists no items, LogWrites), a check made in the
	// server's turn, before the request's entries are logged (always so
	// when the log is smaller than 32 entries), validates against that
	// table again; one made after them aborts the transaction (LogFull).
	LogSize int
	// LogWrites is the number of written items each server's log keeps
	// (its item pool); 0 means LogSize*DefaultLogWritesPerEntry. A commit
	// writing more items of one partition than this is logged without its
	// items, and any transaction that meets it in a final check made after
	// its own entries are logged aborts (LogFull; see LogSize).
	LogWrites int
	// Servers is the number of commit servers; items are split into this
	// many contiguous partitions, one per server. 0 means 1 on the CPU
	// (whose engine commits through per-item locks, not servers); on the
	// GPU it is chosen from the device: one per 8 SMs (16 on an H100 or
	// H200), at most one per LogSize/8 items of the store, and partitions
	// at least 8 times wider than the block of consecutive items a built-in
	// workload's update transactions stay in, each made of whole blocks
	// (its size rounded up to a multiple of the block: one server for Bank
	// transfers between any two accounts, or RMW keys anywhere: a
	// transaction of several partitions holds each server's turn while it
	// prepares at the next); a CUDA body's transactions are not bounded
	// this way: set Servers to 1 for a body whose transactions reach
	// across the store. Result.Servers says how many a run used. A store has
	// at most one server per item, and no server without items: a store
	// of N items uses ceil(N / ceil(N / Servers)) of them (Store.Config and
	// Result.Servers say how many), so 4 servers for 2 items are 2.
	Servers int
}

// withDefaults fills in zero fields.
func (c Config) withDefaults() Config {
	if c.Versions == 0 {
		c.Versions = DefaultVersions
	}
	if c.LogSize == 0 {
		c.LogSize = DefaultLogSize
	}
	if c.LogWrites == 0 {
		c.LogWrites = c.LogSize * DefaultLogWritesPerEntry
	}
	if c.Servers == 0 {
		c.Servers = 1
	}
	return c
}

// validate checks a filled-in Config for a store of n items.
func (c Config) validate(n int) error {
	switch {
	case n < 1 || n > MaxItems:
		return fmt.Errorf("stm: %d items: want 1 to %d", n, MaxItems)
	case c.Versions < 1 || c.Versions > 1<<10:
		return fmt.Errorf("stm: %d versions per item: want 1 to 1024", c.Versions)
	case c.LogSize < 1 || c.LogSize > 1<<24:
		return fmt.Errorf("stm: log size %d: want 1 to %d", c.LogSize, 1<<24)
	case c.LogWrites < 1 || c.LogWrites > 1<<26:
		return fmt.Errorf("stm: log item pool %d: want 1 to %d", c.LogWrites, 1<<26)
	case c.Servers < 1 || c.Servers > MaxServers:
		return fmt.Errorf("stm: %d servers: want 1 to %d", c.Servers, MaxServers)
	}
	return nil
}

// forItems returns the configuration a store of n items uses: Servers
// lowered to the number of non-empty partitions (at most n).
func (c Config) forItems(n int) Config {
	if n >= 1 && c.Servers > 1 {
		c.Servers = (n + c.partSize(n) - 1) / c.partSize(n)
	}
	return c
}

// partSize returns the items per partition: ceil(n/servers).
func (c Config) partSize(n int) int { return (n + c.Servers - 1) / c.Servers }
