package web

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/publicsuffix"

	"github.com/throng-io/throng/internal/driver"
)

// browser is a dynamic user: a net/http client of its own with a cookie
// jar (RFC 6265, through net/http/cookiejar and the public suffix list),
// redirects followed up to a bound, and variables that its steps extract
// and its templates read. It implements driver.Session and
// driver.Conditions. Connections come from the Config's shared transports
// (one pool for HTTP/1.1; for HTTP/2 one connection per streams users), so
// a user holds no buffer of its own between requests.
type browser struct {
	c         *Config
	client    *http.Client
	h1        *h1client // the lean HTTP/1.1 client, nil for HTTP/2 (net/http's)
	jar       *cookiejar.Jar
	vars      map[string]any
	rnd       *userRand
	id, users int // the user's global index, the plan's users
	iteration int // iterations begun
	seq       int // requests sent
	redirects int // redirects followed by the request in progress
	hopBytes  int64
	feedErr   error // a feed has no row for this user (per_user without reuse)
	sb        strings.Builder
	buf       []byte
}

var (
	_ driver.Session    = (*browser)(nil)
	_ driver.Conditions = (*browser)(nil)
)

// openBrowser opens a dynamic user; it cannot fail.
func (c *Config) openBrowser(u driver.User) *browser {
	b := &browser{c: c, id: u.ID, users: max(u.Users, 1), rnd: newUserRand(u.Seed), vars: map[string]any{}}
	for k, v := range c.Vars {
		b.vars[k] = v
	}
	b.vars[varUser] = u.ID + 1
	b.vars[varUsers] = b.users
	b.vars[varRand] = b.rnd
	b.vars[varIteration] = 0
	if c.dyn.cookies && c.dyn.on {
		b.jar, _ = cookiejar.New(&cookiejar.Options{PublicSuffixList: publicsuffix.List})
	}
	if c.Protocol == HTTP1 {
		b.h1 = &h1client{c: c}
		b.client = &http.Client{Transport: b.h1, CheckRedirect: b.checkRedirect}
	} else {
		b.client = &http.Client{Transport: c.transport(u.ID), CheckRedirect: b.checkRedirect}
	}
	if b.jar != nil {
		b.client.Jar = b.jar
	}
	for _, f := range c.dyn.feeds {
		if f.order != OrderPerUser {
			continue
		}
		i, ok := f.rowFor(b.id, b.users, 0, b.rnd)
		if !ok {
			b.feedErr = fmt.Errorf("feed %s has no row for user %d (%d rows)", f.name, b.id+1, f.size())
			continue
		}
		if err := f.row(i, b.vars); err != nil {
			b.feedErr = fmt.Errorf("feed %s, row %d: %v", f.name, i+1, err)
		}
	}
	return b
}

// transport returns the transport of a user: one shared pool for
// HTTP/1.1 (each user has at most one request in flight, so the pool holds
// at most a connection per user), and for HTTP/2 one transport, so one
// connection, per Streams users.
func (c *Config) transport(user int) *http.Transport {
	group := 0
	if c.Protocol != HTTP1 {
		group = user / c.Streams
	}
	d := &c.dyn
	d.poolMu.Lock()
	defer d.poolMu.Unlock()
	if t := d.transports[group]; t != nil {
		return t
	}
	dialer := &net.Dialer{Timeout: c.Timeout.D()}
	t := &http.Transport{
		DialContext:         dialer.DialContext,
		TLSClientConfig:     c.tlsCfg.Clone(),
		TLSHandshakeTimeout: c.Timeout.D(),
		DisableKeepAlives:   !c.KeepAlive,
		DisableCompression:  true, // bodies as sent: checks read them, bytes count them
		MaxIdleConnsPerHost: 1 << 20,
		IdleConnTimeout:     5 * time.Minute,
	}
	p := new(http.Protocols)
	switch c.Protocol {
	case H2:
		p.SetHTTP2(true)
	case H2C:
		p.SetUnencryptedHTTP2(true)
	default:
		p.SetHTTP1(true)
	}
	t.Protocols = p
	if d.transports == nil {
		d.transports = map[int]*http.Transport{}
	}
	d.transports[group] = t
	return t
}

