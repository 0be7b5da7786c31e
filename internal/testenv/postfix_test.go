package testenv

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// smtpSend submits one message and returns the reply to each step after
// the greeting; it stops at the first refusal.
func smtpSend(t *testing.T, addr string, rcpts []string, body string) []string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	read := func() string {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if len(line) >= 4 && line[3] == ' ' {
				return strings.TrimSpace(line)
			}
		}
	}
	read()
	var replies []string
	cmds := []string{"EHLO client.example.test", "MAIL FROM:<t@example.test>"}
	for _, rc := range rcpts {
		cmds = append(cmds, "RCPT TO:<"+rc+">")
	}
	cmds = append(cmds, "DATA")
	for _, cmd := range cmds {
		fmt.Fprintf(c, "%s\r\n", cmd)
		rep := read()
		replies = append(replies, rep)
		if rep[0] != '2' && rep[0] != '3' {
			return replies
		}
	}
	fmt.Fprintf(c, "Subject: testenv\r\n\r\n%s\r\n.\r\n", body)
	replies = append(replies, read())
	fmt.Fprintf(c, "QUIT\r\n")
	return replies
}

// Postfix delivers through Dovecot's LMTP, expands a distribution list on
// the server, and refuses unknown users and relaying.
func TestPostfixDeliversAndExpandsLists(t *testing.T) {
	t.Parallel()
	d := Dovecot(t, DovecotOptions{Users: 4})
	p := Postfix(t, PostfixOptions{Dovecot: d, Aliases: map[string][]string{
		"list001@example.test": {"user0002@example.test", "user0003@example.test"},
	}})
	rep := smtpSend(t, p.Addr, []string{"user0001@example.test", "list001@example.test"}, "needle-pf-1")
	if last := rep[len(rep)-1]; !strings.HasPrefix(last, "250 ") {
		t.Fatalf("send: %v", rep)
	}
	if rep := smtpSend(t, p.Addr, []string{"nosuchuser@example.test"}, "x"); !strings.HasPrefix(rep[len(rep)-1], "550 ") {
		t.Errorf("unknown user: %v", rep)
	}
	if rep := smtpSend(t, p.Addr, []string{"someone@elsewhere.invalid"}, "x"); !strings.HasPrefix(rep[len(rep)-1], "554 ") {
		t.Errorf("relay: %v", rep)
	}
	for _, u := range []string{"user0001", "user0002", "user0003"} {
		deadline := time.Now().Add(10 * time.Second)
		for {
			c, r, st := imapLogin(t, d.Addr, u, d.Password)
			if !strings.HasPrefix(st, "a1 OK") {
				t.Fatalf("LOGIN %s: %s", u, st)
			}
			imapSay(t, c, r, "a2", "SELECT INBOX")
			got := strings.Join(imapSay(t, c, r, "a3", "SEARCH TEXT needle-pf-1"), "|")
			c.Close()
			if strings.Contains(got, "* SEARCH 1") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s never got the message: %s\n%s", u, got, p.LogTail(20))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !p.QueueEmpty() {
		t.Errorf("queue not empty after delivery")
	}
}
