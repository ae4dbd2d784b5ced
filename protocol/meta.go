package protocol

import (
	"math"
	"strconv"

	"github.com/warpkv/warpkv/kv"
)

// Meta protocol limits and errors, as memcached 1.6.18.
const (
	metaMaxTokens      = 20 // MFLAG_MAX_OPT_LENGTH: tokens of a meta command, its terminator included
	metaMaxOpaque      = 32 // MFLAG_MAX_OPAQUE_LENGTH: the longest O token
	replyMetaFlagsLong = "CLIENT_ERROR options flags too long\r\n"
	replyMgFlagsLong   = "CLIENT_ERROR options flags are too long\r\n"
	replyBadFlag       = "CLIENT_ERROR invalid flag\r\n"
	replyBadOrDupFlag  = "CLIENT_ERROR invalid or duplicate flag\r\n"
	replyOpaqueLong    = "CLIENT_ERROR opaque token too long\r\n"
	replyMsBadMode     = "CLIENT_ERROR invalid mode for ms M token\r\n"
	replyMaBadMode     = "CLIENT_ERROR invalid mode for ma M token\r\n"
)

// metaFlags holds the parsed flags of a meta command (memcached's
// struct _meta_flags).
type metaFlags struct {
	noReply, value, keyBinary, noUpdate, setStale bool
	hasCAS, vivify, newTTL, recache               bool
	mode                                          byte
	exptime, autoviv, recacheAt                   int32 // T, N, R
	clientFlags                                   uint32
	cas, delta, initial                           uint64
}

// metaPreparse validates the flag tokens of a meta command and fills f, as
// memcached's _meta_flag_preparse; a b flag base64-decodes the key into the
// round's key memory. It returns the key and, on failure, the error
// memcached sends (mg and ms send it; md and ma answer "invalid or duplicate
// flag" instead).
func (c *conn) metaPreparse(key []byte, flags [][]byte, f *metaFlags) (k []byte, errText string, ok bool) {
	errText = replyBadFormat
	hasError := false
	var seen [127]bool
	for _, t := range flags {
		o := t[0]
		if o >= 127 || seen[o] {
			return key, "CLIENT_ERROR duplicate flag\r\n", false
		}
		seen[o] = true
		switch o {
		case 'b':
			dec, ok := c.decodeKey(key)
			if !ok {
				errText, hasError = "CLIENT_ERROR error decoding key\r\n", true
			}
			key, f.keyBinary = dec, true
		case 'N', 'T', 'R':
			v, ok := safeStrtol(t[1:])
			if !ok {
				errText, hasError = "CLIENT_ERROR bad token in command line format\r\n", true
				break
			}
			switch o {
			case 'N':
				f.vivify, f.autoviv = true, v
			case 'T':
				f.newTTL, f.exptime = true, v
			default:
				f.recache, f.recacheAt = true, v
			}
		case 'l', 'O', 'P', 'L', 'k', 's', 't', 'c', 'f', 'h':
		case 'v':
			f.value = true
		case 'u':
			f.noUpdate = true
		case 'q':
			f.noReply = true
		case 'F':
			v, ok := safeStrtoul(t[1:])
			if !ok {
				hasError = true
			}
			f.clientFlags = v
		case 'C':
			v, ok := safeStrtoull(t[1:])
			if !ok {
				errText, hasError = "CLIENT_ERROR bad token in command line format\r\n", true
				break
			}
			f.hasCAS, f.cas = true, v
		case 'M':
			if len(t) != 2 {
				errText, hasError = "CLIENT_ERROR incorrect length for M token\r\n", true
				break
			}
			f.mode = t[1]
		case 'J':
			v, ok := safeStrtoull(t[1:])
			if !ok {
				errText, hasError = "CLIENT_ERROR invalid numeric initial value\r\n", true
			}
			f.initial = v
		case 'D':
			v, ok := safeStrtoull(t[1:])
			if !ok {
				errText, hasError = "CLIENT_ERROR invalid numeric delta value\r\n", true
				break
			}
			f.delta = v
		case 'I':
			f.setStale = true
		default:
			return key, replyBadFlag, false
		}
	}
	return key, errText, !hasError
}

