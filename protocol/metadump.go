package protocol

import (
	"bytes"
	"strconv"

	"github.com/warpkv/warpkv/kv"
)

// memcached's "lru_crawler metadump", the key dump that memcached-dump
// tools read: one line of metadata per live item, then END.

// Replies of lru_crawler metadump, as memcached 1.6.18.
const (
	replyMetadumpBadClass = "BADCLASS invalid class id\r\n"
	replyMetadumpPipeline = "ERROR cannot pipeline other commands before metadump\r\n"
	maxSlabClassID        = 63 // memcached's MAX_NUMBER_OF_SLAB_CLASSES - 1
)

// textLRUCrawler parses "lru_crawler metadump all|hash|<class>[,<class>...]"
// as memcached's process_lru_crawler_command; its other subcommands (crawl,
// tocrawl, sleep, enable, disable, mgdump) answer ERROR: warpkv has no LRU
// crawler. Replies already queued before a metadump in the round refuse
// it, as memcached's resp_has_stack check; a class id outside 1-63 answers
// BADCLASS.
func (c *conn) textLRUCrawler(toks [][]byte, ntok, lineEnd int) (int, parseState) {
	c.counts[cmdOther]++
	if ntok != 4 || string(toks[1]) != "metadump" || c.s.admin == nil {
		c.static(replyError)
		return lineEnd, psDone
	}
	if len(c.reqs) > 0 {
		c.static(replyMetadumpPipeline)
		return lineEnd, psDone
	}
	var classes []byte // the class ids; none: every class
	switch arg := toks[2]; string(arg) {
	case "all", "hash":
	default:
		classes = []byte{}
		for _, f := range bytes.Split(arg, []byte(",")) {
			if len(f) == 0 {
				continue // strtok_r skips empty fields
			}
			id, ok := safeStrtoul(f)
			if !ok || id < 1 || id > maxSlabClassID {
				c.static(replyMetadumpBadClass)
				return lineEnd, psDone
			}
			classes = append(classes, byte(id))
		}
	}
	r := newRequest(rMetaDump)
	r.args = classes
	c.barrier = true
	c.addReq(r)
	return lineEnd, psDone
}

// renderMetaDump writes a "key=<key> exp=<exptime> la=<last access>
// cas=<cas> fetch=<yes|no> cls=<class> size=<bytes>" line for each live
// item of the classes in r.args (nil: every class), class by class, then
// END, as memcached's crawler_metadump_eval: the key URI-encoded, exp -1
// for an item that never expires (else an absolute unix time), size
// memcached's item size (ITEM_ntotal with CAS). Cost: a pass over the
// classes' chunks; the lines are copied into the reply.
func (c *conn) renderMetaDump(r *request) {
	classes := r.args
	if classes == nil {
		classes = make([]byte, maxSlabClassID)
		for i := range classes {
			classes[i] = byte(i + 1)
		}
	}
	var line []byte
	for _, class := range classes {
		c.s.admin.Dump(int(class), func(it kv.DumpedItem) bool {
			line = appendMetaDumpLine(line[:0], it)
			c.out.bytes(line)
			return true
		})
	}
	c.out.str("END\r\n")
}

// appendMetaDumpLine appends it's metadump line to b.
func appendMetaDumpLine(b []byte, it kv.DumpedItem) []byte {
	b = append(b, "key="...)
	b = appendURIEncoded(b, it.Key)
	b = append(b, " exp="...)
	exp := int64(-1)
	if it.Exptime != 0 {
		exp = it.Exptime
	}
	b = strconv.AppendInt(b, exp, 10)
	b = append(b, " la="...)
	b = strconv.AppendInt(b, it.LastAccess, 10)
	b = append(b, " cas="...)
	b = strconv.AppendUint(b, it.CAS, 10)
	b = append(b, " fetch="...)
	if it.Fetched {
		b = append(b, "yes"...)
	} else {
		b = append(b, "no"...)
	}
	b = append(b, " cls="...)
	b = strconv.AppendInt(b, int64(it.Class), 10)
	b = append(b, " size="...)
	b = strconv.AppendInt(b, int64(memcachedItemSize(len(it.Key), it.ValueLen, it.Flags)), 10)
	return append(b, '\n')
}

// memcachedItemSize is memcached 1.6.18's ITEM_ntotal of an item with CAS:
// its 48-byte header, the 8-byte CAS, the key and its NUL, the value and
// its "\r\n", and 4 bytes of client flags when they are not 0.
func memcachedItemSize(keyLen, valueLen int, flags uint32) int {
	n := 48 + 8 + keyLen + 1 + valueLen + 2
	if flags != 0 {
		n += 4
	}
	return n
}

// appendURIEncoded appends key with every byte other than ASCII letters,
// digits and -._~ written %XX (upper-case hex), as memcached's uriencode.
func appendURIEncoded(b, key []byte) []byte {
	const hex = "0123456789ABCDEF"
	for _, ch := range key {
		switch {
		case ch >= 'a' && ch <= 'z', ch >= 'A' && ch <= 'Z', ch >= '0' && ch <= '9',
			ch == '-', ch == '.', ch == '_', ch == '~':
			b = append(b, ch)
		default:
			b = append(b, '%', hex[ch>>4], hex[ch&15])
		}
	}
	return b
}
