package netloop

import (
	"syscall"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// This file is one exchange of a conn: connect when needed, send the
// request, read and parse the response, record it. The I/O layer reports
// to connected, received and broken.

// startExchange begins action a, scheduled at sched, on c.
func (l *loop) startExchange(c *conn, a int, sched time.Duration) {
	l.depth++
	c.busy = true
	c.action = int32(a)
	c.sched = sched
	c.start = l.now
	c.deadline = l.now + l.cfg.Timeout
	c.bytesIn, c.bytesOut = 0, 0
	c.retried = false
	l.dlAppend(c)
	l.inflight++
	if l.h2 != nil {
		l.h2Start(c)
	} else if c.fd < 0 {
		l.connect(c)
	} else {
		l.send(c)
	}
	l.depth--
}

// connect opens a new connection for c's exchange.
func (l *loop) connect(c *conn) {
	up, err := l.io.dial(c)
	if c.fd >= 0 {
		l.h.ConnOpened()
	}
	if err != 0 {
		l.closeConn(c)
		l.finish(c, driver.Dial, err)
		return
	}
	if up {
		l.send(c)
		return
	}
	c.connecting = true
}

// connected is the outcome of a connect that did not finish at once.
func (l *loop) connected(c *conn, err syscall.Errno) {
	if l.h2 != nil {
		l.h2Connected(c, err)
		return
	}
	c.connecting = false
	if !c.busy {
		l.closeConn(c)
		return
	}
	if err != 0 {
		l.closeConn(c)
		l.finish(c, driver.Dial, err)
		return
	}
	l.depth++
	l.send(c)
	l.depth--
}

// send sends c's request on its connected socket.
func (l *loop) send(c *conn) {
	c.parser.Begin(l.cfg.Actions[c.action])
	c.reusedNow = c.reused
	c.reused = true
	if err := l.io.send(c, l.cfg.Requests[c.action]); err != 0 {
		l.broken(c, err)
	}
}

// received feeds response bytes to c's parser and ends the exchange when
// the response is complete.
func (l *loop) received(c *conn, b []byte) {
	if l.h2 != nil {
		l.h2Received(c, b)
		return
	}
	if !c.busy {
		// Bytes nobody asked for: the connection is out of step.
		l.closeConn(c)
		return
	}
	c.bytesIn += int64(len(b))
	n, done := c.parser.Feed(b)
	if !done {
		return
	}
	class, keep := c.parser.Result()
	if n < len(b) || !keep || !l.cfg.KeepAlive || !reusable(class) || l.io.sendBusy(c) {
		// Bytes past the response, the server asked to close, one
		// connection per request, or the request was not sent whole.
		l.closeConn(c)
	}
	l.complete(c, class)
}

// reusable reports whether a connection may carry another request after a
// response of class c.
func reusable(c driver.Class) bool {
	return c == driver.OK || c == driver.Status4xx || c == driver.Status5xx
}

// broken reports the end of c's connection: the peer closed it (err 0) or
// it failed (err). A response that ends at the close is complete; an
// exchange that had sent on a reused connection and received nothing is
// retried once on a fresh connection when its request is idempotent (the
// server may close an idle keep-alive connection at any time; a request
// that is not idempotent, like a POST, is never sent twice: RFC 9110
// §9.2.2).
func (l *loop) broken(c *conn, err syscall.Errno) {
	if l.h2 != nil {
		l.h2Broken(c, err)
		return
	}
	if !c.busy {
		l.closeConn(c)
		return
	}
	if err == 0 && c.parser.EOF() {
		class, _ := c.parser.Result()
		l.closeConn(c)
		l.complete(c, class)
		return
	}
	l.closeConn(c)
	if c.reusedNow && c.bytesIn == 0 && !c.retried && int(c.action) < len(l.cfg.Idempotent) && l.cfg.Idempotent[c.action] {
		c.retried = true
		l.depth++
		l.connect(c)
		l.depth--
		return
	}
	if err == 0 {
		l.finish(c, driver.IO, errClosedMid)
		return
	}
	l.finish(c, driver.IO, err)
}

// complete records a whole response of class class.
func (l *loop) complete(c *conn, class driver.Class) {
	var err error
	if class != driver.OK {
		err = l.statusError(c, class)
	}
	l.finish(c, class, err)
}

// finish ends c's exchange: it is recorded, and the user moves on.
func (l *loop) finish(c *conn, class driver.Class, err error) {
	c.busy = false
	if l.h2 == nil {
		c.connecting = false // HTTP/2: the connection's, not the exchange's
	}
	l.dlRemove(c)
	l.inflight--
	l.rec.Record(int(c.action), c.sched, l.now-c.sched, l.now-c.start, c.bytesIn, c.bytesOut, class, err)
	l.after(c)
}
