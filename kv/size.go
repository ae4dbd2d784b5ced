package kv

// memcached's item layout on a 64-bit host, for its item size limit.
const (
	itemHeaderSize = 48 // sizeof(item)
	itemCASSize    = 8  // the CAS field (CAS is always on)
	itemFlagsSize  = 4  // client flags, stored only when nonzero
)

// ItemTotal returns memcached's total size of an item (ITEM_ntotal): the
// header, the CAS, the key and its NUL, the value and its CRLF, and the
// flags when nonzero; memcached refuses an item whose total is over its
// item size limit (-I). Sizes are int64 so that a value length near 2^31
// does not overflow. Cost: O(1).
func ItemTotal(nkey int, flags uint32, vlen int64) int64 {
	n := int64(itemHeaderSize+itemCASSize+nkey+1) + vlen + 2
	if flags != 0 {
		n += itemFlagsSize
	}
	return n
}

// JoinedTooLarge reports whether op, an append or prepend whose effect e
// writes the joined value, makes an item over itemSizeMax bytes as
// ItemTotal counts it, which memcached answers NOT_STORED (the old item
// kept). Cost: a few additions.
func JoinedTooLarge(op *Op, e Effect, itemSizeMax int) bool {
	return e.Write && (op.Kind == Append || op.Kind == Prepend) && ItemTotal(len(op.Key), e.Flags, int64(e.Len())) > int64(itemSizeMax)
}
