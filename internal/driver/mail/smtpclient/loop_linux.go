package smtpclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/rawsock"
)

// Loop runs the SMTP submissions of plain-TCP SMTP (smtp_tls none)
// on one goroutine: an epoll set over their sockets, each transaction a
// Txn that the loop feeds. A sender hands its transaction over and
// sleeps until it is done: one wake-up per message, where a connection in
// Go's poller costs one per reply (greeting, EHLO, envelope, acceptance,
// QUIT) and a Go system call per connect and close, each of which, when
// the process was idle, wakes the runtime's sysmon thread and sets it
// polling every 20 µs. Measured on a 2-core VM (bench/mail/README.md, 7 rounds
// into Postfix, 25 KB messages): 220 and 171 µs of the generator's CPU per
// message at 4 and 16 sessions, against 305 and 242 with a goroutine per
// connection; Postfix's smtp-source, 205 and 175.
//
// Its epoll set, wake-up, tokens, socket calls and waits are rawsock's.
// Every system call is raw (it never tells the scheduler). While
// transactions are in flight the loop waits for the next event in a raw
// epoll_wait for at most rawWait, holding its processor (a reply usually
// comes sooner); past that it waits in an ordinary system call, which lets
// the runtime give the processor to others. Before every wait it yields,
// so senders it woke run first. With nothing in flight it parks on a
// channel, which costs an idle generator nothing.
//
// A loop has one owner, which starts it (NewLoop) and closes it (Close),
// ending the transactions still in it and the loop's goroutine: the mail
// driver's Config, from its first send to the end of the repetition.
type Loop struct {
	p *rawsock.Poller

	mu     sync.Mutex
	queue  []*loopTxn // handed over, not started yet
	spare  []*loopTxn // the queue's other array
	closed bool

	work func() bool // l.pending, bound once
	done chan struct{}
}

// loopTxn is a transaction in the loop with its socket.
type loopTxn struct {
	*Txn
	sa         *rawsock.Addr
	timeout    time.Duration // for the error when the deadline passes
	fd         int
	tok        rawsock.Token
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

// loopIn is what a socket is registered for; EPOLLOUT is added while it
// connects or has bytes the socket did not take.
const loopIn = unix.EPOLLIN | unix.EPOLLRDHUP

// LoopSupported: Loop runs on this system (Linux).
const LoopSupported = true

// ErrLoopClosed is the Err of a transaction handed to a closed loop.
var ErrLoopClosed = driver.Errorf(driver.IO, errors.New("SMTP: the submission loop is closed (the run is over)"))

// NewLoop starts a loop; its owner must Close it.
func NewLoop() (*Loop, error) {
	p, err := rawsock.NewPoller(rawsock.Policy{Raw: rawWait}, true)
	if err != nil {
		return nil, err
	}
	l := &Loop{p: p, done: make(chan struct{})}
	l.work = l.pending
	go l.run()
	return l, nil
}

// pending reports whether senders handed work over (or the loop is to
// close).
func (l *Loop) pending() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue) > 0 || l.closed
}

// Submit runs t to its end on the loop over a new connection to sa, or
// until ctx ends (the transaction is then stopped, class io); timeout is
// t's budget as its errors state it. It returns the bytes read and
// written. It is safe for concurrent use: each sender blocks in it until
// its own transaction is over. After Close it fails at once
// (ErrLoopClosed).
func (l *Loop) Submit(ctx context.Context, t *Txn, sa *rawsock.Addr, timeout time.Duration) (in, out int64) {
	lt := &loopTxn{Txn: t, sa: sa, timeout: timeout, fd: -1, over: make(chan struct{})}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		t.start()
		t.finish(ErrLoopClosed)
		return 0, 0
	}
	l.queue = append(l.queue, lt)
	l.mu.Unlock()
	l.p.Wake()
	select {
	case <-lt.over:
	case <-ctx.Done():
		lt.stopped.Store(true)
		l.p.Wake()
		<-lt.over
	}
	return lt.in, lt.sent
}

// Close stops the transactions in flight (class io), ends the loop's
// goroutine and closes its epoll set. A send handed over after Close fails
// at once. Close is idempotent.
func (l *Loop) Close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.p.Wake()
	<-l.done
}

