package mail

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
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
// The tracker learns of the acceptance when DATA is answered 250.
func (s *session) submit(ctx context.Context, m *outMsg) (err error) {
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

	if c.SMTPEngine == smtpEngineEpoll {
		return s.submitInLoop(ctx, m, seq, msg)
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout.D())
	defer cancel()
	defer func() {
		// The connection's deadline and the close at ctx's end come at the
		// same moment: either way, a transaction cut off by the timeout is
		// a timeout.
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && driver.Classify(err) == driver.IO {
			err = driver.Errorf(driver.Timeout, fmt.Errorf("SMTP: not over within %v: %w", c.Timeout.D(), err))
		}
	}()
	cl, cc, err := c.dialSMTP(ctx, "client."+c.Domain)
	if cc != nil {
		// The client's deadline bounds the transaction; closing the
		// connection when ctx ends also stops it when the run stops.
		stop := context.AfterFunc(ctx, func() { cc.Close() })
		defer stop()
		defer func() { s.bytesIn += cc.in; s.bytesOut += cc.out }()
		defer cc.Close()
	}
	if err != nil {
		return err
	}
	if c.SMTPAuth {
		if err := cl.authPlain(c.UserName(s.id), c.password); err != nil {
			return smtpErr("AUTH", err)
		}
	}
	mailErr, rcptErrs, dataErr, err := cl.envelope(sp.from, m.rcpts)
	if err != nil {
		return smtpErr("MAIL", err)
	}
	if mailErr != nil {
		return smtpErr("MAIL", mailErr)
	}
	var refused []string
	var firstRefusal error
	for i, e := range rcptErrs {
		if e != nil {
			refused = append(refused, m.rcpts[i])
			if firstRefusal == nil {
				firstRefusal = smtpErr("RCPT "+m.rcpts[i], e)
			}
		}
	}
	if len(refused) == len(m.rcpts) {
		if dataErr == nil {
			// A pipelined DATA accepted with no recipient: end it empty.
			cl.message(nil, false)
		}
		return firstRefusal
	}
	if dataErr != nil {
		return smtpErr("DATA", dataErr)
	}
	var users []int
	if !c.submitOnly {
		// Nobody watches the mailboxes of a submission-only run.
		users = reached(m, refused, c)
	}
	c.track.expect(seq, users)
	if err := cl.message(msg, true); err != nil {
		c.track.cancel(seq, users)
		return smtpErr("DATA", err)
	}
	c.track.accepted(seq, time.Now())
	cl.quit()
	if firstRefusal != nil {
		// Sent to the others; the refusal still counts against the action.
		return firstRefusal
	}
	return nil
}

// submitInLoop is submit's transaction run by the submission loop
// (smtp_engine epoll): the same exchange, errors and tracking.
func (s *session) submitInLoop(ctx context.Context, m *outMsg, seq uint64, msg []byte) error {
	c := s.c
	c.smtpSAOnce.Do(func() { c.smtpSA, c.smtpSAErr = resolveSMTP(c.smtpAddr) })
	if c.smtpSAErr != nil {
		return driver.Errorf(driver.Dial, fmt.Errorf("SMTP: %s: %w", c.smtpAddr, c.smtpSAErr))
	}
	l, err := smtpLoop()
	if err != nil {
		return driver.Errorf(driver.Other, fmt.Errorf("SMTP: %w", err))
	}
	now := time.Now()
	deadline := now.Add(c.Timeout.D())
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	var users []int
	t := &smtpTxn{
		ehlo: "client." + c.Domain, from: m.spec.from, rcpts: m.rcpts,
		body: stuffed(msg), deadline: deadline,
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
	in, out := l.submit(ctx, t, c.smtpSA, deadline.Sub(now))
	s.bytesIn += in
	s.bytesOut += out
	if t.err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && driver.Classify(t.err) == driver.IO {
		// ctx's deadline is the transaction's: whichever of the two the
		// loop saw first, it is a timeout.
		return driver.Errorf(driver.Timeout, fmt.Errorf("SMTP: not over within %v: %w", deadline.Sub(now), t.err))
	}
	return t.err
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

// countConn counts the bytes of a connection.
type countConn struct {
	net.Conn
	in, out int64
}

func (c *countConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.in += int64(n)
	return n, err
}

func (c *countConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.out += int64(n)
	return n, err
}

// writeBuffers writes b with writev when the connection is a TCP one
// (net.Buffers.WriteTo falls back to a write per buffer on a wrapper).
func (c *countConn) writeBuffers(b *net.Buffers) (int64, error) {
	var n int64
	var err error
	if bw, ok := c.Conn.(buffersWriter); ok {
		n, err = bw.writeBuffers(b)
	} else {
		n, err = b.WriteTo(c.Conn)
	}
	c.out += n
	return n, err
}
