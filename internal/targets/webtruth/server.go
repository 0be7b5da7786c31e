// Package webtruth is a web server whose every answer's delay is known, so
// that throng's latency figures can be checked against the truth: each
// request is held for a base delay drawn from a stated distribution (fixed,
// uniform, lognormal; from a seed), after waiting out a periodic stall (a
// request that arrives during a stall is held until the stall ends). The
// server records when each request arrived and how long it really held it
// (as its timers kept it), so the truth of any span of the run — its
// percentiles, its count — is computed from what happened, not assumed.
//
// Every path answers the same 1-byte page. Started by tests and by
// bench/truth.
package webtruth

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Dist is a distribution of delays.
type Dist struct {
	// Kind is "fixed" (every delay is Value), "uniform" (between Min and
	// Max) or "lognormal" (median Value, the logarithm's standard
	// deviation Sigma).
	Kind     string
	Value    time.Duration
	Min, Max time.Duration
	Sigma    float64
}

// Config is the server's model.
type Config struct {
	Delay Dist
	Seed  uint64
	// Stalls: from Anchor on, every StallEvery the server stalls for
	// StallFor, beginning StallAt into the period: a request arriving at t
	// in [Anchor+k·StallEvery+StallAt, +StallFor) waits until that window
	// ends, then its delay. No stalls when StallEvery is 0. A zero Anchor
	// is the first request's arrival.
	StallEvery, StallFor, StallAt time.Duration
	Anchor                        time.Time
	// MaxLog bounds the requests recorded (default 10 million); requests
	// beyond it are counted in Overflow.
	MaxLog int
}

// Request is one request as the server saw it: when it arrived, how long
// it was held (the stall's wait and the delay, as the timers kept them),
// and the part of that it was meant to wait for a stall.
type Request struct {
	Arrived time.Time
	Held    time.Duration
	Stalled time.Duration
}

// Server is a running truth server.
type Server struct {
	cfg Config
	ln  net.Listener
	srv *http.Server
	err chan error

	mu       sync.Mutex
	rng      *rand.Rand
	anchor   time.Time
	log      []Request
	overflow int
}

// Start listens on addr ("127.0.0.1:0" picks a free port) and serves until
// Close.
func Start(addr string, cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.MaxLog <= 0 {
		cfg.MaxLog = 10_000_000
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, ln: ln, err: make(chan error, 1), anchor: cfg.Anchor,
		rng: rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 5 * time.Minute, MaxHeaderBytes: 64 << 10}
	go func() { s.err <- s.srv.Serve(ln) }()
	return s, nil
}

func (c Config) validate() error {
	d := c.Delay
	switch {
	case d.Kind == "fixed" && d.Value >= 0:
	case d.Kind == "uniform" && 0 <= d.Min && d.Min <= d.Max:
	case d.Kind == "lognormal" && d.Value > 0 && d.Sigma >= 0:
	default:
		return fmt.Errorf("webtruth: delay %+v: want fixed (Value ≥ 0), uniform (0 ≤ Min ≤ Max) or lognormal (Value > 0, Sigma ≥ 0)", d)
	}
	if c.StallEvery < 0 || c.StallFor < 0 || c.StallAt < 0 || (c.StallEvery > 0 && c.StallAt+c.StallFor > c.StallEvery) {
		return fmt.Errorf("webtruth: a stall of %s at %s must fit in its period of %s", c.StallFor, c.StallAt, c.StallEvery)
	}
	return nil
}

// URL is the server's base URL.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// draw returns the next delay of the distribution; s.mu is held.
func (s *Server) draw() time.Duration {
	d := s.cfg.Delay
	switch d.Kind {
	case "uniform":
		return d.Min + time.Duration(s.rng.Float64()*float64(d.Max-d.Min))
	case "lognormal":
		return time.Duration(float64(d.Value) * math.Exp(d.Sigma*s.rng.NormFloat64()))
	}
	return d.Value
}

// StallWait is how long a request arriving at t waits for a stall, given
// the stalls' anchor (0 outside every stall).
func (c Config) StallWait(anchor, t time.Time) time.Duration {
	if c.StallEvery <= 0 || c.StallFor <= 0 || t.Before(anchor) {
		return 0
	}
	into := t.Sub(anchor) % c.StallEvery
	if into < c.StallAt || into >= c.StallAt+c.StallFor {
		return 0
	}
	return c.StallAt + c.StallFor - into
}

var page = []byte("x")

// ServeHTTP holds the request for its stall and its delay, then answers.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	s.mu.Lock()
	if s.anchor.IsZero() {
		s.anchor = arrived
	}
	stall := s.cfg.StallWait(s.anchor, arrived)
	hold := stall + s.draw()
	s.mu.Unlock()
	t := time.NewTimer(hold - time.Since(arrived))
	select {
	case <-t.C:
	case <-r.Context().Done():
		t.Stop()
		return
	}
	held := time.Since(arrived)
	w.Header().Set("Content-Length", "1")
	w.Write(page)
	s.mu.Lock()
	if len(s.log) < s.cfg.MaxLog {
		s.log = append(s.log, Request{Arrived: arrived, Held: held, Stalled: stall})
	} else {
		s.overflow++
	}
	s.mu.Unlock()
}

// Anchor is when the stalls' periods begin (zero before the first request
// when Config.Anchor was not set).
func (s *Server) Anchor() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.anchor
}

// Requests returns the requests answered so far that arrived in [from, to),
// in no particular order, and how many were not recorded (beyond MaxLog).
func (s *Server) Requests(from, to time.Time) ([]Request, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.log {
		if !r.Arrived.Before(from) && r.Arrived.Before(to) {
			out = append(out, r)
		}
	}
	return out, s.overflow
}

// Quantile is the q-quantile (0 < q ≤ 1) of the requests' holds, by the
// nearest rank (the ⌈q·n⌉-th smallest, as throng's histograms define it);
// 0 for none.
func Quantile(reqs []Request, q float64) time.Duration {
	if len(reqs) == 0 {
		return 0
	}
	held := make([]time.Duration, len(reqs))
	for i, r := range reqs {
		held[i] = r.Held
	}
	slices.Sort(held)
	rank := int(math.Ceil(q * float64(len(held))))
	return held[min(max(rank, 1), len(held))-1]
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
