package difftest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"
)

// EnvSeed, when set, is the seed Run uses instead of Config.Seed, to replay
// a logged run.
const EnvSeed = "WARPKV_DIFF_SEED"

// Protocols is a set of memcached wire protocols.
type Protocols uint8

// The protocols Run can speak. Text and Meta share a connection.
const (
	Text Protocols = 1 << iota
	Meta
	Binary
	AllProtocols = Text | Meta | Binary
)

// String lists the protocols, e.g. "text+binary".
func (p Protocols) String() string {
	var s []string
	for _, x := range []struct {
		p    Protocols
		name string
	}{{Text, "text"}, {Meta, "meta"}, {Binary, "binary"}} {
		if p&x.p != 0 {
			s = append(s, x.name)
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, "+")
}

// Config sets what Run sends. The zero value is a reasonable default.
type Config struct {
	// Seed of the random command sequences; 0 picks one at random. $WARPKV_DIFF_SEED
	// overrides it. Run logs the seed it used.
	Seed uint64
	// Sequences is the number of sequences (default 100). Each starts from
	// an empty cache (flush_all) on fresh connections.
	Sequences int
	// OpsPerSequence is the number of steps in a sequence (default 40). A
	// step is one request, or a few pipelined in one write.
	OpsPerSequence int
	// Protocols to speak (default AllProtocols). Text steps end with the
	// meta no-op "mn", so every server must understand it.
	Protocols Protocols
	// Keys is the number of ordinary keys in the pool the steps draw from
	// (default 8); a small pool makes operations collide. A 250-byte key
	// and keys with control characters or a space (binary and base64 meta
	// only) are added.
	Keys int
	// NoLarge leaves out values from 4 KiB to 600 KiB and values just over
	// the 1 MiB item size limit.
	NoLarge bool
	// NoBadInput leaves out malformed requests.
	NoBadInput bool
	// MaxDiffs is the number of differences reported before Run stops
	// (default 1). After each difference it goes on with the next sequence
	// (which starts with a flush), reporting each kind of difference once:
	// the command and the first letters of the first words that differ.
	MaxDiffs int
	// Timeout bounds each step's reply (default 5s).
	Timeout time.Duration
}

// withDefaults fills zero fields and resolves the seed.
func (c Config) withDefaults() (Config, error) {
	if s := os.Getenv(EnvSeed); s != "" {
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return c, fmt.Errorf("difftest: $%s=%q: %w", EnvSeed, s, err)
		}
		c.Seed = v
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()>>1 | 1
	}
	if c.Sequences <= 0 {
		c.Sequences = 100
	}
	if c.OpsPerSequence <= 0 {
		c.OpsPerSequence = 40
	}
	if c.Protocols&AllProtocols == 0 {
		c.Protocols = AllProtocols
	}
	if c.Keys <= 0 {
		c.Keys = 8
	}
	if c.MaxDiffs <= 0 {
		c.MaxDiffs = 1
	}
	if c.Timeout <= 0 {
		c.Timeout = 5 * time.Second
	}
	return c, nil
}
