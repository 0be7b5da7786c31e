package netloop

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The part of the io_uring ABI the loop uses (include/uapi/linux/io_uring.h),
// driven with raw system calls: io_uring_setup, mmap, io_uring_enter,
// io_uring_register.

const (
	setupCQSize       = 1 << 3
	setupSubmitAll    = 1 << 7
	setupCoopTaskrun  = 1 << 8
	setupTaskrunFlag  = 1 << 9
	setupSingleIssuer = 1 << 12
	setupDeferTaskrun = 1 << 13

	featSingleMmap = 1 << 0
	featNoDrop     = 1 << 1
	featExtArg     = 1 << 8
	featCQESkip    = 1 << 11
	featMinTimeout = 1 << 15

	enterGetEvents      = 1 << 0
	enterExtArg         = 1 << 3
	enterRegisteredRing = 1 << 4

	sqeIOHardlink     = 1 << 3
	sqeBufferSelect   = 1 << 5
	sqeCQESkipSuccess = 1 << 6

	opConnect  = 16
	opClose    = 19
	opSend     = 26
	opRecv     = 27
	opShutdown = 34

	recvMultishot = 1 << 1

	cqeFBuffer     = 1 << 0
	cqeFMore       = 1 << 1
	cqeBufferShift = 16

	offSQRing = 0
	offCQRing = 0x8000000
	offSQEs   = 0x10000000

	registerRingFDs    = 20
	registerPbufRing   = 22
	unregisterPbufRing = 23
)

type sqOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqOffsets
	cqOff                                                                  cqOffsets
}

// sqe is struct io_uring_sqe (64 bytes).
type sqe struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32
	userData    uint64
	bufIndex    uint16 // or buf_group
	personality uint16
	fileIndex   uint32
	addr3       uint64
	_           uint64
}

// cqe is struct io_uring_cqe (16 bytes).
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// getEventsArg is struct io_uring_getevents_arg.
type getEventsArg struct {
	sigmask     uint64
	sigmaskSz   uint32
	minWaitUsec uint32
	ts          uint64
}

type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

type rsrcUpdate struct {
	offset, resv uint32
	data         uint64
}

var (
	_ [64 - unsafe.Sizeof(sqe{})]byte
	_ [unsafe.Sizeof(sqe{}) - 64]byte
	_ [120 - unsafe.Sizeof(uringParams{})]byte
	_ [unsafe.Sizeof(uringParams{}) - 120]byte
	_ [24 - unsafe.Sizeof(getEventsArg{})]byte
)

// uring is one io_uring instance: its rings mapped into memory.
type uring struct {
	fd         int
	flags      uint32 // setup flags the kernel accepted
	features   uint32
	enterFd    uintptr
	enterFlags uintptr
	mems       [][]byte // mappings to undo

	sqHead, sqTail *uint32
	sqMask, sqSize uint32
	sqes           []sqe
	sqLocal        uint32 // our tail: SQEs filled so far

	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []cqe

	// Kept here (heap) for the kernel to read during io_uring_enter.
	arg getEventsArg
	ts  unix.Timespec
}

// setupFlags are tried in order: the first is the fast one (completions
// only run when this thread waits for them, and a wait for several does
// not wake it for each), the others are fallbacks for older kernels.
var setupFlags = []uint32{
	setupSingleIssuer | setupDeferTaskrun,
	setupCoopTaskrun | setupTaskrunFlag,
	0,
}

// newURing sets up a ring. The calling goroutine must be locked to its OS
// thread: with SINGLE_ISSUER only this thread may submit and wait.
func newURing(entries, cqEntries uint32) (*uring, error) {
	var p uringParams
	var fd uintptr
	var errno syscall.Errno
	for _, f := range setupFlags {
		p = uringParams{flags: f | setupCQSize | setupSubmitAll, cqEntries: cqEntries}
		fd, _, errno = unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p)), 0)
		if errno != unix.EINVAL {
			break
		}
	}
	if errno != 0 {
		return nil, setupError(errno)
	}
	r := &uring{fd: int(fd), flags: p.flags, features: p.features, enterFd: fd}
	if err := r.mapRings(&p); err != nil {
		r.close()
		return nil, err
	}
	// A registered ring fd spares io_uring_enter the descriptor lookup.
	up := rsrcUpdate{offset: ^uint32(0), data: uint64(fd)}
	if n, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, fd, registerRingFDs, uintptr(unsafe.Pointer(&up)), 1, 0, 0); e == 0 && n == 1 {
		r.enterFd = uintptr(up.offset)
		r.enterFlags = enterRegisteredRing
	}
	return r, nil
}

