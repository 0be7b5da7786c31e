package smtpclient

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
)

// The submission state machine, fed a scripted server: what it writes at
// each step, and how it ends (class, stage, tracker calls, bytes on the
// wire), pipelined and not; fed byte by byte, and by every feeder (the
// loop, a goroutine in plain text, over TLS and after STARTTLS) against a
// server that replays the script. A change of the exchange or of an
// error's stage or class, in the machine or in a feeder, fails it.
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
	check := func(how, name string, tx *Txn, calls []string, class driver.Class, errHas, wantCalls string) {
		t.Helper()
		if driver.Classify(tx.err) != class || (errHas != "" && (tx.err == nil || !strings.Contains(tx.err.Error(), errHas))) {
			t.Errorf("%s, %s: err %v (class %v), want class %v with %q", how, name, tx.err, driver.Classify(tx.err), class, errHas)
		}
		if got := strings.Join(calls, " "); got != wantCalls {
			t.Errorf("%s, %s: tracker calls %q, want %q", how, name, got, wantCalls)
		}
	}
	for _, tc := range cases {
		// Every feeder, against a server that replays the script and
		// checks what the client writes.
		for _, f := range feeders() {
			var calls []string
			tx := testTxn(tc.rcpts, []byte("body\r\n"), time.Minute, &calls)
			tx.Auth = tc.auth
			addr, verdict := replaySMTP(t, f, tc.replies, tc.writes)
			in, out := f.run(t, tx, addr, 10*time.Second)
			if v := <-verdict; v != "" {
				t.Errorf("%s, %s: %s", f.name, tc.name, v)
			}
			check(f.name, tc.name, tx, calls, tc.class, tc.errHas, tc.calls)
			if f.tls == noTLS && (in != int64(len(strings.Join(tc.replies, ""))) || out != int64(len(strings.Join(tc.writes, "")))) {
				t.Errorf("%s, %s: %d bytes in, %d out; want the script's %d and %d", f.name, tc.name, in, out, len(strings.Join(tc.replies, "")), len(strings.Join(tc.writes, "")))
			}
		}
		// The machine alone, fed byte by byte.
		var calls []string
		tx := testTxn(tc.rcpts, []byte("body\r\n"), time.Minute, &calls)
		tx.Auth = tc.auth
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
		check("fed byte by byte", tc.name, tx, calls, tc.class, tc.errHas, tc.calls)
	}
}