// flagIndex returns the position of the first flag token starting with c,
// or -1.
func flagIndex(flags [][]byte, c byte) int {
	for i, t := range flags {
		if t[0] == c {
			return i
		}
	}
	return -1
}

// longOpaque returns the position of the first O token over 32 bytes, or
// len(flags).
func longOpaque(flags [][]byte) int {
	for i, t := range flags {
		if t[0] == 'O' && len(t) > metaMaxOpaque {
			return i
		}
	}
	return len(flags)
}

// metaCommand dispatches a two-letter command starting with m.
func (c *conn) metaCommand(buf, line []byte, toks [][]byte, lineEnd int) (int, parseState) {
	switch toks[0][1] {
	case 'g':
		c.counts[cmdMetaGet]++
		c.metaGet(line, toks)
	case 's':
		c.counts[cmdMetaSet]++
		return c.metaSet(buf, line, toks, lineEnd)
	case 'd':
		c.counts[cmdMetaDelete]++
		c.metaDelete(line, toks)
	case 'a':
		c.counts[cmdMetaArith]++
		c.metaArith(line, toks)
	case 'n':
		c.counts[cmdMetaNoop]++
		c.static("MN\r\n")
	case 'e':
		c.counts[cmdMetaDebug]++
		c.metaDebug(toks)
	default:
		return c.textErr(lineEnd)
	}
	return lineEnd, psDone
}

// metaGet parses mg <key> <flags>*. N (vivify) runs an add of an empty
// item holding the win token before the get; R (recache) lets the get take
// the token of an item expiring before the given TTL.
func (c *conn) metaGet(line []byte, toks [][]byte) {
	if reply := metaTokensReply(toks, replyMgFlagsLong); reply != "" {
		c.static(reply)
		return
	}
	r := newRequest(rMetaGet)
	flags := toks[2:]
	key, errText, ok := c.metaPreparse(toks[1], flags, &r.meta)
	if !ok {
		c.static(errText)
		return
	}
	r.quiet, r.args = r.meta.noReply, line
	bad := longOpaque(flags)
	tPos := flagIndex(flags, 'T')
	touch := tPos >= 0 && tPos < bad
	if bad == len(flags) && touch {
		if t := flagIndex(flags, 't'); t >= 0 && t < tPos {
			// t before T reports the TTL before the touch.
			r.peek = c.addOp(kv.Op{Kind: kv.Get, Key: key, Peek: true})
		}
	}
	if r.meta.vivify && bad == len(flags) {
		// memcached creates an empty item with no flags whose token the
		// creator holds; the get below then finds it (or the item that
		// was there).
		r.viv = c.addOp(kv.Op{Kind: kv.Add, Key: key, Exptime: int64(r.meta.autoviv), Won: true})
	}
	op := kv.Op{Kind: kv.Get, Key: key, Touch: touch, Exptime: int64(r.meta.exptime), Peek: r.meta.noUpdate, Token: true}
	if r.meta.recache {
		op.Recache = kv.ExpiryAt(int64(r.meta.recacheAt), c.s.cache.Now())
		op.TouchFirst = touch && tPos < flagIndex(flags, 'R')
	}
	r.op = c.addOp(op)
	if bad < len(flags) {
		r.kind, r.text = rStatic, replyOpaqueLong
	}
	c.addReq(r)
}

// metaFlagTokens re-splits a meta command line into its flag tokens (after
// skip positional tokens).
func (c *conn) metaFlagTokens(line []byte, skip int) [][]byte {
	toks, _ := tokenize(line, c.toks)
	c.toks = toks
	if len(toks) < skip {
		return nil
	}
	return toks[skip:]
}

// metaKey writes " k<key>", base64-encoded with " b" after it for a binary
// key.
func (c *conn) metaKey(key []byte, binary bool) {
	c.out.str(" k")
	if binary {
		c.out.base64(key)
		c.out.str(" b")
		return
	}
	c.out.bytes(key)
}

