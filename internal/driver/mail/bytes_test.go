package mail

import (
	"context"
	"testing"

	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
)

const bytesScenario = `
users: 2
model: open
phases: {steady: 1m}
mail:
  population: {inbox: 5, deleted: 1, folders: 2, folder_messages: 2, size: 5KB}
actions:
  - {name: send, rate: 1/s, recipients: 1, size: 6KB, sizes: fixed}
  - {name: browse, rate: 1/s}
  - {name: logoff, rate: 1/s, again: true}
`

// An action's bytes are its own: a send by a logged-on user is its SMTP
// exchange only (not what the IMAP connection moved before it), and a
// logoff that logs on again counts its LOGOUT on the old connection and
// all of the new one.
func TestActionBytesAreTheirOwn(t *testing.T) {
	srv := mailtest.Embedded(t)
	c, acts := load(t, bytesScenario, srv.URL())
	c.Provisioner = srv
	prepare(t, c, 2, 3)
	ss := open(t, c, 2)
	s := ss[0].(*session)
	ctx := context.Background()
	if _, err := s.Do(ctx, acts["browse"]); err != nil {
		t.Fatal(err)
	}
	if s.ic.In == 0 || s.ic.Out == 0 {
		t.Fatalf("the IMAP connection moved %d/%d bytes after log-on and browse", s.ic.In, s.ic.Out)
	}
	out, err := s.Do(ctx, acts["send"])
	if err != nil {
		t.Fatal(err)
	}
	if s.bytesIn == 0 || s.bytesOut < 5000 {
		t.Fatalf("the SMTP exchange moved %d/%d bytes", s.bytesIn, s.bytesOut)
	}
	if out.BytesIn != s.bytesIn || out.BytesOut != s.bytesOut {
		t.Errorf("send counted %d/%d bytes, its SMTP exchange was %d/%d", out.BytesIn, out.BytesOut, s.bytesIn, s.bytesOut)
	}
	old := s.ic
	out, err = s.Do(ctx, acts["logoff"])
	if err != nil {
		t.Fatal(err)
	}
	if s.ic == nil || s.ic == old {
		t.Fatal("logoff again did not log on on a new connection")
	}
	// The new connection's bytes, and more: the old one's LOGOUT.
	if out.BytesOut <= s.ic.Out || out.BytesIn <= s.ic.In {
		t.Errorf("logoff again counted %d/%d bytes, the new connection alone moved %d/%d", out.BytesIn, out.BytesOut, s.ic.In, s.ic.Out)
	}
	if logout := int64(len("a0 LOGOUT\r\n")); out.BytesOut-s.ic.Out < logout {
		t.Errorf("logoff again counted %d bytes sent on the old connection, LOGOUT is at least %d", out.BytesOut-s.ic.Out, logout)
	}
	// The next IMAP action counts from where logoff left off.
	in0 := s.ic.In
	out, err = s.Do(ctx, acts["browse"])
	if err != nil {
		t.Fatal(err)
	}
	if out.BytesIn != s.ic.In-in0 {
		t.Errorf("browse counted %d bytes in, the connection received %d", out.BytesIn, s.ic.In-in0)
	}
}
