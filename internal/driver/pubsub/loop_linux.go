package pubsub

import (
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// loop reads many subscribers' sockets on one goroutine with epoll
// (level-triggered, registered once, never modified except to wait for a
// blocked write). Thousands of idle subscribers then cost their endpoint
// (a few hundred bytes) and a kernel socket, not a goroutine and its
// buffers each, and a busy loop reads many sockets per wakeup
// (wake-ups, not reads, are what a mostly idle generator pays for:
// docs/engine.md, "Processors"). One clock read per
// read call times the deliveries.
type loop struct {
	r      *run
	epfd   int
	wakefd int // an eventfd: written to stop the loop

	mu   sync.Mutex // guards eps and free (registration vs the loop)
	eps  []*endpoint
	free []int32

	done chan struct{}
	once sync.Once
}

// loopsSupported reports whether subscribers can be read by epoll loops.
const loopsSupported = true

const (
	loopEvents = 256
	loopBuf    = 64 << 10
	// loopTick is the longest wait, so the MQTT keep-alive is checked.
	loopTick = time.Second
	wakeTok  = -1
)

func newLoop(r *run) (*loop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeTok}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(wfd)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	l := &loop{r: r, epfd: epfd, wakefd: wfd, done: make(chan struct{})}
	go l.run()
	return l, nil
}

// add hands a connection to the loop: its socket is duplicated and the
// net.Conn closed (so Go's poller forgets it), and the endpoint is read
// from then on. The endpoint's handshake is done.
func (l *loop) add(ep *endpoint, nc net.Conn) error {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return errors.New("not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var fd int
	var derr error
	if err := raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return err
	}
	if derr != nil {
		return os.NewSyscallError("dup", derr)
	}
	nc.Close()
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var tok int32
	if n := len(l.free); n > 0 {
		tok, l.free = l.free[n-1], l.free[:n-1]
		l.eps[tok] = ep
	} else {
		tok = int32(len(l.eps))
		l.eps = append(l.eps, ep)
	}
	ep.fd, ep.tok = fd, tok
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: tok}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		l.eps[tok] = nil
		l.free = append(l.free, tok)
		unix.Close(fd)
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

func (l *loop) run() {
	defer close(l.done)
	events := make([]unix.EpollEvent, loopEvents)
	buf := make([]byte, loopBuf)
	lastTick := time.Now().UnixNano()
	for {
		n, err := unix.EpollWait(l.epfd, events, int(loopTick/time.Millisecond))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
		for i := range n {
			tok := events[i].Fd
			if tok == wakeTok {
				l.closeAll()
				return
			}
			l.mu.Lock()
			ep := l.eps[tok]
			l.mu.Unlock()
			if ep == nil {
				continue
			}
			if events[i].Events&unix.EPOLLOUT != 0 {
				ep.mu.Lock()
				l.flush(ep)
				ep.mu.Unlock()
			}
			if events[i].Events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR|unix.EPOLLRDHUP) != 0 {
				l.read(ep, buf)
			}
		}
		if now := time.Now().UnixNano(); now-lastTick >= int64(loopTick) {
			lastTick = now
			l.keepAlive(now)
		}
	}
}

// read reads once from ep's socket and feeds what came.
func (l *loop) read(ep *endpoint, buf []byte) {
	n, err := unix.Read(ep.fd, buf)
	if err == unix.EAGAIN || err == unix.EINTR {
		return
	}
	n = max(n, 0)
	ep.mu.Lock()
	if n > 0 {
		if ferr := ep.feed(buf[:n], time.Now().UnixNano()); ferr != nil {
			err = ferr
		}
		if len(ep.out) > 0 {
			l.flush(ep)
		}
	}
	if n == 0 || err != nil {
		if err == nil {
			err = errors.New("connection closed by the server")
		}
		l.drop(ep, err)
	}
	ep.mu.Unlock()
}

// flush writes ep's queued replies; what the socket does not take waits
// for EPOLLOUT. Call with ep.mu held.
func (l *loop) flush(ep *endpoint) {
	if ep.state == epClosed {
		return
	}
	for len(ep.out) > 0 {
		n, err := unix.Write(ep.fd, ep.out)
		if n > 0 {
			ep.out = ep.out[:copy(ep.out, ep.out[n:])]
			ep.lastSent.Store(time.Now().UnixNano())
		}
		if err == unix.EAGAIN {
			ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLOUT, Fd: ep.tok}
			unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, ep.fd, &ev)
			return
		}
		if err != nil {
			return // the read side reports the broken connection
		}
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: ep.tok}
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, ep.fd, &ev)
}

// drop removes a broken connection from the loop. Call with ep.mu held.
func (l *loop) drop(ep *endpoint, err error) {
	if ep.state == epClosed {
		return
	}
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, ep.fd, nil)
	unix.Close(ep.fd)
	ep.state = epClosed
	l.mu.Lock()
	l.eps[ep.tok] = nil
	l.free = append(l.free, ep.tok)
	l.mu.Unlock()
	l.r.lost(ep, err)
}

// keepAlive sends an MQTT PINGREQ on every connection that has sent
// nothing for half its keep-alive.
func (l *loop) keepAlive(now int64) {
	l.mu.Lock()
	eps := append([]*endpoint(nil), l.eps...)
	l.mu.Unlock()
	for _, ep := range eps {
		if ep == nil || !ep.mqtt || ep.keepAlive <= 0 || now-ep.lastSent.Load() < ep.keepAlive/2 {
			continue
		}
		ep.mu.Lock()
		ep.out = append(ep.out, mqttPingreqPacket...)
		l.flush(ep)
		ep.mu.Unlock()
	}
}

// stop ends the loop and closes its connections (MQTT ones with a
// DISCONNECT). It returns when the loop has exited.
func (l *loop) stop() {
	l.once.Do(func() {
		var one = [8]byte{1}
		unix.Write(l.wakefd, one[:])
	})
	<-l.done
}

func (l *loop) closeAll() {
	l.mu.Lock()
	eps := l.eps
	l.eps = nil
	l.mu.Unlock()
	for _, ep := range eps {
		if ep == nil {
			continue
		}
		ep.mu.Lock()
		if ep.state != epClosed {
			if ep.mqtt {
				unix.Write(ep.fd, mqttDisconnectPacket)
			}
			unix.Close(ep.fd)
			ep.state = epClosed
			l.r.stats.connected.Add(-1)
		}
		ep.mu.Unlock()
	}
	unix.Close(l.epfd)
	unix.Close(l.wakefd)
}

// cores is the number of CPUs this process may use.
func cores() int { return runtime.GOMAXPROCS(0) }
