package protocol

import (
	"encoding/binary"

	"github.com/warpkv/warpkv/kv"
)

// Binary protocol constants (memcached's protocol_binary.h).
const (
	binReqMagic = 0x80
	binResMagic = 0x81
	binHdrLen   = 24

	opGet      = 0x00
	opSet      = 0x01
	opAdd      = 0x02
	opReplace  = 0x03
	opDelete   = 0x04
	opIncr     = 0x05
	opDecr     = 0x06
	opQuit     = 0x07
	opFlush    = 0x08
	opGetQ     = 0x09
	opNoop     = 0x0a
	opVersion  = 0x0b
	opGetK     = 0x0c
	opGetKQ    = 0x0d
	opAppend   = 0x0e
	opPrepend  = 0x0f
	opStat     = 0x10
	opSetQ     = 0x11
	opAddQ     = 0x12
	opReplaceQ = 0x13
	opDeleteQ  = 0x14
	opIncrQ    = 0x15
	opDecrQ    = 0x16
	opQuitQ    = 0x17
	opFlushQ   = 0x18
	opAppendQ  = 0x19
	opPrependQ = 0x1a
	opVerbose  = 0x1b
	opTouch    = 0x1c
	opGat      = 0x1d
	opGatQ     = 0x1e
	opSASLList = 0x20
	opSASLAuth = 0x21
	opSASLStep = 0x22
	opGatK     = 0x23
	opGatKQ    = 0x24

	stOK          = 0x00
	stKeyENOENT   = 0x01
	stKeyEEXISTS  = 0x02
	stE2BIG       = 0x03
	stEINVAL      = 0x04
	stNotStored   = 0x05
	stDeltaBadval = 0x06
	stUnknown     = 0x81
	stENOMEM      = 0x82
	stInternal    = 0x84
)

// binQuiet maps each quiet opcode to its loud form plus one (0: not quiet).
var binQuiet = func() (t [256]uint8) {
	for q, loud := range map[uint8]uint8{
		opGetQ: opGet, opGetKQ: opGetK, opSetQ: opSet, opAddQ: opAdd, opReplaceQ: opReplace,
		opDeleteQ: opDelete, opIncrQ: opIncr, opDecrQ: opDecr, opQuitQ: opQuit, opFlushQ: opFlush,
		opAppendQ: opAppend, opPrependQ: opPrepend, opGatQ: opGat, opGatKQ: opGatK,
	} {
		t[q] = loud + 1
	}
	return t
}()

// binStatusText is the message memcached sends with an error status.
func binStatusText(st uint16) string {
	switch st {
	case stKeyENOENT:
		return "Not found"
	case stKeyEEXISTS:
		return "Data exists for key."
	case stE2BIG:
		return "Too large."
	case stEINVAL:
		return "Invalid arguments"
	case stNotStored:
		return "Not stored."
	case stDeltaBadval:
		return "Non-numeric server-side value for incr or decr"
	case stUnknown:
		return "Unknown command"
	case stENOMEM:
		return "Out of memory"
	}
	return "Internal error"
}

// binHeader is a decoded request header.
type binHeader struct {
	opcode, extlen uint8
	keylen         uint16
	bodylen        uint32
	opaque         uint32
	cas            uint64
}

