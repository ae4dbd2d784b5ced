package kv

import "strconv"

// Item is the present, live item an Op works on, as Apply sees it.
type Item struct {
	Value   []byte
	Flags   uint32
	Exptime int64 // absolute, 0 = never
	CAS     uint64
	Meta    ItemMeta // the item's marks
	Class   int      // its slab class (0 where the engine has none), reported in Result.Class
}

// Effect is what Apply decided an Op does to its key. An engine carries it
// out, gives every written item a fresh CAS, and fills the Op's Result.
type Effect struct {
	// Write: store a new item (replacing any present one) whose value is
	// Parts[0] followed by Parts[1], with Flags and Exptime.
	Write   bool
	Parts   [2][]byte
	Flags   uint32
	Exptime int64
	// Remove: remove the present item (delete, or a failed set).
	Remove bool
	// SetExpiry: set the present item's expiry to Exptime, keeping its CAS.
	SetExpiry bool
	// Hit: report the present item in the Result (Get).
	Hit bool
	// InPlace: memcached would rewrite the present item in place (a counter
	// whose new digits fit): the new item keeps the old one's access time
	// and fetched mark.
	InPlace bool
	// Meta: the marks of a Write's new item.
	Meta ItemMeta
	// Win: with Hit, the op may take the item's win token: the engine sets
	// MetaWon on the item atomically and reports in Result.Won whether
	// this op was the one that set it.
	Win bool
}

// Len returns the value length of a Write.
func (e Effect) Len() int { return len(e.Parts[0]) + len(e.Parts[1]) }

// Apply decides, by memcached 1.6's rules, what op does given the key's
// present live item cur (nil when absent, expired or flushed) at clock now,
// sets op.Result.Status (and Number for incr and decr) and returns the
// Effect for the engine to carry out. digits is scratch space for incr and
// decr results (the Effect may point into it). Flush ops are not per-key:
// engines handle them before calling Apply. Cost: O(1) plus parsing a
// counter for incr and decr.
func Apply(op *Op, cur *Item, now int64, digits []byte) Effect {
	r := &op.Result
	casMismatch := op.HasCAS && cur != nil && cur.CAS != op.CompareCAS
	if cur != nil {
		r.Class = cur.Class
	}
	switch op.Kind {
	case Get:
		if cur == nil {
			r.Status = Miss
			return Effect{}
		}
		r.Status, r.Meta = Hit, cur.Meta
		e := Effect{Hit: true}
		exptime := cur.Exptime
		if op.Touch {
			e.SetExpiry, e.Exptime = true, ExpiryAt(op.Exptime, now)
			if op.TouchFirst {
				exptime = e.Exptime
			}
		}
		e.Win = wins(op, cur.Meta, exptime)
		return e
	case Touch:
		if cur == nil {
			r.Status = NotFound
			return Effect{}
		}
		r.Status = Touched
		return Effect{SetExpiry: true, Exptime: ExpiryAt(op.Exptime, now)}
	case Set, Add, Replace, Append, Prepend:
		return applyStore(op, cur, now, casMismatch)
	case Delete:
		switch {
		case cur == nil:
			r.Status = NotFound
		case casMismatch:
			r.Status = Exists
		case op.Invalidate:
			// md I: the item stays, marked stale with its token free for
			// the next reader, under a new CAS (and TTL with T).
			r.Status = Deleted
			e := Effect{Write: true, Parts: [2][]byte{cur.Value}, Flags: cur.Flags, Exptime: cur.Exptime,
				Meta: cur.Meta&^MetaWon | MetaStale, InPlace: true}
			if op.SetTTL {
				e.Exptime = ExpiryAt(op.Exptime, now)
			}
			return e
		default:
			r.Status = Deleted
			return Effect{Remove: true}
		}
		return Effect{}
	case Incr, Decr:
		return applyCounter(op, cur, now, casMismatch, digits)
	}
	r.Status = Failed
	r.Err = errUnknownKind(op.Kind)
	return Effect{}
}

