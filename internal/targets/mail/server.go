// Package mail is the embedded reference mail server: the zero-setup
// target of the mail presets (`throng run loadsim-online` with nothing
// installed) and of `throng serve mail`. It is an IMAP4rev1 server with a
// memory backend and an SMTP server (go-smtp) that delivers into it; both
// listen on the loopback interface.
//
// A population is not stored: the mail driver gives each mailbox a recipe
// (Synthesize) and the server generates a message from (seed, user,
// folder, number) whenever a client reads it, the same bytes every time.
// What clients do to those messages (flags, expunge, copy, move) is kept
// beside the recipe; deliveries and APPENDs are stored. So the studies'
// populations (8,000 x 25 MB, 3,000 x 700 MB) cost the server a few bytes
// per message at most (box.go).
//
// Accounts and distribution lists are written by throng itself through
// Provision (the mail driver's Prepare, in the same process). A server
// that was never provisioned (`throng serve mail` on its own) creates an
// account at its first log-on, with the password given then, or when mail
// arrives for it (its first log-on then sets the password); it knows no
// distribution lists.
//
// The IMAP side serves what mail clients and throng's driver use:
// LOGIN, AUTHENTICATE PLAIN (SASL-IR), SELECT/EXAMINE, LIST/LSUB, STATUS,
// CREATE/DELETE, APPEND (LITERAL+), FETCH (UID, FLAGS, RFC822.SIZE,
// INTERNALDATE, RFC822*, BODY[]/HEADER/TEXT/HEADER.FIELDS[.NOT] with
// partials), SEARCH (flags, TEXT/BODY/HEADER/SUBJECT/FROM/TO, sizes,
// dates, UID and sequence sets, NOT/OR), STORE, COPY, MOVE, EXPUNGE, UID
// EXPUNGE, CLOSE, UNSELECT, IDLE, NOOP. Not served: ENVELOPE,
// BODYSTRUCTURE, body part numbers, CONDSTORE. TEXT searches the raw
// message (base64 attachments are not decoded, unlike Dovecot).
package mail

import (
	"errors"
	"net"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
)

// Server is a running embedded mail server.
type Server struct {
	st     *Store
	imapLn net.Listener
	smtpLn net.Listener
	smtp   *smtp.Server
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
	closed bool
}

// Start listens for IMAP on addr ("127.0.0.1:0" picks a free port) and for
// SMTP on a free port of the same host, and serves until Close.
func Start(addr string) (*Server, error) {
	imapLn, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(imapLn.Addr().String())
	smtpLn, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		imapLn.Close()
		return nil, err
	}
	s := &Server{st: NewStore(true), imapLn: imapLn, smtpLn: smtpLn, conns: map[net.Conn]struct{}{}}
	s.smtp = newSMTPServer(s.st)
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.smtp.Serve(smtpLn) }()
	go func() { defer s.wg.Done(); s.acceptIMAP() }()
	return s, nil
}

func (s *Server) acceptIMAP() {
	var delay time.Duration
	for {
		nc, err := s.imapLn.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return
		}
		delay = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			serveIMAP(s.st, nc)
			s.mu.Lock()
			delete(s.conns, nc)
			s.mu.Unlock()
		}()
	}
}

// IMAPAddr and SMTPAddr are the host:port the server listens on.
func (s *Server) IMAPAddr() string { return s.imapLn.Addr().String() }
func (s *Server) SMTPAddr() string { return s.smtpLn.Addr().String() }

// URL is the target URL for the mail driver: imap://HOST:PORT?smtp=HOST:PORT.
func (s *Server) URL() string { return "imap://" + s.IMAPAddr() + "?smtp=" + s.SMTPAddr() }

// Store is the server's backend (for tests).
func (s *Server) Store() *Store { return s.st }

// Provision implements driver.Provisioner: the mail family's Decode finds
// it on its target and the driver's Prepare creates its accounts through it.
func (s *Server) Provision(users []string, password string, lists map[string][]string) error {
	return s.st.Provision(users, password, lists)
}

// Close stops both listeners, closes every connection and waits for
// them (at most a few seconds).
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	err := s.imapLn.Close()
	s.smtp.Close()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		return errors.New("mail server: connections still open after 5s")
	}
	return err
}

// Synthesize implements the mail driver's Synthesizer (see
// Store.Synthesize): a population generated on demand instead of stored.
func (s *Server) Synthesize(user, mailbox string, count int, date time.Time, flags []string, gen func(dst []byte, j int) []byte) (uidValidity, uidNext uint32, err error) {
	return s.st.Synthesize(user, mailbox, count, date, flags, gen)
}
