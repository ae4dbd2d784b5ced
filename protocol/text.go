package protocol

import (
	"bytes"
	"math"

	"github.com/warpkv/warpkv/kv"
)

// Text protocol replies and errors, byte for byte as memcached 1.6 sends
// them.
const (
	replyError           = "ERROR\r\n"
	replyBadFormat       = "CLIENT_ERROR bad command line format\r\n"
	replyBadDataChunk    = "CLIENT_ERROR bad data chunk\r\n"
	replyBadExptime      = "CLIENT_ERROR invalid exptime argument\r\n"
	replyBadDelta        = "CLIENT_ERROR invalid numeric delta argument\r\n"
	replyNonNumeric      = "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
	replyTooLarge        = "SERVER_ERROR object too large for cache\r\n"
	replyNoMemoryStore   = "SERVER_ERROR out of memory storing object\r\n"
	replyNoMemory        = "SERVER_ERROR out of memory\r\n"
	replyDeleteUsage     = "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n"
	replyTooManyConns    = "ERROR Too many open connections\r\n"
	replyShutdownOff     = "ERROR: shutdown not enabled\r\n"
	replyStatsBad        = "CLIENT_ERROR bad command line\r\n"
	replyStatsDetail     = "CLIENT_ERROR usage: stats detail on|off|dump\r\n"
	replyIllegalSlab     = "CLIENT_ERROR Illegal slab id\r\n"
	maxVerbosity         = 2
	maxNumberOfSlabs     = 64 // MAX_NUMBER_OF_SLAB_CLASSES
	maxMultiGetLeadSpace = 100
)

// getCont is a get line whose keys span several rounds: the line stays in
// the read buffer and offsets are relative to its start.
type getCont struct {
	active  bool
	lineEnd int   // past the line's '\n'
	next    int   // start of the keys not yet fetched
	stop    int   // end of the keys to fetch: the line's end, or a too-long key
	bad     bool  // a key at stop is too long: the reply is CLIENT_ERROR
	touch   bool  // gat, gats
	withCAS bool  // gets, gats
	exptime int64 // gat, gats
}

// parseText parses one text or meta request at the front of buf and
// returns the bytes it consumed.
func (c *conn) parseText(buf []byte) (int, parseState) {
	if c.cont.active {
		return c.getChunk(buf)
	}
	nl := bytes.IndexByte(buf, '\n')
	if nl < 0 {
		return 0, c.noNewline(buf)
	}
	line := buf[:nl]
	if nl > 1 && line[nl-1] == '\r' {
		line = line[:nl-1]
	}
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line = line[:i] // memcached's C strings end at a NUL
	}
	return c.textCommand(buf, line, nl+1)
}

// noNewline decides what to do with a line whose newline has not come:
// wait, or close as memcached does once 2048 bytes came without one (only
// get and gets lines may be longer).
func (c *conn) noNewline(buf []byte) parseState {
	c.need = 0
	if len(buf) <= maxLineLen {
		return psMore
	}
	i := 0
	for i < len(buf) && buf[i] == ' ' {
		i++
	}
	if i > maxMultiGetLeadSpace || !(bytes.HasPrefix(buf[i:], []byte("get ")) || bytes.HasPrefix(buf[i:], []byte("gets "))) {
		return psClose
	}
	if len(buf) >= c.s.cfg.MaxGetLine {
		return psClose
	}
	return psMore
}

// A textVerb is a key command of the text protocol and the call that
// parses it: the get family (startGet, found by getVerb before the line is
// tokenized), the store family (textStore) or a key and a number
// (textKeyNumber).
type textVerb struct {
	form       uint8
	kind       kv.Kind
	id         cmd
	touch, cas bool // gets: gat/gats touch, gets/gats return the CAS
}

// textVerb forms.
const (
	verbGet = iota
	verbStore
	verbKeyNumber
)