// applyStore decides set, add, replace, append and prepend.
func applyStore(op *Op, cur *Item, now int64, casMismatch bool) Effect {
	r := &op.Result
	if op.TooLarge {
		r.Status = TooLarge
		if op.NoMemory {
			r.Status = NoMemory
		}
		// memcached removes the old item of a failed set so that stale
		// data does not outlive the write.
		return Effect{Remove: op.Kind == Set && cur != nil}
	}
	stale := false // ms I: an older CAS stores a stale value
	switch {
	case op.Kind == Add && cur != nil:
		r.Status = NotStored
		return Effect{}
	case op.HasCAS && cur == nil:
		r.Status = NotFound
		return Effect{}
	case casMismatch && op.Invalidate && op.CompareCAS < cur.CAS:
		stale = true
	case casMismatch:
		r.Status = Exists
		return Effect{}
	case cur == nil && op.Kind != Set && op.Kind != Add:
		r.Status = NotStored
		return Effect{}
	}
	r.Status = Stored
	e := Effect{Write: true, Flags: op.Flags, Exptime: ExpiryAt(op.Exptime, now)}
	switch op.Kind {
	case Append: // memcached allocates a new item: the request's marks are not kept
		e.Parts, e.Flags, e.Exptime = [2][]byte{cur.Value, op.Value}, cur.Flags, cur.Exptime
	case Prepend:
		e.Parts, e.Flags, e.Exptime = [2][]byte{op.Value, cur.Value}, cur.Flags, cur.Exptime
	default:
		e.Parts[0] = op.Value
		if op.KeyBinary {
			e.Meta |= MetaKeyBinary
		}
		if op.Won {
			e.Meta |= MetaWon
		}
	}
	if stale {
		// memcached keeps the item's TTL and token and marks it stale.
		e.Exptime = cur.Exptime
		e.Meta |= MetaStale | cur.Meta&MetaWon
	}
	return e
}

// wins reports whether a Get hit may take the item's win token: the op is a
// meta get (memcached hands out tokens only there), the token is free, and
// the item is stale or the op asked to recache (R) an item that expires
// before the given time.
func wins(op *Op, meta ItemMeta, exptime int64) bool {
	if !op.Token || meta&MetaWon != 0 {
		return false
	}
	return meta&MetaStale != 0 || (op.Recache != 0 && exptime != 0 && exptime < op.Recache)
}

// chunkedValue is about the longest value memcached keeps in one slab
// chunk with its default 1 MiB pages (half a page, less the item header):
// longer ones are never numbers.
const chunkedValue = 1<<19 - 128

// applyCounter decides incr and decr.
func applyCounter(op *Op, cur *Item, now int64, casMismatch bool, digits []byte) Effect {
	r := &op.Result
	switch {
	case cur == nil && op.Vivify:
		r.Status, r.Number = Counted, op.Initial
		d := strconv.AppendUint(digits[:0], op.Initial, 10)
		return Effect{Write: true, Parts: [2][]byte{d}, Exptime: ExpiryAt(op.Exptime, now)}
	case cur == nil:
		r.Status = NotFound
		return Effect{}
	case len(cur.Value) == 0 || len(cur.Value) > chunkedValue:
		// memcached rejects empty values and items too large for one
		// slab chunk before comparing CAS.
		r.Status = NonNumeric
		return Effect{}
	case casMismatch:
		r.Status = Exists
		return Effect{}
	}
	v, ok := ParseCounter(cur.Value)
	if !ok {
		r.Status = NonNumeric
		return Effect{}
	}
	if op.Kind == Incr {
		v += op.Delta
	} else {
		v -= min(v, op.Delta)
	}
	r.Status, r.Number = Counted, v
	d := strconv.AppendUint(digits[:0], v, 10)
	// memcached rewrites a counter in place when the new digits fit,
	// padding the rest of the old length with spaces.
	for len(d) < len(cur.Value) {
		d = append(d, ' ')
	}
	e := Effect{Write: true, Parts: [2][]byte{d}, Flags: cur.Flags, Exptime: cur.Exptime, InPlace: len(d) == len(cur.Value)}
	if e.InPlace {
		e.Meta = cur.Meta // the same item in memcached; a new one has no marks
	}
	if op.SetTTL {
		e.Exptime = ExpiryAt(op.Exptime, now)
	}
	return e
}

// ParseCounter parses an item value as memcached's incr and decr do
// (strtoull rules): optional leading white space, an optional sign, at least
// one decimal digit, a value below 2^64, then the end of the value, white
// space or a NUL byte. A minus sign is accepted only where the result is not negative as
// a signed number ("-0"), as memcached does.
func ParseCounter(b []byte) (uint64, bool) {
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	start := i
	var v uint64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		d := uint64(b[i] - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
		i++
	}
	if i == start || (i < len(b) && !isSpace(b[i]) && b[i] != 0) {
		return 0, false
	}
	if neg {
		v = -v
		if int64(v) < 0 {
			return 0, false
		}
	}
	return v, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

type errUnknownKind Kind

func (e errUnknownKind) Error() string { return "kv: unknown operation kind " + Kind(e).String() }
