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
		s.logf("controller %s: session done", conn.PeerAddr)
	}
}

// busyWait is how long a controller that connects while a session is
// still ending waits for it (a controller connecting again at once, after
// it lost the agent during a run) before it is told the agent is busy.
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

// session serves one controller: the plans it sends, one after another
// (protocol 3: a capacity search keeps one session for all its steps),
// and the data sets it asks prepared (KindPrepare), until the controller
// closes the connection. Between plans the controller pings; a session
// whose controller says nothing for LostAfter, or sends nothing but pings
// for startWait, ends (a lost controller must not hold the agent).
//
// One goroutine reads the connection for the whole session; what comes
// during a run or a preparation (a stop, pings, or already the next plan)
// is handled by while, the rest by the loop here.
func (s *Server) session(ctx context.Context, conn *Conn) error {
	in := make(chan received, 64)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			m, err := conn.Recv(time.Now().Add(s.Timing.lost()))
			select {
			case in <- received{m, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var pending *Message // a message that came during a run, for after it
	plans := 0
	for {
		m := pending
		pending = nil
		if m == nil {
			var err error
			if m, err = next(in, startWait); err != nil {
				if errors.Is(err, io.EOF) && plans > 0 {
					return nil // the controller closed the session
				}
				return fmt.Errorf("waiting for a plan: %w", err)
			}
		}
		var err error
		switch {
		case m.Kind == KindPlan && m.Plan != nil:
			plans++
			pending, err = s.runPlan(ctx, conn, in, m.Plan)
		case m.Kind == KindPrepare && m.Plan != nil:
			plans++
			pending, err = s.preparePopulation(ctx, conn, in, m.Plan)
		default:
			return conn.Send(&Message{Kind: KindError, Error: "expected a plan, got " + m.Kind})
		}
		if errors.Is(err, errClosed) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// errClosed is the controller closing its session as a run ended.
var errClosed = errors.New("the controller closed the session")

// received is one frame read, or why none could be.
type received struct {
	m   *Message
	err error
}

// next is the next message other than a ping, waiting up to wait for it.
func next(in <-chan received, wait time.Duration) (*Message, error) {
	timeout := time.After(wait)
	for {
		select {
		case r := <-in:
			if r.err != nil {
				return nil, r.err
			}
			if r.m.Kind != KindPing {
				return r.m, nil
			}
		case <-timeout:
			return nil, fmt.Errorf("nothing but pings for %s", wait)
		}
	}
}

// while runs work while it reads what the controller sends: a stop ends the
// work (its context's cause says so), a lost controller too (then busy's
// error says so, and the session ends); pings are dropped; anything else
// (the next plan, sent as soon as this run ended) is kept and returned for
// the session to handle next. While the work goes, the agent pings.
func (s *Server) while(ctx context.Context, conn *Conn, in <-chan received, work func(ctx context.Context, emit func(*Message)) error) (workErr error, pending *Message, lost error) {
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var sendErr atomic.Value
	emit := func(m *Message) {
		if err := conn.Send(m); err != nil && sendErr.Load() == nil {
			sendErr.Store(err)
			stop(fmt.Errorf("controller lost: %w", err))
		}
	}
	finished := make(chan error, 1)
	go func() { finished <- work(runCtx, emit) }()
	t := time.NewTicker(s.Timing.ping())
	defer t.Stop()
	for {
		select {
		case err := <-finished:
			if se, ok := sendErr.Load().(error); ok && lost == nil {
				lost = fmt.Errorf("controller lost: %w", se)
			}
			return err, pending, lost
		case <-t.C:
			emit(&Message{Kind: KindPing})
		case r := <-in:
			switch {
			case r.err != nil:
				if lost == nil {
					lost = fmt.Errorf("controller lost: %w", r.err)
					stop(lost)
				}
				in = nil // nothing more will come
			case r.m.Kind == KindStop:
				stop(errors.New("stopped by the controller"))
			case r.m.Kind == KindPing:
			default:
				pending = r.m
			}
		}
	}
}

// runPlan prepares one plan, waits for the start, runs it and sends its
// records; a plan refused or withdrawn (a stop before the start: another
// agent refused its segment) leaves the session open for the next one.
// It returns a message that came during the run, to handle next.
func (s *Server) runPlan(ctx context.Context, conn *Conn, in <-chan received, req *PlanRequest) (*Message, error) {
	info, job, err := s.Runner.Prepare(ctx, req)
	if err != nil {
		s.logf("controller %s: plan refused: %v", conn.PeerAddr, err)
		return nil, conn.Send(&Message{Kind: KindError, Error: err.Error()})
	}
	defer job.Close()
	if err := conn.Send(&Message{Kind: KindReady, Ready: info}); err != nil {
		return nil, err
	}
	m, err := next(in, startWait)
	if err != nil {
		return nil, fmt.Errorf("waiting for the start: %w", err)
	}
	switch m.Kind {
	case KindStart:
	case KindStop:
		s.logf("controller %s: segment %s withdrawn before its start", conn.PeerAddr, req.Segment)
		return nil, nil
	default:
		return nil, fmt.Errorf("expected start, got %s", m.Kind)
	}
	s.logf("controller %s: segment %s starts at %s", conn.PeerAddr, req.Segment, m.StartAt.Format(time.RFC3339Nano))
	var cause error
	ended := false // the run's end sent: nothing follows it
	// whole: the end was sent of a run nothing had stopped: a controller
	// that closes the session after it is done with it, not one lost
	// mid-run (whose run, stopped by the loss, still ends and sends an
	// end).
	whole := false
	runErr, pending, lost := s.while(ctx, conn, in, func(runCtx context.Context, emit func(*Message)) error {
		err := job.Run(runCtx, m.StartAt, func(m *Message) {
			if m.Kind == KindEnd {
				ended = true
				whole = whole || context.Cause(runCtx) == nil
			}
			emit(m)
		})
		cause = context.Cause(runCtx)
		if err != nil && !ended {
			emit(&Message{Kind: KindError, Error: err.Error(), Population: isPopulationError(err)})
		}
		return err
	})
	switch {
	case lost != nil && whole && errors.Is(lost, io.EOF):
		// The run was over, all of it sent, when the controller closed
		// the session.
		s.logf("controller %s: run done", conn.PeerAddr)
		return nil, errClosed
	case lost != nil:
		return nil, lost
	case runErr != nil:
		s.logf("controller %s: run failed: %v", conn.PeerAddr, runErr)
	case cause != nil:
		s.logf("controller %s: run ended: %v", conn.PeerAddr, cause)
	default:
		s.logf("controller %s: run done", conn.PeerAddr)
	}
	return pending, nil
}

// preparePopulation prepares, once, the data set of a plan's segment for
// the runs that follow (KeepPopulation), and says what it wrote.
func (s *Server) preparePopulation(ctx context.Context, conn *Conn, in <-chan received, req *PlanRequest) (*Message, error) {
	pr, ok := s.Runner.(PopulationRunner)
	if !ok {
		return nil, conn.Send(&Message{Kind: KindError, Error: "this agent cannot prepare a data set ahead of its runs"})
	}
	var info *PreparedInfo
	prepErr, pending, lost := s.while(ctx, conn, in, func(ctx context.Context, _ func(*Message)) error {
		var err error
		info, err = pr.PreparePopulation(ctx, req)
		return err
	})
	if lost != nil {
		return nil, lost
	}
	if prepErr != nil {
		s.logf("controller %s: data set of segment %s not prepared: %v", conn.PeerAddr, req.Segment, prepErr)
		return pending, conn.Send(&Message{Kind: KindError, Error: prepErr.Error()})
	}
	s.logf("controller %s: data set of segment %s prepared: %d users, %d items", conn.PeerAddr, req.Segment, info.Users, info.Items)
	return pending, conn.Send(&Message{Kind: KindPrepared, Prepared: info})
}
