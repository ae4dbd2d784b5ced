package protocol

import "github.com/warpkv/warpkv/kv"

// storeValue is the data-block step that the text and meta store commands
// share, after a command line ending at lineEnd that announced a value of
// vlen bytes (vlen+2 with its "\r\n") for key with client flags flags.
//
//   - A value over the item size limit, or one the connection cannot buffer,
//     is answered (SERVER_ERROR object too large, or out of memory) and
//     swallowed; when removeOld, a Set op marked refused is queued too, so
//     that the key's old item goes, as memcached removes it.
//   - A value not yet all read asks for more input (psMore).
//   - A block that does not end in "\r\n" is answered with the bad chunk
//     error.
//
// Replies go through c.reply(noreply, ...). It returns the value (without
// "\r\n") and ok; when !ok, n and ps are the command's parse result. Cost:
// O(1); no copy of the value.
func (c *conn) storeValue(buf []byte, lineEnd int, key []byte, flags uint32, vlen int32, noreply, removeOld bool) (value []byte, n int, ps parseState, ok bool) {
	total := int(vlen) + 2
	tooBig := tooLarge(len(key), flags, int64(vlen), c.s.cfg.ItemSizeMax)
	if tooBig || (len(buf)-lineEnd < total && !c.reserveValue(lineEnd+total)) {
		// Swallow the data without buffering it.
		text := replyTooLarge
		if !tooBig {
			text = replyNoMemoryStore
		}
		c.reply(noreply, text)
		if removeOld {
			c.reqs[len(c.reqs)-1].op = c.addOp(kv.Op{Kind: kv.Set, Key: key, TooLarge: true, NoMemory: !tooBig})
		}
		c.countRefused(tooBig)
		c.swallow = int64(total)
		return nil, lineEnd, psDone, false
	}
	if len(buf)-lineEnd < total {
		c.need, c.inValue = lineEnd+total, true
		return nil, 0, psMore, false
	}
	data := buf[lineEnd : lineEnd+total]
	if data[vlen] != '\r' || data[vlen+1] != '\n' {
		c.reply(noreply, replyBadDataChunk)
		return nil, lineEnd + total, psDone, false
	}
	return data[:vlen], lineEnd + total, psDone, true
}
