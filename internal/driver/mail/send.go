package mail

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/rawsock"
)

// msgBufs recycles message buffers between sends.
var msgBufs = sync.Pool{New: func() any { b := make([]byte, 0, 128<<10); return &b }}

// outMsg is a message about to be submitted.
type outMsg struct {
	rcpts []string // SMTP recipients (addresses, lists included)
	users []int    // the distinct users they reach (lists expanded), for the tracker
	spec  msgSpec
}

// doSend is LoadSim's "send mail": a new message to some users and
// distribution lists, submitted over SMTP.
func doSend(ctx context.Context, s *session, a *action) error {
	m := &outMsg{}
	seen := map[int]bool{}
	add := func(u int) {
		if !seen[u] {
			seen[u] = true
			m.users = append(m.users, u)
		}
	}
	n := s.c.track.totalUsers()
	if len(a.to) > 0 {
		for _, t := range a.to {
			m.rcpts = append(m.rcpts, t)
			if id, ok := s.c.userID(t); ok && id < n {
				add(id)
			}
		}
	} else {
		if a.recipients > 0 && n > 1 {
			k := 1 + s.r.intn(2*a.recipients-1)
			for range min(k, n-1) {
				u := s.r.intn(n)
				for u == s.id || seen[u] {
					u = (u + 1) % n
				}
				add(u)
				m.rcpts = append(m.rcpts, s.c.Address(u))
			}
		}
		lists := int(a.lists)
		if s.r.float() < a.lists-float64(lists) {
			lists++
		}
		for range min(lists, s.c.Lists.Count) {
			k := s.r.intn(s.c.Lists.Count)
			m.rcpts = append(m.rcpts, s.c.ListName(k)+"@"+s.c.Domain)
			for _, u := range s.c.Lists.listMembers(k, n) {
				add(u)
			}
		}
	}
	if len(m.rcpts) == 0 {
		return nil
	}
	r := newRNG(mix(s.r.next(), uint64(s.sent)))
	m.spec = msgSpec{size: messageSize(r, a.size, a.sizes), to: m.rcpts}
	return s.submit(ctx, m)
}

// reply answers a message to its sender.
func (s *session) reply(ctx context.Context, to string) error {
	m := &outMsg{rcpts: []string{to}}
	if id, ok := s.c.userID(to); ok && id < s.c.track.totalUsers() {
		m.users = []int{id}
	}
	r := newRNG(mix(s.r.next(), uint64(s.sent)))
	m.spec = msgSpec{size: messageSize(r, 8000, Realistic), to: m.rcpts, subject: "Re: your message"}
	return s.submit(ctx, m)
}

// submit generates the message (with a fresh mark) and sends it over
// SMTP: a new connection, EHLO, AUTH when configured, MAIL, one RCPT per
// recipient (refused ones are dropped, all refused is an error), DATA —
// MAIL, RCPT and DATA in one write when the server offers PIPELINING.
// The tracker learns of the acceptance when DATA is answered 250. The
// exchange is an smtpTxn, fed by the submission loop (smtp_engine epoll)
// or by this goroutine over its own connection (goroutines, and TLS).
func (s *session) submit(ctx context.Context, m *outMsg) error {
	c := s.c
	if c.smtpAddr == "" {
		return driver.Errorf(driver.Other, errors.New("no SMTP server: set mail.smtp or ?smtp=host:port in the target"))
	}
	s.sent++
	seq, mark := c.track.newMark()
	sp := &m.spec
	sp.seed = mix(uint64(s.id)<<32|uint64(s.sent), 0x73656e64)
	sp.from = c.Address(s.id)
	sp.date = time.Now()
	sp.mark = mark
	bp := msgBufs.Get().(*[]byte)
	defer msgBufs.Put(bp)
	msg, _ := buildMessage((*bp)[:0], sp)
	*bp = msg[:0]

	now := time.Now()
	deadline := now.Add(c.Timeout.D())
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	timeout := deadline.Sub(now)
	var users []int
	t := &smtpTxn{
		ehlo: "client." + c.Domain, from: sp.from, rcpts: m.rcpts,
		startTLS: c.SMTPTLS == smtpStartTLS,
		body:     stuffed(msg), deadline: deadline,
		expect: func(refused []string) {
			if !c.submitOnly {
				// Nobody watches the mailboxes of a submission-only run.
				users = reached(m, refused, c)
			}
			c.track.expect(seq, users)
		},
		accepted: func(at time.Time) { c.track.accepted(seq, at) },
		cancel:   func() { c.track.cancel(seq, users) },
	}
	if c.SMTPAuth {
		t.auth = plainResponse(c.UserName(s.id), c.password)
	}
	var in, out int64
	if c.SMTPEngine == smtpEngineEpoll {
		l, sa, err := c.submitLoop()
		if err != nil {
			return err
		}
		in, out = l.submit(ctx, t, sa, timeout)
	} else {
		in, out = c.converse(ctx, t, timeout)
	}
	s.bytesIn += in
	s.bytesOut += out
	if t.err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && driver.Classify(t.err) == driver.IO {
		// ctx's deadline is the transaction's: whichever of the two the
		// feeder saw first, it is a timeout.
		return driver.Errorf(driver.Timeout, fmt.Errorf("SMTP: not over within %v: %w", timeout, t.err))
	}
	return t.err
}

