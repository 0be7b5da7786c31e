package testenv

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// imapSay sends one command and returns the lines up to its tagged answer.
func imapSay(t *testing.T, c net.Conn, r *bufio.Reader, tag, cmd string) []string {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "%s %s\r\n", tag, cmd)
	var lines []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v (after %q)", strings.Fields(cmd)[0], err, lines) // never the password
		}
		lines = append(lines, strings.TrimRight(line, "\r\n"))
		if strings.HasPrefix(line, tag+" ") {
			return lines
		}
	}
}

func imapLogin(t *testing.T, addr, user, pass string) (net.Conn, *bufio.Reader, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := bufio.NewReader(c)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if g, _ := r.ReadString('\n'); !strings.HasPrefix(g, "* OK") {
		t.Fatalf("greeting %q", g)
	}
	l := imapSay(t, c, r, "a1", fmt.Sprintf("LOGIN %s \"%s\"", user, pass))
	return c, r, l[len(l)-1]
}

// lmtpSend delivers one message to rcpt through LMTP.
func lmtpSend(t *testing.T, addr, rcpt, body string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	var last string
	read := func() {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			last = line
			if len(line) >= 4 && line[3] == ' ' {
				return
			}
		}
	}
	read()
	for _, cmd := range []string{"LHLO client.example.test", "MAIL FROM:<t@example.test>", "RCPT TO:<" + rcpt + ">", "DATA"} {
		fmt.Fprintf(c, "%s\r\n", cmd)
		read()
		if last[0] != '2' && last[0] != '3' {
			return strings.TrimSpace(last)
		}
	}
	fmt.Fprintf(c, "Subject: testenv\r\n\r\n%s\r\n.\r\n", body)
	read()
	fmt.Fprintf(c, "QUIT\r\n")
	return strings.TrimSpace(last)
}

// Dovecot starts with private users: the right password logs on, a wrong
// one is refused, LMTP delivers into the INBOX, a restart keeps the mail,
// and Stop removes everything.
func TestDovecotLogonDeliverRestart(t *testing.T) {
	t.Parallel()
	d := Dovecot(t, DovecotOptions{Users: 3})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dovecot log:\n%s", d.LogTail(30))
		}
	})
	if !strings.HasPrefix(d.Addr, "127.0.0.1:") || !strings.HasPrefix(d.LMTPAddr, "127.0.0.1:") || d.Password == "" {
		t.Fatalf("%+v", d)
	}
	for _, tc := range []struct{ user, pass, want string }{
		{"user0003", d.Password, "a1 OK"},
		{"user0003", "wrong", "a1 NO [AUTHENTICATIONFAILED]"},
		{"user0004", d.Password, "a1 NO"}, // not created
	} {
		c, _, st := imapLogin(t, d.Addr, tc.user, tc.pass)
		c.Close()
		if !strings.HasPrefix(st, tc.want) {
			t.Errorf("LOGIN %s: %s, want %s", tc.user, st, tc.want)
		}
	}
	if got := lmtpSend(t, d.LMTPAddr, "user0002@example.test", "needle-4711"); !strings.HasPrefix(got, "250") {
		t.Fatalf("LMTP: %s", got)
	}
	if got := lmtpSend(t, d.LMTPAddr, "nosuchuser@example.test", "x"); !strings.HasPrefix(got, "550 ") {
		t.Errorf("LMTP to an unknown user: %q, want 550", got)
	}
	search := func() string {
		c, r, st := imapLogin(t, d.Addr, "user0002", d.Password)
		if !strings.HasPrefix(st, "a1 OK") {
			t.Fatalf("LOGIN: %s%s", st, logSuffix(d.ErrorLog))
		}
		defer c.Close()
		imapSay(t, c, r, "a2", "SELECT INBOX")
		return strings.Join(imapSay(t, c, r, "a3", "SEARCH TEXT needle-4711"), "|")
	}
	if got := search(); !strings.Contains(got, "* SEARCH 1") {
		t.Fatalf("search: %s", got)
	}
	pid := d.PID
	if err := d.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d.PID == pid || !d.Alive() {
		t.Fatalf("restart: pid %d -> %d, alive %v", pid, d.PID, d.Alive())
	}
	if got := search(); !strings.Contains(got, "* SEARCH 1") {
		t.Fatalf("search after restart: %s", got)
	}
	if _, err := os.Stat(filepath.Join(d.MailDir, "user0002", "Maildir")); err != nil {
		t.Errorf("maildir: %v", err)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Dir); !os.IsNotExist(err) {
		t.Errorf("Dir %s still there: %v", d.Dir, err)
	}
	if c, err := net.DialTimeout("tcp", d.Addr, 200*time.Millisecond); err == nil {
		c.Close()
		t.Errorf("something still listens on %s", d.Addr)
	}
}

func TestDovecotConfig(t *testing.T) {
	conf := dovecotConfig("/tmp/x", 1143, 1024, 5000, 5000, "", DovecotOptions{NoFsync: true})
	for _, want := range []string{"mail_fsync = never", "port = 1143", "port = 1024", "mail_max_userip_connections = 1000",
		"listen = 127.0.0.1", "base_dir = /tmp/x/run", "auth_username_format = %Ln", "mail_uid = 5000"} {
		if !strings.Contains(conf, want) {
			t.Errorf("dovecot.conf lacks %q", want)
		}
	}
	if strings.Contains(dovecotConfig("/tmp/x", 1, 2, 5000, 5000, "", DovecotOptions{}), "mail_fsync = never") {
		t.Error("fsync is off by default")
	}
}
