package pubsub

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// session is one user: its connection, its subscription (if any), and the
// streams it publishes. The engine calls Do and Close from the user's
// goroutine; the connection is read by an epoll loop (passive subscribers
// over plain TCP) or by the session's reader goroutine.
type session struct {
	c *Config
	r *run
	u driver.User
	// rq is what the user's logon asks for (its subscription), kept to
	// reconnect; ctx is the run's, for reconnections.
	rq      request
	ctx     context.Context
	passive bool // the user only listens: an epoll loop reads it

	// cmu serialises the user's connect and disconnect actions with the
	// background reconnection.
	cmu       sync.Mutex
	mu        sync.Mutex // guards ep, nc, dead and away against the reader and the drain
	ep        *endpoint
	nc        net.Conn // nil when an epoll loop reads the connection
	dead      bool     // the connection broke: the next Do reconnects
	away      bool     // the user disconnected (op disconnect) and has not connected again
	wmu       sync.Mutex
	done      chan struct{} // closed when the reader goroutine ends
	leaveOnce sync.Once
	closing   atomic.Bool
	adopted   bool // listed in the run's sessions (guarded by the run's mu)

	pubs    map[int]*publication // by action index, built on first use
	streams map[int32]*stream    // by subject
	pid     uint16               // last packet identifier (see nextID)
	timer   *time.Timer
}

var _ driver.Session = (*session)(nil)

