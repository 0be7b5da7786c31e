package web

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// h1client is one journey user's own HTTP/1.1 client: the http.RoundTripper
// of its http.Client (which keeps following redirects and filling and
// reading the cookie jar), used by the user's goroutine only. Unlike
// net/http's Transport it starts no goroutine per connection: the request is
// written and the response read (by Parser, the event loop's parser, with
// headers and body kept) in the caller's goroutine, and the buffers it needs
// come from a pool for the length of one exchange, so a user between two
// requests holds its connections and nothing else.
//
// It keeps one connection alive per scheme and host (at most maxH1Conns).
// A request that fails on a reused connection before a byte of its response
// arrived (the server closed the idle connection) is sent again once on a
// new connection when its method is idempotent, as net/http does; before a
// request that is not idempotent is sent on a reused connection, the
// connection is checked for a close the server already sent (a peek that
// does not block, h1alive), and a new one is dialled if so. A server that
// closes after that check, before answering, costs the request: class io.
type h1client struct {
	c        *Config
	conns    []h1conn
	keepBody bool // the step in progress reads the body (set by the browser)
	dials    int  // connections dialled, for tests
	retries  int  // requests sent again after a close, for tests
}

// maxH1Conns bounds the connections a user keeps alive, one per host.
const maxH1Conns = 4

type h1conn struct {
	key  string // scheme://host:port
	conn net.Conn
	used bool // it has carried a request already
}

var _ http.RoundTripper = (*h1client)(nil)

// h1buf is what one exchange needs, pooled: the parser, what it keeps, a
// read buffer and the request's bytes.
type h1buf struct {
	p    Parser
	k    kept
	rbuf []byte
	wbuf []byte
}

// An exchange's read buffer starts at h1ReadMin and doubles, up to
// h1ReadMax, each time a read fills it; a pooled buffer keeps its size. A
// small page is read in one call either way, a large one in few, and users
// who all start at once (each holding a buffer while its exchange is in
// flight) hold 4 KB each, not 16.
const (
	h1ReadMin = 4 << 10
	h1ReadMax = 32 << 10
)

var h1bufs = sync.Pool{New: func() any {
	b := &h1buf{rbuf: make([]byte, h1ReadMin)}
	b.p.line = make([]byte, 0, 512)
	b.p.keep = &b.k
	return b
}}

// putH1buf returns b to the pool unless it grew too large to keep.
func putH1buf(b *h1buf) {
	b.k = kept{data: b.k.data[:0]}
	if cap(b.k.data) > 64<<10 {
		b.k.data = nil
	}
	if cap(b.wbuf) > 64<<10 {
		b.wbuf = nil
	}
	h1bufs.Put(b)
}

// kept is what Parser keeps of a response for a journey: its headers and
// (when keepBody) its body up to limit; n counts all the body's bytes.
type kept struct {
	hdr      http.Header
	data     []byte
	keepBody bool
	limit    int
	n        int64
}

func (k *kept) header(name, value []byte) {
	if k.hdr == nil {
		k.hdr = make(http.Header, 8)
	}
	key := textproto.CanonicalMIMEHeaderKey(string(name))
	k.hdr[key] = append(k.hdr[key], string(value))
}

func (k *kept) body(b []byte) {
	k.n += int64(len(b))
	if k.keepBody && len(k.data) < k.limit {
		k.data = append(k.data, b[:min(len(b), k.limit-len(k.data))]...)
	}
}

// reset forgets an interim (1xx) response's headers.
func (k *kept) reset() {
	clear(k.hdr)
}

// h1body is a response's body, read whole already. Close gives its buffer
// back to the pool: the bytes must not be used after.
type h1body struct {
	buf  *h1buf
	data []byte
	n    int64 // the body's length (more than len(data) past the limit, or when not kept)
	off  int
}

func (b *h1body) Read(p []byte) (int, error) {
	if b.off >= len(b.data) {
		return 0, io.EOF
	}
	n := copy(p, b.data[b.off:])
	b.off += n
	return n, nil
}

func (b *h1body) Close() error {
	if b.buf != nil {
		putH1buf(b.buf)
		b.buf, b.data = nil, nil
	}
	return nil
}

// RoundTrip implements http.RoundTripper.
func (h *h1client) RoundTrip(req *http.Request) (*http.Response, error) {
	buf := h1bufs.Get().(*h1buf)
	wbuf, err := h.writeRequest(buf.wbuf[:0], req)
	buf.wbuf = wbuf
	if err != nil {
		putH1buf(buf)
		return nil, err
	}
	key := req.URL.Scheme + "://" + canonicalAddr(req.URL)
	repeatable := idempotent(req.Method)
	resp, err, retry := h.exchange(req, key, buf, repeatable)
	if retry && repeatable {
		h.retries++
		resp, err, _ = h.exchange(req, key, buf, repeatable)
	}
	if err != nil {
		putH1buf(buf)
	}
	return resp, err
}

