package protocol

import (
	"log/slog"
	"runtime"
	"time"

	"warpkv/kv"
)

// Defaults of the Config fields left zero.
const (
	DefaultMaxConns      = 1024            // memcached's -c
	DefaultVersion       = "1.6.18-warpkv" // memcached clients parse the x.y.z prefix
	DefaultMaxBatch      = 256             // ops (keys) and requests in one cache batch
	DefaultMaxBatchBytes = 1 << 20         // value bytes of store requests in one batch
	DefaultMaxGetLine    = 1 << 20         // longest get/gets line (multi-get)
)

// Config configures a Server. The zero value serves with memcached's
// defaults.
type Config struct {
	// ItemSizeMax is the item size limit (memcached's -I): an item whose
	// total size (key, value and memcached's per-item overhead of 60 to 64
	// bytes) exceeds it is refused with "object too large". Default
	// kv.DefaultItemSizeMax.
	ItemSizeMax int
	// MaxConns is the most connections served at once (-c). Past it a new
	// connection is sent "ERROR Too many open connections" and closed.
	// Default DefaultMaxConns.
	MaxConns int
	// Version is reported by version commands and stats. Default
	// DefaultVersion.
	Version string
	// Logger receives connection errors and recovered panics. Default
	// slog.Default().
	Logger *slog.Logger
	// Settings are extra lines for "stats settings" (the embedding server
	// adds maxbytes, tcpport, ...).
	Settings []kv.Stat
	// IdleTimeout closes a connection that sends nothing, or accepts none of
	// our replies, for this long. Zero means never (memcached's default).
	IdleTimeout time.Duration
	// MaxBatch bounds the ops (one per key of a multi-get) and requests put
	// into one cache batch; the rest of a pipeline waits for the next round,
	// so that one connection cannot hog the cache. Default DefaultMaxBatch.
	MaxBatch int
	// MaxBatchBytes ends a batch once the values of its store requests reach
	// it. Default DefaultMaxBatchBytes.
	MaxBatchBytes int
	// MaxGetLine is the longest get or gets line (a multi-get) a connection
	// may send; a longer one closes the connection. memcached has no such
	// limit. Other lines are limited to 2048 bytes as in memcached.
	// Default DefaultMaxGetLine.
	MaxGetLine int
	// Threads is reported as "threads" by stats. Default GOMAXPROCS.
	Threads int
	// Stages, when set, receives the time every connection spends in each
	// stage of its rounds (a profile; costs a clock read per stage).
	Stages StageClock
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.ItemSizeMax <= 0 {
		c.ItemSizeMax = kv.DefaultItemSizeMax
	}
	if c.MaxConns <= 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.Version == "" {
		c.Version = DefaultVersion
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
	}
	if c.MaxGetLine <= 0 {
		c.MaxGetLine = DefaultMaxGetLine
	}
	if c.Threads <= 0 {
		c.Threads = runtime.GOMAXPROCS(0)
	}
	return c
}
