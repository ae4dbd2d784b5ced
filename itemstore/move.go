package itemstore

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/warpkv/warpkv/kv"
)

// Slab rebalancing: pages move between size classes, as memcached 1.6's
// slab_reassign and slab_automove do, so that a change in the sizes of the
// items written does not leave memory stuck in classes nobody uses.
//
// A move empties one page of the source class: its linked items are
// evicted (they become victims, which the caller of Alloc deletes from the
// hash index with its own update, as for the CLOCK sweep), its free chunks
// leave the free list, and the page leaves the class. The page number then
// gets fresh zeroed memory and belongs to the destination class (or, given
// back, to nobody: the memory limit then lets any class map a page). The
// old memory is retired: its contents are dropped at once (MADV_DONTNEED)
// and it stays mapped for retireGrace, so a reader that looked the page up
// just before sees zeros, never another class's layout. A page with a
// chunk being written or referenced is not moved (it is "busy"; another
// page is tried). A chunk whose last reference was dropped just before the
// move is freed by its releaser after it: free finds the page detached and
// lists nothing, so a class's free list only ever names chunks of pages
// the class owns (the free-list invariant, see class).
//
// Moves happen inside Alloc, so that the victims have a caller to delete
// them:
//   - A class with no page that finds memory full takes a page at once
//     from the class with the oldest items, among equally old ones the
//     least wanted (the fewest bytes allocated per page), that class's
//     only page included (see starvingSources); every class with a page
//     is tried, and when every page is busy (items just written stay
//     referenced until the server's index update round) tried again after
//     waits of 0.1 to 0.5 ms (1.5 ms in all), before the allocation fails.
//     A class whose every chunk is being written or referenced (values in
//     flight, the pending table's references) does the same rather than
//     refuse. memcached lets a class allocate its first page past the
//     limit; here the limit stays hard and another class gives one up.
//   - A page holding no linked item, in a class of two pages or more, is
//     taken by a class that would otherwise evict, at once.
//   - Automove (level 1, the default): before a class evicts one of its
//     own items, it compares the age of the item it would evict with the
//     age of the items other classes would evict next; when its own is
//     younger than ratio (0.8) times the oldest class's (at least
//     minMoveAge seconds), and that class has two pages or more, it takes
//     a page from that class instead. A class asks again only once it has
//     used up the page it got, so moves follow the demand: the memory goes
//     where the least recently used items are, as with one global LRU at
//     page granularity (memcached's automove thread, which this replaces,
//     moves at most a page a second once a 30-second window of evictions
//     shows the need; in the measured shift it moved none in a minute).
//     Level 2 moves whenever the own victim is younger; level 0
//     (AutomoveOff) leaves only the first case; NoReassign, none.
//   - Reassign (slabs reassign) queues one move, and SetMemoryLimit below
//     the pages in use queues pages to give back; the next Allocs of any
//     class carry them out, one page per call.
//
// Ages are seconds since last access, sampled at the CLOCK hand (see
// sampleAge); a class's "no" to automove holds for a second, so the check
// costs one sample a second per evicting class.

// Automove levels (memcached's slab_automove).
const (
	AutomoveOff        = -1 // no automatic moves beyond the first page of an empty class (memcached slab_automove=0)
	AutomoveDefault    = 0  // the zero value: AutomoveAge
	AutomoveAge        = 1  // move when a class's own victims are younger than ratio times another's (memcached 1)
	AutomoveAggressive = 2  // move whenever the own victim is not older (memcached 2)

	DefaultAutomoveRatio = 0.8 // memcached's slab_automove_ratio

	// minSourcePages is the pages a class keeps at least when giving one up
	// (memcached's "source class has no spare pages" below two).
	minSourcePages = 2
	// minMoveAge is the least age, in seconds, of a source class's next
	// victims for an automove at level 1: items last used within the
	// second are never evicted to grow another class.
	minMoveAge = 2
	// ageSample is how many chunks from the CLOCK hand sampleAge inspects.
	ageSample = 64
	// movePageTries bounds the busy pages a move skips before giving up.
	movePageTries = 4
	// busyWaits is how many times a class that cannot store at all tries
	// every other class's pages, waiting busyWait, then twice that, ...
	// after a round that found busy pages (at most 1.5 ms in all).
	busyWaits = 6
	busyWait  = 100 * time.Microsecond
)

