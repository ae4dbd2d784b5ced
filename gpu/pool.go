package gpu

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Pool is an engine's scratch memory: named device buffers (and pinned
// host buffers) reused across batches and grown with headroom. It is used
// reserve-then-use: a batch first Reserves every buffer it will need, so
// that running out of memory fails there, before the batch has changed
// anything, with an error matching ErrOutOfMemory; the phases then Take
// their buffers, which allocates nothing. Buffers are bytes underneath and
// taken as any element type.
//
// Work that may still use a buffer is ordered on the pool's stream: growing
// a buffer synchronizes it first. A Pool is not safe for concurrent use;
// engines serialize their batches.
type Pool struct {
	d        *Device
	s        *Stream
	headroom func(bytes int) int
	dev      map[string]*Buffer[byte]
	host     map[string]*HostBuffer[byte]
}

// NewPool returns an empty pool on d whose buffers are used by work on s
// (not nil: growing a buffer synchronizes it). Buffers grow to bytes +
// bytes/8 unless SetHeadroom says otherwise. Cost: O(1); nothing is
// allocated until the first Reserve.
func NewPool(d *Device, s *Stream) *Pool {
	return &Pool{d: d, s: s, dev: map[string]*Buffer[byte]{}, host: map[string]*HostBuffer[byte]{}}
}

// SetHeadroom sets the size a buffer grows to when it must hold bytes
// (at least bytes). Cost: O(1).
func (p *Pool) SetHeadroom(f func(bytes int) int) { p.headroom = f }

// Device returns the pool's device.
func (p *Pool) Device() *Device { return p.d }

// Need is one buffer of a reservation: its name and its size in bytes.
type Need struct {
	Name  string
	Bytes int
}

// NeedOf is the Need of n elements of T named name.
func NeedOf[T any](name string, n int) Need { return Need{name, n * sizeOf[T]()} }

// grownSize is the size a buffer grows to when it must hold bytes.
func (p *Pool) grownSize(bytes int) int {
	if p.headroom != nil {
		return max(p.headroom(bytes), bytes)
	}
	return bytes + bytes/8
}

// grow makes device buffer name hold at least bytes (at least 1) and
// returns it. Cost: nothing when it is large enough, else a synchronization
// of the stream, a free and an allocation.
func (p *Pool) grow(name string, bytes int) (*Buffer[byte], error) {
	bytes = max(bytes, 1)
	b := p.dev[name]
	if b != nil && b.Len() >= bytes {
		return b, nil
	}
	if b != nil {
		if err := errors.Join(p.s.Synchronize(), b.Free()); err != nil {
			return nil, fmt.Errorf("gpu: pool: freeing %s: %w", name, err)
		}
		delete(p.dev, name)
	}
	size := p.grownSize(bytes)
	b, err := Alloc[byte](p.d, size)
	if err != nil {
		return nil, fmt.Errorf("gpu: pool: %s of %d bytes: %w", name, size, err)
	}
	p.dev[name] = b
	return b, nil
}

// Reserve makes every needed buffer hold at least its size, growing those
// that are smaller. It fails at the first buffer that cannot be allocated,
// naming it, with an error that matches ErrOutOfMemory when the device ran
// out; the buffers grown before stay in the pool. Cost: the allocations of
// the buffers that grow (each growth synchronizes the stream).
func (p *Pool) Reserve(needs ...Need) error {
	for _, n := range needs {
		if _, err := p.grow(n.Name, n.Bytes); err != nil {
			return err
		}
	}
	return nil
}

// Take returns the first n elements of T of buffer name. Reserve must have
// made it large enough: taking a buffer that was not reserved is a bug in
// the engine, and panics. Cost: O(1).
func Take[T any](p *Pool, name string, n int) *Buffer[T] {
	b := p.dev[name]
	if need := int64(n) * int64(sizeOf[T]()); b == nil || b.Bytes() < need {
		panic(fmt.Sprintf("gpu: pool: %s taken for %d bytes but not reserved", name, need))
	}
	return View[T](b, 0, n)
}

// Get reserves buffer name for n elements of T and takes it: for the
// temporaries of a call that changes nothing before them. Cost: as
// Reserve.
func Get[T any](p *Pool, name string, n int) (*Buffer[T], error) {
	if _, err := p.grow(name, n*sizeOf[T]()); err != nil {
		return nil, err
	}
	return Take[T](p, name, n), nil
}

// Host returns n elements of T of pinned host buffer name, grown (with the
// pool's headroom) when smaller. The caller makes sure no transfer still
// uses the buffer when it may grow. Cost: nothing when it is large enough,
// else a free and a cuMemHostAlloc (milliseconds).
func Host[T any](p *Pool, name string, n int) ([]T, error) {
	bytes := max(n*sizeOf[T](), 1)
	h := p.host[name]
	if h == nil || h.Len() < bytes {
		if err := h.Free(); err != nil {
			return nil, fmt.Errorf("gpu: pool: freeing pinned %s: %w", name, err)
		}
		delete(p.host, name)
		size := p.grownSize(bytes)
		var err error
		if h, err = AllocHost[byte](p.d, size); err != nil {
			return nil, fmt.Errorf("gpu: pool: pinned %s of %d bytes: %w", name, size, err)
		}
		p.host[name] = h
	}
	return viewHost[T](h.Slice(), n), nil
}

// Held returns the whole device buffer name as held (nil when there is
// none), for tests that poison scratch memory. Cost: O(1).
func (p *Pool) Held(name string) *Buffer[byte] { return p.dev[name] }

// Bytes returns the device bytes the pool holds. Cost: O(buffers).
func (p *Pool) Bytes() int64 {
	var n int64
	for _, b := range p.dev {
		n += b.Bytes()
	}
	return n
}

// Names returns the names of the device buffers held, sorted. Cost:
// O(buffers log buffers).
func (p *Pool) Names() []string { return slices.Sorted(maps.Keys(p.dev)) }

// Free synchronizes the stream and frees every buffer; the pool stays
// usable. Cost: a synchronization and a free per buffer.
func (p *Pool) Free() error {
	var err error
	if len(p.dev) > 0 && p.s != nil {
		err = p.s.Synchronize()
	}
	for name, b := range p.dev {
		err = errors.Join(err, b.Free())
		delete(p.dev, name)
	}
	for name, h := range p.host {
		err = errors.Join(err, h.Free())
		delete(p.host, name)
	}
	return err
}
