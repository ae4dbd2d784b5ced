//go:build linux

package protocol

// A minimal io_uring (Linux 6.1 and later) for the event loops'
// Config.LoopIO "uring" mode: the rings are mapped from the kernel and
// driven with raw io_uring_setup, io_uring_enter and io_uring_register
// system calls; the ring heads and tails are read and written with
// sync/atomic. Only what the loops use is here: poll, recv, sendmsg and
// cancel requests, one submission and completion queue per loop.

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// io_uring ABI values (include/uapi/linux/io_uring.h).
const (
	uringSetupCQSize       = 1 << 3
	uringSetupRDisabled    = 1 << 6
	uringSetupSubmitAll    = 1 << 7
	uringSetupSingleIssuer = 1 << 12
	uringSetupDeferTaskrun = 1 << 13

	uringFeatSingleMmap = 1 << 0
	uringFeatNoDrop     = 1 << 1
	uringFeatExtArg     = 1 << 8

	uringEnterGetEvents = 1 << 0
	uringEnterExtArg    = 1 << 3

	uringRegisterEnableRings = 12

	uringOffSQRing = 0
	uringOffCQRing = 0x8000000
	uringOffSQEs   = 0x10000000

	uringOpPollAdd     = 6
	uringOpSendmsg     = 9
	uringOpAsyncCancel = 14
	uringOpSend        = 26
	uringOpRecv        = 27

	uringPollAddMulti = 1 // len of a poll request: multishot
	uringCQEFMore     = 1 << 1

	uringPollIn    = 0x1
	uringPollOut   = 0x4
	uringPollRDHup = 0x2000
)

// uringParams is struct io_uring_params.
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  struct {
		head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
		userAddr                                                        uint64
	}
	cqOff struct {
		head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
		userAddr                                                        uint64
	}
}

// uringSQE is struct io_uring_sqe (64 bytes).
type uringSQE struct {
	opcode, flags uint8
	ioprio        uint16
	fd            int32
	off           uint64
	addr          uint64
	len           uint32
	opFlags       uint32 // poll32_events, msg_flags, cancel_flags
	userData      uint64
	bufIndex      uint16
	personality   uint16
	spliceFdIn    int32
	addr3         uint64
	pad           uint64
}

// uringCQE is struct io_uring_cqe (16 bytes).
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// uringGeteventsArg is struct io_uring_getevents_arg.
type uringGeteventsArg struct {
	sigmask     uint64
	sigmaskSz   uint32
	minWaitUsec uint32
	ts          uint64
}

// uring is one io_uring instance with its rings mapped, used by one
// goroutine (its loop). In the LoopIOUringPoll mode that goroutine is locked
// to its thread (the ring is set up with IORING_SETUP_SINGLE_ISSUER and
// IORING_SETUP_DEFER_TASKRUN: completions are posted only when that
// thread enters the ring, and no other thread is interrupted for them).
type uring struct {
	fd      int
	ringMem []byte // the SQ and CQ rings (one mapping)
	sqeMem  []byte

	sqHead, sqTail *uint32
	sqMask         uint32
	sqes           []uringSQE
	tail           uint32 // next SQE to fill (published to *sqTail by publish)

	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []uringCQE

	// The timeout of enterTimeout, off the goroutine's stack (the kernel
	// reads it through a pointer kept as an integer).
	ts  unix.Timespec
	arg uringGeteventsArg
}

// uringEntries is the submission queue size of a loop's ring; its
// completion queue has 8 times as many entries (multishot polls post one
// per wake-up of each connection).
const uringEntries = 1024

