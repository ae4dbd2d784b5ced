package stm

// commitLog is one server's log of recent commits (CSMV's active
// transaction record): for each commit its timestamp and the items of the
// server's partition it wrote, in timestamp order, in two rings: entries
// and a pool of item numbers. The oldest entries leave when either ring is
// full; floor is the newest timestamp that left. Only the server that owns
// the log touches it (under its server lock on the CPU).
type commitLog struct {
	ts    []uint64 // entry timestamps
	start []int64  // entry's first pool position (absolute)
	count []int32  // entry's item count; wildcard: items not listed
	pool  []uint32 // item numbers, ring over absolute positions

	head, tail int64  // entries [tail, head) are present (absolute indexes)
	poolHead   int64  // next absolute pool position
	floor      uint64 // newest timestamp no longer present (0: none)
}

// wildcard is the count of an entry whose items did not fit in the pool:
// it conflicts with every transaction validated against it.
const wildcard = -1

func newCommitLog(entries, pool int) commitLog {
	return commitLog{
		ts: make([]uint64, entries), start: make([]int64, entries), count: make([]int32, entries),
		pool: make([]uint32, pool),
	}
}

// validate checks a transaction with snapshot snap, which read reads and
// wrote writes (items of this partition), against every logged commit newer
// than snap; set holds those items.
// It returns ok, or the cause of the conflict. Cost: O(entries newer than
// snap x their items).
func (l *commitLog) validate(snap uint64, set *itemSet) (bool, Cause) {
	E, A := int64(len(l.ts)), int64(len(l.pool))
	for a := l.head - 1; a >= l.tail; a-- {
		e := a % E
		if l.ts[e] <= snap {
			return true, 0
		}
		c := l.count[e]
		if c == wildcard {
			return false, LogFull
		}
		ww := false
		for j := int64(0); j < int64(c); j++ {
			switch set.in(l.pool[(l.start[e]+j)%A]) {
			case 0:
			case 2:
				ww = true
			default:
				return false, ReadWrite
			}
		}
		if ww {
			return false, WriteWrite
		}
	}
	if l.floor > snap {
		return false, LogFull
	}
	return true, 0
}

// append logs a commit at ts (larger than every logged one) that wrote
// items, evicting the oldest entries as needed. Cost: O(len(items)).
func (l *commitLog) append(ts uint64, items []uint32) {
	E, A := int64(len(l.ts)), int64(len(l.pool))
	c := int32(len(items))
	st := l.poolHead
	if int64(len(items)) > A {
		c = wildcard
	} else {
		l.poolHead += int64(len(items))
	}
	for l.tail < l.head && (l.head-l.tail >= E || (l.count[l.tail%E] > 0 && l.start[l.tail%E] < l.poolHead-A)) {
		l.floor = l.ts[l.tail%E]
		l.tail++
	}
	e := l.head % E
	l.ts[e], l.start[e], l.count[e] = ts, st, c
	if c != wildcard {
		for j, it := range items {
			l.pool[(st+int64(j))%A] = it
		}
	}
	l.head++
}
