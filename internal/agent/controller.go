package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
	"github.com/throng-io/throng/internal/sampler"
)

// Controller runs one plan over several agents: it gives each its segment,
// starts them all at one instant, merges their intervals as they arrive and
// returns the merged result with each agent's detail.
type Controller struct {
	Agents  []string // host:port of each agent; agent k runs segment k/n
	Weights []int    // optional, one per agent
	Token   []byte
	// Insecure talks to the agents in plaintext (they run with
	// --insecure); by default they are reached over TLS.
	Insecure bool
	// Pins are the fingerprints (Fingerprint) an agent's TLS certificate
	// must be one of; empty: any certificate, the agent then being
	// authenticated by the token proofs bound to the TLS session alone.
	Pins []string
	Plan PlanRequest // Segment and Weights are set per agent
	// Dial opens a connection to an agent (default: TCP with a 10 s timeout).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// DialWait keeps trying to reach an agent that refuses or does not
	// resolve yet (agents still starting), for at most this long; 0 tries
	// once.
	DialWait time.Duration
	// Callbacks, from one goroutine, in order: the merged metadata once,
	// each repetition's start, each merged interval.
	OnMeta            func(*result.Meta)
	OnRepetitionStart func(rep int, at time.Time)
	OnInterval        func(rep int, iv *result.Interval)
	Log               io.Writer
	// Lead is how far ahead of "all ready" the start instant is set
	// (default 500 ms), so every agent receives it before it comes.
	Lead   time.Duration
	Timing Timing
}

type peer struct {
	addr      string
	seg       string
	conn      *Conn
	ac        *agentConn
	ready     *ReadyInfo
	run       result.Run
	startedAt time.Time
	lastSeen  time.Time
	done      bool
	lost      string // why it was declared lost
	errMsg    string
	popErr    bool // its run found the data set kept for it gone
}

// out reports whether the peer will send nothing more.
func (p *peer) out() bool { return p.done || p.lost != "" }

func (c *Controller) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, "throng: "+format+"\n", args...)
	}
}

// Run connects to every agent, prepares them, starts them together and
// waits for the end. Ctrl-C (ctx ending) stops every agent; their records
// up to then are kept. It fails only when the run cannot start (an agent
// unreachable, refusing the token or the plan): then no agent runs load.
// It is one session (Open) of one plan.
func (c *Controller) Run(ctx context.Context) (*result.Run, error) {
	s, err := c.Open(ctx)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Run(ctx, c.Plan)
}

// Session is a controller's authenticated connections to its agents, kept
// open from one plan to the next (protocol 3): a capacity search runs all
// its steps in one session per agent, and has each agent prepare its share
// of a costly data set once (PreparePopulation). Between plans it pings
// the agents. An agent lost during a run is connected again before the
// next plan. Its methods are called from one goroutine.
type Session struct {
	c      *Controller
	dial   func(context.Context, string) (net.Conn, error)
	agents []*agentConn
	events chan event
	closed chan struct{}
	once   sync.Once
	mu     sync.Mutex // agentConn.conn, for the pinger
	// Connections counts the connections opened to agents (sessions on
	// their side), the first ones and any made again after a loss.
	Connections int
}

// agentConn is one agent of a session and its connection (nil: none).
type agentConn struct {
	addr string
	seg  string
	conn *Conn
}

// event is a frame read from an agent's connection conn, or why none
// could be; events of a connection dropped since are stale.
type event struct {
	a    *agentConn
	conn *Conn
	m    *Message
	err  error
}

