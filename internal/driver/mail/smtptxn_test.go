package mail

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// The submission state machine, fed a scripted server: what it writes at
// each step, and how it ends (class, stage, tracker calls), pipelined and
// not. A change of the exchange or of an error's stage or class fails it.
func TestSMTPTxnConversations(t *testing.T) {
	const ehloPipe = "250-mx.test\r\n250-PIPELINING\r\n250 8BITMIME\r\n"
	const ehloPlain = "250-mx.test\r\n250 8BITMIME\r\n"
	cases := []struct {
		name    string
		rcpts   []string
		auth    string
		replies []string // one per write of the client, the greeting first
		writes  []string // what the client writes after each reply
		class   driver.Class
		errHas  string
		calls   string // tracker calls: e(refused) a c
	}{{
		name:    "pipelined",
		rcpts:   []string{"u1@x", "u2@x"},
		replies: []string{"220 hi\r\n", ehloPipe, "250 ok\r\n250 ok\r\n250 ok\r\n354 go\r\n", "250 queued\r\n221 bye\r\n"},
		writes:  []string{"EHLO c\r\n", "MAIL FROM:<f@x>\r\nRCPT TO:<u1@x>\r\nRCPT TO:<u2@x>\r\nDATA\r\n", "body\r\n.\r\nQUIT\r\n", ""},
		calls:   "e[] a",
	}, {
		name:    "one command at a time, one recipient refused",
		rcpts:   []string{"u1@x", "no@x"},
		replies: []string{"220 hi\r\n", ehloPlain, "250 ok\r\n", "250 ok\r\n", "550 5.1.1 no such user\r\n", "354 go\r\n", "250 queued\r\n", "221 bye\r\n"},
		writes:  []string{"EHLO c\r\n", "MAIL FROM:<f@x>\r\n", "RCPT TO:<u1@x>\r\n", "RCPT TO:<no@x>\r\n", "DATA\r\n", "body\r\n.\r\n", "QUIT\r\n", ""},
		class:   driver.Status5xx, errHas: "SMTP RCPT no@x: 550 5.1.1 no such user",
		calls: "e[no@x] a",
	}, {
		name:    "every recipient refused, DATA accepted anyway: ended empty",
		rcpts:   []string{"no@x"},
		replies: []string{"220 hi\r\n", ehloPipe, "250 ok\r\n550 no\r\n354 go\r\n", "554 no valid recipients\r\n"},
		writes:  []string{"EHLO c\r\n", "MAIL FROM:<f@x>\r\nRCPT TO:<no@x>\r\nDATA\r\n", "\r\n.\r\n", ""},
		class:   driver.Status5xx, errHas: "SMTP RCPT no@x: 550 no",
	}, {
		name:    "every recipient refused, one at a time: no DATA",
		rcpts:   []string{"no@x"},
		replies: []string{"220 hi\r\n", ehloPlain, "250 ok\r\n", "450 try later\r\n"},
		writes:  []string{"EHLO c\r\n", "MAIL FROM:<f@x>\r\n", "RCPT TO:<no@x>\r\n", ""},
		class:   driver.Status4xx, errHas: "SMTP RCPT no@x: 450 try later",
	}, {
		name:    "sender refused",
		rcpts:   []string{"u1@x"},
		replies: []string{"220 hi\r\n", ehloPipe, "553 bad sender\r\n503 no\r\n503 no\r\n"},
		writes:  []string{"EHLO c\r\n", "MAIL FROM:<f@x>\r\nRCPT TO:<u1@x>\r\nDATA\r\n", ""},
		class:   driver.Status5xx, errHas: "SMTP MAIL: 553 bad sender",
	}, {
		name:    "message refused: the tracker forgets it",
		rcpts:   []string{"u1@x"},
		replies: []string{"220 hi\r\n", ehloPipe, "250 ok\r\n250 ok\r\n354 go\r\n", "552 too big\r\n"},
		writes:  []string{"EHLO c\r\n", "MAIL FROM:<f@x>\r\nRCPT TO:<u1@x>\r\nDATA\r\n", "body\r\n.\r\nQUIT\r\n", ""},
		class:   driver.Status5xx, errHas: "SMTP DATA: 552 too big",
		calls: "e[] c",
	}, {
		name:    "AUTH refused",
		rcpts:   []string{"u1@x"},
		auth:    "AHUAcA==",
		replies: []string{"220 hi\r\n", ehloPipe, "535 5.7.8 bad credentials\r\n"},
		writes:  []string{"EHLO c\r\n", "AUTH PLAIN AHUAcA==\r\n", ""},
		class:   driver.Auth, errHas: "SMTP AUTH: 535",
	}, {
		name:    "greeting refused",
		rcpts:   []string{"u1@x"},
		replies: []string{"554 go away\r\n"},
		writes:  []string{""},
		class:   driver.Status5xx, errHas: "SMTP EHLO: 554 go away",
	}, {
		name:    "malformed reply",
		rcpts:   []string{"u1@x"},
		replies: []string{"220 hi\r\n", "hello there\r\n"},
		writes:  []string{"EHLO c\r\n", ""},
		class:   driver.IO, errHas: "SMTP EHLO: malformed reply",
	}}
	for _, tc := range cases {
		var calls []string
		tx := testTxn(tc.rcpts, []byte("body\r\n"), time.Minute, &calls)
		tx.auth = tc.auth
		tx.start()
		for i, r := range tc.replies {
			// Byte by byte: replies split anywhere are read whole.
			var out []byte
			for j := range len(r) {
				for _, b := range tx.feed([]byte{r[j]}, time.Now()) {
					out = append(out, b...)
				}
			}
			if string(out) != tc.writes[i] {
				t.Fatalf("%s: after reply %d %q the client wrote %q, want %q", tc.name, i, r, out, tc.writes[i])
			}
		}
		if !tx.done {
			t.Fatalf("%s: not done after the script (awaiting %v)", tc.name, tx.pending)
		}
		if driver.Classify(tx.err) != tc.class || (tc.errHas != "" && (tx.err == nil || !strings.Contains(tx.err.Error(), tc.errHas))) {
			t.Errorf("%s: err %v (class %v), want class %v with %q", tc.name, tx.err, driver.Classify(tx.err), tc.class, tc.errHas)
		}
		if got := strings.Join(calls, " "); got != tc.calls {
			t.Errorf("%s: tracker calls %q, want %q", tc.name, got, tc.calls)
		}
	}
}

