package protocol

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/warpkv/warpkv/kv"
)

// serverStats are the server's counters, updated atomically.
type serverStats struct {
	currConns  atomic.Int64
	totalConns atomic.Uint64
	rejected   atomic.Uint64
	panics     atomic.Uint64
	// memcached 1.6.18 counts its listening sockets as connections:
	// listening are those open now, listenTotal those opened since start
	// or "stats reset", listenEver those ever opened; peakConns is the
	// most client connections open at once (its connection structures,
	// one per descriptor, are never freed).
	listening   atomic.Int64
	listenTotal atomic.Uint64
	listenEver  atomic.Int64
	peakConns   atomic.Int64
	// hot are the counters of the connections on goroutines (and of the
	// listener's refusals); each event loop has its own (loop.hot).
	hot hotCounters

	storeTooLarge  atomic.Uint64 // stores refused: over the item size limit
	storeNoMemory  atomic.Uint64 // stores refused: no memory (the cache's, or to receive the value)
	pendingRefused atomic.Uint64 // values refused because half-sent requests held MaxPendingBytes
}

// hotCounters are the counters that every request or round updates. Each
// event loop keeps its own set, written by the loop alone, and readers sum
// the sets (Server.sum): with one shared set, the loops' atomic adds to
// the same cache lines (the command and slab counters alone) took 2.6% of
// the CPU engine's time at 64 unpipelined connections on an H200 host's 8
// server cores (2026-11-28 CPU profile); the gain of per-loop sets is not
// measured yet.
type hotCounters struct {
	bytesRead, bytesWritten atomic.Uint64
	batches, ops            atomic.Uint64
	cmds                    [numCmds]atomic.Uint64
	slabs                   [maxNumberOfSlabs][numSlabCounters]atomic.Uint64
	_                       [64]byte // the next set's words start on another cache line
}

// sum returns f summed over the server's counter sets: the goroutine
// connections' and every event loop's. Cost: one call of f a set.
func (s *Server) sum(f func(h *hotCounters) uint64) uint64 {
	n := f(&s.stats.hot)
	if sets := s.hotSets.Load(); sets != nil {
		for _, h := range *sets {
			n += f(h)
		}
	}
	return n
}

// ConnStats is a snapshot of a Server's connection statistics.
type ConnStats struct {
	CurrConns  int64  // connections being served
	TotalConns uint64 // connections admitted since start
	// MemcachedCurrConns and MemcachedTotalConns are curr_connections and
	// total_connections as "stats" prints them: memcached 1.6.18 counts
	// its listening sockets as connections (curr_connections leaves one
	// of them out).
	MemcachedCurrConns  int64
	MemcachedTotalConns uint64
	RejectedConns       uint64 // connections refused at MaxConns
	BytesRead           uint64
	BytesWritten        uint64
	Batches             uint64 // cache batches run (one per pipeline round)
	BatchedOps          uint64 // ops in those batches
	Panics              uint64 // connections closed by a recovered panic
	// Commands counts requests by command name ("get", "set", "mg", ...;
	// binary requests count under their text equivalents, "noop", "other"
	// for refused admin commands, "error" for unknown or malformed ones).
	Commands map[string]uint64
}

// Stats returns a snapshot of the connection statistics. Cost: a few dozen
// atomic loads and a small map.
func (s *Server) Stats() ConnStats {
	st := ConnStats{
		CurrConns:     s.stats.currConns.Load(),
		TotalConns:    s.stats.totalConns.Load(),
		RejectedConns: s.stats.rejected.Load(),
		BytesRead:     s.sum(func(h *hotCounters) uint64 { return h.bytesRead.Load() }),
		BytesWritten:  s.sum(func(h *hotCounters) uint64 { return h.bytesWritten.Load() }),
		Batches:       s.sum(func(h *hotCounters) uint64 { return h.batches.Load() }),
		BatchedOps:    s.sum(func(h *hotCounters) uint64 { return h.ops.Load() }),
		Panics:        s.stats.panics.Load(),
		Commands:      make(map[string]uint64),
	}
	st.MemcachedCurrConns, st.MemcachedTotalConns = s.memcachedConns()
	for i := range numCmds {
		if n := s.sum(func(h *hotCounters) uint64 { return h.cmds[i].Load() }); n != 0 {
			st.Commands[cmdNames[i]] = n
		}
	}
	return st
}

