package files

import (
	"context"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// slot is one SMB connection that one user (by default) or several users
// (connections: N) work over. It is opened by the first action that needs
// it, and opened again by the first action after it broke, waiting up to
// the reconnect window for a server that is restarting.
type slot struct {
	id   int
	refs int // sessions using it; guarded by Config.mu

	dial chan struct{} // held by the one goroutine (re)connecting
	mu   sync.Mutex
	conn *smbConn
}

// acquire returns user u's slot, creating it when needed.
func (c *Config) acquire(u int) *slot {
	id := u
	if c.Connections > 0 {
		id = u % c.Connections
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.slots[id]
	if s == nil {
		s = &slot{id: id, dial: make(chan struct{}, 1)}
		c.slots[id] = s
	}
	s.refs++
	return s
}

// release gives a slot back; the last user closes its connection.
func (c *Config) release(s *slot) {
	c.mu.Lock()
	s.refs--
	last := s.refs == 0
	if last {
		delete(c.slots, s.id)
	}
	c.mu.Unlock()
	if last {
		s.mu.Lock()
		conn := s.conn
		s.conn = nil
		s.mu.Unlock()
		if conn != nil {
			conn.close()
		}
	}
}

// current returns the slot's connection if it is usable.
func (s *slot) current() *smbConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil && s.conn.wire.broken.Load() {
		go s.conn.close()
		s.conn = nil
	}
	return s.conn
}

// get returns a usable connection, connecting if needed.
func (s *slot) get(ctx context.Context, c *Config) (*smbConn, error) {
	if conn := s.current(); conn != nil {
		return conn, nil
	}
	select {
	case s.dial <- struct{}{}:
	case <-ctx.Done():
		return nil, classify(context.Cause(ctx), "wait for the connection")
	}
	defer func() { <-s.dial }()
	if conn := s.current(); conn != nil { // another user connected meanwhile
		return conn, nil
	}
	t0 := time.Now()
	conn, err := c.connect(ctx)
	c.logConnect(ctx, t0, err)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.conn = conn
	s.mu.Unlock()
	return conn, nil
}

// drop forgets conn (if it is still the slot's) and closes it.
func (s *slot) drop(conn *smbConn) {
	s.mu.Lock()
	if s.conn == conn {
		s.conn = nil
	}
	s.mu.Unlock()
	conn.close()
}

// connect dials the server; while it refuses or drops connections (a
// restart), it tries again with a growing pause, for up to the reconnect
// window. A refused log-on is not retried.
func (c *Config) connect(ctx context.Context) (*smbConn, error) {
	deadline := time.Now().Add(c.Reconnect.D())
	pause := 50 * time.Millisecond
	for {
		conn, err := c.dialSMB(ctx)
		if err == nil {
			return conn, nil
		}
		switch driver.Classify(err) {
		case driver.Dial, driver.IO:
		default:
			return nil, err
		}
		if ctx.Err() != nil || time.Now().Add(pause).After(deadline) {
			return nil, err
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, err
		}
		pause = min(2*pause, time.Second)
	}
}
