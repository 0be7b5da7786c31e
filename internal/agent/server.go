package agent

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Runner prepares and runs plans on an agent's machine; the command line
// provides it (it knows scenarios, drivers and engines).
type Runner interface {
	// Prepare checks and compiles a plan request, ready to start.
	Prepare(ctx context.Context, req *PlanRequest) (*ReadyInfo, Job, error)
}

// Job is a prepared plan.
type Job interface {
	// Run starts the load at startAt and reports every record through emit
	// (meta, repetition, interval, repetition_end, end), from one goroutine.
	// It returns when the run is over; when ctx ends first the run stops,
	// its records marked partial with ctx's cause.
	Run(ctx context.Context, startAt time.Time, emit func(*Message)) error
	// Close releases what Prepare took; it is called once, after Run or
	// instead of it.
	Close()
}

// Timeouts of the protocol.
const (
	// PingEvery is how often each side says it is alive during a run.
	PingEvery = time.Second
	// LostAfter is how long a side waits without any frame before it
	// declares the other lost: an agent then stops its load, a controller
	// marks the agent's share partial and goes on with the others.
	LostAfter = 5 * time.Second
	// startWait bounds the wait for the start barrier after ready.
	startWait = 2 * time.Minute
)

// Timing overrides PingEvery and LostAfter (zero fields keep them).
type Timing struct {
	PingEvery, LostAfter time.Duration
}

func (t Timing) ping() time.Duration {
	if t.PingEvery > 0 {
		return t.PingEvery
	}
	return PingEvery
}

func (t Timing) lost() time.Duration {
	if t.LostAfter > 0 {
		return t.LostAfter
	}
	return LostAfter
}

// Server is an agent: it runs the plans of controllers that prove the
// shared token, one at a time. Anyone else is refused and logged: an agent
// must never become an open relay for load.
//
// Before a peer has proved the token it costs the agent little and not
// for long: at most MaxPending such connections at once (a new one beyond
// that makes the agent drop the oldest of the address holding the most,
// so a flood from one place cannot lock a controller out), each closed
// after AuthTimeout, each read bounded (wire.go).
type Server struct {
	Token []byte
	// TLS is the agent's TLS configuration (ServerTLS); nil serves
	// plaintext (throng agent --insecure).
	TLS    *tls.Config
	Runner Runner
	Log    io.Writer // one line per event (connections, refusals, runs)
	Timing Timing
	// MaxPending bounds the connections not authenticated yet (default
	// DefaultMaxPending).
	MaxPending int
	// AuthTimeout bounds the TLS handshake and the authentication
	// together (default DefaultAuthTimeout).
	AuthTimeout time.Duration

	busy  atomic.Bool
	logMu sync.Mutex
	// Refusals logged in the current second, and those left out.
	refusedAt      time.Time
	refusedLogged  int
	refusedSkipped int

	// probes counts connections closed before their first byte (TCP
	// health checks): they are not logged.
	probes atomic.Int64

	pmu         sync.Mutex
	pending     map[*pendingConn]struct{}
	peakPending int // the most at once (for tests)
}

// Defaults of the pre-authentication limits.
const (
	DefaultMaxPending  = 16
	DefaultAuthTimeout = 10 * time.Second
	// refusalsPerSecond bounds the refusal lines logged; the rest are
	// counted and reported with the next line.
	refusalsPerSecond = 5
)

// pendingConn is a connection that has not proved the token yet.
type pendingConn struct {
	c       net.Conn
	ip      string
	since   time.Time
	evicted atomic.Bool
}