// submitLoop returns the Config's submission loop, started at the first
// call after the last closeSMTP, and the SMTP server's address for it.
func (c *Config) submitLoop() (*submitLoop, *rawsock.Addr, error) {
	c.smtpSAOnce.Do(func() { c.smtpSA, c.smtpSAErr = rawsock.Resolve(c.smtpAddr) })
	if c.smtpSAErr != nil {
		return nil, nil, driver.Errorf(driver.Dial, fmt.Errorf("SMTP: %s: %w", c.smtpAddr, c.smtpSAErr))
	}
	c.smtpMu.Lock()
	defer c.smtpMu.Unlock()
	if c.smtpLoop == nil {
		l, err := newSubmitLoop()
		if err != nil {
			return nil, nil, driver.Errorf(driver.Other, fmt.Errorf("SMTP: %w", err))
		}
		c.smtpLoop = l
	}
	return c.smtpLoop, c.smtpSA, nil
}

// closeSMTP closes the submission loop, if one runs: the sends still in it
// are stopped, its goroutine ends. The next send starts a new one.
func (c *Config) closeSMTP() {
	c.smtpMu.Lock()
	l := c.smtpLoop
	c.smtpLoop = nil
	c.smtpMu.Unlock()
	if l != nil {
		l.Close()
	}
}

// reached is the distinct users the accepted recipients reach.
func reached(m *outMsg, refused []string, c *Config) []int {
	if len(refused) == 0 {
		return m.users
	}
	gone := map[int]bool{}
	for _, r := range refused {
		if id, ok := c.userID(r); ok {
			gone[id] = true
		}
		if k, ok := c.listIndex(r); ok {
			for _, u := range c.Lists.listMembers(k, c.track.totalUsers()) {
				gone[u] = true
			}
		}
	}
	var out []int
	for _, u := range m.users {
		if !gone[u] {
			out = append(out, u)
		}
	}
	return out
}

// userID parses a user's address back to its global index.
func (c *Config) userID(addr string) (int, bool) {
	local, dom, ok := strings.Cut(addr, "@")
	if !ok || !strings.EqualFold(dom, c.Domain) {
		return 0, false
	}
	n, ok := scanNumber(c.UserFormat, local)
	if !ok {
		return 0, false
	}
	return n - c.FirstUser, n-c.FirstUser >= 0
}

// listIndex parses a list's address back to its index.
func (c *Config) listIndex(addr string) (int, bool) {
	local, dom, ok := strings.Cut(addr, "@")
	if !ok || !strings.EqualFold(dom, c.Domain) || c.Lists.Count == 0 {
		return 0, false
	}
	n, ok := scanNumber(c.Lists.Format, local)
	if !ok || n < 1 || n > c.Lists.Count {
		return 0, false
	}
	return n - 1, true
}

// totalUsers is the number of users in the plan (0 before any Open or
// Prepare).
func (t *tracker) totalUsers() int {
	if u := t.users.Load(); u != nil {
		return len(*u)
	}
	return 0
}
