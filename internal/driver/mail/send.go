package mail

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/msggen"
	"github.com/throng-io/throng/internal/driver/mail/smtpclient"
	"github.com/throng-io/throng/internal/rawsock"
)

// The values of mail.smtp_tls.
const (
	smtpNoTLS       = "none"
	smtpStartTLS    = "starttls"
	smtpImplicitTLS = "tls"
)

// The values of mail.smtp_engine.
const (
	smtpEngineEpoll      = "epoll"
	smtpEngineGoroutines = "goroutines"
)

// msgBufs recycles message buffers between sends.
var msgBufs = sync.Pool{New: func() any { b := make([]byte, 0, 128<<10); return &b }}

// outMsg is a message about to be submitted.
type outMsg struct {
	rcpts []string // SMTP recipients (addresses, lists included)
	spec  msggen.Spec
}

// doSend is LoadSim's "send mail": a new message to some users and
// distribution lists, submitted over SMTP.
func doSend(ctx context.Context, s *session, a *action) error {
	m := &outMsg{}
	n := s.c.track.totalUsers()
	if len(a.to) > 0 {
		m.rcpts = append(m.rcpts, a.to...)
	} else {
		if a.recipients > 0 && n > 1 {
			seen := map[int]bool{}
			k := 1 + s.r.Intn(2*a.recipients-1)
			for range min(k, n-1) {
				u := s.r.Intn(n)
				for u == s.id || seen[u] {
					u = (u + 1) % n
				}
				seen[u] = true
				m.rcpts = append(m.rcpts, s.c.Address(u))
			}
		}
		lists := int(a.lists)
		if s.r.Float() < a.lists-float64(lists) {
			lists++
		}
		if count := s.c.Lists.number(); count > 0 && lists > 0 {
			ls := s.c.lists(n)
			for range min(lists, count) {
				m.rcpts = append(m.rcpts, ls.addrs[s.r.Intn(count)])
			}
		}
	}
	if len(m.rcpts) == 0 {
		return nil
	}
	r := msggen.NewRNG(msggen.Mix(s.r.Next(), uint64(s.sent)))
	m.spec = msggen.Spec{Size: msggen.Size(r, a.size, a.sizes != Fixed), To: m.rcpts}
	return s.submit(ctx, m)
}

// reply answers a message to its sender.
func (s *session) reply(ctx context.Context, to string) error {
	m := &outMsg{rcpts: []string{to}}
	r := msggen.NewRNG(msggen.Mix(s.r.Next(), uint64(s.sent)))
	m.spec = msggen.Spec{Size: msggen.Size(r, 8000, true), To: m.rcpts, Subject: "Re: your message"}
	return s.submit(ctx, m)
}