// textVerbs are the key commands but the get family by name (memcached's
// process_command_ascii dispatches them by name in the same way); "cas"
// stores as a set with the CAS its line carries.
var textVerbs = map[string]textVerb{
	"set": {verbStore, kv.Set, cmdSet, false, false}, "add": {verbStore, kv.Add, cmdAdd, false, false},
	"replace": {verbStore, kv.Replace, cmdReplace, false, false}, "append": {verbStore, kv.Append, cmdAppend, false, false},
	"prepend": {verbStore, kv.Prepend, cmdPrepend, false, false}, "cas": {verbStore, kv.Set, cmdCAS, false, false},
	"incr": {verbKeyNumber, kv.Incr, cmdIncr, false, false}, "decr": {verbKeyNumber, kv.Decr, cmdDecr, false, false},
	"touch": {verbKeyNumber, kv.Touch, cmdTouch, false, false},
}

// getVerb returns the get-family verb named name, if it is one.
func getVerb(name []byte) (textVerb, bool) {
	switch string(name) {
	case "get", "bget":
		return textVerb{form: verbGet, id: cmdGet}, true
	case "gets":
		return textVerb{form: verbGet, id: cmdGets, cas: true}, true
	case "gat":
		return textVerb{form: verbGet, id: cmdGat, touch: true}, true
	case "gats":
		return textVerb{form: verbGet, id: cmdGats, touch: true, cas: true}, true
	}
	return textVerb{}, false
}

// textCommand dispatches a command line (without its line end) that ends
// at lineEnd in buf, as memcached's process_command_ascii.
func (c *conn) textCommand(buf, line []byte, lineEnd int) (int, parseState) {
	if name, after := nextToken(line); len(name) >= 3 && len(name) <= 4 {
		// The get family reads its keys from the line itself: no
		// tokenizing (memcached's token count only decides whether a key
		// follows the name).
		if v, ok := getVerb(name); ok {
			return c.startGet(buf, line, after, lineEnd, v.touch, v.cas, v.id)
		}
	}
	toks, _ := tokenize(line, c.toks) // the rest of a long line only matters to get
	c.toks = toks
	ntok := len(toks) + 1
	if ntok < 2 || len(toks[0]) < 2 {
		return c.textErr(lineEnd)
	}
	name := toks[0]
	if name[0] == 'm' && len(name) == 2 {
		return c.metaCommand(buf, line, toks, lineEnd)
	}
	if v, ok := textVerbs[string(name)]; ok {
		switch v.form {
		case verbStore:
			return c.textStore(buf, toks, ntok, lineEnd, v.kind, v.id)
		default:
			return c.textKeyNumber(toks, ntok, lineEnd, v.kind, v.id)
		}
	}
	switch string(name) {
	case "delete":
		return c.textDelete(toks, ntok, lineEnd)
	case "flush_all":
		return c.textFlush(toks, ntok, lineEnd)
	case "version":
		c.counts[cmdVersion]++
		c.static("VERSION " + c.s.cfg.Version + "\r\n")
	case "quit":
		c.counts[cmdQuit]++
		c.quit = true
	case "verbosity":
		return c.textVerbosity(toks, ntok, lineEnd)
	case "stats":
		c.counts[cmdStats]++
		return c.textStats(toks, ntok, lineEnd)
	case "shutdown":
		c.counts[cmdOther]++
		c.static(replyShutdownOff)
	case "slabs":
		return c.textSlabs(toks, ntok, lineEnd)
	case "cache_memlimit":
		return c.textMemlimit(toks, ntok, lineEnd)
	case "lru_crawler":
		return c.textLRUCrawler(toks, ntok, lineEnd)
	case "lru", "watch", "extstore":
		// LRU tuning, crawling and log watching have no counterpart.
		c.counts[cmdOther]++
		c.static(replyError)
	default:
		return c.textErr(lineEnd)
	}
	return lineEnd, psDone
}

// textErr answers ERROR (unknown command or wrong number of tokens).
func (c *conn) textErr(lineEnd int) (int, parseState) {
	c.counts[cmdError]++
	c.static(replyError)
	return lineEnd, psDone
}

// reply adds a fixed reply that noreply suppresses.
func (c *conn) reply(noreply bool, text string) {
	if noreply {
		text = ""
	}
	c.static(text)
}

// noreplyToken reports memcached's set_noreply_maybe: the last token is
// "noreply".
func noreplyToken(toks [][]byte) bool {
	return len(toks) > 0 && string(toks[len(toks)-1]) == "noreply"
}