// parseBinary parses one binary request at the front of buf, as memcached's
// try_read_command_binary and dispatch_bin_command.
func (c *conn) parseBinary(buf []byte) (int, parseState) {
	if len(buf) < binHdrLen {
		c.need = binHdrLen
		return 0, psMore
	}
	if buf[0] != binReqMagic {
		return 0, psClose
	}
	h := binHeader{
		opcode:  buf[1],
		keylen:  binary.BigEndian.Uint16(buf[2:]),
		extlen:  buf[4],
		bodylen: binary.BigEndian.Uint32(buf[8:]),
		opaque:  binary.BigEndian.Uint32(buf[12:]),
		cas:     binary.BigEndian.Uint64(buf[16:]),
	}
	hdrLen := binHdrLen + int(h.extlen) + int(h.keylen)
	if len(buf) < hdrLen {
		c.need = hdrLen
		return 0, psMore
	}
	ext := buf[binHdrLen : binHdrLen+int(h.extlen)]
	key := buf[binHdrLen+int(h.extlen) : hdrLen]
	r := newRequest(rBin)
	r.opcode, r.base, r.opaque = h.opcode, h.opcode, h.opaque
	keylen, extlen, bodylen := uint32(h.keylen), uint32(h.extlen), h.bodylen
	if keylen > bodylen || keylen+extlen > bodylen {
		c.counts[cmdError]++
		return c.binFail(r, stUnknown, hdrLen)
	}
	if keylen > kv.MaxKeyLen {
		c.counts[cmdError]++
		return c.binFail(r, stEINVAL, hdrLen)
	}
	if loud := binQuiet[h.opcode]; loud != 0 {
		r.base, r.quiet = loud-1, true
	}
	valid := false
	switch r.base {
	case opGet, opGetK:
		valid = extlen == 0 && bodylen == keylen && keylen > 0
		if valid {
			c.counts[cmdGet]++
			r.withKey = r.base == opGetK
			r.op = c.addOp(kv.Op{Kind: kv.Get, Key: key})
		}
	case opTouch, opGat, opGatK:
		valid = extlen == 4 && keylen != 0
		if valid {
			c.counts[cmdTouch]++
			r.withKey = r.base == opGatK
			exptime := int64(binary.BigEndian.Uint32(ext))
			r.op = c.addOp(kv.Op{Kind: kv.Get, Key: key, Touch: true, Exptime: exptime})
		}
	case opSet, opAdd, opReplace:
		if valid = extlen == 8 && keylen != 0 && bodylen >= keylen+8; valid {
			return c.binStore(buf, r, h, ext, key, hdrLen)
		}
	case opAppend, opPrepend:
		if valid = keylen > 0 && extlen == 0; valid {
			return c.binStore(buf, r, h, ext, key, hdrLen)
		}
	case opDelete:
		valid = keylen > 0 && extlen == 0 && bodylen == keylen
		if valid {
			c.counts[cmdDelete]++
			r.op = c.addOp(kv.Op{Kind: kv.Delete, Key: key, HasCAS: h.cas != 0, CompareCAS: h.cas})
		}
	case opIncr, opDecr:
		valid = keylen > 0 && extlen == 20 && bodylen == keylen+extlen
		if valid {
			kind, id := kv.Incr, cmdIncr
			if r.base == opDecr {
				kind, id = kv.Decr, cmdDecr
			}
			c.counts[id]++
			expiration := binary.BigEndian.Uint32(ext[16:])
			r.op = c.addOp(kv.Op{Kind: kind, Key: key,
				Delta:   binary.BigEndian.Uint64(ext),
				Initial: binary.BigEndian.Uint64(ext[8:]),
				Vivify:  expiration != 0xffffffff, Exptime: int64(expiration),
				HasCAS: h.cas != 0, CompareCAS: h.cas})
		}
	case opFlush:
		valid = keylen == 0 && bodylen == extlen && (extlen == 0 || extlen == 4)
		if valid {
			c.counts[cmdFlush]++
			var delay int64
			if extlen == 4 {
				delay = int64(binary.BigEndian.Uint32(ext))
			}
			r.op = c.addOp(kv.Op{Kind: kv.Flush, Exptime: delay})
		}
	case opNoop, opVersion, opQuit:
		valid = extlen == 0 && keylen == 0 && bodylen == 0
		if valid {
			switch r.base {
			case opNoop:
				c.counts[cmdNoop]++
			case opVersion:
				c.counts[cmdVersion]++
			case opQuit:
				c.counts[cmdQuit]++
				c.quit = true
			}
		}
	case opStat:
		valid = extlen == 0
		if valid {
			c.counts[cmdStats]++
			r.kind = rBinStats
			r.args = key
			c.barrier = true
		}
	case opSASLList:
		if valid = extlen == 0 && keylen == 0 && bodylen == 0; valid {
			c.counts[cmdOther]++
			return c.binRefuse(r, stUnknown, hdrLen, 0)
		}
	case opSASLAuth, opSASLStep:
		if valid = extlen == 0 && keylen != 0; valid {
			c.counts[cmdOther]++
			return c.binRefuse(r, stUnknown, hdrLen, int64(bodylen-keylen))
		}
	default:
		// An opcode memcached 1.6.18 does not know (verbosity, 0x1b, among
		// them: 1.6.18 has no binary verbosity): it swallows bodylen more
		// bytes after the extras and key, and its reply waits until they
		// are read. A request whose swallow fits the read buffer waits
		// here for them all, so that its reply does too; a longer one is
		// answered before its bytes are swallowed.
		if end := hdrLen + int(bodylen); bodylen <= readBufSize && len(buf) < end {
			c.need, c.inValue = end, true // memcached's conn_swallow
			return 0, psMore
		}
		c.counts[cmdError]++
		return c.binRefuse(r, stUnknown, hdrLen, int64(bodylen))
	}
	if !valid {
		c.counts[cmdError]++
		return c.binFail(r, stEINVAL, hdrLen)
	}
	c.addReq(r)
	return hdrLen, psDone
}