// setupError explains why io_uring_setup failed.
func setupError(errno syscall.Errno) error {
	switch errno {
	case unix.ENOSYS:
		return fmt.Errorf("io_uring_setup: %w: the kernel has no io_uring, or a seccomp filter hides it", errno)
	case unix.EPERM, unix.EACCES:
		if v := ioUringDisabled(); v != "" && v != "0" {
			return fmt.Errorf("io_uring_setup: %w: io_uring is restricted on this machine (/proc/sys/kernel/io_uring_disabled is %s)", errno, v)
		}
		return fmt.Errorf("io_uring_setup: %w: a seccomp filter (container runtime) or a security module refuses io_uring", errno)
	}
	return fmt.Errorf("io_uring_setup: %w", errno)
}

// ioUringDisabled returns the value of kernel.io_uring_disabled, or "".
func ioUringDisabled() string {
	b, err := os.ReadFile("/proc/sys/kernel/io_uring_disabled")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (r *uring) mmap(off int64, size int) ([]byte, error) {
	b, err := unix.Mmap(r.fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("io_uring mmap: %w", err)
	}
	r.mems = append(r.mems, b)
	return b, nil
}

func (r *uring) mapRings(p *uringParams) error {
	sqSize := int(p.sqOff.array + p.sqEntries*4)
	cqSize := int(p.cqOff.cqes + p.cqEntries*uint32(unsafe.Sizeof(cqe{})))
	if p.features&featSingleMmap != 0 {
		sqSize = max(sqSize, cqSize)
	}
	sq, err := r.mmap(offSQRing, sqSize)
	if err != nil {
		return err
	}
	cq := sq
	if p.features&featSingleMmap == 0 {
		if cq, err = r.mmap(offCQRing, cqSize); err != nil {
			return err
		}
	}
	sqes, err := r.mmap(offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})))
	if err != nil {
		return err
	}
	u32 := func(b []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&b[off])) }
	r.sqHead, r.sqTail = u32(sq, p.sqOff.head), u32(sq, p.sqOff.tail)
	r.sqMask, r.sqSize = *u32(sq, p.sqOff.ringMask), p.sqEntries
	array := unsafe.Slice(u32(sq, p.sqOff.array), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&sqes[0])), p.sqEntries)
	r.cqHead, r.cqTail = u32(cq, p.cqOff.head), u32(cq, p.cqOff.tail)
	r.cqMask = *u32(cq, p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&cq[p.cqOff.cqes])), p.cqEntries)
	r.sqLocal = atomic.LoadUint32(r.sqTail)
	return nil
}

// reserve returns the index of the first of n consecutive free SQEs,
// zeroed, submitting what is queued when the ring is full; ok is false when
// there is still no room.
func (r *uring) reserve(n uint32) (first uint32, ok bool) {
	if r.sqLocal-atomic.LoadUint32(r.sqHead)+n > r.sqSize {
		r.submit()
		if r.sqLocal-atomic.LoadUint32(r.sqHead)+n > r.sqSize {
			return 0, false
		}
	}
	first = r.sqLocal
	for i := range n {
		r.sqes[(first+i)&r.sqMask] = sqe{}
	}
	r.sqLocal += n
	return first, true
}

// at returns SQE i (from reserve).
func (r *uring) at(i uint32) *sqe { return &r.sqes[i&r.sqMask] }

// submit hands the queued SQEs to the kernel without waiting.
func (r *uring) submit() syscall.Errno {
	atomic.StoreUint32(r.sqTail, r.sqLocal)
	n := r.sqLocal - atomic.LoadUint32(r.sqHead)
	if n == 0 {
		return 0
	}
	_, _, e := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, r.enterFd, uintptr(n), 0, r.enterFlags, 0, 0)
	return e
}

