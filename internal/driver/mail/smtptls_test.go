package mail

import (
	"crypto/tls"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/emersion/go-smtp"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/testenv"
)

// tlsSink is an SMTP backend that keeps how many messages arrived,
// whether each came over TLS, and what they were.
type tlsSink struct {
	mu          sync.Mutex
	plain, tlsd int
	msgs        []string
}

func (b *tlsSink) NewSession(c *smtp.Conn) (smtp.Session, error) { return &tlsSinkSession{b, c}, nil }

type tlsSinkSession struct {
	b *tlsSink
	c *smtp.Conn
}

func (s *tlsSinkSession) Mail(string, *smtp.MailOptions) error { return nil }
func (s *tlsSinkSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *tlsSinkSession) Reset()                               {}
func (s *tlsSinkSession) Logout() error                        { return nil }
func (s *tlsSinkSession) Data(r io.Reader) error {
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

func (b *tlsSink) messages() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.msgs)
}

func (b *tlsSink) counts() (plain, tlsd int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.plain, b.tlsd
}

// smtpServer serves SMTP on a free loopback port: with cfg and implicit,
// TLS from the first byte; with cfg alone, STARTTLS offered; without cfg,
// plain text only.
func smtpServer(t *testing.T, cfg *tls.Config, implicit bool) (*tlsSink, string) {
	t.Helper()
	sink := &tlsSink{}
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

// Submission over TLS: smtp_tls starttls upgrades a plain connection and
// tls (an smtps:// target) speaks TLS at once, and the messages arrive
// encrypted; an untrusted certificate is class tls, a server that does not
// offer STARTTLS is refused by the preflight with why and counted as
// protocol errors, and a bad smtp_tls value is refused with its position.
func TestSMTPTLS(t *testing.T) {
	cert, _, _, err := testenv.SelfSigned()
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}}
	send := func(t *testing.T, block, target string) (error, error) {
		t.Helper()
		c, acts := load(t, "users: 1\nclosed: {total: 1}\nmail: "+block+"\nactions: [{name: send, to: [user0002@example.test], size: 2000B, sizes: fixed}]\n", target)
		pre := c.Preflight(t.Context())
		c.Observe(&events{})
		ss := open(t, c, 1)
		_, err := ss[0].Do(t.Context(), acts["send"])
		return pre, err
	}
	t.Run("starttls", func(t *testing.T) {
		sink, addr := smtpServer(t, cfg, false)
		pre, err := send(t, "{smtp_tls: starttls, insecure_skip_verify: true}", "smtp://"+addr)
		if pre != nil || err != nil {
			t.Fatalf("preflight %v, send %v", pre, err)
		}
		if plain, tlsd := sink.counts(); plain != 0 || tlsd != 1 {
			t.Errorf("%d messages in plain text, %d over TLS; want 0 and 1", plain, tlsd)
		}
		// The certificate is checked unless told otherwise.
		_, err = send(t, "{smtp_tls: starttls}", "smtp://"+addr)
		if driver.Classify(err) != driver.TLS {
			t.Errorf("untrusted certificate: %v (class %v), want tls", err, driver.Classify(err))
		}
	})
	t.Run("smtps", func(t *testing.T) {
		sink, addr := smtpServer(t, cfg, true)
		pre, err := send(t, "{insecure_skip_verify: true}", "smtps://"+addr)
		if pre != nil || err != nil {
			t.Fatalf("preflight %v, send %v", pre, err)
		}
		if plain, tlsd := sink.counts(); plain != 0 || tlsd != 1 {
			t.Errorf("%d messages in plain text, %d over TLS; want 0 and 1", plain, tlsd)
		}
	})
	t.Run("not offered", func(t *testing.T) {
		sink, addr := smtpServer(t, nil, false)
		pre, err := send(t, "{smtp_tls: starttls, insecure_skip_verify: true}", "smtp://"+addr)
		if pre == nil || !strings.Contains(pre.Error(), "does not offer STARTTLS") {
			t.Errorf("preflight: %v", pre)
		}
		if driver.Classify(err) != driver.Protocol || !strings.Contains(err.Error(), "does not offer STARTTLS") {
			t.Errorf("send: %v (class %v), want protocol", err, driver.Classify(err))
		}
		if plain, tlsd := sink.counts(); plain+tlsd != 0 {
			t.Errorf("%d messages sent in plain text to a server without STARTTLS", plain)
		}
	})
	if _, got := decodeAll(t, "users: 1\nmail:\n  smtp_tls: ssl\nactions: [{name: send}]\n", "smtp://127.0.0.1:25"); !strings.Contains(got, "s.yaml:3:3: ") || !strings.Contains(got, `smtp_tls "ssl": want none, starttls or tls`) {
		t.Errorf("bad smtp_tls: %q", got)
	}
}