// exchange sends the request in buf.wbuf and reads its response. retry is
// true when it failed on a reused connection before any response byte.
func (h *h1client) exchange(req *http.Request, key string, buf *h1buf, repeatable bool) (resp *http.Response, err error, retry bool) {
	ctx := req.Context()
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(h.c.Timeout.D())
	}
	i := h.find(key)
	if i >= 0 && h.conns[i].used && !repeatable && !h1alive(h.conns[i].conn) {
		h.drop(i)
		i = -1
	}
	if i < 0 {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		conn, err := h.c.dialTo(dctx, canonicalAddr(req.URL), req.URL.Scheme == "https", h.tlsFor(req.URL.Hostname()))
		cancel()
		if err != nil {
			return nil, err, false
		}
		h.dials++
		i = h.add(key, conn)
	}
	hc := &h.conns[i]
	conn, reused := hc.conn, hc.used
	hc.used = true
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	fail := func(err error, gotBytes bool) (*http.Response, error, bool) {
		h.drop(h.find(key))
		if ctx.Err() != nil {
			err = context.Cause(ctx)
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, driver.Errorf(driver.Timeout, err), false
			}
			return nil, err, false
		}
		return nil, ioError(err), reused && !gotBytes && !isTimeout(err)
	}
	if _, err := conn.Write(buf.wbuf); err != nil {
		return fail(err, false)
	}
	p := &buf.p
	p.Reset(req.Method == "HEAD")
	buf.k = kept{hdr: buf.k.hdr, data: buf.k.data[:0], keepBody: h.keepBody, limit: h.c.dyn.maxBody}
	clear(buf.k.hdr)
	var in int64
	for {
		n, rerr := conn.Read(buf.rbuf)
		in += int64(n)
		done := false
		if n > 0 {
			var used int
			used, done = p.Feed(buf.rbuf[:n])
			if done && used < n {
				h.drop(h.find(key)) // bytes past the response
			}
		}
		if n == len(buf.rbuf) && n < h1ReadMax {
			buf.rbuf = make([]byte, 2*n) // Feed copied what it keeps
		}
		if !done && rerr != nil {
			if rerr != io.EOF || !p.EOF() {
				return fail(rerr, in > 0)
			}
			done = true
			h.drop(h.find(key))
		}
		if !done {
			continue
		}
		class, keep := p.Result()
		if class == driver.Protocol {
			h.drop(h.find(key))
			return nil, driver.Errorf(driver.Protocol, fmt.Errorf("malformed HTTP/1.1 response from %s", req.URL.Host)), false
		}
		if !keep || !h.c.KeepAlive {
			h.drop(h.find(key))
		}
		return h.response(req, buf), nil, false
	}
}

// response makes the http.Response of a response read whole into buf.
func (h *h1client) response(req *http.Request, buf *h1buf) *http.Response {
	hdr := buf.k.hdr
	buf.k.hdr = nil // the response keeps it
	if hdr == nil {
		hdr = http.Header{}
	}
	status := buf.p.Status()
	body := &h1body{buf: buf, data: buf.k.data, n: buf.k.n}
	if !buf.k.keepBody {
		putH1buf(buf)
		body.buf, body.data = nil, nil
	}
	return &http.Response{
		Status: strconv.Itoa(status) + " " + http.StatusText(status), StatusCode: status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: hdr, Body: body, ContentLength: body.n, Request: req,
	}
}

// writeRequest appends req as HTTP/1.1 sends it: request line, Host, the
// headers, Content-Length when there is a body (or the method has one),
// and the body.
func (h *h1client) writeRequest(w []byte, req *http.Request) ([]byte, error) {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	w = append(w, req.Method...)
	w = append(w, ' ')
	w = append(w, req.URL.RequestURI()...)
	w = append(w, " HTTP/1.1\r\nHost: "...)
	w = append(w, host...)
	w = append(w, "\r\n"...)
	for k, vs := range req.Header {
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n") || strings.ContainsAny(k, "\r\n: ") {
				return w, driver.Errorf(driver.Other, fmt.Errorf("header %s: its value holds a line break", k))
			}
			w = append(w, k...)
			w = append(w, ": "...)
			w = append(w, v...)
			w = append(w, "\r\n"...)
		}
	}
	if !h.c.KeepAlive {
		w = append(w, "Connection: close\r\n"...)
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var bb bytes.Buffer
		_, err := bb.ReadFrom(req.Body)
		req.Body.Close()
		if err != nil {
			return w, driver.Errorf(driver.Other, err)
		}
		body = bb.Bytes()
	}
	if len(body) > 0 || req.Method == "POST" || req.Method == "PUT" || req.Method == "PATCH" {
		w = append(w, "Content-Length: "...)
		w = strconv.AppendInt(w, int64(len(body)), 10)
		w = append(w, "\r\n"...)
	}
	w = append(w, "\r\n"...)
	return append(w, body...), nil
}

// tlsFor returns the TLS settings for a host (the target's, or a copy
// naming another host an absolute link led to).
func (h *h1client) tlsFor(host string) *tls.Config {
	if h.c.tlsCfg != nil && h.c.tlsCfg.ServerName == host {
		return h.c.tlsCfg
	}
	return &tls.Config{ServerName: host, InsecureSkipVerify: h.c.InsecureSkipVerify}
}

func (h *h1client) find(key string) int {
	for i := range h.conns {
		if h.conns[i].key == key {
			return i
		}
	}
	return -1
}

// add keeps a new connection, closing the oldest past maxH1Conns.
func (h *h1client) add(key string, conn net.Conn) int {
	if len(h.conns) == maxH1Conns {
		h.drop(0)
	}
	h.conns = append(h.conns, h1conn{key: key, conn: conn})
	return len(h.conns) - 1
}

// drop closes and forgets connection i (nothing when i < 0).
func (h *h1client) drop(i int) {
	if i < 0 {
		return
	}
	h.conns[i].conn.Close()
	h.conns = append(h.conns[:i], h.conns[i+1:]...)
}

// close closes every connection.
func (h *h1client) close() {
	for len(h.conns) > 0 {
		h.drop(len(h.conns) - 1)
	}
}

// canonicalAddr is a URL's host:port, the port defaulted by its scheme.
func canonicalAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}
