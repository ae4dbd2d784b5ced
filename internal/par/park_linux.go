package par

import (
	"sync/atomic"
	"syscall"
	"unsafe"
)

// osParkSupported reports whether this system can park a Pool's workers in
// the kernel (futexes) rather than in Go's scheduler.
const osParkSupported = true

const (
	futexWaitPrivate = 128 // FUTEX_WAIT | FUTEX_PRIVATE_FLAG
	futexWakePrivate = 129 // FUTEX_WAKE | FUTEX_PRIVATE_FLAG
)

// futexWait blocks the calling thread while *w holds v, until a futexWake
// of w (or a signal: callers recheck their condition). The goroutine stays
// on its thread in a system call, so the scheduler's threads and Ps are
// not involved in waking it. Cost: one system call.
func futexWait(w *atomic.Uint32, v uint32) {
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWaitPrivate, uintptr(v), 0, 0, 0)
}

// futexWake wakes every thread blocked in futexWait on w with one call:
// the kernel readies each on its own CPU, where Go's scheduler starts one
// idle thread after another. Cost: one system call.
func futexWake(w *atomic.Uint32) {
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(w)), futexWakePrivate, uintptr(1<<31-1), 0, 0, 0)
}
