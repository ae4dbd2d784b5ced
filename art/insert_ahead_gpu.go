package art

import "errors"

// Pool growth ahead of an insert's plan. A pool that an insert must grow
// is grown when a round's plan has been read back: the host allocates the
// new buffers while the device waits (at 100M keys the N16 pool, about
// 2 GB, grows in the node round: several ms of allocation). growAhead
// finds, when the call starts, the pools that the batch may outgrow
// (aheadCaps: a bound on its new records of each kind past the pool's
// capacity but within half again, or twice for N16 to N256), and
// allocates their buffers on
// another goroutine while the host packs and uploads the keys and the
// device sorts them; adoptAhead then swaps them in (a queued device copy
// of each, as ensurePool's). The exact reservations after the plans stay
// as they were: they find the room there.

// aheadPools is the growth started by growAhead: the buffers of each kind
// being allocated, ready once done is closed.
type aheadPools struct {
	done chan struct{}
	caps [numKinds + 1]uint64 // the capacities asked for; 0: none
	bufs [numKinds + 1]poolBufs
	vm   [numKinds + 1]*poolVM // pools grown in place (g.inPlace): mapped, not allocated
	move [numKinds + 1]bool    // vm reserved here, for a pool of buffers that moves in place
}

// aheadCaps returns, per kind, the capacity to grow tree t's pool to
// before an insert of n keys whose leaves are likely of kind lk (0: not
// known), or 0 where no growth is started. The batch's new records of a
// kind are bounded by n (leaves, N4s: a new key adds at most one leaf and
// one inner node) and, for a larger node kind, by the live nodes of the
// smaller kinds (each grows at most once a batch). A pool is grown, to
// growCap's capacity for that bound, when the bound does not fit its
// capacity but fits half again as much (the growth allocates what the
// batch's first growth of the pool would), or, for N16 to N256, twice as
// much: their bound counts every live node of the smaller kinds, of which
// a batch grows few (at 100M random keys about 1.2M of 5.7M N4s become
// N16s), so a pool of a few GB grows beside the upload rather than while
// the device waits, at the cost of up to its size again when the batch
// needed less. An N16 to N256 pool smaller than aheadSmall's records whose
// bound passes even that is grown to the bound or aheadSmall, whichever
// is less (a small pool's growth costs little memory). Leaves and N4s
// keep half again: their bound is the batch's size, which a batch of
// present keys does not add. Cost: O(1).
func aheadCaps(t *devTree, n, lk int) [numKinds + 1]uint64 {
	var live, bound, caps [numKinds + 1]uint64
	for k := kindN4; k <= kindLV; k++ {
		live[k] = t.pools[k].hwm - t.pools[k].top
	}
	N := uint64(n)
	bound[kindN4] = N
	bound[kindN16] = min(N, live[kindN4])
	bound[kindN48] = min(N, live[kindN4]+live[kindN16])
	bound[kindN256] = min(N, live[kindN4]+live[kindN16]+live[kindN48])
	if lk != 0 {
		bound[lk] = N
	}
	for k := kindN4; k <= kindLV; k++ {
		p := &t.pools[k]
		if bound[k] == 0 || p.words == nil {
			continue
		}
		need := p.hwm
		if bound[k] > p.top {
			need += bound[k] - p.top
		}
		limit := growCap(p.cap, 0)
		if k >= kindN16 && k <= kindN256 {
			limit = 2 * p.cap
		}
		switch {
		case need > p.cap && need <= limit:
			caps[k] = growCap(p.cap, need)
		case need > limit && k >= kindN16 && k <= kindN256 && p.cap < aheadSmall(k):
			caps[k] = growCap(p.cap, min(need, aheadSmall(k)))
		}
	}
	return caps
}

// aheadSmallBytes is the size up to which an N16 to N256 pool whose bound
// passes twice its capacity is still grown ahead (aheadSmall): at 100M
// random keys the N48 pool (1906 records after the build) must grow to
// 5513 in the node round, a growth that held the device 1.4 to 1.8 ms
// there (H200, 2026-11-29) while allocations beside the upload cost the
// call nothing; a pool of this size is grown once, by at most this much.
const aheadSmallBytes = 64 << 20