// closeTransports closes the idle connections of every transport (after
// the run's users closed).
func (c *Config) closeTransports() {
	d := &c.dyn
	d.poolMu.Lock()
	defer d.poolMu.Unlock()
	for _, t := range d.transports {
		t.CloseIdleConnections()
	}
}

// errRedirectLoop is a request that met more redirects than its bound.
type errRedirectLoop struct {
	bound int
	chain []string
}

func (e *errRedirectLoop) Error() string {
	return fmt.Sprintf("more than %d redirects: %s", e.bound, strings.Join(e.chain, " -> "))
}

func (b *browser) checkRedirect(req *http.Request, via []*http.Request) error {
	bound := b.c.dyn.redirects
	if bound == 0 || !b.c.dyn.on { // a static run answers a 3xx as is
		return http.ErrUseLastResponse
	}
	if len(via) > bound {
		chain := make([]string, 0, len(via)+1)
		for _, r := range via {
			chain = append(chain, r.URL.RequestURI())
		}
		chain = append(chain, req.URL.RequestURI())
		if len(chain) > 6 {
			chain = append(chain[:3], append([]string{"..."}, chain[len(chain)-2:]...)...)
		}
		return &errRedirectLoop{bound: bound, chain: chain}
	}
	b.redirects++
	b.hopBytes += requestBytes(req, 0)
	return nil
}

// Begin implements driver.Conditions: a journey begins. The feeds that
// give a row per iteration give this one's.
func (b *browser) Begin() {
	b.iteration++
	b.vars[varIteration] = b.iteration
	for _, f := range b.c.dyn.feeds {
		if f.order == OrderPerUser {
			continue
		}
		i, ok := f.rowFor(b.id, b.users, b.iteration-1, b.rnd)
		if !ok {
			b.feedErr = fmt.Errorf("feed %s has no row left for iteration %d of user %d (%d rows; order %s without reuse)", f.name, b.iteration, b.id+1, f.size(), f.order)
			continue
		}
		if err := f.row(i, b.vars); err != nil {
			b.feedErr = fmt.Errorf("feed %s, row %d: %v", f.name, i+1, err)
		}
	}
}

// Holds implements driver.Conditions: a step's while.
func (b *browser) Holds(a driver.Action) (bool, error) {
	s := b.stepOf(a)
	if s == nil || s.cond == nil {
		return false, nil
	}
	v, err := s.cond.render(b.vars, &b.sb)
	if err != nil {
		return false, driver.Errorf(driver.Check, fmt.Errorf("%s: while: %v", s.name, templateRunError(err)))
	}
	return truth(v), nil
}

func (b *browser) stepOf(a driver.Action) *step {
	switch x := a.(type) {
	case *step:
		return x
	case *action:
		return x.step // a plain action in a run made dynamic by another
	}
	return nil
}

// Do implements driver.Session: one step's request, its redirects, its
// status, extractors and checks. It fails in class check when a value to
// extract is missing or a check fails (naming it), redirect_loop past the
// redirect bound, status_4xx or status_5xx when the status is not the one
// expected.
func (b *browser) Do(ctx context.Context, a driver.Action) (out driver.Outcome, err error) {
	s := b.stepOf(a)
	if s == nil {
		return out, driver.Errorf(driver.Other, fmt.Errorf("web: action %T is not a step of a dynamic user", a))
	}
	if s.journey == "" {
		b.Begin() // in a mix, each action is an iteration
	}
	if b.feedErr != nil {
		err, b.feedErr = b.feedErr, nil
		return out, driver.Errorf(driver.Check, err)
	}
	b.seq++
	b.vars[varUnique] = uniqueID(b.id+1, b.seq)
	req, err := b.request(ctx, s)
	if err != nil {
		return out, err
	}
	ctx, cancel := context.WithTimeout(ctx, b.c.Timeout.D())
	defer cancel()
	req = req.WithContext(ctx)
	b.redirects, b.hopBytes = 0, 0
	out.BytesOut = requestBytes(req, bodyLen(s, req))
	if b.h1 != nil {
		b.h1.keepBody = s.keepBody
	}
	resp, err := b.client.Do(req)
	out.BytesOut += b.hopBytes
	b.event(0, b.redirects)
	if err != nil {
		return out, classifyHTTP(err)
	}
	defer resp.Body.Close()
	in, body, rerr := b.read(resp.Body, s.keepBody)
	out.BytesIn = responseBytes(resp) + in
	if rerr != nil {
		return out, classifyHTTP(rerr)
	}
	if err := s.statusOK(resp.StatusCode); err != nil {
		return out, err
	}
	r := &response{status: resp.StatusCode, header: resp.Header, body: body}
	if b.jar != nil {
		u := resp.Request.URL
		r.cookies = func(name string) (string, bool) {
			for _, ck := range b.jar.Cookies(u) {
				if ck.Name == name {
					return ck.Value, true
				}
			}
			return "", false
		}
	}
	for _, e := range s.extract {
		v, err := e.extract(r)
		if err != nil {
			return out, driver.Errorf(driver.Check, err)
		}
		b.vars[e.name] = v
	}
	var failed error
	for _, ch := range s.checks {
		cerr := ch.verify(r)
		class := driver.OK
		if cerr != nil {
			class = driver.Check
			if failed == nil {
				failed = cerr
			}
		}
		b.event(1+ch.row, 1, class, cerr)
	}
	if failed != nil {
		return out, driver.Errorf(driver.Check, failed)
	}
	return out, nil
}

