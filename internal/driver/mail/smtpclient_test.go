package mail

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
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
		c := newSMTPClient(nc, 5*time.Second)
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
