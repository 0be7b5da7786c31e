// Package mailtest holds what the mail driver's tests and its
// sub-packages' tests share: scripted and minimal SMTP servers, a TLS
// certificate, and a raw IMAP client for checks behind a driver's back.
// Each server lives until the test ends.
package mailtest

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	mailtarget "github.com/throng-io/throng/internal/targets/mail"
	"github.com/throng-io/throng/internal/testenv"
)

// Embedded starts throng's embedded mail server (IMAP and SMTP) on free
// loopback ports until the test ends.
func Embedded(t testing.TB) *mailtarget.Server {
	t.Helper()
	s, err := mailtarget.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ScriptedSMTP serves every connection with script until the test ends;
// it returns the address.
func ScriptedSMTP(t testing.TB, script func(nc net.Conn, r *bufio.Reader)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				script(nc, bufio.NewReader(nc))
			}()
		}
	}()
	return ln.Addr().String()
}

// FakeSMTP is a minimal SMTP server (PIPELINING offered or not) that
// accepts every command and message, except that it stops answering, and
// reads on, from the first command that starts with stallAfter ("": never).
func FakeSMTP(t testing.TB, pipelining bool, stallAfter string) string {
	ehlo := "250 fake.test\r\n"
	if pipelining {
		ehlo = "250-fake.test\r\n250 PIPELINING\r\n"
	}
	return ScriptedSMTP(t, func(nc net.Conn, r *bufio.Reader) {
		nc.Write([]byte("220 fake.test ESMTP\r\n"))
		inData := false
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			cmd := strings.TrimRight(line, "\r\n")
			if inData {
				if cmd != "." {
					continue
				}
				inData = false
			}
			if stallAfter != "" && strings.HasPrefix(cmd, stallAfter) {
				io.Copy(io.Discard, r) // read on, never answer
				return
			}
			switch {
			case strings.HasPrefix(cmd, "EHLO"):
				nc.Write([]byte(ehlo))
			case strings.HasPrefix(cmd, "DATA"):
				inData = true
				nc.Write([]byte("354 go on\r\n"))
			case cmd == "QUIT":
				nc.Write([]byte("221 bye\r\n"))
				return
			default:
				nc.Write([]byte("250 ok\r\n"))
			}
		}
	})
}

// Cert is a self-signed certificate for the tests' TLS servers.
var Cert = sync.OnceValue(func() tls.Certificate {
	cert, _, _, err := testenv.SelfSigned()
	if err != nil {
		panic(err)
	}
	return cert
})

// RawIMAP logs user on at the IMAP server at addr over a plain
// connection and sends cmds, for checks behind the driver's back: it
// returns every line read, trimmed, up to each command's tagged answer.
func RawIMAP(t testing.TB, addr, user, pass string, cmds ...string) []string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	r.ReadString('\n')
	var out []string
	for i, cmd := range append([]string{"LOGIN " + user + " " + pass}, cmds...) {
		tag := fmt.Sprintf("t%d", i)
		fmt.Fprintf(c, "%s %s\r\n", tag, cmd)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, strings.TrimSpace(line))
			if strings.HasPrefix(line, tag+" ") {
				break
			}
		}
	}
	return out
}

// Sink is an SMTP backend (go-smtp) that keeps how many messages arrived,
// whether each came over TLS, and what they were.
type Sink struct {
	mu          sync.Mutex
	plain, tlsd int
	msgs        []string
}

// NewSession is go-smtp's Backend.
func (b *Sink) NewSession(c *smtp.Conn) (smtp.Session, error) { return &sinkSession{b, c}, nil }

type sinkSession struct {
	b *Sink
	c *smtp.Conn
}

func (s *sinkSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *sinkSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *sinkSession) Reset()                               {}
func (s *sinkSession) Logout() error                        { return nil }
func (s *sinkSession) Data(r io.Reader) error {
	b, _ := io.ReadAll(r)
	_, isTLS := s.c.TLSConnectionState()
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.msgs = append(s.b.msgs, string(b))
	if isTLS {
		s.b.tlsd++
	} else {
		s.b.plain++
	}
	return nil
}

// Messages are the messages received, in order.
func (b *Sink) Messages() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.msgs)
}

// Counts are how many messages came in plain text and over TLS.
func (b *Sink) Counts() (plain, tlsd int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.plain, b.tlsd
}

// SMTPServer serves SMTP on a free loopback port: with cfg and implicit,
// TLS from the first byte; with cfg alone, STARTTLS offered; without cfg,
// plain text only.
func SMTPServer(t testing.TB, cfg *tls.Config, implicit bool) (*Sink, string) {
	t.Helper()
	sink := &Sink{}
	srv := smtp.NewServer(sink)
	srv.Domain = "localhost"
	srv.TLSConfig = cfg
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if implicit {
		ln = tls.NewListener(ln, cfg)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sink, ln.Addr().String()
}