// metaTTL writes a TTL token value: -1 for never, else seconds left.
func (c *conn) metaTTL(exptime, now int64) {
	c.out.int(kv.TTL(exptime, now))
}

// renderMetaGet writes VA/HD with the requested flags and the win/stale
// marks (W, X, Z), or EN.
func (c *conn) renderMetaGet(r *request, now int64) {
	op := &c.batch.Ops[r.op]
	res := &op.Result
	flags := c.metaFlagTokens(r.args, 2)
	created := r.viv >= 0 && c.result(r.viv).Status == kv.Stored
	if created && res.Status == kv.Miss {
		// Created already expired (N with a past time): memcached still
		// answers with the item it just made.
		add := c.result(r.viv)
		res = &kv.Result{Status: kv.Hit, CAS: add.CAS, Exptime: add.Exptime, LastAccess: now, Meta: kv.MetaWon}
	}
	switch res.Status {
	case kv.Hit:
	case kv.Miss:
		if r.quiet {
			return
		}
		c.out.str("EN")
		c.metaEcho(flags, op.Key, r.meta.keyBinary)
		c.out.str("\r\n")
		return
	default:
		c.out.str(c.failed(res) + "\r\n")
		return
	}
	if r.meta.value {
		c.out.str("VA ")
		c.out.uint(uint64(len(res.Value)))
	} else {
		c.out.str("HD")
	}
	exptime := res.Exptime
	switch {
	case r.peek >= 0:
		exptime = c.result(r.peek).Exptime
	case created:
		exptime = 0 // memcached sets a created item's TTL when it reaches N
	}
	won := res.Won
	for _, t := range flags {
		switch t[0] {
		case 'T':
			exptime = res.Exptime
		case 'N':
			if created {
				exptime, won = res.Exptime, true
			}
		case 's':
			c.out.str(" s")
			c.out.uint(uint64(len(res.Value)))
		case 't':
			c.out.str(" t")
			c.metaTTL(exptime, now)
		case 'c':
			c.out.str(" c")
			c.out.uint(res.CAS)
		case 'f':
			c.out.str(" f")
			c.out.uint(uint64(res.Flags))
		case 'l':
			c.out.str(" l")
			c.out.int(max(now-res.LastAccess, 0))
		case 'h':
			if res.Fetched {
				c.out.str(" h1")
			} else {
				c.out.str(" h0")
			}
		case 'O':
			c.out.byte1(' ')
			c.out.bytes(t)
		case 'k':
			c.metaKey(op.Key, res.Meta&kv.MetaKeyBinary != 0)
		}
	}
	// A created item's token is its creator's: memcached marks it after
	// the flags, so the creator sees W, not Z.
	if res.Meta&kv.MetaWon != 0 && !created {
		c.out.str(" Z")
	}
	if res.Meta&kv.MetaStale != 0 {
		c.out.str(" X")
	}
	if won {
		c.out.str(" W")
	}
	c.out.str("\r\n")
	if r.meta.value {
		c.out.value(res.Value)
		c.out.str("\r\n")
	}
}

// metaEcho writes the O and k flags, which every meta reply echoes.
func (c *conn) metaEcho(flags [][]byte, key []byte, binary bool) {
	for _, t := range flags {
		switch t[0] {
		case 'O':
			c.out.byte1(' ')
			c.out.bytes(t)
		case 'k':
			c.metaKey(key, binary)
		}
	}
}

