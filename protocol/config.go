package protocol

import (
	"log/slog"
	"runtime"
	"time"

	"github.com/warpkv/warpkv/kv"
)

// Config.LoopIO values.
const (
	LoopIOEpoll     = "epoll"
	LoopIOUring     = "uring"
	LoopIOUringPoll = "uringpoll"
)

// Defaults of the Config fields left zero.
const (
	DefaultMaxConns      = 1024     // memcached's -c
	DefaultVersion       = "1.6.18" // the memcached release whose protocol warpkv speaks; clients parse x.y.z
	DefaultMaxBatch      = 256      // ops (keys) and requests in one cache batch
	DefaultMaxBatchBytes = 1 << 20  // value bytes of store requests in one batch
	DefaultMaxGetLine    = 1 << 20  // longest get/gets line (multi-get)
	DefaultShutdownGrace = 100 * time.Millisecond
	// minPendingBytes is the least MaxPendingBytes: room for the largest
	// item besides the request lines.
	minPendingBytes = 64 << 10
)

// PendingBudget is a second bound on the bytes connections hold for
// requests not yet complete (Config.PendingBudget). Its methods are called
// concurrently by every connection.
type PendingBudget interface {
	// Reserve takes n bytes, or reports false, taking nothing.
	Reserve(n int64) bool
	// Release returns n bytes taken by Reserve.
	Release(n int64)
}

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
	// Version is the memcached version answered to version commands and
	// reported as "version" by stats. memcached clients parse it as
	// major.minor.patch (libmemcached refuses a server whose version it
	// cannot parse), so it must be that and nothing else. Default
	// DefaultVersion.
	Version string
	// Stats are extra lines for the general stats group (the embedding
	// server adds warpkv_version, ...).
	Stats []kv.Stat
	// Logger receives connection errors and recovered panics. Default
	// slog.Default().
	Logger *slog.Logger
	// Settings are extra lines for "stats settings" (the embedding server
	// adds maxbytes, tcpport, ...).
	Settings []kv.Stat
	// IdleTimeout closes a TCP connection waiting for a command once its
	// last command is this old, as memcached's idle_timeout (never in the
	// middle of a value, while replies are being sent, nor on a unix
	// socket). Zero means never (memcached's default).
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
	// MaxPendingBytes bounds the memory all connections together may hold
	// for requests not yet complete: the growth of read buffers beyond
	// their first 16 KiB to receive a large value or a long multi-get line.
	// A value that would exceed it is refused as one memcached has no
	// memory for ("SERVER_ERROR out of memory storing object", the data
	// discarded as it arrives; a set also removes the key's old item), so
	// clients that send half a value and stop cannot grow the server past
	// it. Default (and least) the larger of ItemSizeMax and MaxGetLine, plus
	// 64 KiB: one request of any size can always be received.
	//
	// warpkv serve sets it to the item memory limit (-m) and counts the
	// bytes inside that limit through PendingBudget, as memcached, which
	// receives a value into the item it allocated for it: half-sent values
	// take memory from the stored items, not from past the limit, so a
	// large value is refused only when half-sent values hold nearly all of
	// -m (see server.heldValues).
	MaxPendingBytes int64
	// PendingBudget, when set, must also grant every reservation counted
	// in MaxPendingBytes, and gets back the same bytes when they are
	// released (a buffer shrinks, a connection closes). A refusal is
	// answered as one past MaxPendingBytes. nil: MaxPendingBytes alone.
	PendingBudget PendingBudget
	// MaxReplyBytes is the budget of replies the server holds for clients
	// that do not read them. A connection whose replies are not all sent is
	// not read until they are (backpressure on that connection only; the
	// others of its event loop are served meanwhile), so each such client
	// holds at most one round of replies; while the replies held by all of
	// them exceed this budget, every connection's round is limited to one
	// op, so each further client that stops reading adds at most one value
	// (Config.ItemSizeMax) and its reply line. The memory is returned to
	// the operating system when they have been sent or their connections
	// closed. Default DefaultMaxReplyBytes.
	MaxReplyBytes int64
	// Loops is the number of event loops that serve the connections
	// accepted by Serve (where the platform has epoll: Linux), each owning
	// many connections and running one cache batch per round for all of
	// them. Zero means Threads; a negative value serves every connection
	// on its own goroutine instead (as ServeConn always does).
	Loops int
	// RoundConns bounds the connections of an event loop's round that run
	// as one cache batch: a round of more runs as groups of RoundConns,
	// each read, run and written before the next is read, so that a
	// connection's reply does not wait for the reads and requests of all
	// the others of its round. Zero means one group for the whole round
	// (the largest batches: what a GPU index wants). One is memcached's
	// order: read, run and answer each connection in turn.
	RoundConns int
	// BlockingWait makes an idle event loop block its thread in
	// epoll_wait, as memcached's threads do, instead of parking its
	// goroutine in the Go runtime's poller. Blocking costs one system call
	// per wait and the kernel wakes that thread alone; parking costs two
	// non-blocking epoll_waits, the runtime's own poll and a goroutine
	// wake-up, but leaves the thread's processor to other goroutines at
	// once (a thread blocked in a system call keeps it until the runtime's
	// monitor takes it back, 20 µs or more), which matters when a loop's
	// batch waits for another goroutine, as a batching GPU scheduler.
	BlockingWait bool
	// SpinWait, if positive, makes an event loop poll its connections
	// without waiting (a non-blocking epoll_wait, then a yield of its
	// processor to runnable goroutines) for up to SpinWait after its last
	// round before it blocks or parks. A loop under steady load then
	// rarely sleeps, so the clients' writes find its thread running and
	// the kernel does not have to wake it (a wake-up is a cross-CPU
	// interrupt, dear on virtual machines). Cost: an idle loop burns its
	// core for SpinWait after each round.
	SpinWait time.Duration
	// LoopIO is how the event loops make their system calls. LoopIOEpoll
	// (the default; "" means it) waits in epoll_wait and reads and writes
	// each connection with its own read(2) and writev(2). LoopIOUring
	// waits with epoll in the same way (BlockingWait and SpinWait apply)
	// and submits a group's reads, and then its replies, as one batch of
	// io_uring requests each, one io_uring_enter per batch, completed
	// inside that call: the ring holds no request between calls.
	// LoopIOUringPoll also waits on the ring (a multishot poll request per
	// connection; its loops lock their goroutines to their threads, block
	// in io_uring_enter, and BlockingWait and SpinWait do not apply).
	// Both need Linux 6.1 or later; where io_uring is not available the
	// loops log it and use epoll.
	LoopIO string
	// ShutdownGrace is how long Shutdown lets connections write the
	// replies of the batch they are running; a client that does not read
	// them is dropped then. Default DefaultShutdownGrace.
	ShutdownGrace time.Duration
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
	c.MaxPendingBytes = max(c.MaxPendingBytes, int64(max(c.ItemSizeMax, c.MaxGetLine))+minPendingBytes)
	if c.MaxReplyBytes <= 0 {
		c.MaxReplyBytes = DefaultMaxReplyBytes
	}
	if c.Loops == 0 {
		c.Loops = c.Threads
	}
	if c.ShutdownGrace <= 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	return c
}