// Open connects to every agent and authenticates, in parallel; it fails
// when one cannot be reached or refuses, then holding none.
func (c *Controller) Open(ctx context.Context) (*Session, error) {
	n := len(c.Agents)
	if n == 0 {
		return nil, errors.New("no agents")
	}
	if len(c.Weights) > 0 && len(c.Weights) != n {
		return nil, fmt.Errorf("%d weights for %d agents", len(c.Weights), n)
	}
	dial := c.Dial
	if dial == nil {
		dial = func(ctx context.Context, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: 10 * time.Second}
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	s := &Session{c: c, dial: dial, events: make(chan event, 1024), closed: make(chan struct{})}
	for i, addr := range c.Agents {
		s.agents = append(s.agents, &agentConn{addr: addr, seg: fmt.Sprintf("%d/%d", i+1, n)})
	}
	if err := s.connect(ctx); err != nil {
		s.Close()
		return nil, err
	}
	go s.pinger()
	return s, nil
}

// Close ends the session: every agent's connection is closed (the agents
// end their sessions).
func (s *Session) Close() {
	s.once.Do(func() { close(s.closed) })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.agents {
		if a.conn != nil {
			a.conn.Close()
			a.conn = nil
		}
	}
}

// connOf is a's connection (nil: none).
func (s *Session) connOf(a *agentConn) *Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return a.conn
}

// drop closes a's connection, if it is still conn: the agent is
// connected again before the next plan.
func (s *Session) drop(a *agentConn, conn *Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.conn == conn && conn != nil {
		conn.Close()
		a.conn = nil
	}
}

