package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
)

var token = []byte("0123456789abcdef-test-token")

// fakeRunner runs "plans" of 12 users: each segment's users do 10 actions
// of 1 ms per interval, for intervals of 50 ms, until intervals are done or
// the run is stopped.
type fakeRunner struct {
	intervals int
	running   atomic.Int32
	stopped   chan string // why each job ended
}

type fakeJob struct {
	r   *fakeRunner
	seg plan.Segment
}

func (r *fakeRunner) Prepare(ctx context.Context, req *PlanRequest) (*ReadyInfo, Job, error) {
	if strings.Contains(req.Source, "refuse") {
		return nil, nil, errors.New("users: users is -1: it must be at least 1")
	}
	seg, err := plan.ParseSegment(req.Segment)
	if err != nil {
		return nil, nil, err
	}
	ws, _ := plan.ParseWeights(req.Weights)
	seg, err = plan.NewSegment(seg.K, seg.N, ws)
	if err != nil {
		return nil, nil, err
	}
	return &ReadyInfo{Engine: "fake", SegmentUsers: users(seg)}, &fakeJob{r: r, seg: seg}, nil
}

func users(seg plan.Segment) int {
	n := 0
	for i := int64(0); i < 12; i++ {
		if seg.Owns(i) {
			n++
		}
	}
	return n
}

func (j *fakeJob) Run(ctx context.Context, startAt time.Time, emit func(*Message)) error {
	j.r.running.Add(1)
	defer j.r.running.Add(-1)
	time.Sleep(time.Until(startAt))
	start := time.Now()
	emit(&Message{Kind: KindStarted, StartedAt: start})
	emit(&Message{Kind: KindMeta, Meta: &result.Meta{Scenario: "fake", SourceSHA256: "x", Users: 12, Segment: j.seg.String(),
		SegmentUsers: users(j.seg), Actions: []string{"a"}, StartedAt: start, Runs: 1}})
	emit(&Message{Kind: KindRepetition, Rep: 0, StartedAt: start})
	why := "done"
	i := 0
	for ; i < j.r.intervals; i++ {
		select {
		case <-ctx.Done():
			why = context.Cause(ctx).Error()
		case <-time.After(50 * time.Millisecond):
		}
		if why != "done" {
			break
		}
		var s metrics.ActionSnapshot
		for k := 0; k < 10*users(j.seg); k++ {
			s.Count++
			s.Latency.Record(1000)
			s.Service.Record(1000)
		}
		emit(&Message{Kind: KindInterval, Rep: 0, Interval: &result.Interval{Index: i, StartS: 0.05 * float64(i), DurationS: 0.05,
			Phase: "steady", ActiveUsers: users(j.seg), Actions: []result.ActionInterval{result.FromSnapshot(&s)}}})
	}
	partial := why != "done"
	emit(&Message{Kind: KindRepetitionEnd, Rep: 0, RepEnd: &result.Repetition{ElapsedS: 0.05 * float64(i), Partial: partial, Reason: why}})
	emit(&Message{Kind: KindEnd, Partial: partial, Reason: why})
	if j.r.stopped != nil {
		j.r.stopped <- why
	}
	return nil
}

func (j *fakeJob) Close() {}

// startAgents starts n agents (TLS, the test certificate) on loopback and
// returns their addresses.
func startAgents(t *testing.T, n int, r Runner, tok []byte, timing ...Timing) ([]string, *syncBuffer) {
	t.Helper()
	log := &syncBuffer{}
	var addrs []string
	for i := 0; i < n; i++ {
		s := &Server{Token: tok, Runner: r, Log: log, TLS: ServerTLS(testCert(t))}
		if len(timing) > 0 {
			s.Timing = timing[0]
		}
		addrs = append(addrs, startServer(t, s))
	}
	return addrs, log
}

