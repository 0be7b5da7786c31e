package smtpclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/rawsock"
)

// Server is where Converse reaches an SMTP server.
type Server struct {
	Addr        string      // host:port
	ImplicitTLS bool        // TLS from the first byte (smtp_tls tls)
	TLSConfig   *tls.Config // for TLS and STARTTLS
}

// Converse runs t to its end from the calling goroutine over its own
// connection to the SMTP server (smtp_engine goroutines, and every TLS
// submission): it dials, speaks TLS from the first byte when
// s.ImplicitTLS, then feeds t what the server sends and writes what t says,
// upgrading the connection to TLS when t accepted STARTTLS. One deadline on
// the connection bounds the whole transaction (QUIT's reply has its own,
// shorter); when ctx ends the transaction is stopped (class io). A failure
// to connect is class dial, a failed TLS handshake class tls; the rest is
// t's. It returns the bytes on the wire, TLS included.
//
// timeout is the transaction's budget as its errors state it (t.Deadline
// is what bounds it).
func Converse(ctx context.Context, t *Txn, s Server, timeout time.Duration) (in, out int64) {
	t.start()
	// One message per connection: no TCP keep-alive to set up (3 system
	// calls per message saved).
	d := net.Dialer{KeepAlive: -1, Deadline: t.Deadline}
	nc, err := d.DialContext(ctx, "tcp", s.Addr)
	if err != nil {
		t.finish(driver.Errorf(driver.Dial, fmt.Errorf("SMTP: %w", err)))
		return 0, 0
	}
	cc := &countConn{Conn: rawsock.Quiet(nc)}
	defer cc.Close()
	cc.SetDeadline(t.Deadline)
	// The run's stop (or the action's deadline) interrupts whatever the
	// connection is doing.
	stop := context.AfterFunc(ctx, func() { cc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var conn net.Conn = cc
	if s.ImplicitTLS {
		tc := tls.Client(cc, s.TLSConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			t.finish(driver.Errorf(driver.TLS, fmt.Errorf("SMTP TLS: %w", err)))
			return cc.in, cc.out
		}
		conn = tc
	}
	feedConn(ctx, t, conn, cc, timeout, func(conn net.Conn) (net.Conn, error) {
		tc := tls.Client(conn, s.TLSConfig)
		return tc, tc.HandshakeContext(ctx)
	})
	return cc.in, cc.out
}

// feedConn is the goroutine feeder: it writes what t says on conn, reads
// what comes and feeds it to t until t is done. raw is the connection
// under TLS, whose deadlines bound conn's too; upgrade wraps conn in TLS
// when t asks for it (STARTTLS).
func feedConn(ctx context.Context, t *Txn, conn, raw net.Conn, timeout time.Duration, upgrade func(net.Conn) (net.Conn, error)) {
	until := t.waitUntil()
	buf := make([]byte, 1024)
	var out net.Buffers
	for !t.done {
		if len(out) > 0 {
			if err := writeOut(conn, &out); err != nil {
				ioFailed(ctx, t, err, timeout)
				return
			}
		}
		n, err := conn.Read(buf)
		if n > 0 {
			out = t.feed(buf[:n], time.Now())
		}
		if t.upgrade {
			tc, herr := upgrade(conn)
			if herr != nil {
				t.finish(driver.Errorf(driver.TLS, fmt.Errorf("SMTP STARTTLS: %w", herr)))
				return
			}
			conn, out = tc, t.upgraded()
			continue
		}
		if err != nil && !t.done {
			ioFailed(ctx, t, err, timeout)
			return
		}
		if w := t.waitUntil(); !w.Equal(until) {
			// Only QUIT's reply is awaited now: briefly.
			until = w
			raw.SetReadDeadline(w)
		}
	}
}

// ioFailed ends t on a read or write error: stopped when ctx ended, timed
// out when its deadline passed, broken otherwise.
func ioFailed(ctx context.Context, t *Txn, err error, timeout time.Duration) {
	switch {
	case ctx.Err() != nil:
		t.stop()
	case errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(t.waitUntil()):
		t.timedOut(timeout)
	case err == io.EOF:
		t.broken(io.ErrUnexpectedEOF)
	default:
		t.broken(err)
	}
}

// writeOut writes *out on conn and empties it: several buffers in one
// system call over TCP; over TLS in one Write (one run of records), not
// one per buffer.
func writeOut(conn net.Conn, out *net.Buffers) error {
	if bw, ok := conn.(rawsock.BuffersWriter); ok {
		_, err := bw.WriteBuffers(out)
		return err
	}
	var err error
	if len(*out) == 1 {
		_, err = conn.Write((*out)[0])
	} else {
		b := make([]byte, 0, bufsLen(*out))
		for _, p := range *out {
			b = append(b, p...)
		}
		_, err = conn.Write(b)
	}
	*out = (*out)[:0]
	return err
}

func bufsLen(b net.Buffers) int {
	n := 0
	for _, p := range b {
		n += len(p)
	}
	return n
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

// WriteBuffers writes b with writev when the connection is a TCP one
// (net.Buffers.WriteTo falls back to a write per buffer on a wrapper).
func (c *countConn) WriteBuffers(b *net.Buffers) (int64, error) {
	var n int64
	var err error
	if bw, ok := c.Conn.(rawsock.BuffersWriter); ok {
		n, err = bw.WriteBuffers(b)
	} else {
		n, err = b.WriteTo(c.Conn)
	}
	c.out += n
	return n, err
}
