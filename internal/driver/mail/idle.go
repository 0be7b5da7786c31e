package mail

import (
	"context"
	"sync"
	"time"
)

// idleRefresh is how long one IDLE command lasts before the watcher ends
// and restarts it (RFC 2177: servers may drop a client idle 30 minutes).
const idleRefresh = 25 * time.Minute

// idler is a cached-mode session's watcher between actions: it keeps an
// IDLE command running on the INBOX and, when the server announces new
// messages (EXISTS), ends it, reports the new marks as seen at the moment
// of the announcement, and idles again. The session's goroutine stops it
// before each action (stopIdle); until then the watcher owns the
// connection.
type idler struct {
	s        *session
	ic       *imapConn
	done     chan struct{}
	mu       sync.Mutex
	stopping bool
	inIdle   bool // IDLE is running and DONE not yet sent
	// in0 and out0 are the connection's byte counters when the watcher's
	// traffic was last added to the session's watchIn and watchOut.
	in0, out0 int64
}

// startIdle starts the watcher on the session's connection.
func (s *session) startIdle() {
	id := &idler{s: s, ic: s.ic, done: make(chan struct{}), in0: s.ic.in, out0: s.ic.out}
	s.idle = id
	s.ic.acquire()
	go id.run()
}

// stopIdle ends the watcher and waits for it (bounded by the timeout,
// then the connection is closed to unblock it).
func (s *session) stopIdle() {
	id := s.idle
	if id == nil {
		return
	}
	s.idle = nil
	id.mu.Lock()
	id.stopping = true
	id.done_()
	id.mu.Unlock()
	t := time.NewTimer(s.c.Timeout.D())
	defer t.Stop()
	select {
	case <-id.done:
	case <-t.C:
		id.ic.nc.Close()
		<-id.done
	}
	id.settle()
}

// settle adds the watcher's traffic since the last settle to the
// session's watchIn and watchOut. Only the goroutine that owns the
// connection calls it: the watcher while it runs, stopIdle after.
func (id *idler) settle() {
	id.s.watchIn += id.ic.in - id.in0
	id.s.watchOut += id.ic.out - id.out0
	id.in0, id.out0 = id.ic.in, id.ic.out
}

// traffic hands the watcher's traffic not yet carried to the delivery
// event being recorded (checkNew's traffic).
func (id *idler) traffic() (in, out int64) {
	id.settle()
	in, out = id.s.watchIn, id.s.watchOut
	id.s.watchIn, id.s.watchOut = 0, 0
	return in, out
}

// done_ sends DONE if IDLE is running; the caller holds mu.
func (id *idler) done_() {
	if id.inIdle {
		id.inIdle = false
		id.ic.nc.SetWriteDeadline(time.Now().Add(id.s.c.Timeout.D()))
		if err := id.ic.write([]byte("DONE\r\n")); err != nil {
			id.ic.broken = true
		}
	}
}

func (id *idler) run() {
	defer close(id.done)
	ic := id.ic
	for !ic.broken {
		id.mu.Lock()
		if id.stopping {
			id.mu.Unlock()
			return
		}
		w := append(ic.begin(), "IDLE\r\n"...)
		ic.b.w = w[:0]
		ic.nc.SetDeadline(time.Now().Add(ic.timeout))
		if err := ic.write(w); err != nil {
			ic.broken = true
			id.mu.Unlock()
			return
		}
		id.inIdle = true
		id.mu.Unlock()

		var news time.Time
		ic.nc.SetReadDeadline(time.Now().Add(idleRefresh))
		h := func(u *untagged) error {
			if u.kw == "EXISTS" && news.IsZero() {
				news = time.Now()
				id.mu.Lock()
				id.done_()
				id.mu.Unlock()
			}
			return nil
		}
		err := id.await(h)
		if err != nil {
			return // broken, or IDLE refused: the session works without it
		}
		if !news.IsZero() {
			ctx, cancel := context.WithTimeout(context.Background(), ic.timeout)
			err := id.s.checkNew(ctx, news, id.traffic)
			cancel()
			if err != nil {
				return
			}
		}
	}
}

// await reads until the IDLE command's tagged completion. A read timeout
// (the refresh) ends the command with DONE and keeps reading.
func (id *idler) await(h handler) error {
	ic := id.ic
	for {
		line, err := ic.readLine()
		if err != nil {
			if isTimeout(err) {
				id.mu.Lock()
				wasIdle := id.inIdle
				id.done_()
				id.mu.Unlock()
				if wasIdle {
					ic.nc.SetReadDeadline(time.Now().Add(ic.timeout))
					continue
				}
			}
			ic.broken = true
			return err
		}
		switch {
		case len(line) >= 2 && line[0] == '*' && line[1] == ' ':
			if err := ic.untagged(line, h); err != nil {
				return err
			}
		case len(line) > 0 && line[0] == '+':
		default:
			if err := ic.status("IDLE", skipTag(line)); err != nil {
				return err
			}
			return nil
		}
	}
}

func isTimeout(err error) bool {
	te, ok := err.(interface{ Timeout() bool })
	return ok && te.Timeout()
}
