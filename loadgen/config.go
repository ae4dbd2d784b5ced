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
	// Conns is the number of connections (default 16), each with one
	// writer and one reader goroutine.
	Conns int
	// Pipeline is the most requests in flight per connection (default 16).
	Pipeline int
	// MultiGet is the number of keys per get request (default 1).
	MultiGet int
	// Workload is the load.
	Workload Workload
	// Duration of the measured run (default 10s) after Warmup (default
	// 1s), whose operations are not counted.
	Duration, Warmup time.Duration
	// Seed of the key and operation choices (default 1); connection i
	// uses Seed+i.
	Seed uint64
	// Protocol is Text (default) or Binary.
	Protocol Protocol
	// NoPreload skips the preload (flush_all, then a set of every key,
	// then a check of the hit ratio) that Run does first.
	NoPreload bool
	// Progress, when set, receives a line per phase.
	Progress io.Writer
}

// Defaults of the Config and Workload fields left zero.
const (
	DefaultConns    = 16
	DefaultPipeline = 16
	DefaultKeys     = 100000
	DefaultDuration = 10 * time.Second
	DefaultWarmup   = time.Second
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
	if c.Protocol != Text && c.Protocol != Binary {
		errs = append(errs, fmt.Sprintf("protocol %q (want text or binary)", c.Protocol))
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

// minKeySize is the shortest key that numbers n keys: "k" and the index
// in hex.
func minKeySize(n int) int {
	return 1 + max(1, (bits.Len64(uint64(max(n-1, 0)))+3)/4)
}
