package loadgen

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"
	"time"
)

// Protocol is the wire protocol a load generator speaks.
type Protocol string

// Protocols.
const (
	// Text sends "get k1 ... kn" and "set".
	Text Protocol = "text"
	// Binary sends n-1 getkq and one getk per multi-get (Mega-KV's
	// requests) and set.
	Binary Protocol = "binary"
	// Meta sends "mg <key> v" for a single get, n "mg <key> v q" and an
	// "mn" for a multi-get, and "ms <key> <len>" for a set.
	Meta Protocol = "meta"
)

// Workload is what the load consists of.
type Workload struct {
	// Name labels the workload in tables, e.g. "a 95:5 zipf" (default:
	// built from the fields).
	Name string
	// GetRatio is the fraction of operations that are gets (a key of a
	// multi-get counts as one operation), e.g. 0.95 or 1.
	GetRatio float64
	// Zipf draws keys from a Zipfian distribution with theta 0.99 (YCSB's
	// default) instead of uniformly.
	Zipf bool
	// KeySize and ValueSize are the sizes in bytes of every key and value.
	KeySize, ValueSize int
	// Keys is the number of distinct keys (default 100000).
	Keys int
}

// PaperSizes are the key and value sizes of the Mega-KV paper's four
// workloads, by name: a 8/8, b 16/64, c 32/512, d 128/1024 bytes.
func PaperSizes() []struct {
	Name               string
	KeySize, ValueSize int
} {
	return []struct {
		Name               string
		KeySize, ValueSize int
	}{{"a", 8, 8}, {"b", 16, 64}, {"c", 32, 512}, {"d", 128, 1024}}
}

// String names the workload: its Name, else e.g. "8B/8B 95:5 uniform".
func (w Workload) String() string {
	if w.Name != "" {
		return w.Name
	}
	return fmt.Sprintf("%dB/%dB %s %s", w.KeySize, w.ValueSize, mixName(w.GetRatio), distName(w.Zipf))
}

func mixName(getRatio float64) string {
	g := int(getRatio*100 + 0.5)
	return fmt.Sprintf("%d:%d", g, 100-g)
}

func distName(zipf bool) string {
	if zipf {
		return "zipf"
	}
	return "uniform"
}

// Config configures a load run against one server.
type Config struct {
	// Addr is the server's host:port.
	Addr string
	// Conns is the number of connections (default 16).
	Conns int
	// Driver says what drives the connections: Loops (event loops, one
	// per GOMAXPROCS, each waiting in epoll_wait for many connections and
	// reading and writing each with one system call a round, as a
	// memcached server does; Linux only), Goroutines (a writer and a
	// reader goroutine per connection, on Go's network poller), or "" for
	// Loops where supported. Paced runs with more than one request in
	// flight per connection always use Goroutines (their pacers hand out
	// tokens).
	Driver Driver
	// Pipeline is the most requests in flight per connection (default 16).
	Pipeline int
	// MultiGet is the number of keys per get request (default 1).
	MultiGet int
	// Workload is the load.
	Workload Workload
	// Duration of the measured run (default 10s) after Warmup (default
	// 1s; negative: none), whose operations are not counted.
	Duration, Warmup time.Duration
	// Seed of the key and operation choices (default 1); connection i
	// uses Seed+i.
	Seed uint64
	// Protocol is Text (default), Binary or Meta.
	Protocol Protocol
	// Rate, when positive, paces the load at that many operations per
	// second over all connections (open loop: each connection sends on a
	// fixed schedule, and latency counts from a request's scheduled time,
	// so a server that falls behind is charged for the queue).
	Rate float64
	// RateFraction, when positive, follows each measurement with a second
	// one paced at that fraction of the throughput just measured (for
	// example 0.8: the latency at 80% of the peak), reported in
	// Result.Paced.
	RateFraction float64
	// ServerPID, when positive, is the process id of the server on this
	// machine: the CPU time it uses during the measured window is read
	// from /proc and reported (Result.ServerCPU).
	ServerPID int
	// ServerStats names a "stats" group whose numeric values are read
	// from the server before and after the measured window; Result's
	// ServerStats holds their differences ("-" means the general group).
	ServerStats string
	// NoPreload skips the preload (flush_all, then a set of every key,
	// then a check of the hit ratio) that Run does first.
	NoPreload bool
	// PreloadOnce makes Compare preload a target only for the first of
	// consecutive workloads with the same key count and key and value
	// sizes (sets write values of the same size, so the data stays
	// valid).
	PreloadOnce bool
	// Progress, when set, receives a line per phase.
	Progress io.Writer
}

// Driver is a way of driving a run's connections (Config.Driver).
type Driver string

// The drivers.
const (
	Loops      Driver = "loops"
	Goroutines Driver = "goroutines"
)

