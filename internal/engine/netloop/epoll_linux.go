package netloop

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/throng-io/throng/internal/rawsock"
)

// epollBatch is the most events one epoll wait returns.
const epollBatch = 64

// readSize is the epoll loop's read buffer, shared by its connections: the
// parser keeps nothing of what it is fed.
const readSize = 64 << 10

// epoller is the portable I/O layer: one epoll set (rawsock.Poller),
// level-triggered EPOLLIN registered once per socket under the conn's
// index and generation; one read per ready socket; the request is written
// at once when the exchange starts, and only a short write arms EPOLLOUT
// for the rest. A connect in progress waits for EPOLLOUT.
//
// Its socket calls are raw (rawsock): they never block, and the thread is
// locked. Its waits follow rawsock.Policy with no raw part (only a wait of
// no time is raw), so the Go scheduler keeps running other goroutines
// meanwhile; the loop yields itself (loop.step), for io_uring too.
type epoller struct {
	l      *loop
	p      *rawsock.Poller
	sa     *rawsock.Addr
	n      int // events collected by the last wait
	events [epollBatch]unix.EpollEvent
	buf    []byte
}

func newEpoller(l *loop, sa *rawsock.Addr) (*epoller, error) {
	p, err := rawsock.NewPoller(rawsock.Policy{Yield: rawsock.NoYield}, false)
	if err != nil {
		return nil, err
	}
	return &epoller{l: l, p: p, sa: sa, buf: make([]byte, readSize)}, nil
}

// token is c's socket's token: its index and generation.
func token(c *conn) rawsock.Token { return rawsock.Token{Slot: c.idx, Gen: c.gen} }

func (e *epoller) dial(c *conn) (bool, syscall.Errno) {
	fd, err := rawsock.Socket(e.sa.Family)
	if err != 0 {
		return false, err
	}
	c.fd = int32(fd)
	switch err = rawsock.Connect(fd, e.sa); err {
	case 0:
		return true, e.p.Add(fd, unix.EPOLLIN, token(c))
	case unix.EINPROGRESS:
		return false, e.p.Add(fd, unix.EPOLLOUT, token(c))
	}
	return false, err
}

func (e *epoller) send(c *conn, req []byte) syscall.Errno {
	n, err := rawsock.Write(int(c.fd), req)
	if err != 0 {
		return err
	}
	c.bytesOut += int64(n)
	if n < len(req) {
		c.out = req[n:]
		return e.p.Mod(int(c.fd), unix.EPOLLIN|unix.EPOLLOUT, token(c))
	}
	return 0
}

func (e *epoller) write(c *conn, b []byte) (bool, syscall.Errno) {
	n, err := rawsock.Write(int(c.fd), b)
	if err != 0 {
		return false, err
	}
	if n == len(b) {
		return true, 0
	}
	c.out = b[n:]
	return false, e.p.Mod(int(c.fd), unix.EPOLLIN|unix.EPOLLOUT, token(c))
}

// flush sends more of an unsent tail; EPOLLOUT is disarmed when it is gone.
func (e *epoller) flush(c *conn) syscall.Errno {
	n, err := rawsock.Write(int(c.fd), c.out)
	if err != 0 {
		return err
	}
	c.bytesOut += int64(n)
	c.out = c.out[n:]
	if len(c.out) == 0 {
		c.out = nil
		if err := e.p.Mod(int(c.fd), unix.EPOLLIN, token(c)); err != 0 {
			return err
		}
		e.l.written(c)
	}
	return 0
}

func (e *epoller) sendBusy(c *conn) bool { return len(c.out) > 0 }

func (e *epoller) shut(c *conn) {
	// Closing the only descriptor of the socket removes it from the set.
	rawsock.Close(int(c.fd))
}

func (e *epoller) wait(timeout time.Duration, _ int) {
	e.n = e.p.Wait(e.events[:], timeout, nil)
}

func (e *epoller) reap() {
	l := e.l
	for i := range e.n {
		ev := &e.events[i]
		tok := rawsock.TokenOf(ev)
		c := &l.conns[tok.Slot]
		if c.fd < 0 || c.gen != tok.Gen {
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
	n, err := rawsock.Read(int(c.fd), e.buf)
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
	err := rawsock.Err(int(c.fd))
	if err == 0 {
		err = e.p.Mod(int(c.fd), unix.EPOLLIN, token(c))
	}
	e.l.connected(c, err)
}

func (e *epoller) release() {
	e.p.Close()
}