// event records n of the driver's events (index in EventActions), untimed.
func (b *browser) event(i, n int, classErr ...any) {
	d := &b.c.dyn
	d.sinkMu.Lock()
	sink := d.sink
	d.sinkMu.Unlock()
	if sink == nil {
		return
	}
	class, err := driver.OK, error(nil)
	if len(classErr) == 2 {
		class = classErr[0].(driver.Class)
		err, _ = classErr[1].(error)
	}
	for range n {
		sink.Event(i, time.Time{}, -1, 0, 0, class, err)
	}
}

// request renders a step's request for this user.
func (b *browser) request(ctx context.Context, s *step) (*http.Request, error) {
	path, err := s.path.render(b.vars, &b.sb)
	if err != nil {
		return nil, driver.Errorf(driver.Check, fmt.Errorf("%s: path: %v", s.name, templateRunError(err)))
	}
	var body io.Reader
	var blen int
	switch {
	case s.fixedBody != nil:
		body, blen = bytes.NewReader(s.fixedBody), len(s.fixedBody)
	case s.body != nil:
		v, err := s.body.render(b.vars, &b.sb)
		if err != nil {
			return nil, driver.Errorf(driver.Check, fmt.Errorf("%s: body: %v", s.name, templateRunError(err)))
		}
		body, blen = strings.NewReader(v), len(v)
	}
	u := b.c.target.Scheme + "://" + b.c.target.Host + path
	if strings.HasPrefix(path, "http://") || strings.HasPrefix(path, "https://") {
		u = path // an extracted absolute link
	} else if !strings.HasPrefix(path, "/") {
		return nil, driver.Errorf(driver.Check, fmt.Errorf("%s: path %q does not start with /", s.name, path))
	}
	req, err := http.NewRequestWithContext(ctx, s.method, u, body)
	if err != nil {
		return nil, driver.Errorf(driver.Check, fmt.Errorf("%s: %v", s.name, err))
	}
	if body != nil || s.method == "POST" || s.method == "PUT" || s.method == "PATCH" {
		req.ContentLength = int64(blen)
	}
	req.Host = s.host
	req.Header["User-Agent"] = []string{s.ua}
	for _, h := range s.headers {
		v, err := h.v.render(b.vars, &b.sb)
		if err != nil {
			return nil, driver.Errorf(driver.Check, fmt.Errorf("%s: header %s: %v", s.name, h.name, templateRunError(err)))
		}
		if strings.ContainsAny(v, "\r\n") {
			return nil, driver.Errorf(driver.Check, fmt.Errorf("%s: header %s: its value holds a line break", s.name, h.name))
		}
		if h.name == "Host" {
			req.Host = v
			continue
		}
		req.Header[h.name] = []string{v}
	}
	return req, nil
}