func (s *Server) logf(format string, args ...any) {
	if s.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.Log, "%s %s\n", time.Now().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// refused logs a refusal, at most refusalsPerSecond a second: a flood of
// bad connections does not become a flood of log lines.
func (s *Server) refused(addr net.Addr, err error) {
	if s.Log == nil {
		return
	}
	s.logMu.Lock()
	now := time.Now()
	if now.Sub(s.refusedAt) >= time.Second {
		s.refusedAt, s.refusedLogged = now, 0
	}
	if s.refusedLogged >= refusalsPerSecond {
		s.refusedSkipped++
		s.logMu.Unlock()
		return
	}
	s.refusedLogged++
	skipped := s.refusedSkipped
	s.refusedSkipped = 0
	s.logMu.Unlock()
	if skipped > 0 {
		s.logf("refused %s: %v (and %d more refusals not logged)", addr, err, skipped)
		return
	}
	s.logf("refused %s: %v", addr, err)
}

func (s *Server) maxPending() int {
	if s.MaxPending > 0 {
		return s.MaxPending
	}
	return DefaultMaxPending
}

func (s *Server) authTimeout() time.Duration {
	if s.AuthTimeout > 0 {
		return s.AuthTimeout
	}
	return DefaultAuthTimeout
}

// admit records c as pending, first dropping the oldest pending
// connection of the address holding the most when the limit is reached.
func (s *Server) admit(c net.Conn) *pendingConn {
	ip := c.RemoteAddr().String()
	if host, _, err := net.SplitHostPort(ip); err == nil {
		ip = host
	}
	pc := &pendingConn{c: c, ip: ip, since: time.Now()}
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if s.pending == nil {
		s.pending = map[*pendingConn]struct{}{}
	}
	if len(s.pending) >= s.maxPending() {
		count := map[string]int{}
		for p := range s.pending {
			count[p.ip]++
		}
		var victim *pendingConn
		for p := range s.pending {
			if victim == nil || count[p.ip] > count[victim.ip] || (count[p.ip] == count[victim.ip] && p.since.Before(victim.since)) {
				victim = p
			}
		}
		delete(s.pending, victim)
		victim.evicted.Store(true)
		victim.c.Close()
	}
	s.pending[pc] = struct{}{}
	s.peakPending = max(s.peakPending, len(s.pending))
	return pc
}

// authenticated takes pc off the pending list.
func (s *Server) authenticated(pc *pendingConn) {
	s.pmu.Lock()
	delete(s.pending, pc)
	s.pmu.Unlock()
}

// Pending is the number of connections not authenticated yet.
func (s *Server) Pending() int {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	return len(s.pending)
}

// Serve accepts controllers on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of descriptors: wait for some to close rather
				// than end the agent.
				s.logf("accept: %v", err)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			return err
		}
		pc := s.admit(c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveConn(ctx, c, pc)
		}()
	}
}

// accept runs TLS (when on) and the authentication on raw, within the
// authentication timeout.
func (s *Server) accept(ctx context.Context, raw net.Conn) (*Conn, error) {
	raw.SetDeadline(time.Now().Add(s.authTimeout()))
	var c net.Conn = raw
	if s.TLS != nil {
		pk := &peekConn{Conn: raw, r: bufio.NewReaderSize(raw, 64)}
		head, err := pk.r.Peek(len(protocolName))
		if err != nil {
			return nil, fmt.Errorf("no TLS handshake: %w", err)
		}
		if string(head) == protocolName {
			// A controller without TLS: tell it why, in words it reads.
			raw.Write([]byte(refusedPrefix + "this agent speaks TLS; do not give --agents-insecure to the controller\n"))
			return nil, errors.New("a controller without TLS (--agents-insecure); this agent speaks TLS")
		}
		tc := tls.Server(pk, s.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		c = tc
	}
	conn, err := handshake(c, s.Token, false)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return conn, nil
}

// countingConn counts the bytes read from a connection, which tells a
// health check (a connection closed before its first byte) from a refusal.
type countingConn struct {
	net.Conn
	read atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	return n, err
}

// peekConn is a connection whose first bytes were peeked.
type peekConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekConn) Read(b []byte) (int, error) { return p.r.Read(b) }

