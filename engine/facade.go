package engine

import (
	"errors"
	"fmt"
	"sync"

	"github.com/warpkv/warpkv/gpu"
)

// ErrClosed is matched (errors.Is) by the error of every call on a closed
// engine, whatever the package: art, btree, hashindex, mpt and stm wrap it
// with the engine's name and the operation, e.g. "btree: get: engine
// closed".
var ErrClosed = errors.New("engine closed")

// ErrOpen is matched (errors.Is) by the error of Open or OpenOn on a
// facade that is already open.
var ErrOpen = errors.New("engine already open")

// Facade is the state every engine facade shares: its placement, its
// engine (one of two implementations of an internal interface E), a lock
// that serializes the batches that change the engine (reads may share it),
// the closed state and the timings of the latest batch. An engine's
// exported type embeds it, and so gets Backend, Reason, LastBatch and
// Close; the package functions Open, Lock and RLock drive the rest, so
// that the embedding type's method set holds only the Reporter methods.
//
// The zero value is a closed facade; Open opens it. It must not be copied
// after Open.
type Facade[E any] struct {
	mu    sync.RWMutex
	name  string
	place Placement
	eng   E
	open  bool
	free  func(E) error
	lastf func(E) Timings
	last  Last
}

// Spec says how Open places and starts an engine.
type Spec[E any] struct {
	// Name begins the engine's reasons and errors, e.g. "btree".
	Name string
	// Device is the device option (see Place); GPU, when set, an open
	// device the caller keeps.
	Device string
	GPU    *gpu.Device
	// Start builds the engine on the placement; Open releases the
	// placement when it fails.
	Start func(Placement) (E, error)
	// Free frees the engine (Close); nil: nothing to free.
	Free func(E) error
	// Last, when set, reads the engine's own timings of its latest batch
	// (called under the read lock); nil: the timings given to Record.
	Last func(E) Timings
}

// Open places the engine (Place(s.Name, s.Device, s.GPU)) and starts it
// with s.Start (on an open facade it fails as OpenOn does). Cost: Place's
// and Start's.
func Open[E any](f *Facade[E], s Spec[E]) error {
	p, err := Place(s.Name, s.Device, s.GPU)
	if err != nil {
		return err
	}
	return OpenOn(f, p, s)
}

// OpenOn is Open on a placement the caller resolved (s.Device and s.GPU
// are ignored); f owns p from then on and releases it at Close, or at once
// when s.Start fails. On a facade that is already open it starts nothing,
// releases p and returns an error matching ErrOpen: the open engine stays
// as it was (Close it first to open another). s.Start runs under f's
// write lock, so calls made meanwhile wait for the engine.
func OpenOn[E any](f *Facade[E], p Placement, s Spec[E]) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.open {
		return errors.Join(fmt.Errorf("%s: open: %w", f.name, ErrOpen), p.Release())
	}
	e, err := s.Start(p)
	if err != nil {
		return errors.Join(err, p.Release())
	}
	f.name, f.place, f.eng, f.open, f.free, f.lastf = s.Name, p, e, true, s.Free, s.Last
	f.last.Set(Timings{})
	return nil
}

// OpenFresh is Open for an engine that later builds more engines like
// its first on the same placement (a ...Context Build fills a new engine
// beside the old one, then Replaces it): newEngine builds one on a
// placement, and s.Start is set to it. It returns the engine Open started
// and fresh, which builds another empty one on the facade's placement (the
// caller frees it, or hands it to Replace). Cost: Open's; fresh: newEngine's.
func OpenFresh[E any](f *Facade[E], s Spec[E], newEngine func(Placement) (E, error)) (e E, fresh func() (E, error), err error) {
	var place Placement
	s.Start = func(p Placement) (E, error) {
		place = p
		return newEngine(p)
	}
	if err := Open(f, s); err != nil {
		return e, nil, err
	}
	f.mu.RLock()
	e = f.eng
	f.mu.RUnlock()
	return e, func() (E, error) { return newEngine(place) }, nil
}