// templateRunError shortens text/template's run-time message.
func templateRunError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, `map has no entry for key "`); i >= 0 {
		name := msg[i+len(`map has no entry for key "`):]
		name = strings.TrimSuffix(name, `"`)
		return fmt.Sprintf("{{ .%s }} has no value yet (it is extracted by an action not done yet)", name)
	}
	return templateMessage(err)
}

// read reads a body whole: kept (up to max_body) when checks or
// extractors read it, else only counted.
func (b *browser) read(body io.Reader, keep bool) (int64, []byte, error) {
	if hb, ok := body.(*h1body); ok {
		return hb.n, hb.data, nil // read whole by the lean client
	}
	if !keep {
		n, err := io.Copy(io.Discard, body)
		return n, nil, err
	}
	limit := b.c.dyn.maxBody
	buf := b.buf[:0]
	var n int64
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= limit {
				m, err := io.Copy(io.Discard, body)
				return n + m, buf, err
			}
			buf = append(buf, 0)[:len(buf)]
		}
		k, err := body.Read(buf[len(buf):min(cap(buf), limit)])
		buf = buf[:len(buf)+k]
		n += int64(k)
		if err == io.EOF {
			if cap(buf) <= 64<<10 {
				b.buf = buf[:0] // keep a small buffer for the next response
			}
			return n, buf, nil
		}
		if err != nil {
			return n, buf, err
		}
	}
}

// statusOK checks the final status against the expected ones.
func (s *step) statusOK(status int) error {
	if s.status == nil {
		if status >= 200 && status < 400 {
			return nil
		}
	} else if contains(intsText(s.status), strconv.Itoa(status)) {
		return nil
	}
	err := statusError(status, driver.Status4xx)
	switch {
	case status >= 500:
		return &driver.Error{Class: driver.Status5xx, Err: err}
	case status >= 400:
		return &driver.Error{Class: driver.Status4xx, Err: err}
	}
	return driver.Errorf(driver.Check, fmt.Errorf("%s: status %d, want %s", s.name, status, strings.Join(intsText(s.status), " or ")))
}

func intsText(xs []int) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.Itoa(x)
	}
	return out
}

// classifyHTTP gives a net/http client error its class.
func classifyHTTP(err error) error {
	var loop *errRedirectLoop
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var recErr tls.RecordHeaderError
	switch {
	case errors.As(err, &loop):
		return driver.Errorf(driver.RedirectLoop, err)
	case errors.As(err, &unknownCA), errors.As(err, &hostErr), errors.As(err, &invalid), errors.As(err, &recErr):
		return driver.Errorf(driver.TLS, err)
	}
	c := driver.Classify(err)
	if c == driver.Other {
		msg := err.Error()
		switch {
		case strings.Contains(msg, "tls:"):
			c = driver.TLS
		case strings.Contains(msg, "malformed HTTP") || strings.Contains(msg, "http2:") || strings.Contains(msg, "HTTP/2"):
			c = driver.Protocol
		default:
			c = driver.IO
		}
	}
	return driver.Errorf(c, err)
}

// bodyLen is the length of a request's body, for its bytes.
func bodyLen(s *step, req *http.Request) int {
	if req.ContentLength > 0 {
		return int(req.ContentLength)
	}
	return 0
}

// requestBytes estimates a request's size as HTTP/1.1 would send it: its
// line, headers and body (HTTP/2 compresses headers; TLS frames are not
// counted).
func requestBytes(req *http.Request, body int) int64 {
	n := len(req.Method) + len(req.URL.RequestURI()) + len(" HTTP/1.1\r\nHost: \r\n\r\n") + len(req.Host)
	for k, vs := range req.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return int64(n + body)
}

// responseBytes estimates a response's head as HTTP/1.1 would send it.
func responseBytes(resp *http.Response) int64 {
	n := len("HTTP/1.1 200 OK\r\n\r\n")
	for k, vs := range resp.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return int64(n)
}

// Close implements driver.Session.
func (b *browser) Close() error {
	if b.h1 != nil {
		b.h1.close()
	} else if b.c.Protocol != HTTP1 && b.c.Streams == 1 {
		// The user's own HTTP/2 connection goes with it.
		b.client.Transport.(*http.Transport).CloseIdleConnections()
	}
	if b.c.dyn.open.Add(-1) == 0 {
		b.c.closeTransports()
	}
	return nil
}
