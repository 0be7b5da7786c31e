package mail

import (
	"crypto/tls"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
	"github.com/throng-io/throng/internal/testenv"
)

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
		sink, addr := mailtest.SMTPServer(t, cfg, false)
		pre, err := send(t, "{smtp_tls: starttls, insecure_skip_verify: true}", "smtp://"+addr)
		if pre != nil || err != nil {
			t.Fatalf("preflight %v, send %v", pre, err)
		}
		if plain, tlsd := sink.Counts(); plain != 0 || tlsd != 1 {
			t.Errorf("%d messages in plain text, %d over TLS; want 0 and 1", plain, tlsd)
		}
		// The certificate is checked unless told otherwise.
		_, err = send(t, "{smtp_tls: starttls}", "smtp://"+addr)
		if driver.Classify(err) != driver.TLS {
			t.Errorf("untrusted certificate: %v (class %v), want tls", err, driver.Classify(err))
		}
	})
	t.Run("smtps", func(t *testing.T) {
		sink, addr := mailtest.SMTPServer(t, cfg, true)
		pre, err := send(t, "{insecure_skip_verify: true}", "smtps://"+addr)
		if pre != nil || err != nil {
			t.Fatalf("preflight %v, send %v", pre, err)
		}
		if plain, tlsd := sink.Counts(); plain != 0 || tlsd != 1 {
			t.Errorf("%d messages in plain text, %d over TLS; want 0 and 1", plain, tlsd)
		}
	})
	t.Run("not offered", func(t *testing.T) {
		sink, addr := mailtest.SMTPServer(t, nil, false)
		pre, err := send(t, "{smtp_tls: starttls, insecure_skip_verify: true}", "smtp://"+addr)
		if pre == nil || !strings.Contains(pre.Error(), "does not offer STARTTLS") {
			t.Errorf("preflight: %v", pre)
		}
		if driver.Classify(err) != driver.Protocol || !strings.Contains(err.Error(), "does not offer STARTTLS") {
			t.Errorf("send: %v (class %v), want protocol", err, driver.Classify(err))
		}
		if plain, tlsd := sink.Counts(); plain+tlsd != 0 {
			t.Errorf("%d messages sent in plain text to a server without STARTTLS", plain)
		}
	})
	if _, got := decodeAll(t, "users: 1\nmail:\n  smtp_tls: ssl\nactions: [{name: send}]\n", "smtp://127.0.0.1:25"); !strings.Contains(got, "s.yaml:3:3: ") || !strings.Contains(got, `smtp_tls "ssl": want none, starttls or tls`) {
		t.Errorf("bad smtp_tls: %q", got)
	}
}