// newUring sets up a ring. With oneThread it is for one thread alone
// (IORING_SETUP_SINGLE_ISSUER, IORING_SETUP_DEFER_TASKRUN) and disabled
// until enable is called on that thread; without, any thread may enter
// it, and it is meant for requests that complete while they are
// submitted. Cost: three system calls and two mappings (about 200 KB).
func newUring(oneThread bool) (*uring, error) {
	p := uringParams{flags: uringSetupCQSize | uringSetupSubmitAll, cqEntries: 8 * uringEntries}
	if oneThread {
		p.flags |= uringSetupRDisabled | uringSetupSingleIssuer | uringSetupDeferTaskrun
	}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, uringEntries, uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, fmt.Errorf("protocol: io_uring_setup: %w", e)
	}
	r := &uring{fd: int(fd)}
	const need = uringFeatSingleMmap | uringFeatNoDrop | uringFeatExtArg
	if p.features&need != need {
		r.close()
		return nil, fmt.Errorf("protocol: io_uring features %#x lack %#x", p.features, need)
	}
	size := max(int(p.sqOff.array)+int(p.sqEntries)*4, int(p.cqOff.cqes)+int(p.cqEntries)*int(unsafe.Sizeof(uringCQE{})))
	mem, err := unix.Mmap(r.fd, uringOffSQRing, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("protocol: io_uring rings mmap: %w", err)
	}
	r.ringMem = mem
	sqeSize := int(p.sqEntries) * int(unsafe.Sizeof(uringSQE{}))
	smem, err := unix.Mmap(r.fd, uringOffSQEs, sqeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("protocol: io_uring SQEs mmap: %w", err)
	}
	r.sqeMem = smem
	at := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqHead, r.sqTail = at(p.sqOff.head), at(p.sqOff.tail)
	r.sqMask = *at(p.sqOff.ringMask)
	r.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&smem[0])), p.sqEntries)
	array := unsafe.Slice(at(p.sqOff.array), p.sqEntries)
	for i := range array {
		array[i] = uint32(i) // SQ slot i always holds SQE i
	}
	r.tail = atomic.LoadUint32(r.sqTail)
	r.cqHead, r.cqTail = at(p.cqOff.head), at(p.cqOff.tail)
	r.cqMask = *at(p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&mem[p.cqOff.cqes])), p.cqEntries)
	return r, nil
}

// enable starts the ring and makes the calling thread its only issuer.
// Cost: one system call.
func (r *uring) enable() error {
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), uringRegisterEnableRings, 0, 0, 0, 0)
	if e != 0 {
		return fmt.Errorf("protocol: io_uring enable rings: %w", e)
	}
	return nil
}

// close unmaps the rings and closes the ring (cancelling what is in
// flight).
func (r *uring) close() {
	if r.sqeMem != nil {
		unix.Munmap(r.sqeMem)
		r.sqeMem = nil
	}
	if r.ringMem != nil {
		unix.Munmap(r.ringMem)
		r.ringMem = nil
	}
	if r.fd >= 0 {
		unix.Close(r.fd)
		r.fd = -1
	}
}

// pending is the number of SQEs filled and not yet submitted.
func (r *uring) pending() uint32 { return r.tail - atomic.LoadUint32(r.sqHead) }

// sqe returns the next free SQE, zeroed, submitting the filled ones first
// when the queue is full. Cost: nothing, or one system call then.
func (r *uring) sqe() *uringSQE {
	for r.pending() >= uint32(len(r.sqes)) {
		if _, err := r.enter(r.pending(), 0, false); err != nil && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EBUSY) {
			panic(fmt.Sprintf("protocol: io_uring submission queue full: %v", err))
		}
	}
	s := &r.sqes[r.tail&r.sqMask]
	*s = uringSQE{}
	r.tail++
	atomic.StoreUint32(r.sqTail, r.tail)
	return s
}

// enter submits toSubmit SQEs and, with wait, blocks until at least one
// completion is ready; without, it posts the completions ready now. It
// reports how many SQEs the kernel took. Cost: one system call.
func (r *uring) enter(toSubmit, minComplete uint32, wait bool) (int, error) {
	var n uintptr
	var e unix.Errno
	if wait {
		n, _, e = unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), uintptr(minComplete), uringEnterGetEvents, 0, 0)
	} else {
		n, _, e = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), 0, uringEnterGetEvents, 0, 0)
	}
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// enterTimeout submits toSubmit SQEs and waits up to d nanoseconds for one
// completion (ETIME when none came). Cost: one system call.
func (r *uring) enterTimeout(toSubmit uint32, d int64) (int, error) {
	r.ts = unix.NsecToTimespec(d)
	r.arg = uringGeteventsArg{ts: uint64(uintptr(unsafe.Pointer(&r.ts)))}
	n, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(toSubmit), 1,
		uringEnterGetEvents|uringEnterExtArg, uintptr(unsafe.Pointer(&r.arg)), unsafe.Sizeof(r.arg))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// ready returns the completions posted and not yet consumed; consume(n)
// hands the first n back to the kernel.
func (r *uring) ready() (head, tail uint32) {
	return atomic.LoadUint32(r.cqHead), atomic.LoadUint32(r.cqTail)
}

// cqe returns the completion at ring position i (between ready's head and
// tail).
func (r *uring) cqe(i uint32) uringCQE { return r.cqes[i&r.cqMask] }

// consume marks the completions before head as read.
func (r *uring) consume(head uint32) { atomic.StoreUint32(r.cqHead, head) }