// memcachedConns returns curr_connections and total_connections as
// memcached 1.6.18 counts them: its listening sockets are connections, and
// curr_connections leaves one of them out. Cost: four atomic loads.
func (s *Server) memcachedConns() (curr int64, total uint64) {
	curr = s.stats.currConns.Load()
	if n := s.stats.listening.Load(); n > 0 {
		curr += n - 1
	}
	return curr, s.stats.totalConns.Load() + s.stats.listenTotal.Load()
}

// resetStats clears the counters "stats reset" clears.
func (s *Server) resetStats() {
	s.stats.totalConns.Store(0)
	s.stats.listenTotal.Store(0)
	s.stats.rejected.Store(0)
}

// statList builds a stats group, the first line of a name winning.
type statList struct {
	stats []kv.Stat
	seen  map[string]bool
}

func (l *statList) add(name, value string) {
	if l.seen == nil {
		l.seen = make(map[string]bool)
	}
	if !l.seen[name] {
		l.seen[name] = true
		l.stats = append(l.stats, kv.Stat{Name: name, Value: value})
	}
}

func (l *statList) addAll(stats []kv.Stat) {
	for _, st := range stats {
		l.add(st.Name, st.Value)
	}
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

// statsGroup returns the lines of a stats group at clock now, false for a
// group neither warpkv nor the cache knows. Cost: the cache's Stats call
// plus a small list.
func (s *Server) statsGroup(group string, now int64) ([]kv.Stat, bool) {
	switch group {
	case "":
		return s.generalStats(now), true
	case "settings":
		return s.settingsStats(), true
	case "conns":
		return s.connStats(), true
	}
	if st, ok := s.cache.Stats(group); ok {
		if group == "slabs" {
			st = s.withSlabCounters(st)
		}
		return st, true
	}
	switch group {
	case "items", "slabs", "extstore":
		return nil, true
	case "sizes":
		return []kv.Stat{{Name: "sizes_status", Value: "disabled"}}, true
	}
	return nil, false
}

// generalStats merges the server's statistics with the cache's general
// group; the cache's command counts win over the protocol's.
func (s *Server) generalStats(now int64) []kv.Stat {
	cache, _ := s.cache.Stats("")
	has := make(map[string]bool, len(cache))
	for _, st := range cache {
		has[st.Name] = true
	}
	var l statList
	cnt := func(ids ...cmd) string {
		var n uint64
		for _, id := range ids {
			n += s.sum(func(h *hotCounters) uint64 { return h.cmds[id].Load() })
		}
		return u64(n)
	}
	l.add("pid", strconv.Itoa(os.Getpid()))
	l.add("uptime", strconv.FormatInt(int64(time.Since(s.start)/time.Second), 10))
	l.add("time", strconv.FormatInt(now, 10))
	l.add("version", s.cfg.Version)
	l.addAll(s.cfg.Stats)
	l.add("pointer_size", "64")
	user, sys := rusage()
	l.add("rusage_user", user)
	l.add("rusage_system", sys)
	l.add("max_connections", strconv.Itoa(s.cfg.MaxConns))
	curr, total := s.memcachedConns()
	l.add("curr_connections", strconv.FormatInt(curr, 10))
	l.add("total_connections", u64(total))
	l.add("rejected_connections", u64(s.stats.rejected.Load()))
	l.add("connection_structures", strconv.FormatInt(s.stats.listenEver.Load()+s.stats.peakConns.Load(), 10))
	for _, st := range []kv.Stat{
		{Name: "cmd_get", Value: cnt(cmdGet, cmdGets, cmdGat, cmdGats)},
		{Name: "cmd_set", Value: cnt(cmdSet, cmdAdd, cmdReplace, cmdAppend, cmdPrepend, cmdCAS, cmdMetaSet)},
		{Name: "cmd_flush", Value: cnt(cmdFlush)},
		{Name: "cmd_touch", Value: cnt(cmdTouch, cmdGat, cmdGats)},
		{Name: "cmd_meta", Value: cnt(cmdMetaGet, cmdMetaSet, cmdMetaDelete, cmdMetaArith, cmdMetaNoop, cmdMetaDebug)},
	} {
		if !has[st.Name] {
			l.add(st.Name, st.Value)
		}
	}
	l.add("store_too_large", u64(s.stats.storeTooLarge.Load()))
	l.add("store_no_memory", u64(s.stats.storeNoMemory.Load()))
	l.add("bytes_read", u64(s.sum(func(h *hotCounters) uint64 { return h.bytesRead.Load() })))
	l.add("bytes_written", u64(s.sum(func(h *hotCounters) uint64 { return h.bytesWritten.Load() })))
	l.add("accepting_conns", map[bool]string{true: "0", false: "1"}[s.closing.Load()])
	l.add("threads", strconv.Itoa(s.cfg.Threads))
	l.add("batches", u64(s.sum(func(h *hotCounters) uint64 { return h.batches.Load() })))
	l.add("batched_ops", u64(s.sum(func(h *hotCounters) uint64 { return h.ops.Load() })))
	l.add("pending_request_bytes", strconv.FormatInt(s.pending.Load(), 10))
	l.add("pending_request_refused", u64(s.stats.pendingRefused.Load()))
	l.addAll(cache)
	return l.stats
}

// settingsStats lists Config.Settings, the protocol's settings and the
// cache's.
func (s *Server) settingsStats() []kv.Stat {
	var l statList
	l.addAll(s.cfg.Settings)
	l.add("maxconns", strconv.Itoa(s.cfg.MaxConns))
	l.add("verbosity", strconv.FormatUint(uint64(s.verbosity.Load()), 10))
	l.add("cas_enabled", "yes")
	l.add("binding_protocol", "auto-negotiate")
	l.add("item_size_max", strconv.Itoa(s.cfg.ItemSizeMax))
	l.add("idle_timeout", strconv.FormatInt(int64(s.cfg.IdleTimeout/time.Second), 10))
	l.add("num_threads", strconv.Itoa(s.cfg.Threads))
	l.add("max_batch", strconv.Itoa(s.cfg.MaxBatch))
	if cache, ok := s.cache.Stats("settings"); ok {
		l.addAll(cache)
	}
	return l.stats
}

// renderTextStats writes a text stats reply: STAT lines and END, or ERROR
// for an unknown group.
func (c *conn) renderTextStats(r *request, now int64) {
	stats, ok := c.s.statsGroup(string(r.args), now)
	if !ok {
		c.out.str(replyError)
		return
	}
	for _, st := range stats {
		c.out.str("STAT ")
		c.out.str(st.Name)
		c.out.byte1(' ')
		c.out.str(st.Value)
		c.out.str("\r\n")
	}
	c.out.str("END\r\n")
}

// renderBinaryStats writes a binary stat reply: one response per statistic
// and an empty one to end, or "Not found" for an unknown group.
func (c *conn) renderBinaryStats(r *request, now int64) {
	group := string(r.args)
	var stats []kv.Stat
	switch {
	case group == "":
		stats = c.s.generalStats(now)
	case strings.HasPrefix(group, "reset"):
		c.s.resetStats()
	case strings.HasPrefix(group, "settings"):
		stats = c.s.settingsStats()
	case strings.HasPrefix(group, "detail"):
		switch sub := group[len("detail"):]; {
		case strings.HasPrefix(sub, " dump"), strings.HasPrefix(sub, " on"), strings.HasPrefix(sub, " off"):
		default:
			c.binError(r, stKeyENOENT)
			return
		}
	default:
		var ok bool
		if stats, ok = c.s.statsGroup(group, now); !ok || group == "conns" {
			c.binError(r, stKeyENOENT)
			return
		}
	}
	for _, st := range stats {
		c.binResponse(r, stOK, 0, len(st.Name), len(st.Name)+len(st.Value), 0)
		c.out.str(st.Name)
		c.out.str(st.Value)
	}
	c.binResponse(r, stOK, 0, 0, 0, 0)
}

// rusage returns the process's user and system CPU time in memcached's
// "seconds.microseconds" form. Cost: one getrusage system call.
func rusage() (user, sys string) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return "0.000000", "0.000000"
	}
	tv := func(t syscall.Timeval) string { return fmt.Sprintf("%d.%06d", t.Sec, t.Usec) }
	return tv(ru.Utime), tv(ru.Stime)
}
