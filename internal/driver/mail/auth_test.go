package mail

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
	"github.com/throng-io/throng/internal/testenv"
)

// recorder is a TCP proxy to addr that keeps what clients wrote.
type recorder struct {
	ln  net.Listener
	mu  sync.Mutex
	out bytes.Buffer
}

func record(t *testing.T, addr string) *recorder {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(c, s); c.Close() }()
			go func() { io.Copy(io.MultiWriter(s, r), c); s.Close() }()
		}
	}()
	return r
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Write(p)
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// mail.auth: plain logs on with AUTHENTICATE PLAIN (never LOGIN), and
// mail.smtp_auth submits with AUTH PLAIN: a wrong password is refused by
// both servers as class auth, with their words and without the password.
func TestAuthPlainAndSMTPAuth(t *testing.T) {
	srv := mailtest.Embedded(t)
	imapRec, smtpRec := record(t, srv.IMAPAddr()), record(t, srv.SMTPAddr())
	c, acts := load(t, `
users: 2
model: open
phases: {steady: 1m}
mail:
  auth: plain
  smtp_auth: true
  population: {inbox: 2, deleted: 0, folders: 0, size: 2KB, calendar: 0, contacts: 0}
actions:
  - {name: send, rate: 1/s, recipients: 1}
`, "imap://"+imapRec.ln.Addr().String()+"?smtp="+smtpRec.ln.Addr().String())
	c.Provisioner = srv
	prepare(t, c, 2, 1)
	s := open(t, c, 1)[0].(*session)
	if _, err := s.Do(context.Background(), acts["send"]); err != nil {
		t.Fatal(err)
	}
	if in := imapRec.String(); !strings.Contains(in, "AUTHENTICATE PLAIN") || strings.Contains(in, " LOGIN ") {
		t.Errorf("IMAP log-on was not AUTHENTICATE PLAIN:\n%.300s", in)
	}
	if in := smtpRec.String(); !strings.Contains(in, "AUTH PLAIN") {
		t.Errorf("SMTP submission without AUTH PLAIN:\n%.300s", in)
	}
	c.password = "wrong-pw-xyz"
	_, err := s.Do(context.Background(), acts["send"])
	if driver.Classify(err) != driver.Auth || !strings.Contains(err.Error(), "535") || strings.Contains(err.Error(), "wrong-pw-xyz") {
		t.Errorf("SMTP AUTH with a wrong password: %v (class %v)", err, driver.Classify(err))
	}
	_, err = c.Open(context.Background(), driver.User{ID: 1, Users: 2})
	if driver.Classify(err) != driver.Auth || strings.Contains(err.Error(), "wrong-pw-xyz") {
		t.Errorf("AUTHENTICATE PLAIN with a wrong password: %v (class %v)", err, driver.Classify(err))
	}
}

// A refusal keeps the server's words, bounded: a NO that echoes a
// 2,000-byte mailbox name is kept as its first 200 bytes.
func TestRefusalTextBounded(t *testing.T) {
	srv := mailtest.Embedded(t)
	long := strings.Repeat("x", 2000)
	c, acts := load(t, `
users: 1
model: open
phases: {steady: 1m}
mail: {population: {inbox: 1, deleted: 0, folders: 0, size: 2KB, calendar: 0, contacts: 0}}
actions:
  - {name: no-such-box, kind: select, mailbox: `+long+`, rate: 1/s}
`, srv.URL())
	c.Provisioner = srv
	prepare(t, c, 1, 1)
	s := open(t, c, 1)[0]
	_, err := s.Do(context.Background(), acts["no-such-box"])
	if driver.Classify(err) != driver.Status4xx || !strings.Contains(err.Error(), "Mailbox doesn't exist: xxx") || len(err.Error()) > 300 {
		t.Errorf("%d bytes, class %v: %.120s", len(err.Error()), driver.Classify(err), err)
	}
	// The session goes on.
	if _, err := s.Do(context.Background(), acts["no-such-box"]); driver.Classify(err) != driver.Status4xx {
		t.Errorf("second select: %v", err)
	}
}

// A log-on refused for a wrong password is class auth wherever it
// happens, with the server's words and never the password, against the
// embedded server and against Dovecot: at Open (what the engine records
// as a user's log-on), in the cached profile's logoff-and-log-on-again,
// in a logon action, and in the log-on an IMAP action makes when it finds
// itself logged off; each within the timeout. With the password right
// again, the next logoff logs on.
func TestLogonWrongPassword(t *testing.T) {
	const scenario = `
users: 2
model: open
phases: {steady: 1m}
mail:
  mode: cached
  timeout: 5s
  population: {inbox: 2, deleted: 0, folders: 0, size: 2KB, calendar: 0, contacts: 0}
actions:
  - {name: logoff, rate: 1/s}
  - {name: logon, rate: 1/s}
  - {name: check, rate: 1/s}
`
	servers := map[string]func(t *testing.T) (target string, provisioner Provisioner){
		"embedded": func(t *testing.T) (string, Provisioner) {
			srv := mailtest.Embedded(t)
			return srv.URL(), srv
		},
		"dovecot": func(t *testing.T) (string, Provisioner) {
			d := testenv.Dovecot(t, testenv.DovecotOptions{Users: 2, Password: realPassword})
			t.Setenv(PasswordEnv, realPassword)
			return "imap://" + d.Addr + "?smtp=127.0.0.1:9", nil
		},
	}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			target, prov := start(t)
			c, acts := load(t, scenario, target)
			if prov != nil {
				c.Provisioner = prov
			}
			prepare(t, c, 2, 1)
			s := open(t, c, 1)[0]
			right := c.password
			c.password = "wrong-pw-xyz"
			auth := func(what string, err error, took time.Duration) {
				t.Helper()
				if driver.Classify(err) != driver.Auth || !strings.Contains(err.Error(), "AUTHENTICATIONFAILED") ||
					strings.Contains(err.Error(), "wrong-pw-xyz") || took > 5*time.Second {
					t.Errorf("%s: %v (class %v) after %v", what, err, driver.Classify(err), took)
				}
			}
			t0 := time.Now()
			_, err := c.Open(context.Background(), driver.User{ID: 1, Users: 2})
			auth("Open", err, time.Since(t0))
			for _, a := range []string{"logoff", "logon", "check"} {
				t0 := time.Now()
				_, err := s.Do(context.Background(), acts[a])
				auth(a, err, time.Since(t0))
			}
			c.password = right
			if _, err := s.Do(context.Background(), acts["logoff"]); err != nil {
				t.Errorf("logoff with the right password again: %v", err)
			}
		})
	}
}
