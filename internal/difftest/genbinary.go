package difftest

// binaryStep returns a binary protocol step: one request, a pipeline of
// gets (quiet or not, sometimes ended by a noop), or two to four random
// requests in one write.
func (g *gen) binaryStep() step {
	var b stepBuilder
	switch r := g.r.IntN(100); {
	case r < 20:
		for i := range 1 + g.r.IntN(4) {
			k := g.key(false)
			b.bin(g.binReq(pick[byte](g, opGet, opGetQ, opGetK, opGetKQ), k, nil, nil, uint32(i+1)))
			b.s.keys = append(b.s.keys, k)
		}
		if g.chance(50) {
			b.bin(g.binReq(opNoop, "", nil, nil, uint32(len(b.s.keys)+1)))
			b.s.keys = append(b.s.keys, "")
		}
	case r < 35:
		for i := range 2 + g.r.IntN(3) {
			k := g.key(false)
			b.bin(g.binRandom(k, uint32(i+1), i))
			b.s.keys = append(b.s.keys, k)
		}
	default:
		k := g.key(false)
		b.bin(g.binRandom(k, 1, 0))
		b.s.keys = []string{k}
	}
	return b.done()
}

// binReq returns a request with the given fields and no CAS.
func (g *gen) binReq(op byte, k string, extras, value []byte, opaque uint32) binReq {
	return binReq{op: op, key: []byte(k), extras: extras, value: value, opaque: opaque, extLen: -1, bodyLen: -1}
}

// storeExtras returns the flags and expiry extras of set, add and replace.
func (g *gen) storeExtras() []byte {
	return append(be32(g.flags()), be32(uint32(g.exptime()))...)
}

// withCAS sets a CAS on r sometimes (always when forced).
func (g *gen) withCAS(r binReq, k string, pct int) binReq {
	if g.chance(pct) {
		r.hasCAS, r.casTok = true, g.casFor(k)
	}
	return r
}

// binRandom returns one random binary request on key k, the request at
// position pos of the step.
func (g *gen) binRandom(k string, opaque uint32, pos int) binReq {
	r := g.r.IntN(100)
	if r >= 52 && r < 68 && !g.counterOK(k, pos) {
		r = 0 // a get instead of incr or decr
	}
	switch {
	case r < 15:
		return g.binReq(pick[byte](g, opGet, opGetQ, opGetK, opGetKQ), k, nil, nil, opaque)
	case r < 35:
		op := pick[byte](g, opSet, opSet, opSetQ, opAdd, opAddQ, opReplace, opReplaceQ)
		req := g.withCAS(g.binReq(op, k, g.storeExtras(), g.value(), opaque), k, 25)
		if (op == opSet || op == opSetQ) && !req.hasCAS {
			g.noteStore(k, storeSet, req.value)
		} else {
			g.noteStore(k, storeMaybe, req.value)
		}
		return req
	case r < 45:
		op := pick[byte](g, opAppend, opAppendQ, opPrepend, opPrependQ)
		req := g.withCAS(g.binReq(op, k, nil, g.value(), opaque), k, 15)
		g.noteStore(k, storeConcat, req.value)
		return req
	case r < 52:
		return g.withCAS(g.binReq(pick[byte](g, opDelete, opDeleteQ), k, nil, nil, opaque), k, 25)
	case r < 68:
		exp := uint32(0xffffffff) // no vivify
		if g.chance(50) {
			exp = uint32(g.exptime())
		}
		initial, delta := pick[uint64](g, 0, 7, 1<<64-1), g.delta()
		extras := append(append(be64(delta), be64(initial)...), be32(exp)...)
		op := pick[byte](g, opIncr, opDecr, opIncrQ, opDecrQ)
		g.noteCount(k, op == opIncr || op == opIncrQ, delta, initial)
		return g.withCAS(g.binReq(op, k, extras, nil, opaque), k, 10)
	case r < 74:
		return g.binReq(opTouch, k, be32(uint32(g.exptime())), nil, opaque)
	case r < 82:
		op := pick[byte](g, opGAT, opGATQ, opGATK, opGATKQ)
		return g.binReq(op, k, be32(uint32(g.exptime())), nil, opaque)
	case r < 84:
		op := pick[byte](g, opFlush, opFlushQ)
		var extras []byte
		if g.chance(50) {
			extras = be32(0)
		}
		return g.binReq(op, "", extras, nil, opaque)
	case r < 87:
		return g.binReq(opVersion, "", nil, nil, opaque)
	case r < 90:
		return g.binReq(opNoop, "", nil, nil, opaque)
	case r < 93:
		// No verbosity: memcached 1.6.18 answers it "unknown command" and
		// then mis-skips its extras.
		return g.binReq(opStat, "", nil, nil, opaque)
	}
	// A counter: set a number (incr and decr on it follow in other steps).
	v := []byte(pick(g, "100", "10", "9223372036854775807", "5"))
	g.noteStore(k, storeSet, v)
	return g.binReq(opSet, k, g.storeExtras(), v, opaque)
}
