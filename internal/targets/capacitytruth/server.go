// Package capacitytruth is a web server whose capacity is known exactly,
// whatever the machine: W workers, each holding one request for a service
// time S (exactly S, or exponentially distributed with mean S). A request
// waits for a free worker, first come first served, then sleeps its
// service time and answers "x". It does no work: its capacity is W/S
// requests per second as long as the machine keeps its timers, so the
// capacity search can be checked against the queueing models of package
// capacity/oracle (keep W/S small: W=4, S=20 ms is 200/s). A timer fires
// late (tens of microseconds, milliseconds on a busy machine): each hold
// asks its timer for S less the lateness seen lately, so holds average S;
// MeanHold says how well that went.
//
// Every path answers the same way. Started by tests, and by `throng serve
// capacity-truth`.
package capacitytruth

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Config is the server's model.
type Config struct {
	Workers int
	Service time.Duration
	// Exponential draws each service time from an exponential law with
	// mean Service (seeded by Seed); else every request holds exactly
	// Service.
	Exponential bool
	Seed        uint64
}

// Server is a running capacity-truth server.
type Server struct {
	cfg     Config
	ln      net.Listener
	srv     *http.Server
	err     chan error
	workers chan struct{} // a token per busy worker; a channel's waiting senders are served in order
	mu      sync.Mutex
	rng     *rand.Rand
	served  atomic.Int64
	held    atomic.Int64 // nanoseconds workers were held, summed
	late    atomic.Int64 // how late the timer fires, nanoseconds, a moving average (under mu)
}

// lateWeight is the span of the moving average of the timer's lateness,
// in holds.
const lateWeight = 16

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves until
// Close.
func Start(addr string, cfg Config) (*Server, error) {
	if cfg.Workers < 1 || cfg.Service <= 0 {
		return nil, fmt.Errorf("capacity-truth: need at least one worker and a positive service time (got %d, %s)", cfg.Workers, cfg.Service)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, ln: ln, err: make(chan error, 1), workers: make(chan struct{}, cfg.Workers),
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 5 * time.Minute, MaxHeaderBytes: 64 << 10}
	go func() { s.err <- s.srv.Serve(ln) }()
	return s, nil
}

// Capacity is W/S in requests per second.
func (s *Server) Capacity() float64 { return float64(s.cfg.Workers) / s.cfg.Service.Seconds() }

// URL is the server's base URL.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Served counts the requests answered; MeanHold is the mean time a worker
// held one (the service time as the machine's timers kept it).
func (s *Server) Served() int64 { return s.served.Load() }

// MeanHold is the mean time a worker held a request.
func (s *Server) MeanHold() time.Duration {
	n := s.served.Load()
	if n == 0 {
		return 0
	}
	return time.Duration(s.held.Load() / n)
}

func (s *Server) service() time.Duration {
	if !s.cfg.Exponential {
		return s.cfg.Service
	}
	s.mu.Lock()
	e := s.rng.ExpFloat64()
	s.mu.Unlock()
	return time.Duration(e * float64(s.cfg.Service))
}

var page = []byte("x")

// ServeHTTP waits for a worker, holds it for the service time, answers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case s.workers <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	start := time.Now()
	// The timer fires late (by tens of microseconds on an idle machine,
	// by milliseconds on a busy one): ask it for the hold less the
	// lateness seen so far, so that holds average the service time.
	ask := max(0, s.service()-time.Duration(s.late.Load()))
	t := time.NewTimer(ask)
	select {
	case <-t.C:
		held := time.Since(start)
		s.mu.Lock()
		late := time.Duration(s.late.Load())
		s.late.Store(int64(late + (held-ask-late)/lateWeight))
		s.mu.Unlock()
	case <-r.Context().Done():
		t.Stop()
	}
	s.held.Add(int64(time.Since(start)))
	<-s.workers
	s.served.Add(1)
	w.Header().Set("Content-Length", "1")
	w.Write(page)
}

// Close stops the server and closes its connections.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		err = s.srv.Close()
	}
	if serr := <-s.err; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
