package difftest

import "strings"

// badInput returns a malformed request in a protocol of the configuration.
// Every one is complete, so that a server that handles it as memcached
// does answers before the step's sentinel (or closes the connection).
func (g *gen) badInput() step {
	var ps []Protocols
	for _, p := range []Protocols{Text, Meta, Binary} {
		if g.cfg.Protocols&p != 0 {
			ps = append(ps, p)
		}
	}
	var b stepBuilder
	k := g.key(true)
	switch pick(g, ps...) {
	case Text:
		b.str(pick(g, badText(k)...))
	case Meta:
		b.str(pick(g, badMeta(k)...))
	default:
		g.badBinary(&b, k)
	}
	return b.done()
}

// maxKeyLen is memcached's KEY_MAX_LENGTH: the longest key, and the
// longest key token of a meta command (base64 or not).
const maxKeyLen = 250

// longKey is a key one byte over the 250-byte limit.
func longKey() string { return strings.Repeat("x", maxKeyLen+1) }

// badText returns malformed text commands on key k.
func badText(k string) []string {
	long := longKey()
	return []string{
		"bogus_command\r\n",
		"\r\n",
		"get\r\n",
		"GET " + k + "\r\n",
		"get " + k + "\n",
		"set " + k + " 0 0\r\n",
		"set " + k + " 0 0 abc\r\n",
		"set " + k + " 0 0 -1\r\n",
		"set " + k + " abc 0 1\r\nx\r\n",
		"set " + k + " 4294967296 0 1\r\nx\r\n",
		"set " + k + " 0 4294967296 1\r\nx\r\n",
		"set " + k + " 0 0 1 2 3\r\nx\r\n",
		"set " + long + " 0 0 1\r\nx\r\n",
		"get " + long + "\r\n",
		"get " + k + " " + long + "\r\n",
		"delete " + long + "\r\n",
		"set " + k + " 0 0 3\r\nabcde\r\n",
		"set " + k + " 0 0 3 noreply\r\nabcde\r\n",
		"append " + k + " 0 0 1\r\nxyz\r\n",
		"incr " + k + " abc\r\n",
		"incr " + k + " -1\r\n",
		"incr " + k + " 18446744073709551616\r\n",
		"decr " + k + "\r\n",
		"incr " + k + " abc noreply\r\n",
		"touch " + k + " abc\r\n",
		"touch " + k + "\r\n",
		"delete " + k + " 0\r\n",
		"delete " + k + " 5\r\n",
		"delete " + k + " noreply extra\r\n",
		"verbosity\r\n",
		"flush_all abc\r\n",
		"gat\r\n",
		"gat 10\r\n",
		"gat abc " + k + "\r\n",
		"cas " + k + " 0 0 1\r\nx\r\n",
		"cas " + k + " 0 0 1 abc\r\nx\r\n",
		"gets\r\n",
	}
}

// badMeta returns malformed meta commands on key k.
func badMeta(k string) []string {
	long := longKey()
	return []string{
		"mg\r\n",
		"mg " + long + " v\r\n",
		"mg " + k + " v v\r\n",
		"mg " + k + " !\r\n",
		"mg " + k + " b v\r\n",
		"ms " + k + "\r\n",
		"ms " + k + " abc\r\n",
		"ms " + k + " -1\r\n",
		"ms " + k + " 2 MX\r\nab\r\n",
		"ms " + k + " 2 Fabc\r\nab\r\n",
		"ms " + k + " 3\r\nabcde\r\n",
		"ms " + long + " 1\r\nx\r\n",
		"ma " + k + " Dabc\r\n",
		"ma " + k + " MX\r\n",
		"ma " + k + " Nabc\r\n",
		"md\r\n",
		"md " + long + "\r\n",
		"me " + long + "\r\n",
	}
}

// badBinary appends a malformed binary request on key k.
func (g *gen) badBinary(b *stepBuilder, k string) {
	r := g.binReq(opGet, k, nil, nil, 1)
	switch g.r.IntN(6) {
	case 0: // unknown opcode (memcached 1.6.18 mis-skips the body of one
		// that has a key or value, so none here)
		r.op, r.key = 0x40, nil
	case 1: // key over 250 bytes
		r.key = []byte(longKey())
	case 2: // set without its extras
		r.op, r.value = opSet, []byte("v")
	case 3: // incr with short extras
		r.op, r.extras = opIncr, be64(1)
	case 4: // extras on a get
		r.extras = be32(0)
	default: // body length shorter than key + extras
		r.op, r.extras, r.bodyLen = opTouch, be32(0), 2
	}
	b.bin(r)
	b.s.keys = []string{k}
}