// binFail answers a protocol error and closes the connection after the
// replies, as memcached's handle_binary_protocol_error.
func (c *conn) binFail(r request, status uint16, n int) (int, parseState) {
	c.quit = true
	return c.binRefuse(r, status, n, 0)
}

// binRefuse answers an error status and swallows swallow bytes after the n
// consumed.
func (c *conn) binRefuse(r request, status uint16, n int, swallow int64) (int, parseState) {
	r.status = status
	c.addReq(r)
	if swallow > 0 {
		c.swallow = swallow
	}
	return n, psDone
}

// binStore parses set, add, replace, append and prepend with their value.
func (c *conn) binStore(buf []byte, r request, h binHeader, ext, key []byte, hdrLen int) (int, parseState) {
	// The value length as memcached computes it, in a C int.
	vlen := int32(h.bodylen - uint32(h.keylen) - uint32(h.extlen))
	var flags uint32
	var exptime int64
	kind, id := kv.Set, cmdSet
	switch r.base {
	case opAdd:
		kind, id = kv.Add, cmdAdd
	case opReplace:
		kind, id = kv.Replace, cmdReplace
	case opAppend:
		kind, id = kv.Append, cmdAppend
	case opPrepend:
		kind, id = kv.Prepend, cmdPrepend
	}
	c.counts[id]++
	if r.base == opSet || r.base == opAdd || r.base == opReplace {
		flags = binary.BigEndian.Uint32(ext)
		exptime = int64(binary.BigEndian.Uint32(ext[4:]))
	}
	end := hdrLen + int(vlen)
	tooBig := tooLarge(len(key), flags, int64(vlen), c.s.cfg.ItemSizeMax)
	if tooBig || (len(buf) < end && !c.reserveValue(end)) {
		r.status = stE2BIG
		if !tooBig {
			r.status = stENOMEM
		}
		if r.base == opSet { // a refused set removes the old item
			r.op = c.addOp(kv.Op{Kind: kv.Set, Key: key, TooLarge: true, NoMemory: !tooBig})
		}
		c.countRefused(tooBig)
		c.addReq(r)
		if vlen > 0 {
			c.swallow = int64(vlen)
		}
		return hdrLen, psDone
	}
	if len(buf) < end {
		c.need, c.inValue = end, true
		return 0, psMore
	}
	op := kv.Op{Kind: kind, Key: key, Value: buf[hdrLen:end], Flags: flags, Exptime: exptime}
	if h.cas != 0 {
		op.HasCAS, op.CompareCAS = true, h.cas
		if kind == kv.Add || kind == kv.Replace {
			op.Kind = kv.Set // memcached turns a binary store with a CAS into cas
		}
	}
	r.op = c.addOp(op)
	c.addReq(r)
	c.reqBytes += int(vlen)
	return end, psDone
}

// binResponse writes a response header.
func (c *conn) binResponse(r *request, status uint16, extlen uint8, keylen int, bodylen int, cas uint64) {
	var h [binHdrLen]byte
	h[0] = binResMagic
	h[1] = r.opcode
	binary.BigEndian.PutUint16(h[2:], uint16(keylen))
	h[4] = extlen
	binary.BigEndian.PutUint16(h[6:], status)
	binary.BigEndian.PutUint32(h[8:], uint32(bodylen))
	binary.BigEndian.PutUint32(h[12:], r.opaque)
	binary.BigEndian.PutUint64(h[16:], cas)
	c.out.bytes(h[:])
}

// binError writes an error response with memcached's message.
func (c *conn) binError(r *request, status uint16) {
	msg := binStatusText(status)
	c.binResponse(r, status, 0, 0, len(msg), 0)
	c.out.str(msg)
}

