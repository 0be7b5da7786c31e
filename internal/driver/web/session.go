package web

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// readBuf is the size of a session's read buffer.
const readBuf = 16 << 10

// session is one user's connection, used by one goroutine. It implements
// driver.Session.
type session struct {
	c      *Config
	mu     sync.Mutex // guards conn against abort from the stop watcher
	conn   net.Conn
	reused bool // conn has carried a request already
	buf    []byte
	p      *Parser
	stop   func() bool
	dead   bool // the run is stopping
}

var _ driver.Session = (*session)(nil)

// Open implements driver.Config. Connections are opened on the first Do, so
// opening a user costs nothing and cannot fail.
func (c *Config) Open(ctx context.Context, u driver.User) (driver.Session, error) {
	if c.dyn.on || c.Protocol != HTTP1 {
		// HTTP/2 on goroutines is net/http's; a static run's users keep
		// no cookies and follow no redirects (see browser).
		c.dyn.open.Add(1)
		return c.openBrowser(u), nil
	}
	s := &session{c: c, buf: make([]byte, readBuf), p: NewParser()}
	s.stop = context.AfterFunc(ctx, s.abort)
	return s, nil
}

// abort unblocks a Do in progress when the run stops.
func (s *session) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead = true
	if s.conn != nil {
		s.conn.SetDeadline(time.Unix(1, 0))
	}
}

func (c *Config) dial(ctx context.Context) (net.Conn, error) {
	return c.dialTo(ctx, c.addr, c.tls, c.tlsCfg)
}

// dialTo opens a connection to addr (host:port), with TLS by tlsCfg when
// useTLS, classifying failures as dial, timeout or tls.
func (c *Config) dialTo(ctx context.Context, addr string, useTLS bool, tlsCfg *tls.Config) (net.Conn, error) {
	d := net.Dialer{Timeout: c.Timeout.D()}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, driver.Errorf(driver.Dial, err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	if !useTLS {
		return conn, nil
	}
	tc := tls.Client(conn, tlsCfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		if driver.Classify(err) == driver.Timeout {
			return nil, driver.Errorf(driver.Timeout, err)
		}
		return nil, driver.Errorf(driver.TLS, err)
	}
	return tc, nil
}

func (s *session) setConn(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead {
		if c != nil {
			c.Close()
		}
		return false
	}
	s.conn = c
	return true
}

func (s *session) closeConn() {
	s.mu.Lock()
	if s.conn != nil {
		s.conn.Close()
		s.conn = nil
	}
	s.mu.Unlock()
	s.reused = false
}

// Do implements driver.Session: send the request, read the whole response.
// A request that fails on a reused keep-alive connection before any byte of
// the response arrived (the server closed the idle connection) is retried
// once on a new connection when its method is idempotent (RFC 9110
// §9.2.2); a POST is never sent twice.
func (s *session) Do(ctx context.Context, a driver.Action) (driver.Outcome, error) {
	act := a.(*action)
	out, err, retry := s.exchange(ctx, act)
	if retry && act.idempotent {
		out, err, _ = s.exchange(ctx, act)
	}
	return out, err
}

func (s *session) exchange(ctx context.Context, act *action) (out driver.Outcome, err error, retry bool) {
	deadline := time.Now().Add(s.c.Timeout.D())
	if s.conn == nil {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		conn, err := s.c.dial(dctx)
		cancel()
		if err != nil {
			return out, err, false
		}
		if !s.setConn(conn) {
			return out, context.Cause(ctx), false
		}
	}
	conn, reused := s.conn, s.reused
	s.reused = true
	conn.SetDeadline(deadline)
	n, err := conn.Write(act.req)
	out.BytesOut = int64(n)
	if err != nil {
		s.closeConn()
		return out, ioError(err), reused && !isTimeout(err)
	}
	s.p.Reset(act.head)
	for {
		n, rerr := conn.Read(s.buf)
		out.BytesIn += int64(n)
		if n > 0 {
			used, done := s.p.Feed(s.buf[:n])
			if done {
				class, keep := s.p.Result()
				if used < n || !keep || !s.c.KeepAlive {
					// Bytes past the response, or the server asked to close.
					s.closeConn()
				}
				if class != driver.OK {
					return out, &driver.Error{Class: class, Err: statusError(s.p.Status(), class)}, false
				}
				return out, nil, false
			}
		}
		if rerr != nil {
			if rerr == io.EOF && s.p.EOF() {
				s.closeConn()
				class, _ := s.p.Result()
				if class != driver.OK {
					return out, &driver.Error{Class: class, Err: statusError(s.p.Status(), class)}, false
				}
				return out, nil, false
			}
			s.closeConn()
			return out, ioError(rerr), reused && out.BytesIn == 0 && !isTimeout(rerr)
		}
	}
}

// ioError classifies a read or write failure: a deadline is a timeout,
// anything else a broken connection.
func ioError(err error) error {
	if isTimeout(err) {
		return driver.Errorf(driver.Timeout, err)
	}
	if errors.Is(err, io.EOF) {
		return driver.Errorf(driver.IO, errors.New("connection closed by the server before the response was complete"))
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return driver.Errorf(driver.Dial, err)
	}
	return driver.Errorf(driver.IO, err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// Close implements driver.Session.
func (s *session) Close() error {
	s.stop()
	s.closeConn()
	return nil
}