// metaSet parses ms <key> <datalen> <flags>* and its data block. With C,
// the I (invalidate) flag stores a value whose CAS is older than the
// item's as a stale one; without C it is ignored, as in memcached.
func (c *conn) metaSet(buf, line []byte, toks [][]byte, lineEnd int) (int, parseState) {
	reply := metaTokensReply(toks, replyMetaFlagsLong)
	if reply == "" && len(toks) == 2 { // no data length
		reply = replyBadFormat
	}
	if reply != "" {
		c.static(reply)
		return lineEnd, psDone
	}
	vlen, ok := safeStrtol(toks[2])
	if !ok || vlen < 0 || vlen > math.MaxInt32-2 {
		c.static(replyBadFormat)
		return lineEnd, psDone
	}
	total := int(vlen) + 2
	refuse := func(text string) (int, parseState) {
		c.static(text)
		c.swallow = int64(total)
		return lineEnd, psDone
	}
	r := newRequest(rMetaSet)
	f := &r.meta
	flags := toks[3:]
	key, errText, ok := c.metaPreparse(toks[1], flags, f)
	if !ok {
		return refuse(errText)
	}
	hasError := longOpaque(flags) < len(flags)
	if hasError {
		errText = replyOpaqueLong
	}
	kind := kv.Set
	switch f.mode {
	case 0, 'S':
	case 'E':
		kind = kv.Add
	case 'A':
		kind = kv.Append
	case 'P':
		kind = kv.Prepend
	case 'R':
		kind = kv.Replace
	default:
		return refuse(replyMsBadMode)
	}
	if hasError {
		return refuse(errText)
	}
	// Unlike set, ms removes the old item in every mode.
	value, n, ps, ok := c.storeValue(buf, lineEnd, key, f.clientFlags, vlen, false, true)
	if !ok {
		return n, ps
	}
	op := kv.Op{Kind: kind, Key: key, Value: value, Flags: f.clientFlags, Exptime: int64(f.exptime), KeyBinary: f.keyBinary}
	switch kind {
	case kv.Set, kv.Replace:
		if f.hasCAS { // memcached turns set and replace with C into cas
			op.Kind, op.HasCAS, op.CompareCAS = kv.Set, true, f.cas
			op.Invalidate = f.setStale // I: an older CAS stores a stale value
		}
	case kv.Append, kv.Prepend:
		op.HasCAS, op.CompareCAS = f.hasCAS && f.cas != 0, f.cas // add ignores C
	}
	r.quiet, r.args = f.noReply, line
	r.op = c.addOp(op)
	c.addReq(r)
	c.reqBytes += len(value)
	return n, psDone
}

// renderMetaSet writes HD, NS, EX or NF with the O, k and c flags.
func (c *conn) renderMetaSet(r *request) {
	op := &c.batch.Ops[r.op]
	res := &op.Result
	if !c.metaCode(r, op, kv.Stored) {
		return
	}
	for _, t := range c.metaFlagTokens(r.args, 3) {
		switch t[0] {
		case 'O':
			c.out.byte1(' ')
			c.out.bytes(t)
		case 'k':
			c.metaKey(op.Key, r.meta.keyBinary)
		case 'c':
			c.out.str(" c")
			if res.Status == kv.Stored {
				c.out.uint(res.CAS)
			} else {
				c.out.byte1('0')
			}
		}
	}
	c.out.str("\r\n")
}

// metaCode writes the code of a meta store (success kv.Stored) or delete
// (success kv.Deleted): HD for success, nothing when r is quiet; EX; NF;
// for a store also NS (an append or prepend to a missing item, as in
// memcached) and the too-large and out-of-memory errors. Another status is
// written as its whole error line. It reports whether the reply's flags
// follow, that is whether a code was written.
func (c *conn) metaCode(r *request, op *kv.Op, success kv.Status) bool {
	res := &op.Result
	st, store := res.Status, success == kv.Stored
	if store && st == kv.NotFound && (op.Kind == kv.Append || op.Kind == kv.Prepend) {
		st = kv.NotStored
	}
	switch {
	case st == success:
		if r.quiet {
			return false
		}
		c.out.str("HD")
	case st == kv.Exists:
		c.out.str("EX")
	case st == kv.NotFound:
		c.out.str("NF")
	case store && st == kv.NotStored:
		c.out.str("NS")
	case store && st == kv.TooLarge:
		c.out.str(replyTooLarge)
		return false
	case store && st == kv.NoMemory:
		c.out.str(replyNoMemoryStore)
		return false
	default:
		c.out.str(c.failed(res) + "\r\n")
		return false
	}
	return true
}