// aheadSmall is the records of kind k in aheadSmallBytes.
func aheadSmall(k int) uint64 { return aheadSmallBytes / uint64(8*kindWords[k]) }

// growAhead starts the growth of the pools aheadCaps names, on another
// goroutine (allocations only: no stream calls). It returns nil when
// there is none (or growth is disabled). Cost: O(1) here; the allocations
// run beside the caller.
func (g *gpuEngine) growAhead(t *devTree, n, lk int) *aheadPools {
	if !g.aheadGrowth || g.failGrowth {
		return nil
	}
	caps := aheadCaps(t, n, lk)
	if caps == ([numKinds + 1]uint64{}) {
		return nil
	}
	a := &aheadPools{done: make(chan struct{}), caps: caps}
	for k := kindN4; k <= kindLV; k++ {
		if caps[k] != 0 {
			a.vm[k] = t.pools[k].vm // nil: a pool of buffers
			a.move[k] = a.vm[k] == nil && g.inPlace(t, k, caps[k])
		}
	}
	go func() {
		defer close(a.done)
		for k := kindN4; k <= kindLV; k++ {
			if caps[k] == 0 {
				continue
			}
			if a.move[k] {
				vm, err := newPoolVM(g.dev, k)
				if err != nil { // left to the exact reservations
					a.move[k] = false
					return
				}
				a.vm[k] = vm
			}
			if a.vm[k] != nil {
				if a.vm[k].grow(k, caps[k]) != nil { // left to the exact reservations
					return
				}
				continue
			}
			b, err := allocPool(g.dev, k, caps[k])
			if err != nil { // left to the exact reservations
				return
			}
			a.bufs[k] = b
		}
	}()
	return a
}

// ready reports whether a's allocations are done (adoptAhead would not
// wait). Cost: O(1).
func (a *aheadPools) ready() bool {
	select {
	case <-a.done:
		return true
	default:
		return false
	}
}

// adoptAhead waits for a's allocations and makes them tree t's pools (a
// queued device copy each, the old buffers retired; a pool in place only
// widens its views, and one that moves in place copies its records once). Out of memory there
// is no error: those pools grow, or fail, at the exact reservations. Cost:
// the wait, and the copies, queued.
func (g *gpuEngine) adoptAhead(t *devTree, a *aheadPools) error {
	if a == nil {
		return nil
	}
	<-a.done
	var err error
	for k := kindN4; k <= kindLV; k++ {
		b := a.bufs[k]
		switch {
		case a.move[k] && a.vm[k] == nil: // the goroutine stopped before it
		case a.move[k] && (err != nil || a.vm[k].capacity(k) <= t.pools[k].cap):
			err = errors.Join(err, a.vm[k].release())
		case a.move[k]:
			err = g.moveInPlace(t, k, a.vm[k])
		case a.vm[k] != nil:
			g.viewPool(t, k) // what was mapped, however far the growth got
		case b.words == nil:
		case err != nil || b.cap <= t.pools[k].cap:
			err = errors.Join(err, b.release())
		default:
			err = g.adoptPool(t, k, b)
		}
	}
	return err
}

// dropAhead waits for a's allocations and frees them (a batch that failed
// before adoptAhead), and the ranges reserved for pools that were to move
// in place; memory mapped for a pool in place stays mapped, unused, for
// its next growth. Cost: the wait and the frees.
func (g *gpuEngine) dropAhead(a *aheadPools) error {
	if a == nil {
		return nil
	}
	<-a.done
	var err error
	for k := range a.bufs {
		if a.bufs[k].words != nil {
			err = errors.Join(err, a.bufs[k].release())
		}
		if a.move[k] {
			err = errors.Join(err, a.vm[k].release())
		}
	}
	return err
}