func (s *Server) serveConn(ctx context.Context, raw net.Conn, pc *pendingConn) {
	defer raw.Close()
	cc := &countingConn{Conn: raw}
	conn, err := s.accept(ctx, cc)
	s.authenticated(pc)
	if err != nil && cc.read.Load() == 0 && errors.Is(err, io.EOF) {
		// Closed before sending a byte: a TCP probe (a Kubernetes
		// readinessProbe, a load balancer's check), not a refusal.
		s.probes.Add(1)
		return
	}
	if err != nil {
		if pc.evicted.Load() {
			err = fmt.Errorf("dropped: more than %d connections were waiting to authenticate", s.maxPending())
		} else if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
			err = fmt.Errorf("not authenticated within %s", s.authTimeout())
		}
		s.refused(raw.RemoteAddr(), err)
		return
	}
	if !s.acquire(ctx, busyWait) {
		s.logf("refused %s: a run is already going", conn.PeerAddr)
		conn.Send(&Message{Kind: KindError, Error: "this agent is already running a plan"})
		return
	}
	defer s.busy.Store(false)
	s.logf("controller %s connected", conn.PeerAddr)
	if err := s.session(ctx, conn); err != nil {
		s.logf("controller %s: %v", conn.PeerAddr, err)
	} else {
		s.logf("controller %s: run done", conn.PeerAddr)
	}
}

// busyWait is how long a controller that connects while a run is still
// ending waits for it (a capacity search's next step arrives as its last
// one ends) before it is told the agent is busy.
const busyWait = 2 * time.Second

// acquire takes the agent for one session, waiting up to wait for the
// session going on to end; false when it did not.
func (s *Server) acquire(ctx context.Context, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for !s.busy.CompareAndSwap(false, true) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// session runs one plan for one controller.
func (s *Server) session(ctx context.Context, conn *Conn) error {
	m, err := conn.Recv(time.Now().Add(startWait))
	if err != nil {
		return fmt.Errorf("waiting for a plan: %w", err)
	}
	if m.Kind != KindPlan || m.Plan == nil {
		return conn.Send(&Message{Kind: KindError, Error: "expected a plan, got " + m.Kind})
	}
	req := m.Plan
	info, job, err := s.Runner.Prepare(ctx, req)
	if err != nil {
		conn.Send(&Message{Kind: KindError, Error: err.Error()})
		return fmt.Errorf("plan refused: %w", err)
	}
	defer job.Close()
	if err := conn.Send(&Message{Kind: KindReady, Ready: info}); err != nil {
		return err
	}
	m, err = conn.Recv(time.Now().Add(startWait))
	if err != nil {
		return fmt.Errorf("waiting for the start: %w", err)
	}
	if m.Kind != KindStart {
		return fmt.Errorf("expected start, got %s", m.Kind)
	}
	s.logf("controller %s: segment %s starts at %s", conn.PeerAddr, req.Segment, m.StartAt.Format(time.RFC3339Nano))

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	// The controller's side: stop on request, and stop the load when the
	// controller goes silent (a lost controller must not leave load running).
	go func() {
		for {
			m, err := conn.Recv(time.Now().Add(s.Timing.lost()))
			if err != nil {
				stop(fmt.Errorf("controller lost: %w", err))
				return
			}
			if m.Kind == KindStop {
				stop(errors.New("stopped by the controller"))
				return
			}
		}
	}()
	var sendErr atomic.Value
	emit := func(m *Message) {
		if err := conn.Send(m); err != nil && sendErr.Load() == nil {
			sendErr.Store(err)
			stop(fmt.Errorf("controller lost: %w", err))
		}
	}
	pingDone := make(chan struct{})
	go func() {
		t := time.NewTicker(s.Timing.ping())
		defer t.Stop()
		for {
			select {
			case <-t.C:
				emit(&Message{Kind: KindPing})
			case <-pingDone:
				return
			}
		}
	}()
	err = job.Run(runCtx, m.StartAt, emit)
	close(pingDone)
	if err != nil {
		emit(&Message{Kind: KindError, Error: err.Error()})
	}
	if cause := context.Cause(runCtx); cause != nil {
		return cause
	}
	return err
}
