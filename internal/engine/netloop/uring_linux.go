package netloop

import (
	"math/bits"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/throng-io/throng/internal/rawsock"
)

// uringIO is the fast I/O layer. Each connection has one multishot receive
// armed for its whole life, fed from a provided-buffer ring, so a response
// costs no submission; a request is one SEND of the static request bytes
// with CQE_SKIP_SUCCESS, so a sent request costs no completion. Connects
// are IORING_OP_CONNECT; a close is a SHUTDOWN (which ends the multishot
// receive) hard-linked to a CLOSE, both queued, without system calls; the
// CLOSE reports its completion, so that release knows every socket is
// closed before it closes the ring (with DEFER_TASKRUN a linked CLOSE runs
// as task work only while the thread waits for completions: a ring closed
// before cancels it, and the socket stayed open for the process's life). The
// loop waits with one io_uring_enter per turn, which submits too, for a
// batch of completions (see loop.plan) with an EXT_ARG timeout.
//
// Completions carry (tag, conn index, conn generation) in user_data; those
// of a socket closed since are stale and dropped, but their buffers are
// given back and their counts kept, so that release knows when the kernel
// is done with the buffers.
type uringIO struct {
	l  *loop
	r  *uring
	br *bufRing
	sa *rawsock.Addr

	armed   int // multishot receives armed in the kernel
	pending int // connects, reporting sends and closes in the kernel
}

// Completion tags (top byte of user_data).
const (
	tagConnect  = 1
	tagRecv     = 2
	tagSendSkip = 3 // a send that reports only its failure
	tagSend     = 4 // a send that reports its completion
	tagClose    = 5 // the CLOSE of a shut socket
	tagShut     = 6 // its SHUTDOWN, which reports only its failure
	tagWrite    = 7 // a write of HTTP/2 frames, which reports its completion
)

// skipLimit is the largest request sent with CQE_SKIP_SUCCESS. Such a send
// fits the socket's buffer and is done at submission, so the next request
// (after the whole response) cannot overtake it; a larger one reports its
// completion, and the next request on the connection waits for it.
const skipLimit = 4 << 10

// Buffers of the provided-buffer ring.
const (
	recvBufSize = 8 << 10
	minBufs     = 64
	maxBufs     = 1024
)

// batchWait is how long a wait holds out for a batch of completions.
const batchWait = 200 * time.Microsecond

// drainWait bounds how long release waits for the kernel to let go of the
// sockets (their receives) before it frees the buffers.
const drainWait = 500 * time.Millisecond

func newURingIO(l *loop, sa *rawsock.Addr, conns int) (*uringIO, error) {
	sq := pow2(min(max(2*conns+16, 64), 4096))
	cq := pow2(min(max(8*conns, 4*sq), 65536))
	r, err := newURing(uint32(sq), uint32(cq))
	if err != nil {
		return nil, err
	}
	if r.features&(featExtArg|featCQESkip|featNoDrop) != featExtArg|featCQESkip|featNoDrop {
		r.close()
		return nil, errKernelTooOld
	}
	br, err := newBufRing(r, pow2(min(max(2*conns, minBufs), maxBufs)), recvBufSize)
	if err != nil {
		r.close()
		return nil, err
	}
	return &uringIO{l: l, r: r, br: br, sa: sa}, nil
}

func pow2(n int) int { return 1 << bits.Len(uint(n-1)) }

func userData(tag uint64, c *conn) uint64 {
	return tag<<56 | uint64(uint32(c.idx))<<32 | uint64(c.gen)
}

func (u *uringIO) dial(c *conn) (bool, syscall.Errno) {
	fd, err := rawsock.Socket(u.sa.Family)
	if err != 0 {
		return false, err
	}
	c.fd = int32(fd)
	i, ok := u.r.reserve(1)
	if !ok {
		return false, unix.EBUSY
	}
	s := u.r.at(i)
	s.opcode = opConnect
	s.fd = c.fd
	s.addr = uint64(uintptr(unsafe.Pointer(&u.sa.Raw[0])))
	s.off = uint64(u.sa.Len)
	s.userData = userData(tagConnect, c)
	u.pending++
	return false, 0
}

func (u *uringIO) send(c *conn, req []byte) syscall.Errno {
	c.bytesOut += int64(len(req))
	if c.sendsLeft > 0 {
		// The previous request's completion has not come yet (the response
		// overtook it in the completion queue): send after it.
		c.deferred = req
		return 0
	}
	return u.queueSend(c, req)
}

func (u *uringIO) queueSend(c *conn, req []byte) syscall.Errno {
	if !c.recvArmed {
		if err := u.arm(c); err != 0 {
			return err
		}
	}
	i, ok := u.r.reserve(1)
	if !ok {
		return unix.EBUSY
	}
	s := u.r.at(i)
	s.opcode = opSend
	s.fd = c.fd
	s.addr = uint64(uintptr(unsafe.Pointer(&req[0])))
	s.len = uint32(len(req))
	// MSG_WAITALL: the kernel retries a partial send until all is sent, and
	// reports a failure (with the count sent) even under CQE_SKIP_SUCCESS.
	s.opFlags = unix.MSG_NOSIGNAL | unix.MSG_WAITALL
	if len(req) <= skipLimit {
		s.flags = sqeCQESkipSuccess
		s.userData = userData(tagSendSkip, c)
	} else {
		s.userData = userData(tagSend, c)
		c.sendsLeft++
		c.sendLen = len(req)
		u.pending++
	}
	return 0
}