// Open implements driver.Config: the user connects and, when its group
// subscribes (see Settings.Subscribe), subscribes; Open returns once the
// broker confirmed it. The time taken, or the failure, is recorded as the
// event "connect".
func (c *Config) Open(ctx context.Context, u driver.User) (driver.Session, error) {
	r := c.current()
	rq := request{user: u.ID}
	rq.cov, rq.filters = r.subscription(c.subscribeMode(u.Group), u.ID)
	s := &session{c: c, r: r, u: u, rq: rq, ctx: ctx, passive: !c.isActive(u.Group)}
	if err := s.dial(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// dial connects (again) and hands the connection to its reader. passive
// sessions that subscribe over plain TCP go to an epoll loop. A connection
// that replaces a broken one asks for every subscription the user had
// (its group's and op subscribe's) and carries its accounting on.
func (s *session) dial(ctx context.Context) error {
	c, r := s.c, s.r
	t0 := time.Now()
	rq := s.rq
	s.mu.Lock()
	if old := s.ep; old != nil && !s.away {
		old.mu.Lock()
		if sub := old.sub; sub != nil && !sub.ended {
			rq.inherit = sub
			rq.cov, rq.filters = sub.cov, slices.Clip(sub.filters)
		}
		old.mu.Unlock()
	}
	s.mu.Unlock()
	w, err := c.connectAside(ctx, r, rq)
	if err != nil {
		if sub := rq.inherit; sub != nil {
			// A handshake that got as far as the confirmation and then
			// failed: the subscription is disconnected still.
			sub.mu.Lock()
			if sub.outage < 0 {
				sub.broke(r.lastOutage())
			}
			sub.mu.Unlock()
		}
		if ctx.Err() == nil {
			r.event(evConnect, time.Time{}, time.Since(t0), 0, driver.Classify(err), err)
		}
		return err
	}
	r.event(evConnect, time.Time{}, time.Since(t0), 0, driver.OK, nil)
	ep := w.ep
	ep.sess = s
	if err := r.open(); err != nil {
		w.close()
		return err
	}
	r.stats.connected.Add(1)
	if s.passive && !c.tls && loopsSupported && ep.subscribing() {
		if l, err := r.loopFor(); err == nil {
			s.mu.Lock()
			s.ep = ep
			s.mu.Unlock()
			if err := l.add(ep, w.nc); err != nil {
				ep.mu.Lock()
				r.lost(ep, err)
				ep.mu.Unlock()
				return driver.Errorf(driver.IO, err)
			}
			return nil
		}
	}
	if s.c.protocol().acknowledged() {
		ep.acks = make(chan uint16, 4)
	}
	s.mu.Lock()
	s.ep, s.nc, s.dead = ep, w.nc, false
	s.done = make(chan struct{})
	s.mu.Unlock()
	if err := r.adoptSession(s); err != nil {
		w.close()
		return err
	}
	go s.read(ep, w.nc, s.done)
	return nil
}

// connectAside runs connect on a goroutine of its own: the handshake's
// deep calls (dial, TLS, JSON) grow that goroutine's stack, which is freed
// when it ends, instead of the user's, which lives as long as the user
// (thousands of idle subscribers each keep their goroutine's stack).
func (c *Config) connectAside(ctx context.Context, r *run, rq request) (*wire, error) {
	type result struct {
		w   *wire
		err error
	}
	ch := make(chan result, 1)
	go func() {
		w, err := c.connect(ctx, r, rq)
		ch <- result{w, err}
	}()
	res := <-ch
	return res.w, res.err
}

// subscription returns what a user subscribes to in mode: the coverage
// for the accounting and the subjects or filters to send.
func (r *run) subscription(mode string, user int) (coverage, []string) {
	c := r.c
	switch mode {
	case SubOne:
		n := user % c.Subjects
		return coverage{subjects: []int32{int32(n)}}, []string{r.subjectName(n)}
	case SubAll:
		names := make([]string, c.Subjects)
		for i := range names {
			names[i] = r.subjectName(i)
		}
		return coverage{all: true}, names
	case SubWildcard:
		return coverage{all: true}, []string{r.wildcard()}
	}
	return coverage{}, nil
}

// read is the reader goroutine of a session's connection: it feeds the
// endpoint, writes its replies, and applies the keep-alive (keepalive.go).
func (s *session) read(ep *endpoint, nc net.Conn, done chan struct{}) {
	defer s.r.readers.Done()
	defer close(done)
	buf := make([]byte, 16<<10)
	ka := time.Duration(ep.keepAlive)
	for {
		if ka > 0 {
			nc.SetReadDeadline(time.Now().Add(ka / 2))
		}
		n, err := nc.Read(buf)
		if n > 0 {
			ep.mu.Lock()
			if ferr := ep.feed(buf[:n], time.Now().UnixNano()); ferr != nil {
				err = ferr
			}
			if len(ep.out) > 0 {
				s.write(nc, ep.out)
				ep.out = ep.out[:0]
			}
			ep.mu.Unlock()
		}
		if err == nil {
			continue
		}
		if s.closing.Load() || ep.left.Load() {
			nc.Close() // the broker closed after our half-close
			return
		}
		var ne net.Error
		if ka > 0 && errors.As(err, &ne) && ne.Timeout() {
			ep.mu.Lock()
			dead := ep.keepAliveCheck(time.Now().UnixNano())
			if len(ep.out) > 0 {
				s.write(nc, ep.out)
				ep.out = ep.out[:0]
			}
			ep.mu.Unlock()
			if !dead {
				continue
			}
			err = errDead
		}
		s.mu.Lock()
		s.dead = true
		s.mu.Unlock()
		nc.Close()
		ep.mu.Lock()
		ep.state = epClosed
		s.r.lost(ep, err)
		ep.mu.Unlock()
		return
	}
}

// write sends b on nc, serialised with the user's publishes.
func (s *session) write(nc net.Conn, b []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	nc.SetWriteDeadline(time.Now().Add(s.c.Timeout.D()))
	n, err := nc.Write(b)
	if n > 0 {
		if ep := s.ep; ep != nil {
			ep.lastSent.Store(time.Now().UnixNano())
		}
	}
	return n, err
}

// Close implements driver.Session. A subscriber stays connected and
// subscribed until the drain ends, so that every message published while
// it was subscribed is accounted; a user that only publishes leaves at
// once (see leave), without waiting for the broker.
func (s *session) Close() error {
	// An op subscribe changes the coverage only while its user waits in
	// Do, so the user's goroutine reads it without the endpoint's lock.
	s.mu.Lock()
	subscribed := s.ep != nil && s.ep.subscribing()
	s.mu.Unlock()
	if !subscribed {
		s.leave()
	}
	return nil
}

// leave disconnects cleanly without blocking: MQTT DISCONNECT, then a
// half-close. The reader goroutine goes on reading until the broker closes
// the connection, so nothing sent is cut off by a reset, and then closes
// it; finish bounds that wait at the drain.
func (s *session) leave() {
	s.leaveOnce.Do(func() {
		s.mu.Lock()
		nc, dead := s.nc, s.dead
		s.mu.Unlock()
		if nc == nil {
			return
		}
		s.closing.Store(true)
		if dead {
			return
		}
		if bye := s.c.protocol().goodbye(); len(bye) > 0 {
			s.write(nc, bye)
		}
		if cw, ok := nc.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		s.r.stats.connected.Add(-1)
	})
}

// finish leaves, waits (at most a second) for the broker to close the
// connection, and closes it.
func (s *session) finish() {
	s.leave()
	s.mu.Lock()
	nc, done := s.nc, s.done
	s.mu.Unlock()
	if nc == nil {
		return
	}
	select {
	case <-done:
	case <-time.After(time.Second):
	}
	nc.Close()
}

// errReconnecting is returned by a Do whose connection broke: the session
// reconnects in the background, with back-off.
var errReconnecting = driver.Errorf(driver.Dial, errors.New("not connected: the connection broke, reconnecting"))

// errAway is returned by a publish while its user is disconnected (op
// disconnect, until op connect).
var errAway = driver.Errorf(driver.Dial, errors.New("not connected: the user disconnected (op disconnect) and has not connected again"))

// conn returns the session's live connection.
func (s *session) conn() (net.Conn, *endpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.away {
		return nil, nil, errAway
	}
	if s.nc == nil || s.dead {
		if s.ep != nil && s.nc == nil && !s.dead {
			return nil, nil, driver.Errorf(driver.Other, errors.New("a passive subscriber does not act"))
		}
		return nil, nil, errReconnecting
	}
	return s.nc, s.ep, nil
}

// reconnect is the action "connect": a user that disconnected (op
// disconnect) connects again and subscribes to its group's subscription,
// whose accounting starts afresh when the broker confirms it. A user
// already connected does nothing; one whose connection broke is being
// reconnected in the background (errReconnecting).
func (s *session) reconnect(ctx context.Context) error {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	s.mu.Lock()
	away, dead := s.away, s.dead
	s.mu.Unlock()
	if !away {
		if dead {
			return errReconnecting
		}
		return nil
	}
	if err := s.dial(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.away = false
	s.mu.Unlock()
	return nil
}

// disconnect is the action "disconnect": the user leaves the broker
// cleanly (MQTT DISCONNECT, then a half-close; NATS a half-close), waits
// (at most the timeout) for the broker to close the connection, reading
// what it still delivers, and closes it. Its subscription's accounting
// then ends at what arrived: messages published while the user is away
// were never owed to it, nor were those still in flight when it left
// (see subscription.leave). A background reconnection stops. A user
// already away does nothing.
func (s *session) disconnect() error {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	s.mu.Lock()
	if s.away {
		s.mu.Unlock()
		return nil
	}
	s.away = true
	nc, ep, dead, done := s.nc, s.ep, s.dead, s.done
	s.mu.Unlock()
	if nc == nil || ep == nil {
		return nil
	}
	if !dead {
		ep.left.Store(true)
		if bye := s.c.protocol().goodbye(); len(bye) > 0 {
			s.write(nc, bye)
		}
		if cw, ok := nc.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		select {
		case <-done:
		case <-time.After(s.c.Timeout.D()):
		}
		s.r.stats.connected.Add(-1)
	}
	nc.Close()
	<-done
	ep.mu.Lock()
	ep.state = epClosed
	if ep.sub != nil {
		ep.sub.leave()
	}
	ep.mu.Unlock()
	s.mu.Lock()
	s.nc = nil
	s.mu.Unlock()
	return nil
}

// nextID returns a packet identifier (MQTT) for a publish or a subscribe:
// one per session, never 0, so that no two in flight share one.
func (s *session) nextID() uint16 {
	s.pid++
	if s.pid == 0 {
		s.pid = 1
	}
	return s.pid
}
