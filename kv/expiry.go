package kv

// Expired is the absolute expiry ExpiryAt gives an item that is expired on
// arrival: a time always in the past.
const Expired int64 = 1

// ExpiryAt converts a memcached expiry as sent by a client into an absolute
// unix time at clock now: 0 stays 0 (never expires); a negative expiry is
// already past; up to MaxRelativeExpiry seconds it is relative to now; above
// that it is an absolute unix time (one not after now is already past).
func ExpiryAt(raw, now int64) int64 {
	switch {
	case raw == 0:
		return 0
	case raw < 0:
		return Expired
	case raw <= MaxRelativeExpiry:
		return now + raw
	case raw <= now:
		return Expired
	}
	return raw
}

// Alive reports whether an item with absolute expiry exptime is still
// valid at clock now.
func Alive(exptime, now int64) bool { return exptime == 0 || exptime > now }

// TTL returns the seconds an item with absolute expiry exptime has left at
// now, -1 for one that never expires (meta protocol's t flag).
func TTL(exptime, now int64) int64 {
	if exptime == 0 {
		return -1
	}
	return max(exptime-now, 0)
}

// FlushState records flush_all commands so that a Cache can tell whether an
// item was flushed. The zero value has seen no flush. It is not safe for
// concurrent use: engines guard it.
type FlushState struct {
	oldestCAS  uint64 // items with a smaller CAS were flushed at once
	oldestLive int64  // items stored at or before it are flushed once it is not after now (0: none)
}

// FlushSpendsCAS reports whether flush_all with delay (seconds, as sent)
// at clock now takes effect within the current second: 0 or a negative
// delay, 1, or an absolute time not after now. memcached 1.6 then records
// the flush by CAS (settings.oldest_cas = get_cas_id()), which spends one
// CAS unique: the next write's CAS is one more than without the flush, in
// the text and binary protocols alike. An engine that gives CAS values as
// memcached does spends one there too. Cost: O(1).
func FlushSpendsCAS(delay, now int64) bool {
	return delay <= 0 || ExpiryAt(delay, now)-1 <= now
}

// Flush records flush_all with a delay in seconds (memcached's rules: 0 or
// negative flushes now; else at now+delay). nextCAS is the CAS the next
// write will get: every item written so far has a smaller one.
func (f *FlushState) Flush(delay, now int64, nextCAS uint64) {
	if delay <= 0 {
		f.oldestCAS = nextCAS
		f.oldestLive = 0
		return
	}
	f.oldestLive = ExpiryAt(delay, now) - 1
}

// Valid reports whether an item with CAS cas, stored at unix time storedAt,
// survives the flushes recorded at clock now.
func (f *FlushState) Valid(cas uint64, storedAt, now int64) bool {
	if cas < f.oldestCAS {
		return false
	}
	return f.oldestLive == 0 || f.oldestLive > now || storedAt > f.oldestLive
}
