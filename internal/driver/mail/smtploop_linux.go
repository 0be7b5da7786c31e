package mail

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/rawsock"
	"golang.org/x/sys/unix"
)

// submitLoop runs the SMTP submissions of plain-TCP SMTP (smtp_tls none)
// on one goroutine: an epoll set over their sockets, each transaction an
// smtpTxn that the loop feeds. A sender hands its transaction over and
// sleeps until it is done: one wake-up per message, where a connection in
// Go's poller costs one per reply (greeting, EHLO, envelope, acceptance,
// QUIT) and a Go system call per connect and close, each of which, when
// the process was idle, wakes the runtime's sysmon thread and sets it
// polling every 20 µs. Measured on a 2-core VM (docs/mail.md, 7 rounds
// into Postfix, 25 KB messages): 220 and 171 µs of the generator's CPU per
// message at 4 and 16 sessions, against 305 and 242 with a goroutine per
// connection; Postfix's smtp-source, 205 and 175.
//
// Every system call is raw (it never tells the scheduler). While
// transactions are in flight the loop waits for the next event in a raw
// epoll_wait for at most rawWait, holding its processor (a reply
// usually comes sooner); past that it waits in an ordinary system call,
// which lets the runtime give the processor to others. Before every wait
// it yields, so senders it woke run first. With nothing in flight it
// sleeps on a channel.
type submitLoop struct {
	epfd, evfd int

	mu    sync.Mutex
	queue []*loopTxn // handed over, not started yet

	parked  atomic.Bool   // the loop sleeps on wake: hand-overs send it a token
	waiting atomic.Bool   // the loop is in (or about to enter) epoll_wait: hand-overs write evfd
	wake    chan struct{} // capacity 1
}

// loopTxn is a transaction in the loop with its socket.
type loopTxn struct {
	*smtpTxn
	sa         *rawsock.Addr
	timeout    time.Duration // for the error when the deadline passes
	fd         int
	slot       int32
	connecting bool
	out        net.Buffers   // written next (what the socket did not take)
	outArmed   bool          // EPOLLOUT is armed for out or the connect
	stopped    atomic.Bool   // the sender gave up (its context ended)
	in, sent   int64         // bytes on the wire
	over       chan struct{} // closed when the transaction is over
}

// rawWait is the longest wait in a raw epoll_wait while transactions are
// in flight.
const rawWait = 2 * time.Millisecond

// evToken is the epoll token of the wake-up eventfd.
const evToken = -1

var (
	loopOnce sync.Once
	loopErr  error
	theLoop  *submitLoop
)

// smtpLoop returns the process's submission loop, started at the first
// call.
func smtpLoop() (*submitLoop, error) {
	loopOnce.Do(func() {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			loopErr = fmt.Errorf("epoll_create1: %w", err)
			return
		}
		evfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			unix.Close(epfd)
			loopErr = fmt.Errorf("eventfd: %w", err)
			return
		}
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: evToken}
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
			unix.Close(epfd)
			unix.Close(evfd)
			loopErr = fmt.Errorf("epoll_ctl: %w", err)
			return
		}
		theLoop = &submitLoop{epfd: epfd, evfd: evfd, wake: make(chan struct{}, 1)}
		go theLoop.run()
	})
	return theLoop, loopErr
}

// submitLoopSupported: the loop runs here.
const submitLoopSupported = true

// resolveSMTP lays out the SMTP server's address for the loop.
func resolveSMTP(addr string) (*rawsock.Addr, error) {
	ta, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	return rawsock.NewAddr(ta)
}

// submit runs t to its end on the loop, or until ctx ends (the
// transaction is then cut off, class io, unless its deadline passed). It
// returns the bytes read and written.
func (l *submitLoop) submit(ctx context.Context, t *smtpTxn, sa *rawsock.Addr, timeout time.Duration) (in, out int64) {
	lt := &loopTxn{smtpTxn: t, sa: sa, timeout: timeout, fd: -1, over: make(chan struct{})}
	l.mu.Lock()
	l.queue = append(l.queue, lt)
	l.mu.Unlock()
	l.nudge()
	select {
	case <-lt.over:
	case <-ctx.Done():
		lt.stopped.Store(true)
		l.nudge()
		<-lt.over
	}
	return lt.in, lt.sent
}

