package mail

import (
	"bufio"
	"fmt"
	"net"
	"net/smtp"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T) *Server {
	t.Helper()
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Provision([]string{"user0001", "user0002", "user0003"}, "pw",
		map[string][]string{"list001@example.test": {"user0002@example.test", "user0003@example.test"}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// client is a raw IMAP conversation.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
	n int
}

func dial(t *testing.T, s *Server) *client {
	c, err := net.DialTimeout("tcp", s.IMAPAddr(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	cl := &client{t: t, c: c, r: bufio.NewReader(c)}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if g, _ := cl.r.ReadString('\n'); !strings.HasPrefix(g, "* OK [CAPABILITY IMAP4rev1") {
		t.Fatalf("greeting %q", g)
	}
	return cl
}

// do sends a command (literals as {n+}) and returns its answer, one line
// per line read (CR dropped), the tagged status last without its tag.
func (cl *client) do(cmd string) string {
	cl.t.Helper()
	cl.n++
	tag := fmt.Sprintf("c%d", cl.n)
	fmt.Fprintf(cl.c, "%s %s\r\n", tag, cmd)
	var out []string
	for {
		line, err := cl.r.ReadString('\n')
		if err != nil {
			cl.t.Fatalf("%s: %v after %q", cmd, err, out)
		}
		line = strings.TrimRight(line, "\r\n")
		out = append(out, line)
		if strings.HasPrefix(line, tag+" ") {
			out[len(out)-1] = strings.TrimPrefix(line, tag+" ")
			return strings.Join(out, "\n")
		}
	}
}

func appendCmd(box, msg string) string {
	return fmt.Sprintf("APPEND %s (\\Seen) {%d+}\r\n%s", box, len(msg), msg)
}

const msg1 = "From: a@example.test\r\nSubject: hello world\r\nX-Throng-Tag: quasarix\r\n\r\nBody with the Needle inside.\r\n"
const msg2 = "From: b@example.test\r\nSubject: second\r\n\r\nnothing here\r\n"

// The IMAP conversation a client has, checked answer by answer.
func TestIMAPConversation(t *testing.T) {
	s := start(t)
	cl := dial(t, s)
	for _, tc := range []struct{ cmd, want string }{
		{"NOOP", "OK"},
		{"SELECT INBOX", "BAD Log in first."},
		{"LOGIN user0001 nope", "NO [AUTHENTICATIONFAILED]"},
		{"LOGIN nobody pw", "NO [AUTHENTICATIONFAILED]"},
		{"LOGIN user0001 pw", "OK [CAPABILITY"},
		{"CAPABILITY", "* CAPABILITY IMAP4rev1 LITERAL+ SASL-IR AUTH=PLAIN IDLE MOVE UIDPLUS"},
		{"SELECT Nope", "NO [NONEXISTENT]"},
		{"CREATE Folder01", "OK"},
		{"CREATE Folder01", "NO [ALREADYEXISTS]"},
		{`CREATE "Deleted Items"`, "OK"},
		{`LIST "" "*"`, "* LIST (\\HasNoChildren) \"/\" \"Deleted Items\"\n* LIST (\\HasNoChildren) \"/\" \"Folder01\"\n* LIST (\\HasNoChildren) \"/\" \"INBOX\"\nOK"},
		{appendCmd("INBOX", msg1), "OK [APPENDUID "},
		{appendCmd("INBOX", msg2), "OK [APPENDUID "},
		{appendCmd("Nope", msg2), "NO [TRYCREATE]"},
		{"STATUS INBOX (MESSAGES UIDNEXT UNSEEN)", "* STATUS \"INBOX\" (MESSAGES 2 UIDNEXT 3 UNSEEN 0)"},
		{"SELECT INBOX", "* 2 EXISTS"},
		{"FETCH 1 (UID RFC822.SIZE FLAGS)", fmt.Sprintf("* 1 FETCH (UID 1 RFC822.SIZE %d FLAGS (\\Seen))", len(msg1))},
		{"UID FETCH 2:* (BODY.PEEK[HEADER.FIELDS (SUBJECT)])", "* 2 FETCH (UID 2 BODY[HEADER.FIELDS (SUBJECT)] {19}\nSubject: second\n\n)"},
		{"UID FETCH 9:* (UID)", "* 2 FETCH (UID 2)"},
		{"FETCH 1 BODY[]<0.4>", "* 1 FETCH (BODY[]<0> {4}\nFrom)"},
		{"UID SEARCH TEXT needle", "* SEARCH 1\nOK"},
		{"UID SEARCH TEXT NEEDLE NOT SUBJECT hello", "* SEARCH\nOK"},
		{"UID SEARCH OR SUBJECT second HEADER X-Throng-Tag QUASARIX", "* SEARCH 1 2\nOK"},
		{"SEARCH UID 2:* LARGER 10", "* SEARCH 2\nOK"},
		{"SEARCH FOO", "BAD"},
		{"FETCH 1 (ENVELOPE)", "BAD"},
		{"UID STORE 2 +FLAGS (\\Flagged)", "* 2 FETCH (UID 2 FLAGS (\\Seen \\Flagged))"},
		{"UID MOVE 2 Folder01", "* 2 EXPUNGE\nOK"},
		{"STATUS Folder01 (MESSAGES)", "(MESSAGES 1)"},
		{"UID COPY 1 \"Deleted Items\"", "OK"},
		{"STORE 1 +FLAGS.SILENT (\\Deleted)", "OK"},
		{"UID EXPUNGE 1", "* 1 EXPUNGE\nOK"},
		{"DELETE INBOX", "NO"},
		{"DELETE Folder01", "OK"},
		{"XYZZY", "BAD Unknown command"},
		{"LOGOUT", "* BYE"},
	} {
		if got := cl.do(tc.cmd); !strings.Contains(got, tc.want) {
			t.Fatalf("%q:\n got %q\nwant %q", strings.SplitN(tc.cmd, "\r\n", 2)[0], got, tc.want)
		}
	}
}

// SMTP delivers into the INBOX (lists expanded, unknown users refused,
// one copy per user), and a session in IDLE hears of it at once.
func TestSMTPDeliveryAndIdle(t *testing.T) {
	s := start(t)
	cl := dial(t, s)
	cl.do("LOGIN user0002 pw")
	cl.do("SELECT INBOX")
	fmt.Fprintf(cl.c, "i1 IDLE\r\n")
	if l, _ := cl.r.ReadString('\n'); !strings.HasPrefix(l, "+ ") {
		t.Fatalf("IDLE: %q", l)
	}
	err := smtp.SendMail(s.SMTPAddr(), nil, "a@example.test",
		[]string{"user0002@example.test", "list001@example.test"}, []byte("Subject: x\r\n\r\nhi\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := cl.r.ReadString('\n'); strings.TrimSpace(l) != "* 1 EXISTS" {
		t.Fatalf("in IDLE: %q", l)
	}
	fmt.Fprintf(cl.c, "DONE\r\n")
	if l, _ := cl.r.ReadString('\n'); !strings.HasPrefix(l, "i1 OK") {
		t.Fatalf("DONE: %q", l)
	}
	if got := cl.do("FETCH 1 BODY.PEEK[HEADER.FIELDS (RETURN-PATH)]"); !strings.Contains(got, "Return-Path: <a@example.test>") {
		t.Errorf("%q", got)
	}
	if _, m := s.Store().Counts(); m != 2 {
		t.Errorf("%d messages stored, want 2 (user0002 once, user0003)", m)
	}
	err = smtp.SendMail(s.SMTPAddr(), nil, "a@example.test", []string{"nosuchuser@example.test"}, []byte("x\r\n"))
	if err == nil || !strings.Contains(err.Error(), "550") {
		t.Errorf("unknown user: %v", err)
	}
}

// Without Provision, the first log-on creates the account; a later one
// needs the same password.
func TestAutoAccounts(t *testing.T) {
	s, err := Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cl := dial(t, s)
	if got := cl.do("LOGIN someone secret"); !strings.HasPrefix(got, "OK") {
		t.Fatal(got)
	}
	cl2 := dial(t, s)
	if got := cl2.do("LOGIN someone other"); !strings.Contains(got, "AUTHENTICATIONFAILED") {
		t.Fatal(got)
	}
	if got := cl2.do("AUTHENTICATE PLAIN AHNvbWVvbmUAc2VjcmV0"); !strings.HasPrefix(got, "OK") {
		t.Fatal(got)
	}
	// Mail to an unknown address creates the account; its first log-on
	// sets the password and finds the mail.
	if err := smtp.SendMail(s.SMTPAddr(), nil, "a@example.test", []string{"later@example.test"}, []byte("Subject: x\r\n\r\nhi\r\n")); err != nil {
		t.Fatal(err)
	}
	cl3 := dial(t, s)
	if got := cl3.do("LOGIN later pw3"); !strings.HasPrefix(got, "OK") {
		t.Fatal(got)
	}
	if got := cl3.do("SELECT INBOX"); !strings.Contains(got, "* 1 EXISTS") {
		t.Fatal(got)
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pat, name string
		want      bool
	}{{"*", "a/b", true}, {"%", "a/b", false}, {"%", "INBOX", true}, {"a/%", "a/b", true}, {"inbox", "INBOX", true}, {"F*1", "Folder01", true}, {"F*2", "Folder01", false}} {
		if got := match(tc.pat, tc.name); got != tc.want {
			t.Errorf("match(%q, %q) = %v", tc.pat, tc.name, got)
		}
	}
}

// A test's faults route deliveries exactly: a message dropped reaches no
// INBOX, one misrouted only the account named, one duplicated each
// recipient's twice, and the route is asked with the accounts a message is
// for, lists expanded, each once. nil delivers normally again.
func TestFaults(t *testing.T) {
	s := start(t)
	var asked []string
	s.Store().SetFaults(func(msg []byte, to []string) []string {
		asked = append(asked, strings.Join(to, ","))
		switch {
		case strings.Contains(string(msg), "Subject: drop"):
			return nil
		case strings.Contains(string(msg), "Subject: misroute"):
			return []string{"user0001", "nosuchaccount"}
		case strings.Contains(string(msg), "Subject: twice"):
			return append(to, to...)
		}
		return to
	})
	send := func(subject string, to ...string) {
		t.Helper()
		if err := smtp.SendMail(s.SMTPAddr(), nil, "a@example.test", to, []byte("Subject: "+subject+"\r\n\r\nx\r\n")); err != nil {
			t.Fatal(err)
		}
	}
	send("drop", "user0001@example.test", "user0002@example.test")
	send("misroute", "list001@example.test", "user0003@example.test")
	send("twice", "user0002@example.test")
	s.Store().SetFaults(nil)
	send("plain", "user0003@example.test")
	if want := "user0001,user0002 user0002,user0003 user0002 "; strings.Join(asked, " ")+" " != want {
		t.Errorf("the route was asked %q, want %q", asked, want)
	}
	for user, want := range map[string]string{
		"user0001": "misroute",
		"user0002": "twice twice",
		"user0003": "plain",
	} {
		cl := dial(t, s)
		cl.do("LOGIN " + user + " pw")
		cl.do("SELECT INBOX")
		got := cl.do("FETCH 1:* BODY.PEEK[HEADER.FIELDS (SUBJECT)]")
		var subjects []string
		for _, l := range strings.Split(got, "\n") {
			if s, ok := strings.CutPrefix(l, "Subject: "); ok {
				subjects = append(subjects, s)
			}
		}
		if strings.Join(subjects, " ") != want {
			t.Errorf("%s's INBOX holds %q, want %q", user, subjects, want)
		}
	}
}
