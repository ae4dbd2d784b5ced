package gpu

import (
	"time"
	"unsafe"
)

// Stream is a CUDA stream: work queued on it runs in order, and overlaps with
// work on other streams. A nil *Stream means the legacy default stream.
type Stream struct {
	d *Device
	h uintptr
}

func (s *Stream) handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}

// NewStream creates a non-blocking stream (it does not synchronize with the
// legacy default stream).
func (d *Device) NewStream() (*Stream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	var h uintptr
	const nonBlocking = 1 // CU_STREAM_NON_BLOCKING
	if err := d.do("cuStreamCreate", func() uint32 {
		return call(d.drv.cuStreamCreate, uintptr(unsafe.Pointer(&h)), nonBlocking)
	}); err != nil {
		return nil, err
	}
	d.streams[h] = struct{}{}
	return &Stream{d: d, h: h}, nil
}

// Synchronize waits until all work queued on the stream has finished and
// returns the first error raised by it.
func (s *Stream) Synchronize() error {
	return s.d.do("cuStreamSynchronize", func() uint32 { return call(s.d.drv.cuStreamSynchronize, s.h) })
}

// Wait makes future work on s wait for event e.
func (s *Stream) Wait(e *Event) error {
	return s.d.do("cuStreamWaitEvent", func() uint32 { return call(s.d.drv.cuStreamWaitEvent, s.h, e.h, 0) })
}

// Close destroys the stream after its queued work completes.
func (s *Stream) Close() error {
	if s == nil || s.h == 0 {
		return nil
	}
	h := s.h
	s.h = 0
	return releaseHandle(s.d, s.d.streams, h, "cuStreamDestroy", s.d.drv.cuStreamDestroy)
}

// Event marks a point in a stream; pairs of events time device work.
type Event struct {
	d *Device
	h uintptr
}

// NewEvent creates an event that records timing.
func (d *Device) NewEvent() (*Event, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.checkOpen(); err != nil {
		return nil, err
	}
	var h uintptr
	if err := d.do("cuEventCreate", func() uint32 {
		return call(d.drv.cuEventCreate, uintptr(unsafe.Pointer(&h)), 0)
	}); err != nil {
		return nil, err
	}
	d.events[h] = struct{}{}
	return &Event{d: d, h: h}, nil
}

// Record captures the work queued on s so far (nil: the default stream).
func (e *Event) Record(s *Stream) error {
	return e.d.do("cuEventRecord", func() uint32 { return call(e.d.drv.cuEventRecord, e.h, s.handle()) })
}

// Synchronize waits for the recorded work to finish.
func (e *Event) Synchronize() error {
	return e.d.do("cuEventSynchronize", func() uint32 { return call(e.d.drv.cuEventSynchronize, e.h) })
}

// Done reports whether the recorded work has finished, without blocking.
func (e *Event) Done() (bool, error) {
	var r uint32
	err := e.d.do("cuEventQuery", func() uint32 {
		r = call(e.d.drv.cuEventQuery, e.h)
		if r == cudaErrNotReady {
			return 0
		}
		return r
	})
	return err == nil && r == 0, err
}

// Elapsed returns the device time between two recorded events; both must
// have completed (call end.Synchronize first). Resolution is about 0.5 us.
func Elapsed(start, end *Event) (time.Duration, error) {
	var ms float32
	err := start.d.do("cuEventElapsedTime", func() uint32 {
		return call(start.d.drv.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), start.h, end.h)
	})
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}

// Close destroys the event.
func (e *Event) Close() error {
	if e == nil || e.h == 0 {
		return nil
	}
	h := e.h
	e.h = 0
	return releaseHandle(e.d, e.d.events, h, "cuEventDestroy", e.d.drv.cuEventDestroy)
}