func (u *uringIO) write(c *conn, b []byte) (bool, syscall.Errno) {
	if !c.recvArmed {
		if err := u.arm(c); err != 0 {
			return false, err
		}
	}
	i, ok := u.r.reserve(1)
	if !ok {
		return false, unix.EBUSY
	}
	s := u.r.at(i)
	s.opcode = opSend
	s.fd = c.fd
	s.addr = uint64(uintptr(unsafe.Pointer(&b[0])))
	s.len = uint32(len(b))
	s.opFlags = unix.MSG_NOSIGNAL | unix.MSG_WAITALL
	s.userData = userData(tagWrite, c)
	c.sendLen = len(b)
	u.pending++
	return false, 0
}

// arm starts c's multishot receive.
func (u *uringIO) arm(c *conn) syscall.Errno {
	i, ok := u.r.reserve(1)
	if !ok {
		return unix.EBUSY
	}
	s := u.r.at(i)
	s.opcode = opRecv
	s.fd = c.fd
	s.ioprio = recvMultishot
	s.flags = sqeBufferSelect
	s.bufIndex = 0 // buffer group 0
	s.userData = userData(tagRecv, c)
	c.recvArmed = true
	u.armed++
	return 0
}

// sendBusy is false: a request waits for the previous one's completion
// (see send), so requests never overtake each other on a connection.
func (u *uringIO) sendBusy(c *conn) bool { return false }

func (u *uringIO) shut(c *conn) {
	c.recvArmed = false
	c.sendsLeft = 0
	c.deferred = nil
	i, ok := u.r.reserve(2)
	if !ok {
		unix.Shutdown(int(c.fd), unix.SHUT_RDWR)
		unix.Close(int(c.fd))
		return
	}
	// The shutdown ends the multishot receive (which holds the file, so a
	// close alone would leave the connection open) and a pending connect.
	s := u.r.at(i)
	s.opcode = opShutdown
	s.fd = c.fd
	s.len = unix.SHUT_RDWR
	s.flags = sqeIOHardlink | sqeCQESkipSuccess
	s.userData = userData(tagShut, c)
	s = u.r.at(i + 1)
	s.opcode = opClose
	s.fd = c.fd
	s.userData = userData(tagClose, c)
	u.pending++
}

func (u *uringIO) wait(timeout time.Duration, batch int) {
	u.br.publish()
	if timeout <= 0 {
		u.r.enter(0, 0, 0)
		return
	}
	var minWait time.Duration
	if batch > 1 {
		if u.r.features&featMinTimeout != 0 {
			minWait = min(batchWait, timeout)
		} else {
			timeout = min(timeout, batchWait)
		}
	}
	// ETIME (timeout), EINTR (Go's preemption signal), EAGAIN, EBUSY: the
	// completions that are there are reaped all the same.
	u.r.enter(uint32(max(batch, 1)), timeout, minWait)
}

func (u *uringIO) reap() {
	r := u.r
	head := *r.cqHead
	tail := loadAcquire(r.cqTail)
	for ; head != tail; head++ {
		e := r.cqes[head&r.cqMask]
		u.complete(e.userData, e.res, e.flags)
	}
	storeRelease(r.cqHead, head)
}

// complete handles one completion.
func (u *uringIO) complete(ud uint64, res int32, flags uint32) {
	l := u.l
	tag := ud >> 56
	c := &l.conns[int32(ud>>32&0xffffff)]
	gen := uint32(ud)
	live := c.gen == gen && c.fd >= 0
	switch tag {
	case tagRecv:
		more := flags&cqeFMore != 0
		if !more {
			u.armed--
			if live {
				c.recvArmed = false
			}
		}
		switch {
		case flags&cqeFBuffer != 0:
			bid := uint16(flags >> cqeBufferShift)
			if live && res > 0 {
				l.received(c, u.br.buf(bid)[:res])
			}
			u.br.put(bid)
		case !live:
		case res == 0:
			l.broken(c, 0)
		case res < 0 && res != -int32(unix.ENOBUFS):
			l.broken(c, syscall.Errno(-res))
		}
		// A receive that ended without an error (out of buffers, or the
		// kernel stopped it) is armed again on the same socket.
		if !more && c.gen == gen && c.fd >= 0 && !c.recvArmed && (res > 0 || res == -int32(unix.ENOBUFS)) {
			if err := u.arm(c); err != 0 {
				l.broken(c, err)
			}
		}
	case tagClose:
		u.pending-- // the socket is closed (or was already gone)
	case tagConnect:
		u.pending--
		if live && c.connecting {
			l.connected(c, syscall.Errno(-res))
		}
	case tagWrite:
		u.pending--
		switch {
		case !live:
		case int(res) == c.sendLen:
			l.written(c)
		case res < 0:
			l.broken(c, syscall.Errno(-res))
		default:
			l.broken(c, unix.EPIPE)
		}
	case tagSend, tagSendSkip:
		if tag == tagSend {
			u.pending--
			if !live {
				return
			}
			c.sendsLeft--
			if res >= 0 && int(res) == c.sendLen {
				if req := c.deferred; req != nil && c.sendsLeft == 0 {
					c.deferred = nil
					if err := u.queueSend(c, req); err != 0 {
						l.broken(c, err)
					}
				}
				return
			}
		}
		switch {
		case !live:
		case res < 0:
			l.broken(c, syscall.Errno(-res))
		default:
			l.broken(c, unix.EPIPE) // part sent, then the connection broke
		}
	}
}

func (u *uringIO) release() {
	start := time.Now()
	for (u.armed > 0 || u.pending > 0) && time.Since(start) < drainWait {
		u.wait(10*time.Millisecond, 1)
		u.reap()
	}
	u.r.submit()
	if u.armed == 0 && u.pending == 0 {
		u.br.unregister(u.r)
		u.br.free()
	}
	// else: a receive may still write into the buffers: they stay mapped.
	u.r.close()
}
