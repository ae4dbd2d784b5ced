package kv

import (
	"strconv"
	"sync"
	"time"
)

// Model is the reference Cache: items in a Go map under one mutex, every
// Op applied with Apply in order. It has no memory limit and never evicts;
// like memcached it refuses an append or prepend whose joined item would
// be over the item size limit (DefaultItemSizeMax; SetItemSizeMax).
// Tests use it as the oracle the engines must agree with, and the protocol
// tests serve it. Safe for concurrent use.
type Model struct {
	clock func() int64

	mu      sync.Mutex
	items   map[string]*modelItem
	nextCAS uint64
	flush   FlushState
	digits  []byte
	stats   modelStats
	maxItem int // item size limit of joined items (memcached's -I)
}

type modelItem struct {
	Item
	storedAt   int64
	lastAccess int64
	fetched    bool
}

type modelStats struct {
	gets, hits, sets, deletes, flushes uint64
}

// NewModel returns an empty Model on clock (unix seconds; nil means the
// system clock).
func NewModel(clock func() int64) *Model {
	if clock == nil {
		clock = func() int64 { return time.Now().Unix() }
	}
	return &Model{clock: clock, items: make(map[string]*modelItem), nextCAS: 1, maxItem: DefaultItemSizeMax}
}

// SetItemSizeMax sets the item size limit (memcached's -I, in bytes of
// kv.ItemTotal) that an append's or prepend's joined item must fit; the
// protocol layer refuses larger values before they reach the model.
func (m *Model) SetItemSizeMax(n int) {
	m.mu.Lock()
	m.maxItem = n
	m.mu.Unlock()
}

// Now returns the model's clock.
func (m *Model) Now() int64 { return m.clock() }

// Do applies b's Ops in order. Cost: one map operation per Op plus copies
// of the values.
func (m *Model) Do(b *Batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	for i := range b.Ops {
		m.do(b, &b.Ops[i], now)
	}
	return nil
}

func (m *Model) do(b *Batch, op *Op, now int64) {
	op.Result = Result{}
	if op.Kind == Flush {
		m.flush.Flush(op.Exptime, now, m.nextCAS)
		if FlushSpendsCAS(op.Exptime, now) {
			m.nextCAS++ // as memcached's get_cas_id for the flush
		}
		m.stats.flushes++
		op.Result.Status = Flushed
		return
	}
	key := string(op.Key)
	var cur *Item
	it := m.items[key]
	if it != nil && (!Alive(it.Exptime, now) || !m.flush.Valid(it.CAS, it.storedAt, now)) {
		delete(m.items, key)
		it = nil
	}
	if it != nil {
		cur = &it.Item
	}
	e := Apply(op, cur, now, m.digits[:0])
	r := &op.Result
	if JoinedTooLarge(op, e, m.maxItem) {
		// memcached cannot allocate the joined item: NOT_STORED, the old
		// item kept.
		*r = Result{Status: NotStored}
		e = Effect{}
	}
	switch op.Kind {
	case Get:
		m.stats.gets++
		if e.Hit {
			m.stats.hits++
		}
	case Delete:
		m.stats.deletes++
	default:
		if op.Kind.IsStore() {
			m.stats.sets++
		}
	}
	if e.SetExpiry {
		it.Exptime = e.Exptime
		r.CAS, r.Exptime = it.CAS, it.Exptime
		if op.Kind == Touch { // memcached's touch bumps the item as a fetch does
			it.lastAccess, it.fetched = now, true
		}
	}
	if e.Hit {
		r.Value = b.AddValue(it.Value)
		r.Flags, r.CAS, r.Exptime = it.Flags, it.CAS, it.Exptime
		r.LastAccess, r.Fetched = it.lastAccess, it.fetched
		if !op.Peek {
			it.lastAccess, it.fetched = now, true
		}
		if e.Win {
			it.Meta |= MetaWon
			r.Won = true
		}
	}
	if e.Remove {
		delete(m.items, key)
	}
	if e.Write {
		v := make([]byte, 0, e.Len())
		v = append(append(v, e.Parts[0]...), e.Parts[1]...)
		n := &modelItem{Item: Item{Value: v, Flags: e.Flags, Exptime: e.Exptime, CAS: m.nextCAS, Meta: e.Meta}, storedAt: now, lastAccess: now}
		if e.InPlace {
			n.lastAccess, n.fetched = it.lastAccess, it.fetched
		}
		m.nextCAS++
		m.items[key] = n
		r.CAS, r.Exptime = n.CAS, n.Exptime
	}
}

// Stats reports the model's item count and operation counters in the
// general group; it has no settings, items or slabs.
func (m *Model) Stats(group string) ([]Stat, bool) {
	if group != "" {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return []Stat{
		{Name: "curr_items", Value: strconv.Itoa(len(m.items))},
		{Name: "cmd_get", Value: u(m.stats.gets)},
		{Name: "get_hits", Value: u(m.stats.hits)},
		{Name: "get_misses", Value: u(m.stats.gets - m.stats.hits)},
		{Name: "cmd_set", Value: u(m.stats.sets)},
		{Name: "cmd_flush", Value: u(m.stats.flushes)},
	}, true
}
