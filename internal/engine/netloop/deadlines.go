package netloop

import "github.com/throng-io/throng/internal/driver"

// The deadline list holds the busy conns in the order their exchanges
// started. Every exchange has the same timeout and starts at the loop's
// clock, which never goes back, so the list is also in deadline order and
// its head is the next to expire: adding, removing and finding the next
// deadline cost O(1), and a loop turn checks only the head.

func (l *loop) dlAppend(c *conn) {
	c.dlPrev, c.dlNext = l.dlTail, -1
	if l.dlTail >= 0 {
		l.conns[l.dlTail].dlNext = c.idx
	} else {
		l.dlHead = c.idx
	}
	l.dlTail = c.idx
}

func (l *loop) dlRemove(c *conn) {
	if c.dlPrev >= 0 {
		l.conns[c.dlPrev].dlNext = c.dlNext
	} else {
		l.dlHead = c.dlNext
	}
	if c.dlNext >= 0 {
		l.conns[c.dlNext].dlPrev = c.dlPrev
	} else {
		l.dlTail = c.dlPrev
	}
	c.dlPrev, c.dlNext = -1, -1
}

// expire ends the exchanges past their deadline.
func (l *loop) expire() {
	for l.dlHead >= 0 {
		c := &l.conns[l.dlHead]
		if c.deadline > l.now {
			return
		}
		if l.h2 != nil {
			l.h2Cancel(c) // the stream is reset, the connection kept
		} else {
			l.closeConn(c)
		}
		l.finish(c, driver.Timeout, errTimeout)
		if l.h2 != nil {
			l.h2Pump(&l.h2.sess[c.sess])
		}
	}
}
