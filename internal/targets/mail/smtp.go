package mail

import (
	"bytes"
	"errors"
	"io"
	"log"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// MaxMessageBytes is the largest message the embedded SMTP server takes
// (Postfix's message_size_limit in testenv is the same).
const MaxMessageBytes = 50 << 20

// backend delivers SMTP mail into the store.
type backend struct{ st *Store }

func (b *backend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	return &smtpSession{st: b.st}, nil
}

// smtpSession is one SMTP transaction at a time.
type smtpSession struct {
	st    *Store
	from  string
	rcpts []*account
	n     int
}

var _ smtp.AuthSession = (*smtpSession)(nil)

func (s *smtpSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *smtpSession) Auth(mech string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(identity, user, pass string) error {
		if _, err := s.st.login(user, pass); err != nil {
			return smtp.ErrAuthFailed
		}
		return nil
	}), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	s.from = from
	return nil
}

// Rcpt accepts a list's address or a user's (any domain); anything else
// is refused as Postfix does for an unknown user.
func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	accts := s.st.resolve(to)
	if len(accts) == 0 {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1},
			Message: "<" + to + ">: Recipient address rejected: User unknown"}
	}
	s.rcpts = append(s.rcpts, accts...)
	s.n++
	return nil
}

// Data stores the message, with a Received header, in every recipient's
// INBOX once (or where the test's faults route it: Store.SetFaults).
func (s *smtpSession) Data(r io.Reader) error {
	if s.n == 0 {
		return &smtp.SMTPError{Code: 554, EnhancedCode: smtp.EnhancedCode{5, 5, 1}, Message: "No valid recipients"}
	}
	var buf bytes.Buffer
	buf.WriteString("Return-Path: <" + s.from + ">\r\nReceived: by throng-embedded with ESMTP; " +
		time.Now().Format(time.RFC1123Z) + "\r\n")
	if _, err := io.Copy(&buf, r); err != nil {
		var se *smtp.SMTPError
		if errors.As(err, &se) {
			return se
		}
		return err
	}
	s.st.deliver(s.rcpts, buf.Bytes())
	return nil
}

func (s *smtpSession) Reset() { s.from, s.rcpts, s.n = "", s.rcpts[:0], 0 }

func (s *smtpSession) Logout() error { return nil }

func newSMTPServer(st *Store) *smtp.Server {
	srv := smtp.NewServer(&backend{st: st})
	srv.Domain = "mx.throng.embedded"
	srv.AllowInsecureAuth = true
	srv.MaxMessageBytes = MaxMessageBytes
	srv.MaxRecipients = 1000
	srv.ReadTimeout = 5 * time.Minute
	srv.WriteTimeout = 5 * time.Minute
	srv.ErrorLog = log.New(io.Discard, "", 0) // a client hanging up is not news
	return srv
}
