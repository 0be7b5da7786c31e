package files

import (
	"context"
	"fmt"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// Uploads are read back. After a copy-up or a write has closed its file,
// the session reads what it wrote back from the server and compares it
// with what it sent (SMB2 has no server-side hash to ask for): a server
// that stored other bytes is counted, in class corrupt, as the event
// "verify", whose latency is the read-back's and whose bytes are the bytes
// checked. The read-back is not the upload's: the upload's latency ends at
// its close (driver.Outcome.Untimed), though the user is busy until the
// check is done. verify_uploads: false turns it off.

// EventVerify is the name of the read-back event.
const EventVerify = "verify"

// EventActions implements driver.Events: "verify" when uploads are read
// back and an action writes (copy-up, write); "connect" against an SMB
// server (smb.go: logConnect).
func (c *Config) EventActions() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ev []string
	if c.VerifyUploads && c.writes {
		ev = append(ev, EventVerify)
	}
	if c.tgt != nil && c.tgt.smb {
		ev = append(ev, EventConnect)
	}
	return ev
}

// Observe implements driver.Events.
func (c *Config) Observe(sink driver.Sink) {
	c.mu.Lock()
	c.sink = sink
	c.mu.Unlock()
}

// Drain implements driver.Events: every read-back is done before its
// action returns, so nothing is in flight.
func (c *Config) Drain(context.Context) error { return nil }

// EventsImmediate implements driver.ImmediateEvents: no drain.
func (c *Config) EventsImmediate() bool { return true }

var (
	_ driver.Events          = (*Config)(nil)
	_ driver.ImmediateEvents = (*Config)(nil)
)

// readBack is what an upload wrote, to be read back after its action.
type readBack struct {
	name   string
	key    uint64
	off, n int64
	whole  bool      // the whole file: a longer one shows too
	cause  time.Time // when the upload began
}

// toCheck notes what the action that is running wrote, when uploads are
// read back.
func (s *session) toCheck(name string, key uint64, off, n int64, whole bool) {
	if s.sink == nil {
		return
	}
	s.check = readBack{name: name, key: key, off: off, n: n, whole: whole, cause: s.started}
	s.pending = true
}

// verify reads back what the action wrote, records the event and returns
// the time it took. parent is the run's context: the read-back has its own
// timeout. Stopped by the end of the run, it records nothing.
func (s *session) verify(parent context.Context, fs fsys, conn *smbConn) time.Duration {
	s.pending = false
	if parent.Err() != nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(parent, s.c.Timeout.D())
	defer cancel()
	rb := &s.check
	t0 := time.Now()
	max := rb.n
	if rb.whole {
		max++ // one byte more: a longer file shows
	}
	n, bad, err := s.readChecked(ctx, fs, rb.name, rb.key, rb.off, max, rb.off+rb.n)
	switch {
	case err != nil:
		err = classify(err, "read back "+rb.name)
	case n < rb.n:
		err = driver.Errorf(driver.Corrupt, fmt.Errorf("read back %s: %d bytes at %d, %d were written (a short file)", rb.name, n, rb.off, rb.n))
	case n > rb.n:
		err = driver.Errorf(driver.Corrupt, fmt.Errorf("read back %s: more than the %d bytes written", rb.name, rb.n))
	case bad >= 0:
		err = driver.Errorf(driver.Corrupt, fmt.Errorf("read back %s: byte %d differs from what was written", rb.name, bad))
	}
	d := time.Since(t0)
	if err != nil && parent.Err() != nil {
		return d
	}
	if err != nil && conn != nil && brokenConn(err) {
		s.slot.drop(conn)
	}
	s.sink.Event(0, rb.cause, d, n, 0, driver.Classify(err), err)
	return d
}

// readChecked reads name from off, up to max bytes, and checks every byte
// before end against the content of key. It returns the bytes read and
// the offset of the first byte that differs (-1: none).
func (s *session) readChecked(ctx context.Context, fs fsys, name string, key uint64, off, max, end int64) (int64, int64, error) {
	var bad int64 = -1
	n, err := fs.read(ctx, name, off, max, s.buf, func(o int64, p []byte) {
		if bad < 0 && o < end {
			if k := mismatch(key, o, p[:min(int64(len(p)), end-o)]); k >= 0 {
				bad = o + int64(k)
			}
		}
	})
	return n, bad, err
}
