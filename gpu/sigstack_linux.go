//go:build linux && (amd64 || arm64)

package gpu

import (
	"syscall"
	"unsafe"
)

// kernelSigaction is the Linux kernel's struct sigaction on amd64 and
// arm64 (as rt_sigaction reads and writes it).
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// Values of the kernel's signal ABI.
const (
	saOnStack = 0x08000000 // SA_ONSTACK
	sigDfl    = 0          // SIG_DFL
	sigIgn    = 1          // SIG_IGN
	sigMax    = 64
)

// keepSignalsOnStack adds SA_ONSTACK to every installed signal handler
// that lacks it and returns how many it changed. The CUDA driver installs
// handlers of its own (seen for SIGTERM) without that flag and chains to
// the Go runtime's, which then runs on a goroutine's stack instead of the
// thread's signal stack and aborts the process ("non-Go code set up signal
// handler without SA_ONSTACK flag"): a SIGTERM to a process with a device
// open crashed it instead of ending it (or letting `warpkv serve` stop
// gracefully). Go's own handlers always carry the flag; only foreign ones
// change. Cost: two system calls per signal number.
func keepSignalsOnStack() int {
	changed := 0
	for sig := 1; sig <= sigMax; sig++ {
		if sig == int(syscall.SIGKILL) || sig == int(syscall.SIGSTOP) {
			continue
		}
		var sa kernelSigaction
		if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&sa)), 8, 0, 0); e != 0 {
			continue
		}
		if sa.handler == sigDfl || sa.handler == sigIgn || sa.flags&saOnStack != 0 {
			continue
		}
		sa.flags |= saOnStack
		if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&sa)), 0, 8, 0, 0); e == 0 {
			changed++
		}
	}
	return changed
}

// signalsOffStack returns the signal numbers whose installed handler
// lacks SA_ONSTACK (none after keepSignalsOnStack), for the tests.
func signalsOffStack() []int {
	var off []int
	for sig := 1; sig <= sigMax; sig++ {
		var sa kernelSigaction
		if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&sa)), 8, 0, 0); e != 0 {
			continue
		}
		if sa.handler != sigDfl && sa.handler != sigIgn && sa.flags&saOnStack == 0 {
			off = append(off, sig)
		}
	}
	return off
}