// nudge wakes the loop wherever it sleeps. A token left over makes the
// loop go round once more, nothing worse.
func (l *submitLoop) nudge() {
	if l.parked.Load() {
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	if l.waiting.Load() {
		one := uint64(1)
		unix.RawSyscall(unix.SYS_WRITE, uintptr(l.evfd), uintptr(unsafe.Pointer(&one)), 8)
	}
}

// run is the loop: it never ends (one per process, asleep when idle).
func (l *submitLoop) run() {
	var (
		slots  []*loopTxn
		free   []int32
		events [64]unix.EpollEvent
		buf    = make([]byte, 64<<10)
		live   int
	)
	end := func(lt *loopTxn) {
		if lt.fd >= 0 {
			rawsock.Close(lt.fd) // also leaves the epoll set
		}
		slots[lt.slot] = nil
		free = append(free, lt.slot)
		live--
		close(lt.over)
	}
	for {
		l.mu.Lock()
		q := l.queue
		l.queue = nil
		l.mu.Unlock()
		now := time.Now()
		for _, lt := range q {
			if n := len(free); n > 0 {
				lt.slot, free = free[n-1], free[:n-1]
			} else {
				lt.slot = int32(len(slots))
				slots = append(slots, nil)
			}
			slots[lt.slot] = lt
			live++
			if !l.open(lt) {
				end(lt)
			}
		}
		// Stopped senders and passed deadlines; the nearest deadline left.
		next := now.Add(time.Hour)
		for _, lt := range slots {
			if lt == nil {
				continue
			}
			switch w := lt.waitUntil(); {
			case lt.stopped.Load():
				lt.fail(driver.Errorf(driver.IO, fmt.Errorf("SMTP %s: stopped", lt.stage())))
				end(lt)
			case !now.Before(w):
				lt.timedOut(lt.timeout)
				end(lt)
			case w.Before(next):
				next = w
			}
		}
		if live == 0 {
			l.parked.Store(true)
			l.mu.Lock()
			idle := len(l.queue) == 0
			l.mu.Unlock()
			if idle {
				<-l.wake
			}
			l.parked.Store(false)
			continue
		}
		// Senders woken by the last round run first, and may hand over
		// their next message before the wait.
		runtime.Gosched()
		l.waiting.Store(true)
		l.mu.Lock()
		more := len(l.queue) > 0
		l.mu.Unlock()
		n := 0
		if !more {
			n = l.wait(events[:], next.Sub(time.Now()))
		}
		l.waiting.Store(false)
		now = time.Now()
		for _, ev := range events[:n] {
			if ev.Fd == evToken {
				var b [8]byte
				unix.RawSyscall(unix.SYS_READ, uintptr(l.evfd), uintptr(unsafe.Pointer(&b[0])), 8)
				continue
			}
			lt := slots[ev.Fd]
			if lt == nil || lt.fd < 0 || int32(lt.fd) != ev.Pad {
				continue // ended earlier in this round
			}
			if l.ready(lt, ev.Events, buf, now) {
				end(lt)
			}
		}
	}
}

// wait waits up to d for events: first in a raw epoll_wait of at most
// rawWait, then, when nothing came, in an ordinary one for the rest. A
// signal ends either wait with no events: the runtime's preemption
// signals (a stop-the-world for the GC) interrupt a raw wait, and the
// caller's next round yields, which lets the stop happen; retrying at
// once would hold the processor while the GC waits for it.
func (l *submitLoop) wait(events []unix.EpollEvent, d time.Duration) int {
	d = max(d, 0)
	ms := func(d time.Duration) uintptr { return uintptr((d + time.Millisecond - 1) / time.Millisecond) }
	n, _, e := unix.RawSyscall6(unix.SYS_EPOLL_WAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), ms(min(d, rawWait)), 0, 0)
	if e != 0 {
		return 0
	}
	if n > 0 || d <= rawWait {
		return int(n)
	}
	n, _, e = unix.Syscall6(unix.SYS_EPOLL_WAIT, uintptr(l.epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), ms(d-rawWait), 0, 0)
	if e != 0 {
		return 0
	}
	return int(n)
}