// metaDelete parses md <key> <flags>*. With I the item is not removed but
// marked stale, under a new CAS and, with T, a new TTL.
func (c *conn) metaDelete(line []byte, toks [][]byte) {
	if reply := metaTokensReply(toks, replyMetaFlagsLong); reply != "" {
		c.static(reply)
		return
	}
	r := newRequest(rMetaDelete)
	flags := toks[2:]
	key, _, ok := c.metaPreparse(toks[1], flags, &r.meta)
	switch {
	case !ok:
		c.static(replyBadOrDupFlag)
		return
	case longOpaque(flags) < len(flags):
		c.static(replyOpaqueLong)
		return
	}
	r.quiet, r.args = r.meta.noReply, line
	r.op = c.addOp(kv.Op{Kind: kv.Delete, Key: key, HasCAS: r.meta.hasCAS, CompareCAS: r.meta.cas,
		Invalidate: r.meta.setStale, SetTTL: r.meta.newTTL, Exptime: int64(r.meta.exptime)})
	c.addReq(r)
}

// renderMetaDelete writes HD, NF or EX with the O and k flags.
func (c *conn) renderMetaDelete(r *request) {
	op := &c.batch.Ops[r.op]
	if !c.metaCode(r, op, kv.Deleted) {
		return
	}
	c.metaEcho(c.metaFlagTokens(r.args, 2), op.Key, r.meta.keyBinary)
	c.out.str("\r\n")
}

// metaArith parses ma <key> <flags>*.
func (c *conn) metaArith(line []byte, toks [][]byte) {
	if reply := metaTokensReply(toks, replyMetaFlagsLong); reply != "" {
		c.static(reply)
		return
	}
	r := newRequest(rMetaArith)
	f := &r.meta
	f.delta = 1
	flags := toks[2:]
	key, _, ok := c.metaPreparse(toks[1], flags, f)
	if !ok {
		c.static(replyBadOrDupFlag)
		return
	}
	kind := kv.Incr
	switch f.mode {
	case 0, 'I', '+':
	case 'D', '-':
		kind = kv.Decr
	default:
		c.static(replyMaBadMode)
		return
	}
	r.quiet, r.args = f.noReply, line
	hasTTL := flagIndex(flags, 't') >= 0
	if (hasTTL && (f.newTTL || f.vivify)) || (f.noReply && f.vivify) {
		// The reply depends on the item's state before the op.
		r.peek = c.addOp(kv.Op{Kind: kv.Get, Key: key, Peek: true})
	}
	op := kv.Op{Kind: kind, Key: key, Delta: f.delta, HasCAS: f.hasCAS && f.cas != 0, CompareCAS: f.cas,
		Vivify: f.vivify, Initial: f.initial, SetTTL: f.newTTL}
	switch {
	case f.newTTL:
		op.Exptime = int64(f.exptime)
	case f.vivify:
		op.Exptime = int64(f.autoviv)
	}
	r.op = c.addOp(op)
	if longOpaque(flags) < len(flags) {
		r.kind, r.text = rStatic, replyOpaqueLong // after the op ran, as in memcached
	}
	c.addReq(r)
}