// useLoops reports whether a measurement of c runs on event loops: an
// unpaced one, or a paced one with one request in flight per connection
// (each connection on its own schedule, kept by its loop).
func (c *Config) useLoops() bool {
	return (c.Rate <= 0 || c.Pipeline == 1) && loopsSupported && c.Driver != Goroutines
}

// driverName names the driver useLoops chose, for progress lines.
func driverName(loops bool) Driver {
	if loops {
		return Loops
	}
	return Goroutines
}

// Defaults of the Config and Workload fields left zero.
const (
	DefaultConns    = 16
	DefaultPipeline = 16
	DefaultKeys     = 100000
	DefaultDuration = 10 * time.Second
	DefaultWarmup   = time.Second
	// MaxConns is the most connections a run opens.
	MaxConns = 10000
	// MaxPipeline is the most requests in flight per connection (each
	// connection holds two channels of this many entries).
	MaxPipeline = 1 << 16
)

// Check reports whether Run would accept c (zero fields take their
// defaults).
func (c Config) Check() error {
	_, err := c.withDefaults()
	return err
}

// withDefaults fills zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.Conns <= 0 {
		c.Conns = DefaultConns
	}
	if c.Pipeline <= 0 {
		c.Pipeline = DefaultPipeline
	}
	if c.MultiGet <= 0 {
		c.MultiGet = 1
	}
	if c.Duration <= 0 {
		c.Duration = DefaultDuration
	}
	if c.Warmup < 0 {
		c.Warmup = 0
	} else if c.Warmup == 0 {
		c.Warmup = DefaultWarmup
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Protocol == "" {
		c.Protocol = Text
	}
	if c.Workload.Keys <= 0 {
		c.Workload.Keys = DefaultKeys
	}
	w := c.Workload
	var errs []string
	if c.Addr == "" {
		errs = append(errs, "no address")
	}
	if c.Protocol != Text && c.Protocol != Binary && c.Protocol != Meta {
		errs = append(errs, fmt.Sprintf("protocol %q (want text, binary or meta)", c.Protocol))
	}
	switch {
	case c.Driver != "" && c.Driver != Loops && c.Driver != Goroutines:
		errs = append(errs, fmt.Sprintf("driver %q (want loops or goroutines)", c.Driver))
	case c.Driver == Loops && !loopsSupported:
		errs = append(errs, "driver loops: event loops need Linux (use goroutines)")
	}
	if c.Rate < 0 {
		errs = append(errs, fmt.Sprintf("rate %v (want 0 for as fast as possible, or ops/s)", c.Rate))
	}
	if c.RateFraction < 0 || c.RateFraction >= 1 {
		errs = append(errs, fmt.Sprintf("rate fraction %v (want 0 for none, or below 1)", c.RateFraction))
	}
	if c.Conns > MaxConns {
		errs = append(errs, fmt.Sprintf("%d connections (at most %d)", c.Conns, MaxConns))
	}
	if c.Pipeline > MaxPipeline {
		errs = append(errs, fmt.Sprintf("pipeline of %d requests (at most %d)", c.Pipeline, MaxPipeline))
	}
	if w.GetRatio < 0 || w.GetRatio > 1 {
		errs = append(errs, fmt.Sprintf("get ratio %v (want 0 to 1)", w.GetRatio))
	}
	if need := minKeySize(w.Keys); w.KeySize < need || w.KeySize > 250 {
		errs = append(errs, fmt.Sprintf("key size %d (want %d to 250 for %d keys)", w.KeySize, need, w.Keys))
	}
	if w.ValueSize < 0 || w.ValueSize > 1<<20-512 {
		errs = append(errs, fmt.Sprintf("value size %d (want 0 to 1 MiB - 512)", w.ValueSize))
	}
	if c.MultiGet*(w.KeySize+1) > 1<<20 {
		errs = append(errs, fmt.Sprintf("multi-get of %d keys of %d bytes is too long a line", c.MultiGet, w.KeySize))
	}
	if len(errs) > 0 {
		return c, errors.New("loadgen: config: " + strings.Join(errs, "; "))
	}
	return c, nil
}

// MaxKeys returns the most distinct keys of keySize bytes a workload can
// number ("k" and the index in hex: 16^(keySize-1), at most 1<<62).
func MaxKeys(keySize int) int {
	if keySize < 2 {
		return 0
	}
	return 1 << min(4*(keySize-1), 62)
}

// MaxMultiGet returns the most keys of keySize bytes one get request may
// name (its line stays within 1 MiB).
func MaxMultiGet(keySize int) int { return 1 << 20 / (keySize + 1) }

// minKeySize is the shortest key that numbers n keys: "k" and the index
// in hex.
func minKeySize(n int) int {
	return 1 + max(1, (bits.Len64(uint64(max(n-1, 0)))+3)/4)
}
