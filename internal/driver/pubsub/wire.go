package pubsub

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// wire is a connection whose handshake is done: connected, authenticated
// and, when asked, subscribed with the broker's confirmation.
type wire struct {
	nc net.Conn
	ep *endpoint
}

func (w *wire) close() { w.nc.Close() }

// handshakeBufs are the read buffers of handshakes, returned once the
// connection is handed to its reader.
var handshakeBufs = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// request is what a connection asks for in its handshake.
type request struct {
	user    int      // the user's ID (-1: preflight)
	cov     coverage // what the subscription covers (none: no subscription)
	filters []string // the subscription's subjects or topic filters
	// inherit is the subscription of the user's previous connection,
	// which broke: its accounting carries on over this one.
	inherit *subscription
	// ctl: the connection of a distributed run's control subject.
	ctl *control
}

// connect dials the target and does the protocol's handshake, bounded by
// the timeout: what the server says first (protoConn.greet), TLS, the
// client's opening (protoConn.hello), then the server's answers fed to the
// endpoint until it confirms or refuses (awaitHandshake). Errors carry
// their class: Dial (refused, a full server), TLS, Auth (credentials
// refused), Timeout, Protocol, IO.
func (c *Config) connect(ctx context.Context, r *run, rq request) (*wire, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout.D())
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		if driver.Classify(err) == driver.Timeout {
			return nil, driver.Errorf(driver.Timeout, err)
		}
		return nil, driver.Errorf(driver.Dial, err)
	}
	ok := false
	defer func() {
		if !ok {
			nc.Close()
		}
	}()
	if tc, isTCP := nc.(*net.TCPConn); isTCP {
		tc.SetNoDelay(true)
	}
	deadline, _ := ctx.Deadline()
	nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	bp := handshakeBufs.Get().(*[]byte)
	defer handshakeBufs.Put(bp)
	buf := *bp
	ep, name := c.handshakeEndpoint(r, rq)
	rest, err := ep.pc.greet(nc, buf, c.tls)
	if err != nil {
		return nil, err
	}
	if c.tls {
		tc, err := c.tlsUpgrade(ctx, nc)
		if err != nil {
			return nil, err
		}
		nc = tc
	}
	msg := ep.pc.hello(c, name)
	if _, err := nc.Write(msg); err != nil {
		return nil, handshakeError(err)
	}
	ep.lastSent.Store(time.Now().UnixNano())
	if err := awaitHandshake(ctx, nc, ep, buf, rest); err != nil {
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	ok = true
	return &wire{nc: nc, ep: ep}, nil
}

// handshakeEndpoint is the endpoint of a new connection asking for rq,
// and the client's name on the broker.
func (c *Config) handshakeEndpoint(r *run, rq request) (ep *endpoint, name string) {
	ep = newEndpoint(r, rq.user, c.protocol())
	ep.rq = rq
	if rq.ctl != nil {
		ep.pc.whole() // the control subject's messages are read whole
	}
	if sub := rq.inherit; sub != nil {
		// Deliveries on this connection are owed to the subscription
		// from its first byte: they are fed under its lock.
		ep.sub, ep.mu = sub, sub.mu
	}
	ep.keepAlive = int64(c.KeepAlive.D())
	name = c.ClientID + strconv.Itoa(rq.user)
	switch {
	case rq.ctl != nil:
		name = c.ClientID + "control-" + strconv.Itoa(rq.ctl.k)
	case rq.user < 0:
		name = c.ClientID + "preflight-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	return ep, name
}

// awaitHandshake feeds ep what the server sends (rest, read before, then
// from nc into buf) until it confirmed or refused the connection, and
// writes the replies the protocol queued meanwhile.
func awaitHandshake(ctx context.Context, nc net.Conn, ep *endpoint, buf, rest []byte) error {
	// Bytes are fed under the endpoint's lock: an inherited
	// subscription's is shared (see subscription).
	feed := func(p []byte) error {
		ep.mu.Lock()
		defer ep.mu.Unlock()
		return ep.feed(p, time.Now().UnixNano())
	}
	handshaking := func() bool {
		ep.mu.Lock()
		defer ep.mu.Unlock()
		return ep.handshaking()
	}
	if len(rest) > 0 {
		if err := feed(rest); err != nil {
			return driver.Errorf(driver.Protocol, err)
		}
	}
	for handshaking() {
		n, rerr := nc.Read(buf)
		if n > 0 {
			if err := feed(buf[:n]); err != nil {
				return driver.Errorf(driver.Protocol, err)
			}
		}
		if rerr != nil && handshaking() {
			if ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				return context.Cause(ctx)
			}
			return handshakeError(rerr)
		}
	}
	ep.mu.Lock()
	err, out := ep.err, ep.out
	ep.out = nil
	ep.mu.Unlock()
	if err != nil {
		return err
	}
	if len(out) > 0 {
		if _, err := nc.Write(out); err != nil {
			return handshakeError(err)
		}
	}
	return nil
}

// tlsUpgrade runs the TLS handshake over nc.
func (c *Config) tlsUpgrade(ctx context.Context, nc net.Conn) (net.Conn, error) {
	tc := tls.Client(nc, c.tlsCfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		if driver.Classify(err) == driver.Timeout {
			return nil, driver.Errorf(driver.Timeout, err)
		}
		return nil, driver.Errorf(driver.TLS, err)
	}
	return tc, nil
}

// readLine reads one line (NATS INFO) into buf, growing it up to 64 KB. It
// returns the line and the bytes read after it.
func readLine(nc net.Conn, buf []byte) (line, rest []byte, err error) {
	n := 0
	for {
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return buf[:i+1], buf[i+1 : n], nil
		}
		if n == len(buf) {
			if len(buf) >= 64<<10 {
				return nil, nil, driver.Errorf(driver.Protocol, errors.New("nats: the server's first line is longer than 64 KB"))
			}
			buf = append(buf, make([]byte, len(buf))...)
		}
		m, err := nc.Read(buf[n:])
		n += m
		if err != nil && m == 0 {
			return nil, nil, err
		}
	}
}

// handshakeError classifies a failure to read or write during a handshake:
// a connection the server closed or reset before it answered was refused
// (Dial: a full server does that), a deadline is a Timeout.
func handshakeError(err error) error {
	var de *driver.Error
	if errors.As(err, &de) {
		return err
	}
	switch {
	case driver.Classify(err) == driver.Timeout:
		return driver.Errorf(driver.Timeout, fmt.Errorf("no answer to the handshake in time: %w", err))
	case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		return driver.Errorf(driver.Dial, fmt.Errorf("the server closed the connection during the handshake (refused: a connection limit?): %w", err))
	}
	return driver.Errorf(driver.IO, err)
}