// Lock takes f's write lock for a batch that changes the engine and
// returns the engine; on a closed facade it returns an error matching
// ErrClosed, naming the engine and op, and holds no lock. Unlock releases
// it. Cost: one lock.
func Lock[E any](f *Facade[E], op string) (E, error) {
	f.mu.Lock()
	return f.engineOr(op, f.mu.Unlock)
}

// Unlock releases the lock Lock took.
func Unlock[E any](f *Facade[E]) { f.mu.Unlock() }

// RLock is Lock for reads, which run concurrently with each other; RUnlock
// releases it.
func RLock[E any](f *Facade[E], op string) (E, error) {
	f.mu.RLock()
	return f.engineOr(op, f.mu.RUnlock)
}

// engineOr returns the engine of f, whose lock the caller took; on a
// closed facade it releases the lock with unlock and returns the error of
// a call op.
func (f *Facade[E]) engineOr(op string, unlock func()) (E, error) {
	if !f.open {
		unlock()
		var zero E
		return zero, f.closedErr(op)
	}
	return f.eng, nil
}

// RUnlock releases the lock RLock took.
func RUnlock[E any](f *Facade[E]) { f.mu.RUnlock() }

// Closed returns the error of a call op on the closed facade f (one that
// matches ErrClosed), for callers that check before taking the lock.
func Closed[E any](f *Facade[E], op string) error { return f.closedErr(op) }

func (f *Facade[E]) closedErr(op string) error {
	name := f.name
	if name == "" {
		name = "engine"
	}
	return fmt.Errorf("%s: %s: %w", name, op, ErrClosed)
}

// Record sets the timings LastBatch returns (for a Spec without Last).
// Cost: O(1).
func Record[E any](f *Facade[E], t Timings) { f.last.Set(t) }

// Backend says which backend the engine runs on (after Close, the one it
// ran on). Cost: O(1).
func (f *Facade[E]) Backend() gpu.Backend {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.place.Backend
}

// Reason is a sentence saying which backend was chosen and why. Cost: O(1).
func (f *Facade[E]) Reason() string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.place.Reason
}

// LastBatch is the time breakdown of the latest batch (see Timings); the
// zero Timings before the first batch and after Close. Cost: O(1).
func (f *Facade[E]) LastBatch() Timings {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if !f.open {
		return Timings{}
	}
	if f.lastf != nil {
		return f.lastf(f.eng)
	}
	return f.last.Get()
}

// Close waits for the calls in flight, frees the engine's memory, and its
// device if the engine opened it. Every later call returns an error
// matching ErrClosed; closing twice is a no-op. Cost: the engine's
// teardown.
func (f *Facade[E]) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.open {
		return nil
	}
	f.open = false
	var err error
	if f.free != nil {
		err = f.free(f.eng)
	}
	var zero E
	f.eng = zero
	err = errors.Join(err, f.place.Release())
	if err != nil {
		return fmt.Errorf("%s: close: %w", f.name, err)
	}
	return nil
}

// PlacementOf returns where f's engine runs (its device on the GPU
// backend). Cost: O(1).
func PlacementOf[E any](f *Facade[E]) Placement {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.place
}

// HostArraysOf returns a new, empty set of pinned host arrays on f's
// device when f's engine runs on the GPU, else nil: the memory of an
// answer a caller reuses (art's and btree's NewResult). Cost: O(1).
func HostArraysOf[E any](f *Facade[E]) *gpu.HostArrays {
	p := PlacementOf(f)
	if p.Backend != gpu.BackendGPU || p.Device == nil {
		return nil
	}
	return gpu.NewHostArrays(p.Device)
}

// LockAny takes f's write lock whatever f's state and says whether f is
// open, for calls that also run on a closed engine (freeing a buffer the
// engine handed out, reading counters). Unlock releases it.
func LockAny[E any](f *Facade[E]) bool {
	f.mu.Lock()
	return f.open
}

// Live says whether f is open; the caller holds f's lock (Lock, RLock or
// LockAny).
func Live[E any](f *Facade[E]) bool { return f.open }

// Replace makes e the engine of f, for a call that built a new engine
// beside the old one (which the caller frees); the caller holds f's write
// lock (Lock). Close frees e. Cost: O(1).
func Replace[E any](f *Facade[E], e E) { f.eng = e }
