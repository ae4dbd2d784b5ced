package protocol

import (
	"strconv"
	"strings"

	"github.com/warpkv/warpkv/kv"
)

// memcached's memory administration commands (slabs reassign, slabs
// automove, cache_memlimit, stats cachedump), answered through the
// cache's kv.Admin; a cache without it answers ERROR, as memcached with
// the feature compiled out.

// Replies of the administration commands, as memcached 1.6.18.
const (
	replyOK               = "OK\r\n"
	replyReassignOff      = "CLIENT_ERROR slab reassignment disabled\r\n"
	replyMemlimitTooSmall = "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m\r\n"
	replyMemlimitBytes    = "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes\r\n"
	replyMemlimitFailed   = "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust\r\n"
	cacheDumpLimit        = 2 << 20 // memcached's largest cachedump reply
)

var reassignReplies = map[kv.ReassignResult]string{
	kv.ReassignOK:       replyOK,
	kv.ReassignRunning:  "BUSY currently processing reassign request\r\n",
	kv.ReassignBadClass: "BADCLASS invalid src or dst class id\r\n",
	kv.ReassignNoSpare:  "NOSPARE source class has no spare pages\r\n",
	kv.ReassignSame:     "SAME src and dst class are identical\r\n",
	kv.ReassignDisabled: replyReassignOff,
}

// textSlabs parses "slabs reassign <src> <dst>" and "slabs automove
// <0|1|2>" or "slabs automove ratio <r>", as memcached's
// process_slabs_command.
func (c *conn) textSlabs(toks [][]byte, ntok, lineEnd int) (int, parseState) {
	c.counts[cmdOther]++
	admin := c.s.admin
	switch {
	case admin == nil:
		c.static(replyError)
	case ntok == 5 && string(toks[1]) == "reassign":
		src, ok1 := safeStrtol(toks[2])
		dst, ok2 := safeStrtol(toks[3])
		if !ok1 || !ok2 {
			c.static(replyBadFormat)
			break
		}
		c.static(reassignReplies[admin.SlabsReassign(int(src), int(dst))])
	case ntok >= 4 && string(toks[1]) == "automove":
		noreply := noreplyToken(toks)
		if string(toks[2]) == "ratio" {
			r, err := strconv.ParseFloat(string(toks[min(3, len(toks)-1)]), 64)
			if ntok < 5 || err != nil {
				c.reply(noreply, replyError)
				break
			}
			if admin.SlabsAutomove(-1, r) != nil { // -1: keep the level
				c.reply(noreply, replyError)
				break
			}
			c.reply(noreply, replyOK)
			break
		}
		level, ok := safeStrtoul(toks[2])
		switch {
		case !ok:
			c.reply(noreply, replyBadFormat)
		case level > 2:
			c.reply(noreply, replyError)
		default:
			admin.SlabsAutomove(int(level), 0)
			c.reply(noreply, replyOK)
		}
	default:
		c.static(replyError)
	}
	return lineEnd, psDone
}

// textMemlimit parses "cache_memlimit <megabytes> [noreply]", as
// memcached's process_memlimit_command.
func (c *conn) textMemlimit(toks [][]byte, ntok, lineEnd int) (int, parseState) {
	if ntok != 3 && ntok != 4 {
		return c.textErr(lineEnd)
	}
	c.counts[cmdOther]++
	noreply := noreplyToken(toks)
	mb, ok := safeStrtoul(toks[1])
	switch {
	case c.s.admin == nil, !ok:
		c.reply(noreply, replyError)
	case mb < 8:
		c.reply(noreply, replyMemlimitTooSmall)
	case mb > 1000000000:
		c.reply(noreply, replyMemlimitBytes)
	case c.s.admin.SetMemoryLimit(int64(mb)<<20) != nil:
		c.reply(noreply, replyMemlimitFailed)
	default:
		c.reply(noreply, replyOK)
	}
	return lineEnd, psDone
}

// cacheDump adds a "stats cachedump <class> <limit>" request, rendered
// after the round's ops have run.
func (c *conn) cacheDump(class, limit uint32) {
	r := newRequest(rCacheDump)
	r.op, r.nops = int32(class), int32(min(limit, 1<<30))
	c.barrier = true
	c.addReq(r)
}

// renderCacheDump writes up to r.nops (0: all) "ITEM <key> [<bytes> b;
// <expiry> s]" lines of class r.op's live items, at most 2 MiB, then END,
// as memcached's item_cachedump (items with base64 keys are left out, the
// expiry is an absolute unix time, 0 for none).
func (c *conn) renderCacheDump(r *request) {
	limit, n, size := int(r.nops), 0, 0
	if admin := c.s.admin; admin != nil {
		var line []byte
		admin.Dump(int(r.op), func(it kv.DumpedItem) bool {
			if limit > 0 && n >= limit {
				return false
			}
			if it.Meta&kv.MetaKeyBinary != 0 {
				return true
			}
			line = append(line[:0], "ITEM "...)
			line = append(line, it.Key...)
			line = append(line, " ["...)
			line = strconv.AppendInt(line, int64(it.ValueLen), 10)
			line = append(line, " b; "...)
			line = strconv.AppendInt(line, max(it.Exptime, 0), 10)
			line = append(line, " s]\r\n"...)
			if size+len(line)+len("END\r\n") > cacheDumpLimit {
				return false
			}
			c.out.bytes(line)
			n++
			size += len(line)
			return true
		})
	}
	c.out.str("END\r\n")
}