// enter submits the queued SQEs and collects completions: with
// minComplete 0 it does not wait; else it waits until minComplete are
// there or timeout passed; with minWait (kernel 6.12's batch timeout), it
// holds out for minComplete only for minWait, then returns with whatever
// came, or waits up to timeout for one.
func (r *uring) enter(minComplete uint32, timeout, minWait time.Duration) syscall.Errno {
	atomic.StoreUint32(r.sqTail, r.sqLocal)
	n := uintptr(r.sqLocal - atomic.LoadUint32(r.sqHead))
	flags := r.enterFlags | enterGetEvents
	if minComplete == 0 {
		_, _, e := unix.RawSyscall6(unix.SYS_IO_URING_ENTER, r.enterFd, n, 0, flags, 0, 0)
		return e
	}
	r.ts = unix.NsecToTimespec(int64(timeout))
	r.arg = getEventsArg{ts: uint64(uintptr(unsafe.Pointer(&r.ts))), minWaitUsec: uint32(minWait / time.Microsecond)}
	_, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, r.enterFd, n, uintptr(minComplete), flags|enterExtArg,
		uintptr(unsafe.Pointer(&r.arg)), unsafe.Sizeof(r.arg))
	return e
}

func (r *uring) close() {
	if r.fd >= 0 {
		unix.Close(r.fd)
		r.fd = -1
	}
	for _, m := range r.mems {
		unix.Munmap(m)
	}
	r.mems = nil
}

// bufRing is a provided-buffer ring (group 0): buffers the kernel picks
// from for multishot receives, given back by the loop after each use. Its
// memory is mmap'd (page-aligned, never moved, never freed while the
// kernel may still write into it).
type bufRing struct {
	ring      []byte // entries: struct io_uring_buf {addr u64, len u32, bid u16, resv u16}
	bufs      []byte
	size      int
	mask      uint16
	tail      uint16 // local tail
	published uint16
}

func newBufRing(r *uring, count, size int) (*bufRing, error) {
	ring, err := unix.Mmap(-1, 0, max(count*16, os.Getpagesize()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("buffer ring: %w", err)
	}
	bufs, err := unix.Mmap(-1, 0, count*size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		unix.Munmap(ring)
		return nil, fmt.Errorf("buffers: %w", err)
	}
	b := &bufRing{ring: ring, bufs: bufs, size: size, mask: uint16(count - 1)}
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&ring[0]))), ringEntries: uint32(count)}
	if _, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), registerPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0); e != 0 {
		b.free()
		return nil, fmt.Errorf("io_uring: registering a provided-buffer ring (Linux 5.19): %w", e)
	}
	for i := range count {
		b.put(uint16(i))
	}
	b.publish()
	return b, nil
}

// buf returns buffer bid.
func (b *bufRing) buf(bid uint16) []byte {
	off := int(bid) * b.size
	return b.bufs[off : off+b.size : off+b.size]
}

// put gives buffer bid back (the kernel sees it after publish).
func (b *bufRing) put(bid uint16) {
	e := unsafe.Pointer(&b.ring[int(b.tail&b.mask)*16])
	*(*uint64)(e) = uint64(uintptr(unsafe.Pointer(&b.bufs[int(bid)*b.size])))
	*(*uint32)(unsafe.Add(e, 8)) = uint32(b.size)
	*(*uint16)(unsafe.Add(e, 12)) = bid
	b.tail++
}

// publish makes the given-back buffers visible: the ring's tail is the u16
// at offset 14 (entry 0's reserved field); it is stored with a release
// store of the 32-bit word at offset 12, which keeps entry 0's bid.
func (b *bufRing) publish() {
	if b.tail == b.published {
		return
	}
	var w [4]byte
	binary.NativeEndian.PutUint16(w[0:], *(*uint16)(unsafe.Pointer(&b.ring[12])))
	binary.NativeEndian.PutUint16(w[2:], b.tail)
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&b.ring[12])), binary.NativeEndian.Uint32(w[:]))
	b.published = b.tail
}

// unregister detaches the ring from r.
func (b *bufRing) unregister(r *uring) {
	reg := bufReg{}
	unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), unregisterPbufRing, uintptr(unsafe.Pointer(&reg)), 1, 0, 0)
}

func (b *bufRing) free() {
	unix.Munmap(b.ring)
	unix.Munmap(b.bufs)
}
