package mail

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
)

const faultsScenario = `
users: 4
model: open
phases: {steady: 1m}
mail:
  population: {inbox: 12, deleted: 1, folders: 2, folder_messages: 3, size: 4KB, sizes: fixed}
  timeout: 5s
actions:
  - {name: send, rate: 1/s, recipients: 1}
  - {name: search, rate: 1/s}
  - {name: process-inbox, rate: 1/s, move: 50%, delete: 50%}
  - {name: browse, rate: 1/s}
  - {name: check, rate: 1/s}
  - {name: logoff, rate: 1/s}
  - {name: no-such-box, kind: select, mailbox: NoSuchFolder, rate: 1/s}
  - {name: bad-command, kind: command, command: XYZZY, rate: 1/s}
  - {name: to-unknown, kind: send, to: [nosuchuser@example.test], rate: 1/s}
  - {name: too-big, kind: send, size: 55MB, sizes: fixed, recipients: 1, rate: 1/s}
  - {name: free-busy, rate: 1/s}
`

// Every action against the embedded server: what works works, and each
// fault is counted in its class with the server's own words.
func TestActionsAndFaults(t *testing.T) {
	srv := mailtest.Embedded(t)
	c, acts := load(t, faultsScenario, srv.URL())
	c.Provisioner = srv
	ev := &events{}
	c.Observe(ev)
	prepare(t, c, 4, 3)
	if st := c.Stats(); st.Messages != 4*(12+1+6) || st.Bytes != st.Messages*4000 {
		t.Fatalf("population %+v", st)
	}
	if u, m := srv.Store().Counts(); u != 4 || m != 4*19 {
		t.Fatalf("store: %d users, %d messages", u, m)
	}
	ss := open(t, c, 4)
	for _, tc := range []struct {
		action string
		class  driver.Class
		text   string
	}{
		{"send", driver.OK, ""},
		{"search", driver.OK, ""},
		{"check", driver.OK, ""},
		{"process-inbox", driver.OK, ""},
		{"browse", driver.OK, ""},
		{"logoff", driver.OK, ""},
		{"search", driver.OK, ""},
		{"no-such-box", driver.Status4xx, "NONEXISTENT"},
		{"bad-command", driver.Protocol, "BAD Unknown command"},
		{"to-unknown", driver.Status5xx, "550 5.1.1 <nosuchuser@example.test>: Recipient address rejected"},
		{"too-big", driver.Status5xx, "552"},
		{"free-busy", driver.Skipped, "no CalDAV server"},
		{"search", driver.OK, ""},
	} {
		for i, s := range ss {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			out, err := s.Do(ctx, acts[tc.action])
			cancel()
			if got := driver.Classify(err); got != tc.class || (err != nil && !strings.Contains(err.Error(), tc.text)) {
				t.Fatalf("user %d %s: class %v, error %v; want %v %q", i, tc.action, got, err, tc.class, tc.text)
			}
			if tc.class == driver.OK && tc.action != "logoff" && out.BytesIn == 0 {
				t.Errorf("%s: no bytes in", tc.action)
			}
		}
	}
	// Process-inbox moved or deleted what arrived; searches still find the
	// population (they would be Corrupt otherwise).
	out := mailtest.RawIMAP(t, srv.IMAPAddr(), "user0002", c.password, "STATUS INBOX (MESSAGES)", "STATUS Folder01 (MESSAGES)", "STATUS Folder02 (MESSAGES)")
	if !strings.Contains(strings.Join(out, " "), "STATUS") {
		t.Fatal(out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Drain(ctx)
	if n := ev.count(driver.Lost); n != 0 {
		t.Errorf("lost %d: %v", n, ev.msgs)
	}
	if n := ev.count(driver.OK); n != c.track.owedTotal() {
		t.Errorf("%d deliveries seen of %d expected", n, c.track.owedTotal())
	}
	// A delivery moves no bytes of the generator's: its messages' sizes
	// must not swell the run's "received".
	if ev.bytes != 0 {
		t.Errorf("deliveries carried %d bytes", ev.bytes)
	}
}

// A wrong password is an auth failure with the server's words, at Open.
func TestWrongPassword(t *testing.T) {
	srv := mailtest.Embedded(t)
	c, _ := load(t, faultsScenario, srv.URL())
	c.Provisioner = srv
	prepare(t, c, 2, 1)
	c.password = "not-the-password"
	_, err := c.Open(context.Background(), driver.User{ID: 0, Users: 2})
	if driver.Classify(err) != driver.Auth || !strings.Contains(err.Error(), "AUTHENTICATIONFAILED") ||
		strings.Contains(err.Error(), "not-the-password") {
		t.Fatalf("%v (class %v)", err, driver.Classify(err))
	}
}

// Messages that vanish before their recipient sees them are counted lost
// by Drain; the ones still there are found and counted delivered.
func TestDrainCountsLost(t *testing.T) {
	srv := mailtest.Embedded(t)
	c, acts := load(t, faultsScenario, srv.URL())
	c.Provisioner = srv
	ev := &events{}
	c.Observe(ev)
	prepare(t, c, 4, 1)
	sender, err := c.Open(context.Background(), driver.User{ID: 0, Users: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer sender.Close()
	for range 6 {
		if _, err := sender.Do(context.Background(), acts["send"]); err != nil {
			t.Fatal(err)
		}
	}
	want := c.track.owedTotal()
	// user0002's new mail is deleted behind everyone's back.
	expect := 0
	for _, id := range c.track.pending() {
		r := c.track.user(id)
		if id == 1 {
			expect = int(r.owed.Load())
		}
	}
	mailtest.RawIMAP(t, srv.IMAPAddr(), "user0002", c.password, "SELECT INBOX", "UID STORE 13:* +FLAGS (\\Deleted)", "EXPUNGE")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	t0 := time.Now()
	c.Drain(ctx)
	if lost, ok := ev.count(driver.Lost), ev.count(driver.OK); lost != expect || ok != want-expect || want == 0 {
		t.Errorf("lost %d (want %d), delivered %d (want %d)", lost, expect, ok, want-expect)
	}
	if ev.timed() != 0 {
		t.Errorf("deliveries found by Drain have no latency, got %d timed", ev.timed())
	}
	if d := time.Since(t0); expect > 0 && (d < 2*time.Second || d > 4*time.Second) {
		t.Errorf("drain with missing mail took %v, want its whole bound (3s)", d)
	}
}

// A server that goes away mid-run gives errors by class within the
// timeout, never a hang; a session logs on again once it is back.
func TestServerGoneAndBack(t *testing.T) {
	srv := mailtest.Embedded(t)
	addr := srv.IMAPAddr()
	c, acts := load(t, faultsScenario, srv.URL())
	c.Provisioner = srv
	prepare(t, c, 2, 1)
	ss := open(t, c, 2)
	srv.Close()
	t0 := time.Now()
	_, err := ss[0].Do(context.Background(), acts["check"])
	if cl := driver.Classify(err); cl != driver.IO && cl != driver.Dial {
		t.Fatalf("server gone: %v (class %v)", err, cl)
	}
	_, err = ss[0].Do(context.Background(), acts["check"])
	if driver.Classify(err) != driver.Dial || time.Since(t0) > 5*time.Second {
		t.Fatalf("server still gone: %v after %v", err, time.Since(t0))
	}
	// Back on the same port (a fresh, unprovisioned server creates the
	// account at its first log-on).
	var srv2 interface{ Close() error }
	for range 50 {
		s2, err := startAt(addr)
		if err == nil {
			srv2 = s2
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if srv2 == nil {
		t.Skip("the port was taken meanwhile")
	}
	defer srv2.Close()
	if _, err := ss[0].Do(context.Background(), acts["check"]); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
}

// deadlineConn records the last deadline set on a connection.
type deadlineConn struct {
	net.Conn
	mu   sync.Mutex
	set  int
	last time.Time
}

func (d *deadlineConn) note(t time.Time) {
	d.mu.Lock()
	d.set++
	d.last = t
	d.mu.Unlock()
}
func (d *deadlineConn) SetDeadline(t time.Time) error { d.note(t); return d.Conn.SetDeadline(t) }
func (d *deadlineConn) SetReadDeadline(t time.Time) error {
	d.note(t)
	return d.Conn.SetReadDeadline(t)
}
func (d *deadlineConn) SetWriteDeadline(t time.Time) error {
	d.note(t)
	return d.Conn.SetWriteDeadline(t)
}

// Between actions a session's connection has no deadline: a deadline left
// set is a runtime timer that wakes the idle generator a timeout later.
func TestNoDeadlineBetweenActions(t *testing.T) {
	srv := mailtest.Embedded(t)
	c, acts := load(t, `
users: 1
model: open
phases: {steady: 1m}
mail: {population: {inbox: 3, size: 2KB, sizes: fixed}, timeout: 5s}
actions:
  - {name: check, rate: 1/s}
  - {name: browse, rate: 1/s}
`, srv.URL())
	c.Provisioner = srv
	prepare(t, c, 1, 1)
	s := open(t, c, 1)[0].(*session)
	for _, name := range []string{"check", "browse", "check"} {
		dc := &deadlineConn{Conn: s.ic.NC}
		s.ic.NC = dc
		if _, err := s.Do(context.Background(), acts[name]); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.ic.NC != dc {
			t.Fatalf("%s: logged on again", name)
		}
		dc.mu.Lock()
		set, last := dc.set, dc.last
		dc.mu.Unlock()
		if set < 2 || !last.IsZero() {
			t.Errorf("%s: %d deadlines set, the last %v; want the exchange's then none", name, set, last)
		}
	}
}

// Accounts this run did not populate may lack the folders process-inbox
// moves to: the move creates the folder (NO [TRYCREATE]) and goes on.
func TestMoveCreatesAMissingFolder(t *testing.T) {
	srv := mailtest.Embedded(t)
	c, acts := load(t, `
users: 2
model: open
phases: {steady: 1m}
mail:
  population: {create: false, folders: 1}
  timeout: 5s
actions:
  - {name: send, rate: 1/s, to: [user0002@example.test]}
  - {name: process-inbox, rate: 1/s, read: 0%, move: 100%, delete: 0%}
`, srv.URL())
	c.Provisioner = srv
	prepare(t, c, 2, 1)
	ss := open(t, c, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 3 {
		if _, err := ss[0].Do(ctx, acts["send"]); err != nil {
			t.Fatal(err)
		}
	}
	if out := strings.Join(mailtest.RawIMAP(t, srv.IMAPAddr(), "user0002", c.password, "STATUS Folder01 (MESSAGES)"), " "); !strings.Contains(out, "NO") {
		t.Fatalf("Folder01 exists before the move: %s", out)
	}
	// The deliveries reach the mailbox in their own time: process until
	// the three have been moved.
	var out string
	for try := 0; try < 50; try++ {
		if _, err := ss[1].Do(ctx, acts["process-inbox"]); err != nil {
			t.Fatalf("process-inbox: %v", err)
		}
		out = strings.Join(mailtest.RawIMAP(t, srv.IMAPAddr(), "user0002", c.password, "STATUS Folder01 (MESSAGES)", "STATUS INBOX (MESSAGES)"), " ")
		if strings.Contains(out, `"Folder01" (MESSAGES 3)`) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(out, `"Folder01" (MESSAGES 3)`) || !strings.Contains(out, `"INBOX" (MESSAGES 0)`) {
		t.Errorf("after process-inbox: %s; want 3 moved to Folder01, none left in INBOX", out)
	}
}