// A deadline that passes while the message is unanswered is a timeout at
// DATA and forgets the message; one that passes while only QUIT's reply is
// awaited changes nothing (the message was accepted); a connection that
// breaks then changes nothing either.
func TestSMTPTxnEnds(t *testing.T) {
	run := func(replies ...string) (*smtpTxn, *[]string) {
		var calls []string
		tx := testTxn([]string{"u@x"}, []byte("b\r\n"), time.Minute, &calls)
		tx.start()
		for _, r := range replies {
			tx.feed([]byte(r), time.Now())
		}
		return tx, &calls
	}
	env := []string{"220 hi\r\n", "250-mx\r\n250 PIPELINING\r\n", "250 ok\r\n250 ok\r\n354 go\r\n"}
	tx, calls := run(env...)
	tx.timedOut(300 * time.Millisecond)
	if driver.Classify(tx.err) != driver.Timeout || !strings.Contains(tx.err.Error(), "SMTP DATA: not over within 300ms") || strings.Join(*calls, " ") != "e[] c" {
		t.Errorf("timeout awaiting the acceptance: %v (class %v), calls %v", tx.err, driver.Classify(tx.err), *calls)
	}
	tx, calls = run(append(env, "250 queued\r\n")...)
	if tx.done || tx.waitUntil().After(time.Now().Add(quitWait)) {
		t.Fatalf("after the acceptance: done %v, QUIT awaited until %v", tx.done, tx.waitUntil())
	}
	tx.timedOut(time.Second)
	if !tx.done || tx.err != nil || strings.Join(*calls, " ") != "e[] a" {
		t.Errorf("no QUIT reply: %v, calls %v", tx.err, *calls)
	}
	tx, _ = run(append(env, "250 queued\r\n")...)
	tx.broken(errors.New("reset"))
	if !tx.done || tx.err != nil {
		t.Errorf("broken after the acceptance: %v", tx.err)
	}
	tx, calls = run(env[:2]...)
	tx.broken(errors.New("reset"))
	if driver.Classify(tx.err) != driver.IO || !strings.Contains(tx.err.Error(), "SMTP MAIL: reset") || len(*calls) != 0 {
		t.Errorf("broken in the envelope: %v (class %v), calls %v", tx.err, driver.Classify(tx.err), *calls)
	}
}