// startGet parses get, gets, gat and gats: one Get op per key, fetched in
// chunks of at most a round's budget. One pass over the line adds the ops
// of the keys that fit in this round and checks every key's length (a too
// long key makes the whole reply an error, so it must be known before the
// first chunk is answered); getChunk adds the rest in later rounds. after
// is the line after the command's name; without a token there (memcached's
// token count under 3) the reply is ERROR.
func (c *conn) startGet(buf, line, after []byte, lineEnd int, touch, withCAS bool, id cmd) (int, parseState) {
	first, rest := nextToken(after)
	if len(first) == 0 {
		return c.textErr(lineEnd)
	}
	c.counts[id]++
	g := getCont{lineEnd: lineEnd, touch: touch, withCAS: withCAS}
	if touch {
		after = rest
		exp, ok := safeStrtol(first)
		if !ok {
			c.static(replyBadExptime)
			return lineEnd, psDone
		}
		g.exptime = int64(exp)
	}
	g.next = len(line) - len(after)
	g.stop = len(line)
	r := newRequest(rGet)
	r.withCAS = withCAS
	r.op = int32(len(c.batch.Ops))
	room := max(c.limit()-c.ops(), 1)
	for rest := after; ; {
		var key []byte
		key, rest = nextToken(rest)
		if len(key) == 0 {
			break
		}
		if len(key) > kv.MaxKeyLen {
			// memcached fetches the keys before it, then answers only the error.
			g.stop = len(line) - len(rest) - len(key)
			g.bad = true
			break
		}
		if room > 0 {
			c.addGet(key, touch, g.exptime)
			g.next = len(line) - len(rest)
			room--
		}
	}
	r.nops = int32(len(c.batch.Ops)) - r.op
	r.discard = g.bad
	return c.endChunk(r, &g, buf[g.next:g.stop])
}

// getChunk adds Get ops for the next keys of the get line in progress: all
// of them if the round has room, ending the line's reply, else as many as
// fit, leaving the rest for the next round.
func (c *conn) getChunk(buf []byte) (int, parseState) {
	g := &c.cont
	r := newRequest(rGet)
	r.withCAS, r.discard = g.withCAS, g.bad
	r.op = int32(len(c.batch.Ops))
	room := max(c.limit()-c.ops(), 1)
	keys := buf[g.next:g.stop]
	for room > 0 {
		key, rest := nextToken(keys)
		if len(key) == 0 {
			keys = rest
			break
		}
		c.addGet(key, g.touch, g.exptime)
		keys = rest
		room--
	}
	r.nops = int32(len(c.batch.Ops)) - r.op
	g.next = g.stop - len(keys)
	return c.endChunk(r, g, keys)
}

// endChunk queues the request of a get chunk whose line has keys left
// (only spaces when the chunk is the last): a last chunk ends the line and
// its reply, another leaves the line in progress (c.cont) for the next
// round.
func (c *conn) endChunk(r request, g *getCont, left []byte) (int, parseState) {
	if len(bytes.Trim(left, " ")) > 0 {
		c.addReq(r)
		g.active = true
		c.cont = *g
		return 0, psFull
	}
	r.final = true
	if g.bad {
		r.text = replyBadFormat
	}
	c.addReq(r)
	c.cont.active = false
	return g.lineEnd, psDone
}

// renderGet writes the VALUE lines of a get chunk's hits, and END (or the
// error) after the last chunk.
func (c *conn) renderGet(r *request) {
	if !r.discard {
		for i := r.op; i < r.op+r.nops; i++ {
			op := &c.batch.Ops[i]
			if op.Result.Status != kv.Hit {
				continue
			}
			res := &op.Result
			c.out.valueLine(op.Key, res.Flags, res.Value, res.CAS, r.withCAS)
		}
	}
	switch {
	case !r.final:
	case r.discard:
		c.out.str(r.text)
	default:
		c.out.str("END\r\n")
	}
}