// SlabPolicy configures slab rebalancing. The zero value is memcached
// 1.6's default: reassignment on, automove level 1, ratio 0.8.
type SlabPolicy struct {
	// NoReassign disables every page move (memcached -o no_slab_reassign):
	// a class that never got a page cannot store items once memory is
	// full, and Reassign answers ReassignDisabled.
	NoReassign bool
	// Automove is the automove level: AutomoveOff, AutomoveDefault (=
	// AutomoveAge), AutomoveAge or AutomoveAggressive.
	Automove int
	// Ratio is the age ratio of AutomoveAge, in (0, 1]; 0 means
	// DefaultAutomoveRatio.
	Ratio float64
}

// resolve checks p and applies its defaults.
func (p SlabPolicy) resolve() (SlabPolicy, error) {
	if p.Automove == AutomoveDefault {
		p.Automove = AutomoveAge
	}
	if p.Automove < AutomoveOff || p.Automove > AutomoveAggressive {
		return p, fmt.Errorf("itemstore: automove level %d: want -1 (off), 1 or 2", p.Automove)
	}
	if p.Ratio == 0 {
		p.Ratio = DefaultAutomoveRatio
	}
	if !(p.Ratio > 0 && p.Ratio <= 1) {
		return p, fmt.Errorf("itemstore: automove ratio %v: want a number in (0, 1]", p.Ratio)
	}
	return p, nil
}

// slabState is the store's rebalancing policy, queued work and counters.
type slabState struct {
	reassign bool
	automove atomic.Int32
	ratio    atomic.Uint64 // float64 bits

	mu  sync.Mutex
	req *moveReq // a queued Reassign; guarded by mu

	work atomic.Bool // a request is queued or pages must be given back: Alloc calls housekeep

	moved          atomic.Uint64 // pages moved between classes or given back (memcached slabs_moved)
	evictedNoMem   atomic.Uint64 // live items evicted from moved pages (slab_reassign_evictions_nomem)
	reclaimedMoved atomic.Uint64 // expired items dropped from moved pages (slab_reassign_inline_reclaim)
	busyPages      atomic.Uint64 // pages skipped because a chunk was written or referenced (slab_reassign_busy_items)
}

// moveReq is a queued move of one page from class src to class dst (nil:
// give the page back); src nil picks the class with the most pages.
type moveReq struct{ src, dst *class }

func (st *slabState) init(p SlabPolicy) {
	st.reassign = !p.NoReassign
	st.automove.Store(int32(p.Automove))
	st.ratio.Store(math.Float64bits(p.Ratio))
}

// SetAutomove changes the automove level (AutomoveOff, AutomoveAge or
// AutomoveAggressive; memcached's "slabs automove 0|1|2" maps 0 to
// AutomoveOff) and, when ratio is not 0, the age ratio. Cost: O(1).
func (s *Store) SetAutomove(level int, ratio float64) error {
	p, err := SlabPolicy{Automove: level, Ratio: ratio}.resolve()
	if err != nil {
		return err
	}
	if level != AutomoveDefault {
		s.slabs.automove.Store(int32(p.Automove))
	}
	if ratio != 0 {
		s.slabs.ratio.Store(math.Float64bits(p.Ratio))
	}
	return nil
}

// Automove returns the automove level in memcached's numbering (0 off, 1,
// 2) and the age ratio.
func (s *Store) Automove() (level int, ratio float64) {
	level = int(s.slabs.automove.Load())
	if level == AutomoveOff {
		level = 0
	}
	return level, math.Float64frombits(s.slabs.ratio.Load())
}

// Reassign queues the move of one page from class src to class dst, as
// memcached's "slabs reassign src dst": src -1 picks the class with the
// most pages, dst 0 gives the page back to the memory pool. The move is
// carried out by the next Alloc of any class (which evicts the page's
// items and returns them as victims); it reports ReassignRunning while one
// is queued. Cost: O(1).
func (s *Store) Reassign(src, dst int) kv.ReassignResult {
	if !s.slabs.reassign {
		return kv.ReassignDisabled
	}
	if src == dst {
		return kv.ReassignSame
	}
	n := len(s.classes)
	if src < -1 || src == 0 || src > n || dst < 0 || dst > n {
		return kv.ReassignBadClass
	}
	req := &moveReq{}
	if src > 0 {
		req.src = s.classes[src-1]
		if req.src.pageCount() < minSourcePages {
			return kv.ReassignNoSpare
		}
	}
	if dst > 0 {
		req.dst = s.classes[dst-1]
	}
	s.slabs.mu.Lock()
	defer s.slabs.mu.Unlock()
	if s.slabs.req != nil {
		return kv.ReassignRunning
	}
	s.slabs.req = req
	s.slabs.work.Store(true)
	return kv.ReassignOK
}