// submit generates the message (with a fresh mark) and sends it over
// SMTP: a new connection, EHLO, AUTH when configured, MAIL, one RCPT per
// recipient (refused ones are dropped, all refused is an error), DATA —
// MAIL, RCPT and DATA in one write when the server offers PIPELINING.
// The tracker learns of the acceptance when DATA is answered 250. The
// exchange is an smtpclient.Txn, fed by the Config's submission loop
// (smtp_engine epoll) or by this goroutine over its own connection
// (goroutines, and TLS).
func (s *session) submit(ctx context.Context, m *outMsg) error {
	c := s.c
	if c.smtpAddr == "" {
		return driver.Errorf(driver.Other, errors.New("no SMTP server: set mail.smtp or ?smtp=host:port in the target"))
	}
	s.sent++
	g := c.track.current()
	seq, mark := g.newMark(time.Now())
	sp := &m.spec
	sp.Seed = msggen.Mix(uint64(s.id)<<32|uint64(s.sent), 0x73656e64)
	sp.From = c.Address(s.id)
	sp.Date = time.Now()
	sp.Mark = mark
	bp := msgBufs.Get().(*[]byte)
	defer msgBufs.Put(bp)
	msg, _ := msggen.Build((*bp)[:0], sp)
	*bp = msg[:0]

	now := time.Now()
	deadline := now.Add(c.Timeout.D())
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	timeout := deadline.Sub(now)
	t := &smtpclient.Txn{
		EHLO: "client." + c.Domain, From: sp.From, Rcpts: m.rcpts,
		StartTLS: c.SMTPTLS == smtpStartTLS,
		Body:     smtpclient.Stuffed(msg), Deadline: deadline,
		Expect: func(refused []string) {
			// Nobody watches the mailboxes of a submission-only run.
			if !c.submitOnly {
				c.track.expect(g, seq, c.reachOf(m.rcpts, refused))
			}
		},
		Accepted: func(at time.Time) { g.accepted(seq, at) },
		Cancel:   func() { c.track.cancel(g, seq) },
	}
	if c.SMTPAuth {
		t.Auth = smtpclient.PlainResponse(c.UserName(s.id), c.password)
	}
	var in, out int64
	if c.SMTPEngine == smtpEngineEpoll {
		l, sa, err := c.submitLoop()
		if err != nil {
			return err
		}
		in, out = l.Submit(ctx, t, sa, timeout)
	} else {
		in, out = smtpclient.Converse(ctx, t, c.smtpServer(), timeout)
	}
	s.bytesIn += in
	s.bytesOut += out
	if t.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && driver.Classify(t.Err()) == driver.IO {
		// ctx's deadline is the transaction's: whichever of the two the
		// feeder saw first, it is a timeout.
		return driver.Errorf(driver.Timeout, fmt.Errorf("SMTP: not over within %v: %w", timeout, t.Err()))
	}
	return t.Err()
}

// submitLoop returns the Config's submission loop, started at the first
// call after the last closeSMTP, and the SMTP server's address for it.
func (c *Config) submitLoop() (*smtpclient.Loop, *rawsock.Addr, error) {
	c.smtpSAOnce.Do(func() { c.smtpSA, c.smtpSAErr = rawsock.Resolve(c.smtpAddr) })
	if c.smtpSAErr != nil {
		return nil, nil, driver.Errorf(driver.Dial, fmt.Errorf("SMTP: %s: %w", c.smtpAddr, c.smtpSAErr))
	}
	c.smtpMu.Lock()
	defer c.smtpMu.Unlock()
	if c.smtpLoop == nil {
		l, err := smtpclient.NewLoop()
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

// smtpServer is where smtpclient.Converse reaches the SMTP server.
func (c *Config) smtpServer() smtpclient.Server {
	return smtpclient.Server{Addr: c.smtpAddr, ImplicitTLS: c.SMTPTLS == smtpImplicitTLS, TLSConfig: c.smtpTLSCfg}
}

// reach is whom a message's accepted recipients reach among the run's
// users: the deliveries it owes.
type reach struct {
	users []int // may repeat a user (expect keeps each once)
	lists []int // the run's lists among the recipients
	open  bool  // some recipient reaches mailboxes outside the run
}

// reachOf expands the SMTP recipients not refused into the run's users
// they reach: a list's members (a list's address is a list even when it
// reads as a user's, as the MTA's aliases come first), a user's own
// mailbox; any other address reaches mailboxes the run does not know.
func (c *Config) reachOf(rcpts, refused []string) reach {
	n := c.track.totalUsers()
	var r reach
	for _, a := range rcpts {
		if slices.Contains(refused, a) {
			continue
		}
		if k, ok := c.listIndex(a, n); ok {
			ls := c.lists(n)
			r.users = append(r.users, ls.members[k]...)
			r.lists = append(r.lists, k)
			r.open = r.open || len(ls.outside[k]) > 0
			continue
		}
		if id, ok := c.userID(a); ok && id < n {
			r.users = append(r.users, id)
			continue
		}
		r.open = true
	}
	return r
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
