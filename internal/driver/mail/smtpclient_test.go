package mail

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/throng-io/throng/internal/driver"
)

// The submission client against the embedded go-smtp server: lines that
// start with a dot arrive intact (stuffed on the wire, unstuffed by the
// server), a message without a final CRLF is ended properly, and a
// refusal is an *smtp.SMTPError with its enhanced code split off.
func TestSMTPClientDotsAndReplies(t *testing.T) {
	srv := embedded(t)
	if err := srv.Provision([]string{"user0001"}, "pw", nil); err != nil {
		t.Fatal(err)
	}
	send := func(msg string, rcpt string) error {
		nc, err := net.Dial("tcp", srv.SMTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		c := newSMTPClient(nc, time.Now().Add(5*time.Second))
		if err := c.greet("client.example.test"); err != nil {
			return err
		}
		if _, err := c.cmd(250, "MAIL FROM:<a@example.test>"); err != nil {
			return err
		}
		if _, err := c.cmd(2, "RCPT TO:<", rcpt, ">"); err != nil {
			return err
		}
		if err := c.data([]byte(msg)); err != nil {
			return err
		}
		c.quit()
		return nil
	}
	msgs := []string{
		".starts with a dot\r\nSubject: s\r\n\r\nbody\r\n.\r\n..two\r\nend\r\n",
		"Subject: t\r\n\r\nno final line end",
	}
	for _, m := range msgs {
		if err := send(m, "user0001@example.test"); err != nil {
			t.Fatal(err)
		}
	}
	out := strings.Join(rawIMAP(t, srv.IMAPAddr(), "user0001", "pw", "SELECT INBOX", "FETCH 1:2 (BODY[TEXT] RFC822.SIZE)"), "\n")
	for _, want := range []string{"\r\n.\r\n..two\r\nend", "body", "no final line end"} {
		if !strings.Contains(strings.ReplaceAll(out, "\n", "\r\n"), want) && !strings.Contains(out, strings.ReplaceAll(want, "\r\n", "\n")) {
			t.Errorf("the server got %q, missing %q", out, want)
		}
	}
	err := send("Subject: x\r\n\r\ny\r\n", "nobody@example.test")
	var se *smtp.SMTPError
	if !errors.As(err, &se) || se.Code != 550 || se.EnhancedCode != (smtp.EnhancedCode{5, 1, 1}) || !strings.HasPrefix(se.Message, "<nobody@example.test>") {
		t.Errorf("refusal: %#v", err)
	}
}

// The envelope, pipelined (one write: MAIL, RCPT..., DATA) and one command
// at a time, against the embedded server: a refused recipient among
// accepted ones is reported by position and the message still goes to the
// others; every recipient refused means no message; a refused sender is
// MAIL's error.
func TestSMTPEnvelopePipelinedAndNot(t *testing.T) {
	srv := embedded(t)
	if err := srv.Provision([]string{"user0001", "user0002"}, "pw", nil); err != nil {
		t.Fatal(err)
	}
	for _, pipelined := range []bool{true, false} {
		dial := func() *smtpClient {
			nc, err := net.Dial("tcp", srv.SMTPAddr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { nc.Close() })
			c := newSMTPClient(nc, time.Now().Add(5*time.Second))
			if err := c.greet("client.example.test"); err != nil {
				t.Fatal(err)
			}
			if !c.pipelining {
				t.Fatal("the embedded server offers PIPELINING; the client did not see it")
			}
			c.pipelining = pipelined
			return c
		}
		c := dial()
		mailErr, rcptErrs, dataErr, err := c.envelope("a@example.test", []string{"user0001@example.test", "nobody@example.test", "user0002@example.test"})
		if err != nil || mailErr != nil || dataErr != nil || rcptErrs[0] != nil || rcptErrs[2] != nil {
			t.Fatalf("pipelined %v: %v %v %v %v", pipelined, err, mailErr, rcptErrs, dataErr)
		}
		var se *smtp.SMTPError
		if !errors.As(rcptErrs[1], &se) || se.Code != 550 {
			t.Fatalf("pipelined %v: refusal %v", pipelined, rcptErrs[1])
		}
		if err := c.message([]byte("Subject: p\r\n\r\nbody\r\n"), true); err != nil {
			t.Fatalf("pipelined %v: %v", pipelined, err)
		}
		if c.quitSent != pipelined {
			t.Errorf("pipelined %v: QUIT sent with the message: %v", pipelined, c.quitSent)
		}
		if err := c.quit(); err != nil {
			t.Errorf("pipelined %v: QUIT: %v", pipelined, err)
		}

		c = dial()
		_, rcptErrs, dataErr, err = c.envelope("a@example.test", []string{"nobody@example.test"})
		if err != nil || rcptErrs[0] == nil || dataErr == nil {
			t.Fatalf("pipelined %v, every recipient refused: %v %v %v", pipelined, err, rcptErrs, dataErr)
		}
		// The connection is still in step: a new transaction works.
		if _, err := c.cmd(250, "RSET"); err != nil {
			t.Fatalf("pipelined %v: after the refusals: %v", pipelined, err)
		}
	}
	for _, u := range []string{"user0001", "user0002"} {
		out := strings.Join(rawIMAP(t, srv.IMAPAddr(), u, "pw", "STATUS INBOX (MESSAGES)"), " ")
		if !strings.Contains(out, "MESSAGES 2") {
			t.Errorf("%s: %s, want 2 messages (one pipelined, one not)", u, out)
		}
	}
}

// lineDot finds what bytes.Index(b, "\n.") finds.
func TestLineDot(t *testing.T) {
	cases := []string{"", ".", "\n", "\n.", "a.b.c", "a.\n.b", "a\n.", "..\n..", "x\r\n.y", "no dots\nat all\n", ".\n.\n."}
	r := newRNG(1)
	for range 2000 {
		b := make([]byte, r.intn(40))
		for i := range b {
			b[i] = "a.\n"[r.intn(3)]
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		if got, want := lineDot([]byte(c)), bytes.Index([]byte(c), []byte("\n.")); got != want {
			t.Fatalf("lineDot(%q) = %d, want %d", c, got, want)
		}
	}
}

// A server that stops answering mid-transaction ends the send at the
// action's timeout, class timeout: one deadline bounds the whole
// transaction, whichever exchange stalls; with either engine.
func TestSMTPStallEndsAtTheTimeout(t *testing.T) {
	engines := []string{smtpEngineGoroutines}
	if submitLoopSupported {
		engines = append(engines, smtpEngineEpoll)
	}
	for _, engine := range engines {
		for _, stallAfter := range []string{"EHLO", "DATA", "."} {
			stallEndsAtTheTimeout(t, engine, stallAfter)
		}
	}
}

func stallEndsAtTheTimeout(t *testing.T, engine, stallAfter string) {
	addr := fakeSMTP(t, true, stallAfter)
	c, acts := load(t, "users: 1\nclosed: {total: 1}\nmail: {password: pw, timeout: 300ms, smtp_engine: "+engine+"}\nactions: [{name: send, to: [user0002@example.test], size: 3000B, sizes: fixed}]\n", "smtp://"+addr)
	ss := open(t, c, 1)
	t0 := time.Now()
	_, err := ss[0].Do(context.Background(), acts["send"])
	el := time.Since(t0)
	if driver.Classify(err) != driver.Timeout || el < 250*time.Millisecond || el > 2*time.Second {
		t.Errorf("%s, stalled after %s: %v (class %v) after %v; want a timeout after 300ms", engine, stallAfter, err, driver.Classify(err), el)
	}
}
