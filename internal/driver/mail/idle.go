package mail

import (
	"context"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver/mail/imapclient"
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
	ic       *imapclient.Conn
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
	id := &idler{s: s, ic: s.ic, done: make(chan struct{}), in0: s.ic.In, out0: s.ic.Out}
	s.idle = id
	s.ic.Acquire()
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
		id.ic.NC.Close()
		<-id.done
	}
	id.settle()
}

// settle adds the watcher's traffic since the last settle to the
// session's watchIn and watchOut. Only the goroutine that owns the
// connection calls it: the watcher while it runs, stopIdle after.
func (id *idler) settle() {
	id.s.watchIn += id.ic.In - id.in0
	id.s.watchOut += id.ic.Out - id.out0
	id.in0, id.out0 = id.ic.In, id.ic.Out
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
		id.ic.SendDone()
	}
}

func (id *idler) run() {
	defer close(id.done)
	ic := id.ic
	for !ic.Broken {
		id.mu.Lock()
		if id.stopping {
			id.mu.Unlock()
			return
		}
		if err := ic.SendIdle(); err != nil {
			id.mu.Unlock()
			return
		}
		id.inIdle = true
		id.mu.Unlock()

		var news time.Time
		ic.NC.SetReadDeadline(time.Now().Add(idleRefresh))
		h := func(u *imapclient.Untagged) error {
			if u.Kw == "EXISTS" && news.IsZero() {
				news = time.Now()
				id.mu.Lock()
				id.done_()
				id.mu.Unlock()
			}
			return nil
		}
		// A read timeout (the refresh) ends the command with DONE and
		// reads on for its completion.
		err := ic.ReadIdle(h, func() bool {
			id.mu.Lock()
			defer id.mu.Unlock()
			wasIdle := id.inIdle
			id.done_()
			return wasIdle
		})
		if err != nil {
			return // broken, or IDLE refused: the session works without it
		}
		if !news.IsZero() {
			ctx, cancel := context.WithTimeout(context.Background(), ic.Timeout)
			err := id.s.checkNew(ctx, news, id.traffic)
			cancel()
			if err != nil {
				return
			}
		}
	}
}