// A deadline that passes while the message is unanswered is a timeout at
// DATA and forgets the message; one that passes while only QUIT's reply is
// awaited changes nothing (the message was accepted); a connection that
// breaks then, or a sender that gives up then, changes nothing either; a
// sender that gives up before is class io and forgets the message.
func TestSMTPTxnEnds(t *testing.T) {
	run := func(replies ...string) (*Txn, *[]string) {
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
	tx, _ = run(append(env, "250 queued\r\n")...)
	tx.stop()
	if !tx.done || tx.err != nil {
		t.Errorf("stopped after the acceptance: %v", tx.err)
	}
	tx, calls = run(env...)
	tx.stop()
	if driver.Classify(tx.err) != driver.IO || !strings.Contains(tx.err.Error(), "SMTP DATA: stopped") || strings.Join(*calls, " ") != "e[] c" {
		t.Errorf("stopped awaiting the acceptance: %v (class %v), calls %v", tx.err, driver.Classify(tx.err), *calls)
	}
	tx, calls = run(env[:2]...)
	tx.broken(errors.New("reset"))
	if driver.Classify(tx.err) != driver.IO || !strings.Contains(tx.err.Error(), "SMTP MAIL: reset") || len(*calls) != 0 {
		t.Errorf("broken in the envelope: %v (class %v), calls %v", tx.err, driver.Classify(tx.err), *calls)
	}
}

// STARTTLS in the machine: not offered is class protocol and nothing more
// is said; refused is the reply's class at STARTTLS; accepted, the machine
// says nothing until the feeder has upgraded (bytes that came after the
// 220 are dropped, not taken for the answer to what is said over TLS),
// then EHLO again, forgetting PIPELINING offered before. A probe (the
// preflight) says QUIT once EHLO is answered.
func TestSMTPTxnSTARTTLS(t *testing.T) {
	const offered = "250-mx\r\n250-PIPELINING\r\n250 STARTTLS\r\n"
	feedAll := func(tx *Txn, replies ...string) string {
		var out []byte
		for _, r := range replies {
			for _, b := range tx.feed([]byte(r), time.Now()) {
				out = append(out, b...)
			}
		}
		return string(out)
	}
	newTxn := func() (*Txn, *[]string) {
		var calls []string
		tx := testTxn([]string{"u@x"}, []byte("b\r\n"), time.Minute, &calls)
		tx.StartTLS = true
		tx.start()
		return tx, &calls
	}

	tx, _ := newTxn()
	if out := feedAll(tx, "220 hi\r\n", "250-mx\r\n250 PIPELINING\r\n"); out != "EHLO c\r\n" || !tx.done ||
		driver.Classify(tx.err) != driver.Protocol || !strings.Contains(tx.err.Error(), "SMTP STARTTLS: the server does not offer STARTTLS") {
		t.Errorf("not offered: wrote %q, done %v, %v (class %v)", out, tx.done, tx.err, driver.Classify(tx.err))
	}
	tx, _ = newTxn()
	if out := feedAll(tx, "220 hi\r\n", offered, "454 4.7.0 TLS not available\r\n"); out != "EHLO c\r\nSTARTTLS\r\n" ||
		driver.Classify(tx.err) != driver.Status4xx || !strings.Contains(tx.err.Error(), "SMTP STARTTLS: 454 4.7.0") {
		t.Errorf("refused: wrote %q, %v (class %v)", out, tx.err, driver.Classify(tx.err))
	}

	tx, calls := newTxn()
	if out := feedAll(tx, "220 hi\r\n", offered, "220 go ahead\r\n250-injected\r\n250 ok\r\n"); out != "EHLO c\r\nSTARTTLS\r\n" || !tx.upgrade || tx.done {
		t.Fatalf("accepted: wrote %q, upgrade %v, done %v (%v)", out, tx.upgrade, tx.done, tx.err)
	}
	if out := feedAll(tx, "250 more injected\r\n"); out != "" || tx.done {
		t.Fatalf("before the upgrade the machine wrote %q (done %v, %v)", out, tx.done, tx.err)
	}
	var ehlo []byte
	for _, b := range tx.upgraded() {
		ehlo = append(ehlo, b...)
	}
	if string(ehlo) != "EHLO c\r\n" || tx.pipelining {
		t.Fatalf("after the upgrade: %q, pipelining %v", ehlo, tx.pipelining)
	}
	if out := feedAll(tx, "250 mx\r\n", "250 ok\r\n", "250 ok\r\n", "354 go\r\n", "250 queued\r\n", "221 bye\r\n"); out != "MAIL FROM:<f@x>\r\nRCPT TO:<u@x>\r\nDATA\r\nb\r\n.\r\nQUIT\r\n" ||
		!tx.done || tx.err != nil || strings.Join(*calls, " ") != "e[] a" {
		t.Errorf("over TLS: wrote %q, done %v, %v, calls %v", out, tx.done, tx.err, *calls)
	}

	for _, startTLS := range []bool{false, true} {
		tx := &Txn{EHLO: "c", Probe: true, StartTLS: startTLS, Deadline: time.Now().Add(time.Minute)}
		tx.start()
		out := feedAll(tx, "220 hi\r\n", offered)
		if startTLS {
			out += feedAll(tx, "220 go\r\n")
			for _, b := range tx.upgraded() {
				out += string(b)
			}
			out += feedAll(tx, "250 mx\r\n")
		}
		out += feedAll(tx, "221 bye\r\n")
		want := "EHLO c\r\nQUIT\r\n"
		if startTLS {
			want = "EHLO c\r\nSTARTTLS\r\nEHLO c\r\nQUIT\r\n"
		}
		if out != want || !tx.done || tx.err != nil {
			t.Errorf("probe (starttls %v): wrote %q, done %v, %v; want %q", startTLS, out, tx.done, tx.err, want)
		}
	}
}