// slabCounter is a per-class counter of "stats slabs".
type slabCounter uint8

const (
	scGetHits slabCounter = iota
	scCmdSet
	scDeleteHits
	scIncrHits
	scDecrHits
	scCasHits
	scCasBadval
	scTouchHits
	numSlabCounters
)

var slabCounterNames = [numSlabCounters]string{"get_hits", "cmd_set", "delete_hits", "incr_hits", "decr_hits", "cas_hits", "cas_badval", "touch_hits"}

// slabDelta is one per-class count of a round not yet added to the
// server's counters.
type slabDelta struct {
	class   uint8
	counter slabCounter
	n       uint32
}

// slabCounts collects a connection's per-class counts for a round; a round
// touches few classes, so a short list beats an array per connection.
type slabCounts struct{ deltas []slabDelta }

func (sc *slabCounts) add(class int, k slabCounter) {
	if class <= 0 || class >= maxNumberOfSlabs {
		return
	}
	for i := len(sc.deltas) - 1; i >= 0 && i >= len(sc.deltas)-4; i-- {
		if d := &sc.deltas[i]; int(d.class) == class && d.counter == k {
			d.n++
			return
		}
	}
	sc.deltas = append(sc.deltas, slabDelta{class: uint8(class), counter: k, n: 1})
}

// countResults adds the round's per-class counts (as memcached's
// slab_stats: hits by the class of the item found, cmd_set by the class of
// the item stored) and the stores the cache refused for size or memory.
func (c *conn) countResults() {
	admin := c.s.admin
	for i := c.opBase; i < c.opEnd; i++ {
		op := &c.batch.Ops[i]
		res := &op.Result
		switch op.Kind {
		case kv.Get:
			if res.Status == kv.Hit && !op.Peek {
				if op.Touch {
					c.slabs.add(res.Class, scTouchHits)
				} else {
					c.slabs.add(res.Class, scGetHits)
				}
			}
		case kv.Touch:
			if res.Status == kv.Touched {
				c.slabs.add(res.Class, scTouchHits)
			}
		case kv.Delete:
			if res.Status == kv.Deleted && !op.Invalidate {
				c.slabs.add(res.Class, scDeleteHits)
			}
		case kv.Incr, kv.Decr:
			if res.Status == kv.Counted {
				k := scIncrHits
				if op.Kind == kv.Decr {
					k = scDecrHits
				}
				c.slabs.add(res.Class, k)
			}
		case kv.Flush:
		default:
			if op.TooLarge {
				continue // refused by the protocol layer, counted then
			}
			switch res.Status {
			case kv.TooLarge:
				c.s.stats.storeTooLarge.Add(1)
				continue
			case kv.NoMemory:
				c.s.stats.storeNoMemory.Add(1)
				continue
			}
			if admin != nil {
				c.slabs.add(admin.SlabClass(len(op.Key), len(op.Value)), scCmdSet)
			}
			if op.HasCAS {
				switch res.Status {
				case kv.Stored:
					c.slabs.add(res.Class, scCasHits)
				case kv.Exists:
					c.slabs.add(res.Class, scCasBadval)
				}
			}
		}
	}
}

// flushSlabCounts adds the connection's per-class counts to the server's.
func (c *conn) flushSlabCounts() {
	for _, d := range c.slabs.deltas {
		c.hot.slabs[d.class][d.counter].Add(uint64(d.n))
	}
	c.slabs.deltas = c.slabs.deltas[:0]
}

// countRefused counts a store the protocol layer refused: too large, or no
// memory to receive its value.
func (c *conn) countRefused(tooLarge bool) {
	if tooLarge {
		c.s.stats.storeTooLarge.Add(1)
	} else {
		c.s.stats.storeNoMemory.Add(1)
	}
}

// withSlabCounters returns the cache's "stats slabs" lines with the
// per-class counters inserted after each class's lines, as memcached
// prints them.
func (s *Server) withSlabCounters(lines []kv.Stat) []kv.Stat {
	out := make([]kv.Stat, 0, len(lines)+8*len(lines)/7)
	cur := -1
	flush := func() {
		if cur <= 0 || cur >= maxNumberOfSlabs {
			return
		}
		p := strconv.Itoa(cur) + ":"
		for k := range numSlabCounters {
			out = append(out, kv.Stat{Name: p + slabCounterNames[k], Value: u64(s.sum(func(h *hotCounters) uint64 { return h.slabs[cur][k].Load() }))})
		}
	}
	for _, st := range lines {
		class := -1
		if i := strings.IndexByte(st.Name, ':'); i > 0 {
			if n, err := strconv.Atoi(st.Name[:i]); err == nil {
				class = n
			}
		}
		if class != cur {
			flush()
			cur = class
		}
		out = append(out, st)
	}
	flush()
	return out
}