// textStore parses set, add, replace, append, prepend and cas and their data
// block, as memcached's process_update_command.
func (c *conn) textStore(buf []byte, toks [][]byte, ntok, lineEnd int, kind kv.Kind, id cmd) (int, parseState) {
	isCAS := id == cmdCAS
	if (!isCAS && ntok != 6 && ntok != 7) || (isCAS && ntok != 7 && ntok != 8) {
		return c.textErr(lineEnd)
	}
	c.counts[id]++
	noreply := noreplyToken(toks)
	key := toks[1]
	if len(key) > kv.MaxKeyLen {
		c.reply(noreply, replyBadFormat)
		return lineEnd, psDone
	}
	flags, ok1 := safeStrtoul(toks[2])
	exptime, ok2 := safeStrtol(toks[3])
	vlen, ok3 := safeStrtol(toks[4])
	if !ok1 || !ok2 || !ok3 {
		c.reply(noreply, replyBadFormat)
		return lineEnd, psDone
	}
	var casID uint64
	if isCAS {
		var ok bool
		if casID, ok = safeStrtoull(toks[5]); !ok {
			c.reply(noreply, replyBadFormat)
			return lineEnd, psDone
		}
	}
	if vlen < 0 || vlen > math.MaxInt32-2 {
		c.reply(noreply, replyBadFormat)
		return lineEnd, psDone
	}
	// A refused set also removes the key's old item, as in memcached.
	value, n, ps, ok := c.storeValue(buf, lineEnd, key, flags, vlen, noreply, kind == kv.Set && !isCAS)
	if !ok {
		return n, ps
	}
	c.reqBytes += len(value)
	return c.queueText(rStore, noreply, kv.Op{Kind: kind, Key: key, Value: value, Flags: flags, Exptime: int64(exptime), HasCAS: isCAS, CompareCAS: casID}, n)
}

// queueText queues a text command's request of kind k for op, quiet under
// noreply, and returns the parse result of a line (data included) ending
// at end.
func (c *conn) queueText(k reqKind, noreply bool, op kv.Op, end int) (int, parseState) {
	r := newRequest(k)
	r.quiet = noreply
	r.op = c.addOp(op)
	c.addReq(r)
	return end, psDone
}

// textKeyNumber parses the commands of a key and a number,
// "<cmd> <key> <number> [noreply]": incr and decr (a 64-bit delta) and
// touch (an expiry). A wrong token count is ERROR, a key over
// kv.MaxKeyLen a bad format, a number memcached refuses the command's own
// error.
func (c *conn) textKeyNumber(toks [][]byte, ntok, lineEnd int, kind kv.Kind, id cmd) (int, parseState) {
	if ntok != 4 && ntok != 5 {
		return c.textErr(lineEnd)
	}
	c.counts[id]++
	noreply := noreplyToken(toks)
	if len(toks[1]) > kv.MaxKeyLen {
		c.reply(noreply, replyBadFormat)
		return lineEnd, psDone
	}
	op := kv.Op{Kind: kind, Key: toks[1]}
	rk, bad, ok := rArith, replyBadDelta, false
	if kind == kv.Touch {
		var exptime int32
		exptime, ok = safeStrtol(toks[2])
		rk, bad, op.Exptime = rTouch, replyBadExptime, int64(exptime)
	} else {
		op.Delta, ok = safeStrtoull(toks[2])
	}
	if !ok {
		c.reply(noreply, bad)
		return lineEnd, psDone
	}
	return c.queueText(rk, noreply, op, lineEnd)
}

// textDelete parses delete: "delete <key> [0] [noreply]".
func (c *conn) textDelete(toks [][]byte, ntok, lineEnd int) (int, parseState) {
	if ntok < 3 || ntok > 5 {
		return c.textErr(lineEnd)
	}
	c.counts[cmdDelete]++
	noreply := false
	if ntok > 3 {
		holdIsZero := string(toks[2]) == "0"
		noreply = noreplyToken(toks)
		valid := (ntok == 4 && (holdIsZero || noreply)) || (ntok == 5 && holdIsZero && noreply)
		if !valid {
			c.reply(noreply, replyDeleteUsage)
			return lineEnd, psDone
		}
	}
	if len(toks[1]) > kv.MaxKeyLen {
		c.reply(noreply, replyBadFormat)
		return lineEnd, psDone
	}
	return c.queueText(rDelete, noreply, kv.Op{Kind: kv.Delete, Key: toks[1]}, lineEnd)
}