// renderMetaArith writes HD or VA with the new value, or NF, EX or an error.
func (c *conn) renderMetaArith(r *request, now int64) {
	op := &c.batch.Ops[r.op]
	res := &op.Result
	flags := c.metaFlagTokens(r.args, 2)
	switch res.Status {
	case kv.Counted:
	case kv.NotFound:
		c.out.str("NF")
		c.metaEcho(flags, op.Key, r.meta.keyBinary)
		c.out.str("\r\n")
		return
	case kv.Exists:
		c.out.str("EX")
		c.metaEcho(flags, op.Key, r.meta.keyBinary)
		c.out.str("\r\n")
		return
	case kv.NonNumeric:
		c.out.str(replyNonNumeric)
		return
	case kv.NoMemory:
		c.out.str(replyNoMemory)
		return
	default:
		c.out.str(c.failed(res) + "\r\n")
		return
	}
	created := r.peek >= 0 && r.meta.vivify && c.result(r.peek).Status != kv.Hit
	if r.quiet && !created {
		return // memcached answers a vivifying ma even under q
	}
	var digits [20]byte
	num := strconv.AppendUint(digits[:0], res.Number, 10)
	if r.meta.value {
		c.out.str("VA ")
		c.out.uint(uint64(len(num)))
	} else {
		c.out.str("HD")
	}
	exptime := res.Exptime
	if r.peek >= 0 {
		exptime = c.result(r.peek).Exptime
		if created {
			exptime = 0
		}
	}
	for _, t := range flags {
		switch t[0] {
		case 'c':
			c.out.str(" c")
			c.out.uint(res.CAS)
		case 't':
			c.out.str(" t")
			c.metaTTL(exptime, now)
		case 'T':
			exptime = res.Exptime
		case 'N':
			if created {
				exptime = kv.ExpiryAt(int64(r.meta.autoviv), now)
			}
		case 'O':
			c.out.byte1(' ')
			c.out.bytes(t)
		case 'k':
			c.metaKey(op.Key, r.meta.keyBinary)
		}
	}
	c.out.str("\r\n")
	if r.meta.value {
		c.out.bytes(num)
		c.out.str("\r\n")
	}
}

// metaDebug parses me <key> [b].
func (c *conn) metaDebug(toks [][]byte) {
	ntok := len(toks) + 1
	if ntok < 3 || len(toks[1]) > kv.MaxKeyLen {
		c.static(replyBadFormat)
		return
	}
	r := newRequest(rMetaDebug)
	key := toks[1]
	if ntok >= 4 && len(toks[2]) == 1 && toks[2][0] == 'b' {
		dec, ok := c.decodeKey(key)
		if !ok {
			c.static(replyBadFormat)
			return
		}
		key, r.meta.keyBinary = dec, true
	}
	r.op = c.addOp(kv.Op{Kind: kv.Get, Key: key, Peek: true})
	c.addReq(r)
}

// renderMetaDebug writes the ME line of an item's metadata, or EN.
func (c *conn) renderMetaDebug(r *request, now int64) {
	op := &c.batch.Ops[r.op]
	res := &op.Result
	switch res.Status {
	case kv.Hit:
	case kv.Miss:
		c.out.str("EN\r\n")
		return
	default:
		c.out.str(c.failed(res) + "\r\n")
		return
	}
	c.out.str("ME ")
	if res.Meta&kv.MetaKeyBinary != 0 {
		c.out.base64(op.Key)
	} else {
		c.out.bytes(op.Key)
	}
	c.out.str(" exp=")
	if res.Exptime == 0 {
		c.out.str("-1")
	} else {
		c.out.int(now - res.Exptime)
	}
	c.out.str(" la=")
	c.out.int(max(now-res.LastAccess, 0))
	c.out.str(" cas=")
	c.out.uint(res.CAS)
	if res.Fetched {
		c.out.str(" fetch=yes")
	} else {
		c.out.str(" fetch=no")
	}
	total := itemTotal(len(op.Key), res.Flags, int64(len(res.Value)))
	cls := res.Class
	if cls == 0 {
		cls = slabClass(c.s.slabs, total)
	}
	c.out.str(" cls=")
	c.out.int(int64(cls))
	c.out.str(" size=")
	c.out.int(total)
	c.out.str("\r\n")
}

// metaTokensReply returns the error reply a meta command with tokens toks
// (the command name first) gets before its flags are parsed, as memcached
// checks them: no key is ERROR, a key over kv.MaxKeyLen is a bad format,
// more than metaMaxTokens tokens is tooMany (each command's own text); ""
// when the tokens pass.
func metaTokensReply(toks [][]byte, tooMany string) string {
	ntok := len(toks) + 1 // memcached counts the terminating token
	switch {
	case ntok < 3:
		return replyError
	case len(toks[1]) > kv.MaxKeyLen:
		return replyBadFormat
	case ntok > metaMaxTokens:
		return tooMany
	}
	return ""
}
