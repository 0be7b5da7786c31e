package pubsub

import (
	"errors"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/throng-io/throng/internal/rawsock"
)

// loop reads many subscribers' sockets on one goroutine with epoll
// (level-triggered, registered once, never modified except to wait for a
// blocked write). Thousands of idle subscribers then cost their endpoint
// (a few hundred bytes) and a kernel socket, not a goroutine and its
// buffers each, and a busy loop reads many sockets per wakeup
// (wake-ups, not reads, are what a mostly idle generator pays for:
// docs/engine.md, "Processors"). One clock read per
// read call times the deliveries. The epoll set, its tokens, its waits
// and its socket calls are rawsock's; its waits are ordinary system calls
// (no raw part) and it does not yield: it sleeps most of the time.
type loop struct {
	r *run
	p *rawsock.Poller

	mu  sync.Mutex // guards eps (registration vs the loop)
	eps rawsock.Slots[*endpoint]

	stopping atomic.Bool
	stopped  func() bool // stopping.Load, bound once
	done     chan struct{}
	once     sync.Once
}

// loopsSupported reports whether subscribers can be read by epoll loops.
const loopsSupported = true

const (
	loopEvents = 256
	loopBuf    = 64 << 10
	// loopTick is the longest wait, so the keep-alive is checked.
	loopTick = time.Second
	// loopIn is what a socket is registered for; EPOLLOUT is added while
	// a reply waits for room.
	loopIn = unix.EPOLLIN | unix.EPOLLRDHUP
)

func newLoop(r *run) (*loop, error) {
	p, err := rawsock.NewPoller(rawsock.Policy{Yield: rawsock.NoYield}, true)
	if err != nil {
		return nil, err
	}
	l := &loop{r: r, p: p, done: make(chan struct{})}
	l.stopped = l.stopping.Load
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
	tok := l.eps.Put(ep)
	ep.fd, ep.tok = fd, tok
	if e := l.p.Add(fd, loopIn, tok); e != 0 {
		l.eps.Free(tok)
		unix.Close(fd)
		return os.NewSyscallError("epoll_ctl", e)
	}
	return nil
}

func (l *loop) run() {
	defer close(l.done)
	events := make([]unix.EpollEvent, loopEvents)
	buf := make([]byte, loopBuf)
	lastTick := time.Now().UnixNano()
	for {
		n := l.p.Wait(events, loopTick, l.stopped)
		if l.stopping.Load() {
			l.closeAll()
			return
		}
		for i := range n {
			l.mu.Lock()
			ep, ok := l.eps.Get(rawsock.TokenOf(&events[i]))
			l.mu.Unlock()
			if !ok {
				continue // dropped earlier in this batch
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
	n, e := rawsock.Read(ep.fd, buf)
	if e == unix.EAGAIN {
		return
	}
	var err error
	if e != 0 {
		err = e
	}
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
// for EPOLLOUT, armed only while something waits. Call with ep.mu held.
func (l *loop) flush(ep *endpoint) {
	if ep.state == epClosed {
		return
	}
	if len(ep.out) > 0 {
		n, e := rawsock.Write(ep.fd, ep.out)
		if n > 0 {
			ep.out = ep.out[:copy(ep.out, ep.out[n:])]
			ep.lastSent.Store(time.Now().UnixNano())
		}
		if e != 0 {
			return // the read side reports the broken connection
		}
	}
	l.p.SetOut(ep.fd, loopIn, ep.tok, &ep.outArmed, len(ep.out) > 0)
}

// drop removes a broken connection from the loop. Call with ep.mu held.
func (l *loop) drop(ep *endpoint, err error) {
	if ep.state == epClosed {
		return
	}
	l.p.Del(ep.fd)
	rawsock.Close(ep.fd)
	ep.state = epClosed
	l.mu.Lock()
	l.eps.Free(ep.tok)
	l.mu.Unlock()
	l.r.lost(ep, err)
}

// endpoints returns the loop's endpoints.
func (l *loop) endpoints() []*endpoint {
	l.mu.Lock()
	defer l.mu.Unlock()
	eps := make([]*endpoint, 0, l.eps.Len())
	for _, ep := range l.eps.All() {
		eps = append(eps, ep)
	}
	return eps
}

// keepAlive applies the keep-alive (keepalive.go) to every connection:
// a ping where one is due, a dead connection dropped.
func (l *loop) keepAlive(now int64) {
	for _, ep := range l.endpoints() {
		ep.mu.Lock()
		if ep.keepAliveCheck(now) {
			l.drop(ep, errDead)
		} else if len(ep.out) > 0 {
			l.flush(ep)
		}
		ep.mu.Unlock()
	}
}

// stop ends the loop and closes its connections (MQTT ones with a
// DISCONNECT). It returns when the loop has exited.
func (l *loop) stop() {
	l.once.Do(func() {
		l.stopping.Store(true)
		l.p.Wake()
	})
	<-l.done
}

func (l *loop) closeAll() {
	eps := l.endpoints()
	l.mu.Lock()
	l.eps = rawsock.Slots[*endpoint]{}
	l.mu.Unlock()
	for _, ep := range eps {
		ep.mu.Lock()
		if ep.state != epClosed {
			if bye := l.r.c.protocol().goodbye(); len(bye) > 0 {
				rawsock.Write(ep.fd, bye)
			}
			rawsock.Close(ep.fd)
			ep.state = epClosed
			l.r.stats.connected.Add(-1)
		}
		ep.mu.Unlock()
	}
	l.p.Close()
}

// cores is the number of CPUs this process may use.
func cores() int { return runtime.GOMAXPROCS(0) }