// SetMemoryLimit changes the memory limit (memcached's cache_memlimit). A
// higher limit lets classes map more pages at once; a lower one makes the
// next Allocs give back pages, one per call, from the classes with the
// oldest items, until the pages in use fit. It fails, changing nothing,
// below one page or above what 32-bit locations can address. Cost: O(1).
func (s *Store) SetMemoryLimit(bytes int64) error {
	pages := bytes / int64(s.cfg.pageSize)
	if pages < 1 || pages > s.addressable {
		return fmt.Errorf("itemstore: memory limit %d: want 1 to %d pages of %d bytes", bytes, s.addressable, s.cfg.pageSize)
	}
	s.pageMu.Lock()
	s.maxPages.Store(pages)
	over := int64(s.npages) > s.pageCap()
	s.pageMu.Unlock()
	if over {
		s.slabs.work.Store(true)
	}
	return nil
}

// housekeep carries out queued work, one page per call: a Reassign
// request, or a page given back while more pages are mapped than the
// memory limit allows. Victims are appended. Cost: at most one page move.
func (s *Store) housekeep(now int64, victims []Victim) []Victim {
	s.slabs.mu.Lock()
	req := s.slabs.req
	s.slabs.mu.Unlock()
	if req != nil {
		src := req.src
		if src == nil {
			src = s.fullestClass(req.dst)
		}
		moved := false
		if src != nil {
			victims, moved = s.move(src, req.dst, now, victims, minSourcePages)
		}
		if moved || src == nil || src.pageCount() < minSourcePages {
			s.slabs.mu.Lock()
			s.slabs.req = nil
			s.slabs.mu.Unlock()
		}
	}
	s.pageMu.Lock()
	over := int64(s.npages) > s.pageCap()
	s.pageMu.Unlock()
	if over {
		if src := s.oldestClass(nil, 1, now); src != nil {
			victims, _ = s.move(src, nil, now, victims, 1)
		}
	}
	s.slabs.mu.Lock()
	s.pageMu.Lock()
	s.slabs.work.Store(s.slabs.req != nil || int64(s.npages) > s.pageCap())
	s.pageMu.Unlock()
	s.slabs.mu.Unlock()
	return victims
}

// moveWanted decides, for class c that has no chunk left and no page to
// map, whether to take a page from another class rather than evict one of
// its own items (the policy above). The caller holds c.mu. Cost: a sample
// of c's CLOCK hand, at most once a second per class, and a look at the
// other classes' cached ages.
func (s *Store) moveWanted(c *class, now int64) bool {
	if !s.slabs.reassign {
		return false
	}
	if len(c.pages) == 0 {
		return true
	}
	level := int(s.slabs.automove.Load())
	if level == AutomoveOff || now < c.noMove {
		return false
	}
	if s.emptyPageClass(c) != nil {
		return true
	}
	own := c.sampleAge(now)
	src := s.oldestClass(c, minSourcePages, now)
	if src != nil {
		other := src.cachedAge(now)
		ratio := math.Float64frombits(s.slabs.ratio.Load())
		switch {
		case level == AutomoveAggressive && other > own:
			return true
		case other >= minMoveAge && float64(own) < ratio*float64(other):
			return true
		}
	}
	c.noMove = now + 1
	return false
}

