package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
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
type Server struct {
	Token  []byte
	Runner Runner
	Log    io.Writer // one line per event (connections, refusals, runs)
	Timing Timing
	busy   atomic.Bool
	logMu  sync.Mutex
}

func (s *Server) logf(format string, args ...any) {
	if s.Log == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.Log, "%s %s\n", time.Now().Format(time.RFC3339), fmt.Sprintf(format, args...))
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
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.serveConn(ctx, c)
		}()
	}
}

func (s *Server) serveConn(ctx context.Context, raw net.Conn) {
	defer raw.Close()
	conn, err := handshake(raw, s.Token, false)
	if err != nil {
		s.logf("refused %s: %v", raw.RemoteAddr(), err)
		return
	}
	if !s.busy.CompareAndSwap(false, true) {
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