// run is the loop, until Close.
func (l *Loop) run() {
	defer close(l.done)
	var (
		slots  rawsock.Slots[*loopTxn]
		events [64]unix.EpollEvent
		buf    = make([]byte, 64<<10)
	)
	end := func(lt *loopTxn) {
		if lt.fd >= 0 {
			rawsock.Close(lt.fd) // also leaves the epoll set
		}
		slots.Free(lt.tok)
		close(lt.over)
	}
	for {
		l.mu.Lock()
		q := l.queue
		l.queue, l.spare = l.spare[:0], q
		closed := l.closed
		l.mu.Unlock()
		now := time.Now()
		for i, lt := range q {
			q[i] = nil
			lt.tok = slots.Put(lt)
			if !l.open(lt) {
				end(lt)
			}
		}
		// Stopped senders and passed deadlines; the nearest deadline left.
		next := now.Add(time.Hour)
		for _, lt := range slots.All() {
			switch w := lt.waitUntil(); {
			case closed || lt.stopped.Load():
				lt.stop()
				end(lt)
			case !now.Before(w):
				lt.timedOut(lt.timeout)
				end(lt)
			case w.Before(next):
				next = w
			}
		}
		if closed {
			l.p.Close()
			return
		}
		if slots.Len() == 0 {
			l.p.Park(l.work)
			continue
		}
		n := l.p.Wait(events[:], time.Until(next), l.work)
		now = time.Now()
		for i := range n {
			ev := &events[i]
			lt, ok := slots.Get(rawsock.TokenOf(ev))
			if !ok {
				continue // ended earlier in this round
			}
			if l.ready(lt, ev.Events, buf, now) {
				end(lt)
			}
		}
	}
}

// open connects lt's socket and registers it; false when that failed
// (lt then failed, class dial).
func (l *Loop) open(lt *loopTxn) bool {
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
		lt.outArmed = lt.connecting
		e = l.p.Add(lt.fd, l.interest(lt), lt.tok)
	}
	if e != 0 {
		lt.finish(driver.Errorf(driver.Dial, fmt.Errorf("SMTP: connect: %w", e)))
		return false
	}
	return true
}

// interest is what lt's socket waits for: reading, and writing while
// EPOLLOUT is armed.
func (l *Loop) interest(lt *loopTxn) uint32 {
	if lt.outArmed {
		return loopIn | unix.EPOLLOUT
	}
	return loopIn
}

// arm arms EPOLLOUT while lt connects or has bytes the socket did not
// take, and disarms it after; false when that failed (lt is then over).
func (l *Loop) arm(lt *loopTxn) bool {
	if e := l.p.SetOut(lt.fd, loopIn, lt.tok, &lt.outArmed, lt.connecting || len(lt.out) > 0); e != 0 {
		lt.broken(e)
		return false
	}
	return true
}

// ready handles lt's socket events; true when lt is over.
func (l *Loop) ready(lt *loopTxn, events uint32, buf []byte, now time.Time) bool {
	if lt.connecting {
		if events&(unix.EPOLLOUT|unix.EPOLLERR|unix.EPOLLHUP) == 0 {
			return false
		}
		if e := rawsock.Err(lt.fd); e != 0 {
			lt.finish(driver.Errorf(driver.Dial, fmt.Errorf("SMTP: connect: %w", e)))
			return true
		}
		lt.connecting = false
		if !l.arm(lt) {
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
	n, e := rawsock.Read(lt.fd, buf)
	switch {
	case e == unix.EAGAIN:
		return false
	case e != 0:
		lt.broken(&net.OpError{Op: "read", Net: "tcp", Err: e})
		return true
	case n == 0:
		lt.broken(io.ErrUnexpectedEOF)
		return true
	}
	lt.in += int64(n)
	w := lt.feed(buf[:n], now)
	if lt.upgrade {
		// smtp_engine epoll is refused with smtp_tls (Config.Validate).
		lt.fail(driver.Errorf(driver.Other, errors.New("SMTP STARTTLS: the submission loop speaks plain SMTP only")))
		return true
	}
	if len(w) > 0 {
		if len(lt.out) == 0 {
			lt.out = w // the body's buffers, handed over as they are
		} else {
			lt.out = append(lt.out, w...)
		}
		return l.flush(lt)
	}
	return lt.done
}

// flush writes lt.out; what the socket does not take waits for EPOLLOUT.
// True when lt is over (the write failed).
func (l *Loop) flush(lt *loopTxn) bool {
	n, e := rawsock.Flush(lt.fd, &lt.out)
	lt.sent += n
	if e != 0 {
		lt.broken(&net.OpError{Op: "write", Net: "tcp", Err: e})
		return true
	}
	if len(lt.out) > 0 {
		lt.drains++
	}
	return !l.arm(lt) || lt.done
}