// moveTo takes a page from another class for class dst: a page without
// linked items if some class of two pages or more has one, else one from
// the class with the oldest next victims among those with two pages or
// more. When dst cannot store at all (it has no page, or urgent: every
// chunk of its pages is being written or referenced) it tries every class
// that has a page, in the order of starvingSources, before it gives up: a
// class's only page too; when every page tried was busy, it tries again
// after short waits (busyWaits). Victims are appended. The caller holds no
// class lock.
func (s *Store) moveTo(dst *class, now int64, urgent bool, victims []Victim) []Victim {
	if src := s.emptyPageClass(dst); src != nil {
		if v, ok := s.move(src, dst, now, victims, minSourcePages); ok {
			return v
		}
	}
	if urgent || dst.pageCount() == 0 {
		for wait := range busyWaits {
			if wait > 0 {
				// Pages were busy: items just written are referenced
				// until the server's index update round releases them.
				time.Sleep(time.Duration(wait) * busyWait)
			}
			busy := s.slabs.busyPages.Load()
			for _, src := range s.starvingSources(dst, now) {
				var moved bool
				if victims, moved = s.move(src, dst, now, victims, 1); moved {
					return victims
				}
			}
			if s.slabs.busyPages.Load() == busy {
				break // no page was busy: waiting would not help
			}
		}
		return victims // retried at the next Alloc that needs it
	}
	moved := false
	if src := s.oldestClass(dst, minSourcePages, now); src != nil {
		victims, moved = s.move(src, dst, now, victims, minSourcePages)
	}
	if !moved {
		// Every page tried was busy (or no class can spare one): evict
		// in the class for the rest of the second rather than scan again
		// on every allocation.
		dst.mu.Lock()
		dst.noMove = now + 1
		dst.mu.Unlock()
	}
	return victims
}

// starvingSources returns the classes other than not that have a page to
// give it, in the order to try them: oldest next victims first, and among
// equally old (within the second) the least wanted: the fewest bytes
// allocated in the class over its life (links times chunk size) per page
// it has, so that pages flow to the classes the writes go to. A class's
// only page may be taken: it then starves in turn, and takes a page back
// at its next allocation; memcached instead lets every class map its
// first page past the memory limit, which this store's hard limit does
// not allow. Cost: a pass over the classes and a sort of at most
// MaxClasses.
func (s *Store) starvingSources(not *class, now int64) []*class {
	type cand struct {
		c      *class
		age    int64
		demand float64
	}
	var cs []cand
	for _, c := range s.classes {
		if n := c.pageCount(); c != not && n > 0 {
			cs = append(cs, cand{c: c, age: c.cachedAge(now), demand: float64(c.links.Load()) * float64(c.size) / float64(n)})
		}
	}
	slices.SortStableFunc(cs, func(a, b cand) int {
		if a.age != b.age {
			return cmp.Compare(b.age, a.age)
		}
		return cmp.Compare(a.demand, b.demand)
	})
	out := make([]*class, len(cs))
	for i, c := range cs {
		out[i] = c.c
	}
	return out
}

// emptyPageClass returns a class other than not with two pages or more,
// one of which holds no linked item, or nil. Cost: a pass over the
// classes' pages (no lock: page lists are read under each class's lock).
func (s *Store) emptyPageClass(not *class) *class {
	for _, c := range s.classes {
		if c == not || !c.mu.TryLock() {
			continue
		}
		found := false
		if len(c.pages) >= minSourcePages {
			for _, p := range c.pages {
				if c.spare(p) {
					found = true
					break
				}
			}
		}
		c.mu.Unlock()
		if found {
			return c
		}
	}
	return nil
}

// oldestClass returns the class other than not, with at least minPages
// pages, whose next victims are the oldest (by cached age; a class whose
// lock is busy keeps its last sample), or nil.
func (s *Store) oldestClass(not *class, minPages int, now int64) *class {
	var best *class
	bestAge := int64(-1)
	for _, c := range s.classes {
		if c == not || c.pageCount() < minPages {
			continue
		}
		if a := c.cachedAge(now); a > bestAge {
			best, bestAge = c, a
		}
	}
	return best
}

// fullestClass returns the class other than not with the most pages (at
// least minSourcePages), or nil.
func (s *Store) fullestClass(not *class) *class {
	var best *class
	most := minSourcePages - 1
	for _, c := range s.classes {
		if n := c.pageCount(); c != not && n > most {
			best, most = c, n
		}
	}
	return best
}

// pageCount returns the number of pages of c. Cost: one atomic load.
func (c *class) pageCount() int { return int(c.npages.Load()) }

// cachedAge returns c's sampled age, sampling again (if c's lock is free)
// when the last sample is from an earlier second. -1: c has no linked
// item near its hand.
func (c *class) cachedAge(now int64) int64 {
	if c.ageAt.Load() == now || !c.mu.TryLock() {
		return c.age.Load()
	}
	defer c.mu.Unlock()
	return c.sampleAge(now)
}

