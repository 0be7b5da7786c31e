package mail

import (
	"bytes"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/throng-io/throng/internal/driver"
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
	srv := embedded(t)
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
	srv := embedded(t)
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
