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
	ready     *ReadyInfo
	run       result.Run
	startedAt time.Time
	lastSeen  time.Time
	done      bool
	lost      string // why it was declared lost
	errMsg    string
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
func (c *Controller) Run(ctx context.Context) (*result.Run, error) {
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
	peers := make([]*peer, n)
	weights := ""
	if len(c.Weights) > 0 {
		ws := make([]string, n)
		for i, w := range c.Weights {
			ws[i] = strconv.Itoa(w)
		}
		weights = strings.Join(ws, ",")
	}
	closeAll := func() {
		for _, p := range peers {
			if p != nil && p.conn != nil {
				p.conn.Close()
			}
		}
	}
	// Connect, authenticate and prepare every agent, in parallel.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, addr := range c.Agents {
		peers[i] = &peer{addr: addr, seg: fmt.Sprintf("%d/%d", i+1, n)}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.prepare(ctx, dial, peers[i], weights)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, p := range peers {
			if p.conn != nil {
				p.conn.Send(&Message{Kind: KindStop})
			}
		}
		closeAll()
		return nil, err
	}
	defer closeAll()

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

	type event struct {
		i   int
		m   *Message
		err error
	}
	events := make(chan event, 256)
	for i, p := range peers {
		if p.lost != "" {
			continue
		}
		go func() {
			for {
				m, err := p.conn.Recv(time.Now().Add(c.Timing.lost()))
				events <- event{i, m, err}
				if err != nil || m.Kind == KindEnd {
					return
				}
			}
		}()
	}
	// Keep the agents sure we are alive.
	pingStop := make(chan struct{})
	defer close(pingStop)
	go func() {
		t := time.NewTicker(c.Timing.ping())
		defer t.Stop()
		for {
			select {
			case <-t.C:
				for _, p := range peers {
					p.conn.Send(&Message{Kind: KindPing})
				}
			case <-pingStop:
				return
			}
		}
	}()

	m := newLiveMerge(c, peers)
	check := time.NewTicker(250 * time.Millisecond)
	defer check.Stop()
	stopped := false
	var stopDeadline <-chan time.Time
	for !m.allOut() {
		select {
		case ev := <-events:
			p := peers[ev.i]
			if ev.err != nil {
				if !p.done {
					p.lost = fmt.Sprintf("lost at %s: %v", time.Now().Format("15:04:05"), ev.err)
					c.logf("agent %s (segment %s) %s", p.addr, p.seg, p.lost)
				}
				break
			}
			p.lastSeen = time.Now()
			m.receive(p, ev.m)
		case <-check.C:
			for _, p := range peers {
				if !p.out() && time.Since(p.lastSeen) > c.Timing.lost() {
					p.lost = fmt.Sprintf("lost at %s: silent for %s", time.Now().Format("15:04:05"), c.Timing.lost())
					c.logf("agent %s (segment %s) %s", p.addr, p.seg, p.lost)
					p.conn.Close()
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
	return c.finish(peers, startAt)
}

// prepare connects to one agent and gets it ready.
func (c *Controller) prepare(ctx context.Context, dial func(context.Context, string) (net.Conn, error), p *peer, weights string) error {
	deadline := time.Now().Add(c.DialWait)
	raw, err := dial(ctx, p.addr)
	for err != nil && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Second)
		raw, err = dial(ctx, p.addr)
	}
	if err != nil {
		return fmt.Errorf("agent %s: %w", p.addr, err)
	}
	conn, err := c.authenticate(ctx, raw, p.addr)
	if err != nil {
		raw.Close()
		return fmt.Errorf("agent %s: %w", p.addr, err)
	}
	p.conn = conn
	req := c.Plan
	req.Segment, req.Weights = p.seg, weights
	if err := conn.Send(&Message{Kind: KindPlan, Plan: &req}); err != nil {
		return fmt.Errorf("agent %s: %w", p.addr, err)
	}
	m, err := conn.Recv(time.Now().Add(startWait))
	if err != nil {
		return fmt.Errorf("agent %s: no answer to the plan: %w", p.addr, err)
	}
	switch m.Kind {
	case KindReady:
		p.ready = m.Ready
		return nil
	case KindError:
		return fmt.Errorf("agent %s refused segment %s: %s", p.addr, p.seg, m.Error)
	}
	return fmt.Errorf("agent %s: unexpected %s", p.addr, m.Kind)
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
		p.errMsg = msg.Error
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