// open connects lt's socket and registers it; false when that failed
// (lt then failed, class dial).
func (l *submitLoop) open(lt *loopTxn) bool {
	lt.start()
	fd, e := rawsock.Socket(lt.sa.Family)
	if e == 0 {
		lt.fd = fd
		switch e = rawsock.Connect(fd, lt.sa); e {
		case 0:
		case unix.EINPROGRESS:
			lt.connecting, e = true, 0
		}
	}
	if e == 0 {
		e = l.ctl(unix.EPOLL_CTL_ADD, lt)
	}
	if e != 0 {
		lt.finish(driver.Errorf(driver.Dial, fmt.Errorf("SMTP: connect: %w", e)))
		return false
	}
	return true
}

// ctl registers lt's socket (op ADD or MOD) for reading, and for writing
// while it connects or has bytes the socket did not take.
func (l *submitLoop) ctl(op int, lt *loopTxn) syscall.Errno {
	events := uint32(unix.EPOLLIN | unix.EPOLLRDHUP)
	lt.outArmed = lt.connecting || len(lt.out) > 0
	if lt.outArmed {
		events |= unix.EPOLLOUT
	}
	ev := unix.EpollEvent{Events: events, Fd: lt.slot, Pad: int32(lt.fd)}
	_, _, e := unix.RawSyscall6(unix.SYS_EPOLL_CTL, uintptr(l.epfd), uintptr(op), uintptr(lt.fd), uintptr(unsafe.Pointer(&ev)), 0, 0)
	return e
}

// ready handles lt's socket events; true when lt is over.
func (l *submitLoop) ready(lt *loopTxn, events uint32, buf []byte, now time.Time) bool {
	if lt.connecting {
		if events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
			return false
		}
		if e := rawsock.Err(lt.fd); e != 0 {
			lt.finish(driver.Errorf(driver.Dial, fmt.Errorf("SMTP: connect: %w", e)))
			return true
		}
		lt.connecting = false
		if e := l.ctl(unix.EPOLL_CTL_MOD, lt); e != 0 {
			lt.broken(e)
			return true
		}
	}
	if events&unix.EPOLLOUT != 0 && len(lt.out) > 0 {
		if l.flush(lt) {
			return true
		}
	}
	if events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) == 0 {
		return false
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(lt.fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	switch {
	case e == unix.EAGAIN || e == unix.EINTR:
		return false
	case e != 0:
		lt.broken(&net.OpError{Op: "read", Net: "tcp", Err: e})
		return true
	case n == 0:
		lt.broken(io.ErrUnexpectedEOF)
		return true
	}
	lt.in += int64(n)
	if w := lt.feed(buf[:n], now); len(w) > 0 {
		if len(lt.out) == 0 {
			lt.out = w
		} else {
			lt.out = append(lt.out, w...)
		}
		return l.flush(lt)
	}
	return lt.smtpTxn.done
}

// flush writes lt.out; what the socket does not take waits for EPOLLOUT.
// True when lt is over (the write failed).
func (l *submitLoop) flush(lt *loopTxn) bool {
	var iov [64]syscall.Iovec
	for len(lt.out) > 0 {
		k := 0
		for _, b := range lt.out {
			if k == len(iov) {
				break
			}
			if len(b) > 0 {
				iov[k] = syscall.Iovec{Base: &b[0], Len: uint64(len(b))}
				k++
			}
		}
		if k == 0 {
			lt.out = lt.out[:0]
			break
		}
		n, _, e := unix.RawSyscall(unix.SYS_WRITEV, uintptr(lt.fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(k))
		if e == unix.EINTR {
			continue
		}
		if e == unix.EAGAIN {
			lt.drains++
			break
		}
		if e != 0 {
			lt.broken(&net.OpError{Op: "write", Net: "tcp", Err: e})
			return true
		}
		lt.sent += int64(n)
		consume(&lt.out, int64(n))
	}
	if armed := len(lt.out) > 0; armed != lt.outArmed {
		if e := l.ctl(unix.EPOLL_CTL_MOD, lt); e != 0 {
			lt.broken(e)
			return true
		}
	}
	return lt.smtpTxn.done
}

// consume drops the first n bytes of b.
func consume(b *net.Buffers, n int64) {
	for len(*b) > 0 && n > 0 {
		if l := int64(len((*b)[0])); n >= l {
			n -= l
			*b = (*b)[1:]
		} else {
			(*b)[0] = (*b)[0][n:]
			n = 0
		}
	}
	for len(*b) > 0 && len((*b)[0]) == 0 {
		*b = (*b)[1:]
	}
}
