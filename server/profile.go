package server

import (
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/kv"
	"github.com/warpkv/warpkv/protocol"
)

// A profile counts where the time of requests goes, stage by stage, when
// Options.Profile is set: the protocol's stages (read, parse, the cache
// call, render, write; protocol.StageClock), the engine's stages inside the
// cache call, and the schedulers' index calls. Stage times are wall-clock
// sums over all goroutines; divided by the operations they served they say
// how many microseconds of a request each stage takes (waits included:
// "read" includes waiting for the client, "search_wait" waiting for the
// batch). "stats profile" lists them.

// profStage is a profiled stage.
type profStage uint8

// Engine and scheduler stages, after the protocol's.
const (
	stHash        = profStage(protocol.NumStages) + iota // hash keys, read the pending table (gets)
	stSearchWait                                         // post a search and wait for its batch (gets)
	stItems                                              // acquire items, compare keys, copy values (gets)
	stWriteLookup                                        // find the present items of read-modify-writes (current)
	stWriteApply                                         // apply, allocate, fill, link, pending entry, queue (writes)
	stIndexSearch                                        // scheduler: search batch calls
	stIndexUpdate                                        // scheduler: update rounds
	stComplete                                           // scheduler: completing applied updates
	numProfStages
)

var profNames = [numProfStages]string{"read", "parse", "cache", "render", "write",
	"hash", "search_wait", "items", "write_lookup", "write_apply", "index_search", "index_update", "complete"}

// profStripes spreads the counters over cache lines so that concurrent
// goroutines rarely add to the same one.
const profStripes = 16

type profStripe struct {
	ns, n [numProfStages]atomic.Int64
	ops   atomic.Int64
	_     [64]byte
}

// profile is the engine's stage counters.
type profile struct {
	s [profStripes]profStripe
}

// add charges d to stage st (n: its count).
func (p *profile) add(st profStage, d time.Duration) {
	if p == nil {
		return
	}
	s := &p.s[rand.Uint32()%profStripes]
	s.ns[st].Add(int64(d))
	s.n[st].Add(1)
}

// AddStage records a protocol stage (protocol.StageClock).
func (p *profile) AddStage(st protocol.Stage, d time.Duration, ops int) {
	s := &p.s[rand.Uint32()%profStripes]
	s.ns[st].Add(int64(d))
	s.n[st].Add(1)
	if ops > 0 {
		s.ops.Add(int64(ops))
	}
}

// lap charges the time since *t to st and moves *t to now; a no-op
// without a profile.
func (p *profile) lap(st profStage, t *time.Time) {
	if p == nil {
		return
	}
	now := time.Now()
	p.add(st, now.Sub(*t))
	*t = now
}

// start returns the time to lap from, or the zero time without a profile.
func (p *profile) start() time.Time {
	if p == nil {
		return time.Time{}
	}
	return time.Now()
}

// stats lists the counters: ops (cache ops served), and per stage
// <stage>_ns and <stage>_count.
func (p *profile) stats() []kv.Stat {
	if p == nil {
		return nil
	}
	var ns, n [numProfStages]int64
	var ops int64
	for i := range p.s {
		s := &p.s[i]
		for st := range numProfStages {
			ns[st] += s.ns[st].Load()
			n[st] += s.n[st].Load()
		}
		ops += s.ops.Load()
	}
	out := []kv.Stat{{Name: "ops", Value: strconv.FormatInt(ops, 10)}}
	for st := range numProfStages {
		out = append(out,
			kv.Stat{Name: profNames[st] + "_ns", Value: strconv.FormatInt(ns[st], 10)},
			kv.Stat{Name: profNames[st] + "_count", Value: strconv.FormatInt(n[st], 10)})
	}
	return out
}

// ProfileStages returns the names of the stages "stats profile" reports, in
// order: the protocol's, the engine's and the schedulers'.
func ProfileStages() []string { return profNames[:] }