// connect connects the agents not connected, in parallel, and reads each
// new connection into the session's events.
func (s *Session) connect(ctx context.Context) error {
	errs := make([]error, len(s.agents))
	var wg sync.WaitGroup
	for i, a := range s.agents {
		if s.connOf(a) != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := s.c.connect(ctx, s.dial, a.addr)
			if err != nil {
				errs[i] = err
				return
			}
			s.mu.Lock()
			select {
			case <-s.closed:
				conn.Close()
			default:
				a.conn = conn
				s.Connections++
			}
			s.mu.Unlock()
			go s.read(a, conn)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// read passes every frame of conn to the session's events, until it
// fails or the session is closed.
func (s *Session) read(a *agentConn, conn *Conn) {
	for {
		m, err := conn.Recv(time.Time{})
		select {
		case s.events <- event{a, conn, m, err}:
		case <-s.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// pinger keeps the agents sure the controller is alive, between plans as
// during them.
func (s *Session) pinger() {
	t := time.NewTicker(s.c.Timing.ping())
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.mu.Lock()
			conns := make([]*Conn, 0, len(s.agents))
			for _, a := range s.agents {
				if a.conn != nil {
					conns = append(conns, a.conn)
				}
			}
			s.mu.Unlock()
			for _, c := range conns {
				c.Send(&Message{Kind: KindPing})
			}
		case <-s.closed:
			return
		}
	}
}

// weights is the weights as a plan request carries them.
func (s *Session) weights() string {
	if len(s.c.Weights) == 0 {
		return ""
	}
	ws := make([]string, len(s.c.Weights))
	for i, w := range s.c.Weights {
		ws[i] = strconv.Itoa(w)
	}
	return strings.Join(ws, ",")
}

// await reads the session's events until each of peers has answered
// (answer, given its first message other than a ping, returns its error,
// nil when the answer is the one wanted), within limit (0: none), or, with
// silence, until one says nothing for LostAfter. A peer that did not
// answer, or whose connection failed, is dropped. It returns the errors.
func (s *Session) await(ctx context.Context, peers []*peer, limit time.Duration, silence bool, answer func(p *peer, m *Message) error) error {
	errs := make([]error, len(peers))
	left := 0
	answered := make([]bool, len(peers))
	for i, p := range peers {
		if p.conn == nil {
			answered[i] = true
			continue
		}
		p.lastSeen = time.Now()
		left++
	}
	var deadline <-chan time.Time
	if limit > 0 {
		deadline = time.After(limit)
	}
	check := time.NewTicker(250 * time.Millisecond)
	defer check.Stop()
	fail := func(i int, err error) {
		errs[i], answered[i] = err, true
		left--
		s.drop(peers[i].ac, peers[i].conn)
	}
	for left > 0 {
		select {
		case ev := <-s.events:
			for i, p := range peers {
				if answered[i] || ev.conn != p.conn {
					continue
				}
				p.lastSeen = time.Now()
				switch {
				case ev.err != nil:
					fail(i, fmt.Errorf("agent %s: no answer: %w", p.addr, ev.err))
				case ev.m.Kind == KindPing:
				default:
					errs[i], answered[i] = answer(p, ev.m), true
					left--
				}
			}
		case <-check.C:
			for i, p := range peers {
				if !answered[i] && silence && time.Since(p.lastSeen) > s.c.Timing.lost() {
					fail(i, fmt.Errorf("agent %s: silent for %s", p.addr, s.c.Timing.lost()))
				}
			}
		case <-deadline:
			for i, p := range peers {
				if !answered[i] {
					fail(i, fmt.Errorf("agent %s: no answer within %s", p.addr, limit))
				}
			}
		case <-ctx.Done():
			for i, p := range peers {
				if !answered[i] {
					fail(i, fmt.Errorf("agent %s: %w", p.addr, context.Cause(ctx)))
				}
			}
		}
	}
	return errors.Join(errs...)
}

// peers is a peer for each agent, on its connection now.
func (s *Session) peers() []*peer {
	out := make([]*peer, len(s.agents))
	for i, a := range s.agents {
		out[i] = &peer{addr: a.addr, seg: a.seg, conn: s.connOf(a), ac: a}
	}
	return out
}

// PreparePopulation has each agent, one after the other (they may share
// the target's directory or account store), prepare the data set of its
// segment of plan once, for the plans of the session that keep it
// (PlanRequest.KeepPopulation). It returns what each wrote, in the
// agents' order, or the first agent's failure.
func (s *Session) PreparePopulation(ctx context.Context, plan PlanRequest) ([]PreparedInfo, error) {
	if err := s.connect(ctx); err != nil {
		return nil, err
	}
	weights := s.weights()
	var out []PreparedInfo
	for _, p := range s.peers() {
		req := plan
		req.Segment, req.Weights = p.seg, weights
		if err := p.conn.Send(&Message{Kind: KindPrepare, Plan: &req}); err != nil {
			s.drop(p.ac, p.conn)
			return nil, fmt.Errorf("agent %s: %w", p.addr, err)
		}
		var info PreparedInfo
		err := s.await(ctx, []*peer{p}, 0, true, func(p *peer, m *Message) error {
			switch {
			case m.Kind == KindPrepared && m.Prepared != nil:
				info = *m.Prepared
				return nil
			case m.Kind == KindError:
				return fmt.Errorf("agent %s could not prepare the data set of segment %s: %s", p.addr, p.seg, m.Error)
			}
			return fmt.Errorf("agent %s: unexpected %s", p.addr, m.Kind)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// Run runs one plan over the session's agents: it connects any agent lost
// before, gives each its segment, starts them together and waits for the
// end, as Controller.Run. A plan an agent refuses is withdrawn from the
// others (the session stays open). An agent whose run found the data set
// kept for it gone (PlanRequest.KeepPopulation) makes Run fail with a
// *runner.PopulationError.
func (s *Session) Run(ctx context.Context, plan PlanRequest) (*result.Run, error) {
	c := s.c
	if err := s.connect(ctx); err != nil {
		return nil, err
	}
	n := len(s.agents)
	weights := s.weights()
	peers := s.peers()
	for _, p := range peers {
		req := plan
		req.Segment, req.Weights = p.seg, weights
		if err := p.conn.Send(&Message{Kind: KindPlan, Plan: &req}); err != nil {
			s.drop(p.ac, p.conn)
			p.conn = nil
			p.errMsg = fmt.Sprintf("agent %s: %v", p.addr, err)
		}
	}
	err := s.await(ctx, peers, startWait, false, func(p *peer, m *Message) error {
		switch m.Kind {
		case KindReady:
			p.ready = m.Ready
			return nil
		case KindError:
			return fmt.Errorf("agent %s refused segment %s: %s", p.addr, p.seg, m.Error)
		}
		return fmt.Errorf("agent %s: unexpected %s", p.addr, m.Kind)
	})
	for _, p := range peers {
		if p.conn == nil && p.errMsg != "" {
			err = errors.Join(err, errors.New(p.errMsg))
		}
	}
	if err != nil {
		// Withdraw the plan from the agents that are ready.
		for _, p := range peers {
			if p.ready != nil && s.connOf(p.ac) == p.conn {
				p.conn.Send(&Message{Kind: KindStop})
			}
		}
		return nil, err
	}

	// The start barrier.
	lead := c.Lead
	if lead <= 0 {
		lead = 500 * time.Millisecond
	}
	startAt := time.Now().Add(lead)
	for _, p := range peers {
		if err := p.conn.Send(&Message{Kind: KindStart, StartAt: startAt}); err != nil {
			p.lost = "lost before the start: " + err.Error()
		}
		p.lastSeen = time.Now()
	}
	c.logf("%d agents start at %s", n, startAt.Format("15:04:05.000"))

	m := newLiveMerge(c, peers)
	check := time.NewTicker(250 * time.Millisecond)
	defer check.Stop()
	stopped := false
	var stopDeadline <-chan time.Time
	for !m.allOut() {
		select {
		case ev := <-s.events:
			var p *peer
			for _, q := range peers {
				if q.conn == ev.conn && !q.out() {
					p = q
				}
			}
			if p == nil {
				break // a frame of a connection dropped, or after the end
			}
			if ev.err != nil {
				p.lost = fmt.Sprintf("lost at %s: %v", time.Now().Format("15:04:05"), ev.err)
				c.logf("agent %s (segment %s) %s", p.addr, p.seg, p.lost)
				break
			}
			p.lastSeen = time.Now()
			m.receive(p, ev.m)
		case <-check.C:
			for _, p := range peers {
				if !p.out() && time.Since(p.lastSeen) > c.Timing.lost() {
					p.lost = fmt.Sprintf("lost at %s: silent for %s", time.Now().Format("15:04:05"), c.Timing.lost())
					c.logf("agent %s (segment %s) %s", p.addr, p.seg, p.lost)
				}
			}
		case <-ctx.Done():
			if !stopped {
				stopped = true
				c.logf("stopping every agent")
				for _, p := range peers {
					p.conn.Send(&Message{Kind: KindStop})
				}
				stopDeadline = time.After(15 * time.Second)
			}
		case <-stopDeadline:
			for _, p := range peers {
				if !p.out() {
					p.lost = "did not stop within 15 s of the stop"
				}
			}
		}
		m.advance()
	}
	m.advance()
	for _, p := range peers {
		if p.lost != "" {
			s.drop(p.ac, p.conn) // connected again before the next plan
		}
	}
	var popErrs []error
	for _, p := range peers {
		if p.popErr {
			popErrs = append(popErrs, fmt.Errorf("agent %s (segment %s): %s", p.addr, p.seg, p.errMsg))
		}
	}
	if len(popErrs) > 0 {
		return nil, &runner.PopulationError{Err: errors.Join(popErrs...)}
	}
	return c.finish(peers, startAt)
}

// connect opens and authenticates one connection to the agent at addr.
func (c *Controller) connect(ctx context.Context, dial func(context.Context, string) (net.Conn, error), addr string) (*Conn, error) {
	deadline := time.Now().Add(c.DialWait)
	raw, err := dial(ctx, addr)
	for err != nil && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Second)
		raw, err = dial(ctx, addr)
	}
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", addr, err)
	}
	conn, err := c.authenticate(ctx, raw, addr)
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("agent %s: %w", addr, err)
	}
	return conn, nil
}

// authTimeout bounds a controller's TLS handshake and authentication.
const authTimeout = 10 * time.Second

// authenticate runs TLS (unless Insecure) and the token handshake on raw.
func (c *Controller) authenticate(ctx context.Context, raw net.Conn, addr string) (*Conn, error) {
	raw.SetDeadline(time.Now().Add(authTimeout))
	var conn net.Conn = raw
	if !c.Insecure {
		var seen string
		cfg := clientTLS(c.Pins, &seen)
		if host, _, err := net.SplitHostPort(addr); err == nil && net.ParseIP(host) == nil {
			cfg.ServerName = host
		}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			if plaintextPeer(err) {
				return nil, errors.New("the agent serves without TLS (throng agent --insecure): give --agents-insecure to talk to it in plaintext, or restart it without --insecure")
			}
			if pe, ok := errors.AsType[*PinError](err); ok {
				return nil, pe
			}
			return nil, fmt.Errorf("TLS handshake: %w", err)
		}
		if len(c.Pins) == 0 {
			c.logf("agent %s: TLS certificate %s, not pinned: the token authenticates the agent (--agent-fingerprint %s pins it)", addr, seen, seen)
		}
		conn = tc
	}
	hc, err := handshake(conn, c.Token, true)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Time{})
	return hc, nil
}

// finish merges what every agent sent into the run's result.
func (c *Controller) finish(peers []*peer, startAt time.Time) (*result.Run, error) {
	var parts []Part
	for _, p := range peers {
		run := p.run
		if run.Meta.Segment == "" {
			// The agent never sent its metadata: nothing of it to merge.
			continue
		}
		if p.lost != "" {
			run.Partial = true
			run.Reason = "agent " + p.addr + " " + p.lost
			for i := range run.Repetitions {
				if run.Repetitions[i].ElapsedS == 0 {
					r := &run.Repetitions[i]
					r.Partial, r.Reason = true, run.Reason
					if k := len(r.Intervals); k > 0 {
						r.ElapsedS = r.Intervals[k-1].StartS + r.Intervals[k-1].DurationS
					}
				}
			}
		}
		if p.errMsg != "" && run.Reason == "" {
			run.Partial, run.Reason = true, p.errMsg
		}
		parts = append(parts, Part{Name: p.addr, Run: &run})
	}
	if len(parts) == 0 {
		return nil, errors.New("no agent sent anything")
	}
	merged, err := Merge(parts)
	if err != nil {
		return nil, err
	}
	n := len(peers)
	merged.Meta.Segment = fmt.Sprintf("1/1 over %d agents", n)
	for i := range merged.Agents {
		for _, p := range peers {
			if p.addr == merged.Agents[i].Name && !p.startedAt.IsZero() {
				merged.Agents[i].StartSkewMs = float64(p.startedAt.Sub(startAt).Microseconds()) / 1000
			}
		}
	}
	for _, p := range peers {
		if p.run.Meta.Segment == "" {
			merged.Partial = true
			msg := fmt.Sprintf("agent %s (segment %s) sent nothing: %s", p.addr, p.seg, strings.TrimSpace(p.lost+" "+p.errMsg))
			merged.Reason = strings.TrimPrefix(merged.Reason+"; "+msg, "; ")
		}
	}
	return merged, nil
}

// liveMerge merges each interval as soon as every agent still running has
// sent it, for the live line and the journal.
type liveMerge struct {
	c      *Controller
	peers  []*peer
	next   map[int]int // repetition -> next interval to merge
	reps   []int       // repetitions seen, in order
	metaOK bool
}

func newLiveMerge(c *Controller, peers []*peer) *liveMerge {
	return &liveMerge{c: c, peers: peers, next: map[int]int{}}
}

func (m *liveMerge) allOut() bool {
	for _, p := range m.peers {
		if !p.out() {
			return false
		}
	}
	return true
}

func (m *liveMerge) rep(p *peer, index int) *result.Repetition {
	for i := range p.run.Repetitions {
		if p.run.Repetitions[i].Index == index {
			return &p.run.Repetitions[i]
		}
	}
	return nil
}

// receive files one message of an agent.
func (m *liveMerge) receive(p *peer, msg *Message) {
	switch msg.Kind {
	case KindStarted:
		p.startedAt = msg.StartedAt
	case KindMeta:
		if msg.Meta != nil {
			p.run.Schema, p.run.Meta = result.Schema, *msg.Meta
		}
		if !m.metaOK && msg.Meta != nil {
			m.metaOK = true
			meta := *msg.Meta
			meta.Segment = fmt.Sprintf("1/1 over %d agents", len(m.peers))
			if m.c.OnMeta != nil {
				m.c.OnMeta(&meta)
			}
		}
	case KindRepetition:
		p.run.Repetitions = append(p.run.Repetitions, result.Repetition{Index: msg.Rep, StartedAt: msg.StartedAt})
		if _, ok := m.next[msg.Rep]; !ok {
			m.next[msg.Rep] = 0
			m.reps = append(m.reps, msg.Rep)
			if m.c.OnRepetitionStart != nil {
				m.c.OnRepetitionStart(msg.Rep, msg.StartedAt)
			}
		}
	case KindInterval:
		if r := m.rep(p, msg.Rep); r != nil && msg.Interval != nil {
			r.Intervals = append(r.Intervals, *msg.Interval)
		}
	case KindRepetitionEnd:
		if r := m.rep(p, msg.Rep); r != nil && msg.RepEnd != nil {
			r.ElapsedS, r.Partial, r.Reason, r.Aborted, r.Taints = msg.RepEnd.ElapsedS, msg.RepEnd.Partial, msg.RepEnd.Reason, msg.RepEnd.Aborted, msg.RepEnd.Taints
		}
	case KindEnd:
		p.done = true
		p.run.Partial, p.run.Reason = msg.Partial, msg.Reason
	case KindError:
		// The run failed; no end follows (protocol 3).
		p.errMsg, p.popErr = msg.Error, msg.Population
		p.done = true
	}
}

// advance merges every interval that every agent has sent (or never will).
func (m *liveMerge) advance() {
	for _, r := range m.reps {
		for {
			i := m.next[r]
			var parts []*result.Interval
			waiting := false
			for rank, p := range m.peers {
				rep := m.rep(p, r)
				switch {
				case rep != nil && i < len(rep.Intervals):
					iv := rep.Intervals[i]
					if rank > 0 {
						iv.Counters = renamed(iv.Counters, rank)
					}
					parts = append(parts, &iv)
				case p.out():
				case rep != nil && rep.ElapsedS > 0:
					// This agent's repetition ended before interval i.
				default:
					waiting = true
				}
			}
			if waiting || len(parts) == 0 {
				break
			}
			iv := liveInterval(i, parts)
			if m.c.OnInterval != nil {
				m.c.OnInterval(r, &iv)
			}
			m.next[r] = i + 1
		}
	}
}

// liveInterval adds the i-th intervals of the agents for the live line,
// the live metrics and the controller's journal: what counts in each phase
// kept in it (as a merged interval keeps it, mergeBin), the users and the
// client CPU summed. The result is merged anew on one clock (Merge) when
// the agents are done.
func liveInterval(i int, parts []*result.Interval) result.Interval {
	b := &bin{start: parts[0].StartS, phase: parts[0].Phase}
	var phases []string
	actions := 0
	for k, p := range parts {
		b.end = max(b.end, p.StartS+p.DurationS)
		b.parts = append(b.parts, part{seg: k, iv: p, start: p.StartS, end: p.StartS + p.DurationS})
		actions = max(actions, len(p.Actions))
		for _, ph := range append([]string{p.Phase}, carriedPhases(p)...) {
			if !slices.Contains(phases, ph) {
				phases = append(phases, ph)
			}
		}
	}
	iv := mergeBin(b, actions, phases, len(parts))
	iv.Index = i
	return iv
}

// carriedPhases lists the phases an interval carries actions of.
func carriedPhases(iv *result.Interval) []string {
	var out []string
	for _, c := range iv.Carried {
		out = append(out, c.Phase)
	}
	return out
}

func renamed(cs []sampler.SourceValues, rank int) []sampler.SourceValues {
	out := make([]sampler.SourceValues, len(cs))
	for j, c := range cs {
		c.Name = fmt.Sprintf("%s (agent %d)", c.Name, rank+1)
		out[j] = c
	}
	return out
}