// startServer serves s on a loopback port until the test ends.
func startServer(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

var (
	certOnce sync.Once
	certPair tls.Certificate
	certErr  error
)

// testCert is one generated certificate for every test of the package.
func testCert(t *testing.T) tls.Certificate {
	t.Helper()
	certOnce.Do(func() {
		c, k, err := generate()
		if err == nil {
			certPair, err = tls.X509KeyPair(c, k)
		}
		certErr = err
	})
	if certErr != nil {
		t.Fatal(certErr)
	}
	return certPair
}

// tlsAgentSide wraps an accepted connection as an agent does.
func tlsAgentSide(t *testing.T, raw net.Conn) net.Conn {
	t.Helper()
	tc := tls.Server(raw, ServerTLS(testCert(t)))
	if err := tc.Handshake(); err != nil {
		t.Error(err)
	}
	return tc
}

// tlsControllerSide wraps a dialled connection as a controller does.
func tlsControllerSide(t *testing.T, raw net.Conn) net.Conn {
	t.Helper()
	var seen string
	tc := tls.Client(raw, clientTLS(nil, &seen))
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	return tc
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestControllerMergesAgents(t *testing.T) {
	r := &fakeRunner{intervals: 8}
	addrs, _ := startAgents(t, 3, r, token)
	var live []int
	c := &Controller{Agents: addrs, Weights: []int{1, 2, 1}, Token: token, Plan: PlanRequest{Source: "users: 12"},
		OnInterval: func(rep int, iv *result.Interval) { live = append(live, iv.Index) }}
	run, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all := result.Find(run.Repetitions[0].Summaries, result.All)
	// 12 users x 10 actions x 8 intervals, whatever the split.
	if all.Total.Count != 960 || run.Partial {
		t.Fatalf("count %d partial %v %s", all.Total.Count, run.Partial, run.Reason)
	}
	if len(run.Agents) != 3 || run.Agents[0].Users != 3 || run.Agents[1].Users != 6 || run.Agents[2].Users != 3 {
		t.Errorf("agents %+v", run.Agents)
	}
	for _, a := range run.Agents {
		if a.StartSkewMs < 0 || a.StartSkewMs > 10 {
			t.Errorf("agent %s started %.2f ms after the agreed instant", a.Name, a.StartSkewMs)
		}
	}
	if len(live) != 8 || live[7] != 7 {
		t.Errorf("live intervals %v", live)
	}
}

// Anyone without the token is refused and logged, and runs nothing.
func TestWrongTokenRefused(t *testing.T) {
	r := &fakeRunner{intervals: 2}
	addrs, log := startAgents(t, 1, r, token)
	c := &Controller{Agents: addrs, Token: []byte("not-the-right-token-at-all"), Plan: PlanRequest{Source: "x"}}
	_, err := c.Run(context.Background())
	if err == nil || !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	if !strings.Contains(log.String(), "refused 127.0.0.1") || r.running.Load() != 0 {
		t.Errorf("log %q, running %d", log.String(), r.running.Load())
	}
	// Garbage instead of the protocol: refused too.
	conn, _ := net.Dial("tcp", addrs[0])
	conn.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	conn.Close()
}

func TestAgentRefusesABadPlan(t *testing.T) {
	addrs, _ := startAgents(t, 2, &fakeRunner{intervals: 2}, token)
	_, err := (&Controller{Agents: addrs, Token: token, Plan: PlanRequest{Source: "refuse"}}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "users is -1") {
		t.Errorf("err = %v", err)
	}
}

// Ctrl-C on the controller stops every agent; what they recorded is kept.
func TestControllerStopStopsAgents(t *testing.T) {
	r := &fakeRunner{intervals: 1000, stopped: make(chan string, 2)}
	addrs, _ := startAgents(t, 2, r, token)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(900*time.Millisecond, cancel) // the agents start at 500 ms
	start := time.Now()
	run, err := (&Controller{Agents: addrs, Token: token, Plan: PlanRequest{Source: "x"}}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %v to stop", took)
	}
	for i := 0; i < 2; i++ {
		if why := <-r.stopped; why != "stopped by the controller" {
			t.Errorf("agent stopped because %q", why)
		}
	}
	if !run.Partial || result.Find(run.Repetitions[0].Summaries, result.All).Total.Count == 0 {
		t.Errorf("partial %v", run.Partial)
	}
}

// An agent that dies mid-run: the controller notices, marks the result
// partial naming it, and the others go on to the end.
var short = Timing{PingEvery: 100 * time.Millisecond, LostAfter: 700 * time.Millisecond}

func TestAgentLostMidRun(t *testing.T) {
	r := &fakeRunner{intervals: 30}
	addrs, _ := startAgents(t, 1, r, token, short)
	// A second "agent" that authenticates, runs a little, then vanishes.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	go func() {
		raw, err := ln.Accept()
		if err != nil {
			return
		}
		conn, err := handshake(tlsAgentSide(t, raw), token, false)
		if err != nil {
			return
		}
		m, _ := conn.Recv(time.Time{})
		info, job, _ := r.Prepare(context.Background(), m.Plan)
		conn.Send(&Message{Kind: KindReady, Ready: info})
		m, _ = conn.Recv(time.Time{})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(800*time.Millisecond, func() { cancel(); raw.Close() })
		job.Run(ctx, m.StartAt, func(m *Message) { conn.Send(m) })
	}()
	run, err := (&Controller{Agents: []string{addrs[0], ln.Addr().String()}, Token: token, Plan: PlanRequest{Source: "x"}, Timing: short}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !run.Partial || !strings.Contains(run.Reason, ln.Addr().String()) {
		t.Errorf("partial %v reason %q", run.Partial, run.Reason)
	}
	// The surviving agent ran to its end: 6 users x 10 x 30 intervals.
	if got := result.Find(run.Repetitions[0].Summaries, result.All).Total.Count; got < 1800 {
		t.Errorf("count %d, want the whole of the surviving agent's 1800 at least", got)
	}
}

// startRunAsController connects to the agent at addr as a controller,
// has it run one plan (segment 1/1) and starts it now; it returns the
// connection, for the test to fall silent on or close.
func startRunAsController(t *testing.T, addr string) net.Conn {
	t.Helper()
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := handshake(tlsControllerSide(t, raw), token, true)
	if err != nil {
		t.Fatal(err)
	}
	conn.Send(&Message{Kind: KindPlan, Plan: &PlanRequest{Source: "x", Segment: "1/1"}})
	if m, err := conn.Recv(time.Now().Add(5 * time.Second)); err != nil || m.Kind != KindReady {
		t.Fatalf("%v %v", m, err)
	}
	conn.Send(&Message{Kind: KindStart, StartAt: time.Now()})
	return raw
}

// A started agent that loses its controller stops its load within a bound.
func TestAgentStopsWhenControllerLost(t *testing.T) {
	r := &fakeRunner{intervals: 1000, stopped: make(chan string, 1)}
	addrs, _ := startAgents(t, 1, r, token, short)
	raw := startRunAsController(t, addrs[0])
	// Then silence: no ping, no stop, but the connection stays open.
	start := time.Now()
	select {
	case why := <-r.stopped:
		if !strings.Contains(why, "controller lost") {
			t.Errorf("stopped because %q", why)
		}
		if took := time.Since(start); took > short.LostAfter+time.Second {
			t.Errorf("took %v", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the agent kept its load running without a controller")
	}
	raw.Close()
}

// A controller that closes its connection mid-run (killed: the agent reads
// an end of file) is lost, not done: the run it stopped still ends and
// sends its end, which must not make the close look like one after a
// whole run.
func TestAgentSaysControllerLostOnCloseMidRun(t *testing.T) {
	r := &fakeRunner{intervals: 1000, stopped: make(chan string, 1)}
	addrs, log := startAgents(t, 1, r, token, short)
	raw := startRunAsController(t, addrs[0])
	time.Sleep(300 * time.Millisecond)
	// A FIN, as from a killed controller that had read all it was sent
	// (one with unread data sends a reset instead, a read error).
	raw.(*net.TCPConn).CloseWrite()
	defer raw.Close()
	select {
	case why := <-r.stopped:
		if !strings.Contains(why, "controller lost") {
			t.Errorf("stopped because %q", why)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the agent kept its load running without a controller")
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(log.String(), "controller lost") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := log.String(); !strings.Contains(got, "controller lost") || strings.Contains(got, "run done") {
		t.Errorf("the agent's log does not say its controller was lost mid-run:\n%s", got)
	}
}

func TestFramesAreAuthenticated(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	a, _ := net.Dial("tcp", ln.Addr().String())
	b, _ := ln.Accept()
	defer a.Close()
	defer b.Close()
	errc := make(chan error, 1)
	var cb *Conn
	go func() {
		var err error
		cb, err = handshake(b, token, false)
		errc <- err
	}()
	ca, err := handshake(a, token, true)
	if err != nil || <-errc != nil {
		t.Fatal(err)
	}
	go ca.Send(&Message{Kind: KindPing})
	if m, err := cb.Recv(time.Now().Add(time.Second)); err != nil || m.Kind != KindPing {
		t.Fatalf("%v %v", m, err)
	}
	// A frame with a flipped byte fails its check.
	go func() {
		ca.wmu.Lock()
		ca.sendSeq++ // as if a frame had been dropped: the sequence no longer matches
		ca.wmu.Unlock()
		ca.Send(&Message{Kind: KindStop})
	}()
	if _, err := cb.Recv(time.Now().Add(time.Second)); err == nil || !strings.Contains(err.Error(), "failed its check") {
		t.Errorf("a dropped frame was not noticed: %v", err)
	}
	if _, err := handshake(a, []byte("short"), true); err == nil {
		t.Error("a short token was accepted")
	}
}