// binOK writes a bodiless success response unless the request is quiet.
func (c *conn) binOK(r *request, cas uint64) {
	if !r.quiet {
		c.binResponse(r, stOK, 0, 0, 0, cas)
	}
}

// renderBinary writes the response of a binary request.
func (c *conn) renderBinary(r *request) {
	if r.status != stOK {
		c.binError(r, r.status)
		return
	}
	switch r.base {
	case opNoop, opQuit:
		c.binOK(r, 0)
		return
	case opVersion:
		v := c.s.cfg.Version
		c.binResponse(r, stOK, 0, 0, len(v), 0)
		c.out.str(v)
		return
	case opFlush:
		c.binOK(r, 0)
		return
	}
	op := &c.batch.Ops[r.op]
	res := &op.Result
	switch r.base {
	case opGet, opGetK, opTouch, opGat, opGatK:
		c.renderBinaryGet(r, op)
	case opSet, opAdd, opReplace, opAppend, opPrepend:
		if res.Status != kv.Stored {
			c.binUnsuccessful(r, op)
			return
		}
		c.binOK(r, res.CAS)
	case opDelete:
		if res.Status != kv.Deleted {
			c.binUnsuccessful(r, op)
			return
		}
		c.binOK(r, 0)
	case opIncr, opDecr:
		if res.Status != kv.Counted {
			c.binUnsuccessful(r, op)
			return
		}
		if !r.quiet {
			c.binResponse(r, stOK, 0, 0, 8, res.CAS)
			var v [8]byte
			binary.BigEndian.PutUint64(v[:], res.Number)
			c.out.bytes(v[:])
		}
	}
}

// binStatusOf is memcached's binary status for each unsuccessful outcome
// of a store, delete, incr or decr (kv documents which ops each Status
// comes from); binUnsuccessful adjusts it by the op's kind.
var binStatusOf = [...]uint16{
	kv.Exists:     stKeyEEXISTS, // a CAS mismatch
	kv.NotFound:   stKeyENOENT,
	kv.NotStored:  stNotStored,
	kv.TooLarge:   stE2BIG,
	kv.NoMemory:   stENOMEM,
	kv.NonNumeric: stDeltaBadval,
}

// binUnsuccessful writes the error response of a store, delete, incr or
// decr op that did not succeed: binStatusOf's status, except that a
// missing key is NOT_STORED for append and prepend, and that a refused add
// is EEXISTS and a refused replace ENOENT; an internal error for any other
// outcome.
func (c *conn) binUnsuccessful(r *request, op *kv.Op) {
	res := &op.Result
	if int(res.Status) >= len(binStatusOf) || binStatusOf[res.Status] == stOK {
		c.binFailed(r, res)
		return
	}
	st := binStatusOf[res.Status]
	switch {
	case res.Status == kv.NotFound && (op.Kind == kv.Append || op.Kind == kv.Prepend):
		st = stNotStored
	case res.Status == kv.NotStored && op.Kind == kv.Add:
		st = stKeyEEXISTS
	case res.Status == kv.NotStored && op.Kind == kv.Replace:
		st = stKeyENOENT
	}
	c.binError(r, st)
}

// renderBinaryGet writes the response of get, getk, touch, gat and gatk.
func (c *conn) renderBinaryGet(r *request, op *kv.Op) {
	res := &op.Result
	switch res.Status {
	case kv.Hit:
	case kv.Miss:
		switch {
		case r.quiet:
		case r.withKey:
			c.binResponse(r, stKeyENOENT, 0, len(op.Key), len(op.Key), 0)
			c.out.bytes(op.Key)
		default:
			c.binError(r, stKeyENOENT)
		}
		return
	default:
		c.binFailed(r, res)
		return
	}
	keylen, vlen := 0, len(res.Value)
	if r.withKey {
		keylen = len(op.Key)
	}
	if r.base == opTouch {
		vlen = 0
	}
	c.binResponse(r, stOK, 4, keylen, 4+keylen+vlen, res.CAS)
	var f [4]byte
	binary.BigEndian.PutUint32(f[:], res.Flags)
	c.out.bytes(f[:])
	if r.withKey {
		c.out.bytes(op.Key)
	}
	if r.base != opTouch {
		c.out.value(res.Value)
	}
}

// binFailed answers an op the cache could not run.
func (c *conn) binFailed(r *request, res *kv.Result) {
	c.failed(res)
	c.binError(r, stInternal)
}
