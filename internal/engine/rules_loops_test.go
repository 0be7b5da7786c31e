package engine

import (
	"bufio"
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/web"
	"github.com/throng-io/throng/internal/plan"
)

// delayServer is a local HTTP/1.1 server (keep-alive) that answers its
// n-th request (1-based, over all connections) after delay(n).
type delayServer struct {
	ln    net.Listener
	delay func(n int) time.Duration
	n     atomic.Int64
	mu    sync.Mutex
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newDelayServer(t *testing.T, delay func(n int) time.Duration) *delayServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &delayServer{ln: ln, delay: delay, conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

func (s *delayServer) url() string { return "http://" + s.ln.Addr().String() }

func (s *delayServer) close() {
	s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (s *delayServer) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serve(c)
	}
}

// serve answers the requests of one connection: each is a head without a
// body (the web driver's GET).
func (s *delayServer) serve(c net.Conn) {
	defer s.wg.Done()
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) <= 2 {
				break
			}
		}
		time.Sleep(s.delay(int(s.n.Add(1))))
		if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")); err != nil {
			return
		}
	}
}

// runRuleOnLoops runs a row's plan on one event-loop thread of kind, with
// the web driver, against a delayServer answering in the row's service
// time, bounded by the plan's max_duration.
func runRuleOnLoops(t *testing.T, kind string, p *plan.Plan, r *rule) observed {
	t.Helper()
	srv := newDelayServer(t, func(n int) time.Duration { return r.service(0, n) })
	wc, errs := web.Decode(p.Scenario.DriverConfig, srv.url())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var acts []driver.Action
	for _, a := range p.Scenario.Actions {
		ca, errs := wc.Compile(a)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		acts = append(acts, ca)
	}
	ctx, cancel := context.WithTimeoutCause(context.Background(), p.MaxDuration, ErrMaxDuration)
	defer cancel()
	out, err := Run(ctx, Config{Plan: p, Driver: wc, Actions: acts, Kind: kind, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	return observe(out)
}
