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
// the timeout: TLS, then for NATS INFO, CONNECT, the SUBs and a PING whose
// PONG confirms all of them; for MQTT, CONNECT and SUBSCRIBE sent together,
// then CONNACK and SUBACK. Errors carry their class: Dial (refused, a full
// server), TLS, Auth (credentials refused), Timeout, Protocol, IO.
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
	ep := newEndpoint(r, rq.user, c.proto)
	ep.rq = rq
	if rq.ctl != nil {
		// The control subject's messages are read whole.
		if ep.mqtt {
			ep.mp.big = new([]byte)
		} else {
			ep.np.pay = new([]byte)
		}
	}
	if sub := rq.inherit; sub != nil {
		// Deliveries on this connection are owed to the subscription
		// from its first byte: they are fed under its lock.
		ep.sub, ep.mu = sub, sub.mu
	}
	ep.keepAlive = int64(c.KeepAlive.D())
	name := c.ClientID + strconv.Itoa(rq.user)
	switch {
	case rq.ctl != nil:
		name = c.ClientID + "control-" + strconv.Itoa(rq.ctl.k)
	case rq.user < 0:
		name = c.ClientID + "preflight-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	var msg, rest []byte
	if c.mqtt() {
		if c.tls {
			tc, err := c.tlsUpgrade(ctx, nc)
			if err != nil {
				return nil, err
			}
			nc = tc
		}
		msg = mqttConnectPacket(mqttConnectOptions{v5: c.proto == MQTT5, clientID: name, user: c.user, pass: c.pass,
			keepAlive: uint16(c.KeepAlive.D() / time.Second), clean: c.CleanSession || rq.ctl != nil, sessionExpiry: c.sessionExpiry()})
		if len(rq.filters) > 0 {
			ep.subID = 1
			msg = append(msg, mqttSubscribePacket(c.proto == MQTT5, 1, rq.filters, byte(c.QoS))...)
		}
		ep.state = epConnecting
	} else {
		var line []byte
		if line, rest, err = readLine(nc, buf); err != nil {
			return nil, handshakeError(err)
		}
		info, err := parseNATSInfo(line)
		if err != nil {
			return nil, driver.Errorf(driver.Protocol, err)
		}
		ep.cid = info.ClientID
		switch {
		case c.tls:
			tc, err := c.tlsUpgrade(ctx, nc)
			if err != nil {
				return nil, err
			}
			nc = tc
		case info.TLSRequired:
			return nil, driver.Errorf(driver.TLS, errors.New("nats: the server requires TLS: use a tls:// target"))
		}
		msg = natsConnect(name, c.user, c.pass, c.tls)
		for i, f := range rq.filters {
			msg = natsSub(msg, f, uint32(i+1))
		}
		ep.sids = uint32(len(rq.filters))
		msg = append(msg, "PING\r\n"...)
		ep.state = epConnecting
		if len(rq.filters) > 0 {
			ep.state = epSubscribing
		}
	}
	if _, err := nc.Write(msg); err != nil {
		return nil, handshakeError(err)
	}
	ep.lastSent.Store(time.Now().UnixNano())
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
			return nil, driver.Errorf(driver.Protocol, err)
		}
	}
	for handshaking() {
		n, rerr := nc.Read(buf)
		if n > 0 {
			if err := feed(buf[:n]); err != nil {
				return nil, driver.Errorf(driver.Protocol, err)
			}
		}
		if rerr != nil && handshaking() {
			if ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				return nil, context.Cause(ctx)
			}
			return nil, handshakeError(rerr)
		}
	}
	ep.mu.Lock()
	err, out := ep.err, ep.out
	ep.out = nil
	ep.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if len(out) > 0 {
		if _, err := nc.Write(out); err != nil {
			return nil, handshakeError(err)
		}
	}
	nc.SetDeadline(time.Time{})
	ok = true
	return &wire{nc: nc, ep: ep}, nil
}

// sessionExpiry is the MQTT 5 session expiry to ask for.
func (c *Config) sessionExpiry() uint32 {
	if c.CleanSession {
		return 0
	}
	return uint32(c.SessionExpiry.D() / time.Second)
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