// sampleAge estimates the age, in seconds since last access, of the items
// the CLOCK sweep would evict next: the age of the first linked item with
// a clear CLOCK bit among the ageSample chunks from the hand, or, if all
// are referenced, the youngest of them; -1 if none is linked. This is the
// CLOCK's counterpart of memcached's LRU tail age (stats items age). The
// result is cached for the second. The caller holds mu.
func (c *class) sampleAge(now int64) int64 {
	if c.ageAt.Load() == now {
		return c.age.Load()
	}
	age := int64(-1)
	if n := c.chunks(); n > 0 {
		pi, idx := c.handPage, c.handIdx
		youngest := int64(math.MaxInt64)
		for range min(ageSample, n) {
			h := c.pages[pi].chunk(idx)
			ct := h.ctl.Load()
			if ctlState(ct) == stateLinked {
				a := max(now-int64(h.atime.Load()), 0)
				if ct&ctlClock == 0 {
					age = a
					break
				}
				youngest = min(youngest, a)
			}
			if idx++; idx == c.perPage {
				idx = 0
				if pi++; pi == len(c.pages) {
					pi = 0
				}
			}
		}
		if age < 0 && youngest != math.MaxInt64 {
			age = youngest
		}
	}
	c.age.Store(age)
	c.ageAt.Store(now)
	return age
}

// move moves one page of class src to class dst (nil: gives it back to the
// memory pool), evicting its items into victims; it reports whether a page
// moved. The source keeps at least minPages-1 pages. Busy pages (a chunk
// written or referenced) are skipped. The caller holds no class lock.
// Cost: a pass over a page's chunks per page tried, a pass over src's free
// list, an mmap.
func (s *Store) move(src, dst *class, now int64, victims []Victim, minPages int) ([]Victim, bool) {
	src.mu.Lock()
	if len(src.pages) < minPages || s.closed.Load() {
		src.mu.Unlock()
		return victims, false
	}
	var p *page
	for _, i := range src.moveCandidates(dst != nil) {
		var ok bool
		victims, ok = src.evacuate(src.pages[i], now, victims)
		if ok {
			p = src.pages[i]
			src.detach(i)
			break
		}
		s.slabs.busyPages.Add(1)
	}
	src.mu.Unlock()
	if p == nil {
		return victims, false
	}
	s.replacePage(p, dst, time.Now())
	s.slabs.moved.Add(1)
	return victims, true
}

// moveCandidates returns up to movePageTries page indices of the class to
// try moving: pages without linked items first, then the pages from the
// CLOCK hand on (the oldest items). keepFresh leaves out the pages moved
// in whose chunks the class has not begun to use: such a page was just
// given to the class for an allocation that has yet to take its chunk,
// and moving it on to another class would leave that allocation with
// nothing. The caller holds mu.
func (c *class) moveCandidates(keepFresh bool) []int {
	var out []int
	for i, p := range c.pages {
		if c.spare(p) && len(out) < movePageTries {
			out = append(out, i)
		}
	}
	for k := 0; k < len(c.pages) && len(out) < movePageTries; k++ {
		i := (c.handPage + k) % len(c.pages)
		if p := c.pages[i]; !c.spare(p) && !(keepFresh && slices.Contains(c.fresh, p)) {
			out = append(out, i)
		}
	}
	return out
}

// spare reports whether page p of the class holds no linked item and is
// not a page whose never-used chunks the class is about to hand out (its
// newest page or one moved in): moving it costs no eviction. The caller
// holds mu.
func (c *class) spare(p *page) bool {
	if p.live.Load() != 0 || p == c.bump {
		return false
	}
	for _, f := range c.fresh {
		if f == p {
			return false
		}
	}
	return true
}