// textFlush parses flush_all [delay] [noreply].
func (c *conn) textFlush(toks [][]byte, ntok, lineEnd int) (int, parseState) {
	if ntok < 2 || ntok > 4 {
		return c.textErr(lineEnd)
	}
	c.counts[cmdFlush]++
	noreply := noreplyToken(toks)
	var delay int32
	if (noreply && ntok != 3) || (!noreply && ntok != 2) {
		var ok bool
		if delay, ok = safeStrtol(toks[1]); !ok {
			c.reply(noreply, replyBadExptime)
			return lineEnd, psDone
		}
	}
	c.reply(noreply, "OK\r\n")
	c.reqs[len(c.reqs)-1].op = c.addOp(kv.Op{Kind: kv.Flush, Exptime: int64(delay)})
	return lineEnd, psDone
}

// textVerbosity parses verbosity: the level only shows in stats settings.
func (c *conn) textVerbosity(toks [][]byte, ntok, lineEnd int) (int, parseState) {
	if ntok != 3 && ntok != 4 {
		return c.textErr(lineEnd)
	}
	c.counts[cmdVerbosity]++
	noreply := noreplyToken(toks)
	level, ok := safeStrtoul(toks[1])
	if !ok {
		c.reply(noreply, replyBadFormat)
		return lineEnd, psDone
	}
	c.s.verbosity.Store(min(level, maxVerbosity))
	c.reply(noreply, "OK\r\n")
	return lineEnd, psDone
}

// textStats parses stats [group]; groups other than the fixed answers are
// rendered after the ops before them have run (the request ends the round).
func (c *conn) textStats(toks [][]byte, ntok, lineEnd int) (int, parseState) {
	if ntok == 2 {
		c.statsReq(rStats, nil)
		return lineEnd, psDone
	}
	switch sub := string(toks[1]); sub {
	case "reset":
		c.s.resetStats()
		c.static("RESET\r\n")
	case "detail":
		switch {
		case ntok < 4:
			c.static(replyStatsDetail)
		case string(toks[2]) == "on", string(toks[2]) == "off":
			c.static("OK\r\n")
		case string(toks[2]) == "dump":
			c.static("END\r\n")
		default:
			c.static(replyStatsDetail)
		}
	case "cachedump":
		if ntok < 5 {
			c.static(replyStatsBad)
			break
		}
		id, ok1 := safeStrtoul(toks[2])
		limit, ok2 := safeStrtoul(toks[3])
		switch {
		case !ok1 || !ok2:
			c.static(replyBadFormat)
		case id >= maxNumberOfSlabs:
			c.static(replyIllegalSlab)
		default:
			c.cacheDump(id, limit)
		}
	default:
		c.statsReq(rStats, toks[1])
	}
	return lineEnd, psDone
}

// statsReq adds a stats request for group and ends the round after it, so
// that it reports the effect of the requests before it.
func (c *conn) statsReq(kind reqKind, group []byte) *request {
	r := newRequest(kind)
	r.args = group
	c.barrier = true
	return c.addReq(r)
}

// textResultLines are the one-word replies of text stores, deletes, incr,
// decr and touch by status.
var textResultLines = [...]string{
	kv.Stored: "STORED\r\n", kv.NotStored: "NOT_STORED\r\n", kv.Exists: "EXISTS\r\n",
	kv.NotFound: "NOT_FOUND\r\n", kv.Deleted: "DELETED\r\n", kv.Touched: "TOUCHED\r\n",
	kv.NonNumeric: replyNonNumeric, kv.TooLarge: replyTooLarge,
}

// textResultLine returns the one-word reply of status, or "" when it has
// none.
func textResultLine(st kv.Status) string {
	if int(st) < len(textResultLines) {
		return textResultLines[st]
	}
	return ""
}

// renderTextResult writes the reply of a store, delete, incr/decr or touch.
func (c *conn) renderTextResult(r *request) {
	if r.quiet {
		return
	}
	res := c.result(r.op)
	if line := textResultLine(res.Status); line != "" {
		if res.Status == kv.NotFound && r.kind == rStore && c.batch.Ops[r.op].Kind >= kv.Append && c.batch.Ops[r.op].Kind <= kv.Prepend {
			line = "NOT_STORED\r\n" // memcached's append or prepend to a missing key
		}
		c.out.str(line)
		return
	}
	switch res.Status {
	case kv.Counted:
		c.out.uint(res.Number)
		c.out.str("\r\n")
	case kv.NoMemory:
		if r.kind == rArith {
			c.out.str(replyNoMemory)
			return
		}
		c.out.str(replyNoMemoryStore)
	default:
		c.out.str(c.failed(res) + "\r\n")
	}
}
