package netloop

import (
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/throng-io/throng/internal/rawsock"
)

// epollBatch is the most events one epoll wait returns.
const epollBatch = 64

// readSize is the epoll loop's read buffer, shared by its connections: the
// parser keeps nothing of what it is fed.
const readSize = 64 << 10

// epoller is the portable I/O layer: one epoll set, level-triggered EPOLLIN
// registered once per socket; one read per ready socket; the request is
// written at once when the exchange starts, and only a short write arms
// EPOLLOUT for the rest. A connect in progress waits for EPOLLOUT.
//
// Non-blocking calls (read, send, connect, epoll_ctl) use RawSyscall: they
// never block, and the thread is locked. The wait uses Syscall, so the Go
// scheduler keeps running other goroutines meanwhile.
type epoller struct {
	l      *loop
	epfd   int
	sa     *rawsock.Addr
	n      int // events collected by the last wait
	events [epollBatch]unix.EpollEvent
	ev     unix.EpollEvent // argument of epoll_ctl, kept off the stack
	ts     unix.Timespec
	buf    []byte
}

var (
	pwait2Once sync.Once
	pwait2OK   bool // epoll_pwait2 (Linux 5.11) is there: nanosecond waits
)

func newEpoller(l *loop, sa *rawsock.Addr) (*epoller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	pwait2Once.Do(func() {
		var ts unix.Timespec
		var ev [1]unix.EpollEvent
		_, _, e := unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(epfd), uintptr(unsafe.Pointer(&ev[0])), 1, uintptr(unsafe.Pointer(&ts)), 0, 0)
		pwait2OK = e == 0
	})
	return &epoller{l: l, epfd: epfd, sa: sa, buf: make([]byte, readSize)}, nil
}

// ctl adds or changes c's socket in the set; the event's data is c's
// index and generation.
func (e *epoller) ctl(op int, c *conn, events uint32) syscall.Errno {
	e.ev = unix.EpollEvent{Events: events, Fd: c.idx, Pad: int32(c.gen)}
	_, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(e.epfd), uintptr(op), uintptr(c.fd), uintptr(unsafe.Pointer(&e.ev)), 0, 0)
	return errno
}

func (e *epoller) dial(c *conn) (bool, syscall.Errno) {
	fd, err := rawsock.Socket(e.sa.Family)
	if err != 0 {
		return false, err
	}
	c.fd = int32(fd)
	_, _, err = unix.RawSyscall(unix.SYS_CONNECT, uintptr(fd), uintptr(unsafe.Pointer(&e.sa.Raw)), uintptr(e.sa.Len))
	switch err {
	case 0:
		return true, e.ctl(unix.EPOLL_CTL_ADD, c, unix.EPOLLIN)
	case unix.EINPROGRESS:
		return false, e.ctl(unix.EPOLL_CTL_ADD, c, unix.EPOLLOUT)
	}
	return false, err
}

func (e *epoller) send(c *conn, req []byte) syscall.Errno {
	n, err := e.write(c, req)
	if err != 0 {
		return err
	}
	if n < len(req) {
		c.out = req[n:]
		return e.ctl(unix.EPOLL_CTL_MOD, c, unix.EPOLLIN|unix.EPOLLOUT)
	}
	return 0
}

// write sends what it can of b; EAGAIN is not an error.
func (e *epoller) write(c *conn, b []byte) (int, syscall.Errno) {
	n, _, err := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(c.fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), unix.MSG_NOSIGNAL, 0, 0)
	if err == unix.EAGAIN {
		return 0, 0
	}
	if err != 0 {
		return 0, err
	}
	c.bytesOut += int64(n)
	return int(n), 0
}

// flush sends more of an unsent tail; EPOLLOUT is disarmed when it is gone.
func (e *epoller) flush(c *conn) syscall.Errno {
	n, err := e.write(c, c.out)
	if err != 0 {
		return err
	}
	c.out = c.out[n:]
	if len(c.out) == 0 {
		c.out = nil
		return e.ctl(unix.EPOLL_CTL_MOD, c, unix.EPOLLIN)
	}
	return 0
}

func (e *epoller) sendBusy(c *conn) bool { return len(c.out) > 0 }

func (e *epoller) shut(c *conn) {
	// Closing the only descriptor of the socket removes it from the set.
	unix.RawSyscall(unix.SYS_CLOSE, uintptr(c.fd), 0, 0)
}

func (e *epoller) wait(timeout time.Duration, _ int) {
	ev := uintptr(unsafe.Pointer(&e.events[0]))
	var n uintptr
	var err syscall.Errno
	switch {
	case timeout <= 0:
		n, _, err = unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(e.epfd), ev, epollBatch, 0, 0, 0)
	case pwait2OK:
		e.ts = unix.NsecToTimespec(int64(timeout))
		n, _, err = unix.Syscall6(unix.SYS_EPOLL_PWAIT2, uintptr(e.epfd), ev, epollBatch, uintptr(unsafe.Pointer(&e.ts)), 0, 0)
	default:
		ms := (timeout + time.Millisecond - 1) / time.Millisecond
		n, _, err = unix.Syscall6(unix.SYS_EPOLL_PWAIT, uintptr(e.epfd), ev, epollBatch, uintptr(ms), 0, 0)
	}
	e.n = int(n)
	if err != 0 { // EINTR: Go's preemption signal; try again next turn
		e.n = 0
	}
}

func (e *epoller) reap() {
	l := e.l
	for i := range e.n {
		ev := &e.events[i]
		c := &l.conns[ev.Fd]
		if c.fd < 0 || c.gen != uint32(ev.Pad) {
			continue // a socket closed earlier in this batch
		}
		if c.connecting {
			e.connectDone(c)
			continue
		}
		if ev.Events&unix.EPOLLOUT != 0 && len(c.out) > 0 {
			if err := e.flush(c); err != 0 {
				l.broken(c, err)
				continue
			}
		}
		if ev.Events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			e.read(c)
		}
	}
	e.n = 0
}

// read reads once from c and reports what came.
func (e *epoller) read(c *conn) {
	n, _, err := unix.RawSyscall(unix.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(&e.buf[0])), uintptr(len(e.buf)))
	switch {
	case err == unix.EAGAIN:
	case err != 0:
		e.l.broken(c, err)
	case n == 0:
		e.l.broken(c, 0)
	default:
		e.l.received(c, e.buf[:n])
	}
}

// connectDone finishes a connect in progress.
func (e *epoller) connectDone(c *conn) {
	soerr, err := unix.GetsockoptInt(int(c.fd), unix.SOL_SOCKET, unix.SO_ERROR)
	if err == nil && soerr != 0 {
		err = syscall.Errno(soerr)
	}
	if err == nil {
		if errno := e.ctl(unix.EPOLL_CTL_MOD, c, unix.EPOLLIN); errno != 0 {
			err = errno
		}
	}
	if err != nil {
		e.l.connected(c, errnoOf(err))
		return
	}
	e.l.connected(c, 0)
}

func (e *epoller) release() {
	unix.Close(e.epfd)
}