// evacuate evicts every linked item of page p into victims, unless a chunk
// is being written or referenced, in which case the page is busy and it
// returns false (items it evicted before it found the reference stay
// evicted, their chunks back on the free list). On success every chunk of
// p is Free or Dead and unreferenced, and stays so: no chunk can be
// acquired, unlinked or allocated again, so nobody touches the page's
// memory after the move but lock-free readers whose compare-and-swap
// fails. A Dead, unreferenced chunk is one whose last holder waits for mu
// to free it: free finds the page detached and leaves it. The caller
// holds mu, then detaches p.
func (c *class) evacuate(p *page, now int64, victims []Victim) ([]Victim, bool) {
	n := c.usedChunks(p)
	// A cheap first pass, so that a busy page loses no item.
	for idx := range n {
		ct := p.chunk(idx).ctl.Load()
		if st := ctlState(ct); st == stateWriting || (st != stateFree && ctlRefs(ct) != 0) {
			return victims, false
		}
	}
	var killed []int
	for idx := range n {
		h := p.chunk(idx)
		ct := h.ctl.Load()
		switch st := ctlState(ct); {
		case st == stateFree:
			continue // under mu, nothing takes it
		case st == stateWriting || ctlRefs(ct) != 0:
			// A reference taken since the first pass (Acquire of a
			// Linked item, or Unlink's own, held while it releases):
			// its holder would release it in retired memory, or read a
			// Linked item killed under it. The page is busy.
		case st == stateDead:
			continue // its pending free finds the page detached
		default: // Linked, unreferenced
			if v, ok := c.kill(p, h, ct, p.loc(idx, c.s.chunkBits), causeMove, now); ok {
				victims = append(victims, v)
				killed = append(killed, idx)
				continue
			}
			// A reader acquired it, or it was unlinked, since the load.
		}
		// Busy: give the chunks killed so far to the free list (their
		// items are evicted all the same) and leave the page in the
		// class.
		for _, k := range killed {
			kh := p.chunk(k)
			kh.ctl.Store(ctlFor(ctlGen(kh.ctl.Load()), stateFree, 0))
			c.pushFree(kh, p.loc(k, c.s.chunkBits))
		}
		return victims, false
	}
	return victims, true
}

// usedChunks returns how many chunks of page p, from the first, the class
// may have handed out: none of a page moved in and not begun, bumpNext of
// the newest page, all of the others. The chunks past them are Free and
// were never written, so evacuate need not read them (reading untouched
// memory of a page costs a page fault per 4 KiB). The caller holds mu.
func (c *class) usedChunks(p *page) int {
	switch {
	case p == c.bump:
		return c.bumpNext
	case slices.Contains(c.fresh, p):
		return 0
	}
	return c.perPage
}

// detach removes page i from the class (after evacuate): it takes the
// page's chunks off the free list and marks the page detached, so that no
// free lists one of them again, keeping the free-list invariant (see
// class); it keeps the CLOCK hand on the same chunk where it can. The
// caller holds mu, and replaces the page in the page table only after.
// Cost: a pass over the free list.
func (c *class) detach(i int) {
	p := c.pages[i]
	var prev *header
	for loc := c.freeHead; loc != NotFound; {
		// By the invariant, loc is on a page of the class, which the
		// page table still names.
		lp, idx, _ := c.s.lookup(loc)
		h := lp.chunk(idx)
		next := uint32(h.cas)
		if lp == p {
			if prev == nil {
				c.freeHead = next
			} else {
				prev.cas = uint64(next)
			}
			c.nfree--
		} else {
			prev = h
		}
		loc = next
	}
	p.detached = true
	c.pages = append(c.pages[:i], c.pages[i+1:]...)
	c.npages.Add(-1)
	for j, f := range c.fresh {
		if f == p {
			c.fresh = append(c.fresh[:j], c.fresh[j+1:]...)
			break
		}
	}
	if c.bump == p {
		c.bump, c.bumpNext = nil, 0
	}
	switch {
	case c.handPage > i:
		c.handPage--
	case c.handPage == i:
		c.handIdx = 0
	}
	if c.handPage >= len(c.pages) {
		c.handPage, c.handIdx = 0, 0
	}
	c.ageAt.Store(0)
}

// replacePage gives page p's number fresh memory owned by class dst (nil:
// unmaps it and frees the number and its share of the memory limit), and
// retires p's memory. p has left its class (detach) and holds no item.
func (s *Store) replacePage(p *page, dst *class, now time.Time) {
	s.pageMu.Lock()
	t := s.table.Load()
	var np *page
	if dst != nil {
		mem, err := mapPage(s.cfg.pageSize)
		if err == nil {
			np = newPageOn(mem, p.num, dst)
		}
	}
	t.pages[p.num].Store(np)
	if np == nil {
		s.freeNums = append(s.freeNums, p.num)
		s.npages--
		s.mapped.Add(-1)
	}
	s.retire(p.mem, now)
	s.pageMu.Unlock()
	if np != nil {
		dst.mu.Lock()
		dst.addPage(np)
		dst.mu.Unlock()
	}
}
