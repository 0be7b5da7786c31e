package mail

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
)

// An smtp:// target submits only: actions that need IMAP, and a population
// asked for without maildir, are refused with where and why; send works
// without any IMAP server (the preflight does not dial one, users are not
// logged on), the messages arrive, and no delivery is expected of it.
func TestSubmitOnlyTarget(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"users: 1\nactions: [{name: check}]\n", `action "check" (check) needs an IMAP server: an smtp:// target only submits`},
		{"users: 1\nactions: [{name: logon}]\n", `action "logon" (logon) needs an IMAP server`},
		{"users: 1\nmail: {population: {inbox: 5}}\nactions: [{name: send}]\n", "s.yaml:2:8: mail.population: an smtp:// target only submits"},
		{"users: 1\nactions: [{name: send}]\n", ""},
		{"users: 1\nmail: {population: {maildir: /tmp/x/%u}}\nactions: [{name: send}]\n", ""},
	} {
		if _, got := decodeAll(t, tc.src, "smtp://127.0.0.1:25"); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.src, got, tc.want)
		}
	}
	if _, got := decodeAll(t, "users: 1\nactions: [{name: send}]\n", "smtp://127.0.0.1:25?smtp=x:1"); !strings.Contains(got, `unknown parameter "smtp"`) {
		t.Errorf("smtp parameter on an smtp:// target: %q", got)
	}

	srv := mailtest.Embedded(t)
	if err := srv.Provision([]string{"user0001", "user0002"}, "pw", nil); err != nil {
		t.Fatal(err)
	}
	c, acts := load(t, "users: 2\nclosed: {total: 3}\nmail: {password: pw}\nactions: [{name: send, to: [user0002@example.test], size: 3000B, sizes: fixed}]\n", "smtp://"+srv.SMTPAddr())
	if c.Population.Create || c.LogonAtStart() {
		t.Errorf("submission only: population %v, log-on at start %v", c.Population.Create, c.LogonAtStart())
	}
	if c.Describe()["imap"] == "" {
		t.Error("Describe does not say there is no IMAP server")
	}
	ctx := context.Background()
	if err := c.Preflight(ctx); err != nil {
		t.Fatalf("preflight: %v", err)
	}
	prepare(t, c, 2, 1)
	ev := &events{}
	c.Observe(ev)
	ss := open(t, c, 1)
	for range 3 {
		if _, err := ss[0].Do(ctx, acts["send"]); err != nil {
			t.Fatal(err)
		}
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.Drain(dctx); err != nil {
		t.Fatalf("drain: %v", err)
	}
	if n := c.track.owedTotal(); n != 0 || ev.count(driver.OK) != 0 {
		t.Errorf("expected %d deliveries, %d events: a submission-only run watches no mailbox", n, ev.count(driver.OK))
	}
	out := strings.Join(mailtest.RawIMAP(t, srv.IMAPAddr(), "user0002", "pw", "STATUS INBOX (MESSAGES)"), " ")
	if !strings.Contains(out, "MESSAGES 3") {
		t.Errorf("user0002: %s, want the 3 messages sent", out)
	}
}
