package smtpclient

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
)

// The submission client against real SMTP servers, through every feeder:
// the embedded server (plain text) and go-smtp over TLS and STARTTLS
// (mailtest.SMTPServer). Lines that start with a dot arrive intact (stuffed on the
// wire, unstuffed by the server) and a message without a final CRLF is
// ended properly.
func TestSMTPDots(t *testing.T) {
	srv := mailtest.Embedded(t)
	if err := srv.Provision([]string{"user0001"}, "pw", nil); err != nil {
		t.Fatal(err)
	}
	msgs := []string{
		".starts with a dot\r\nSubject: s\r\n\r\nbody\r\n.\r\n..two\r\nend\r\n",
		"Subject: t\r\n\r\nno final line end",
	}
	wants := []string{".starts with a dot\r\nSubject: s\r\n\r\nbody\r\n.\r\n..two\r\nend\r\n", "Subject: t\r\n\r\nno final line end\r\n"}
	cfg := &tls.Config{Certificates: []tls.Certificate{mailtest.Cert()}}
	plain := 0
	for _, f := range feeders() {
		addr := srv.SMTPAddr()
		var sink *mailtest.Sink
		if f.tls != noTLS {
			sink, addr = mailtest.SMTPServer(t, cfg, f.tls == implicitTLS)
		} else {
			plain++
		}
		for _, m := range msgs {
			var calls []string
			tx := testTxn([]string{"user0001@example.test"}, []byte(m), time.Minute, &calls)
			tx.EHLO = "client.example.test"
			if f.run(t, tx, addr, 10*time.Second); tx.err != nil || strings.Join(calls, " ") != "e[] a" {
				t.Fatalf("%s: %v, calls %v", f.name, tx.err, calls)
			}
		}
		if sink != nil {
			if got := sink.Messages(); !slices.Equal(got, wants) {
				t.Errorf("%s: the server got %q, want %q", f.name, got, wants)
			}
		}
	}
	out := strings.Join(mailtest.RawIMAP(t, srv.IMAPAddr(), "user0001", "pw", "SELECT INBOX", fmt.Sprintf("FETCH 1:%d (BODY[TEXT] RFC822.SIZE)", 2*plain)), "\n")
	for _, want := range []string{"\r\n.\r\n..two\r\nend", "body", "no final line end"} {
		if strings.Count(strings.ReplaceAll(out, "\n", "\r\n"), want)+strings.Count(out, strings.ReplaceAll(want, "\r\n", "\n")) < plain {
			t.Errorf("the server got %q, missing %q %d times", out, want, plain)
		}
	}
}

// The envelope against the embedded server (pipelined), through the
// plain feeders: a refused recipient among accepted ones is reported
// (class 5xx, its enhanced code split off and put back) and the
// message still goes to the others; every recipient refused means no
// message; a refused sender is MAIL's error.
func TestSMTPEnvelopeRefusals(t *testing.T) {
	srv := mailtest.Embedded(t)
	if err := srv.Provision([]string{"user0001", "user0002"}, "pw", nil); err != nil {
		t.Fatal(err)
	}
	plain := 0
	for _, f := range feeders() {
		if f.tls != noTLS {
			continue
		}
		plain++
		var calls []string
		tx := testTxn([]string{"user0001@example.test", "nobody@example.test", "user0002@example.test"}, []byte("Subject: p\r\n\r\nbody\r\n"), time.Minute, &calls)
		f.run(t, tx, srv.SMTPAddr(), 10*time.Second)
		if driver.Classify(tx.err) != driver.Status5xx || !strings.Contains(tx.err.Error(), "SMTP RCPT nobody@example.test: 550 5.1.1 <nobody@example.test>") ||
			strings.Join(calls, " ") != "e[nobody@example.test] a" {
			t.Errorf("%s, one recipient refused: %v (class %v), calls %v", f.name, tx.err, driver.Classify(tx.err), calls)
		}
		calls = nil
		tx = testTxn([]string{"nobody@example.test"}, []byte("Subject: p\r\n\r\nbody\r\n"), time.Minute, &calls)
		f.run(t, tx, srv.SMTPAddr(), 10*time.Second)
		if driver.Classify(tx.err) != driver.Status5xx || !strings.Contains(tx.err.Error(), "SMTP RCPT nobody@example.test: 550") || len(calls) != 0 {
			t.Errorf("%s, every recipient refused: %v (class %v), calls %v", f.name, tx.err, driver.Classify(tx.err), calls)
		}
	}
	for _, u := range []string{"user0001", "user0002"} {
		out := strings.Join(mailtest.RawIMAP(t, srv.IMAPAddr(), u, "pw", "STATUS INBOX (MESSAGES)"), " ")
		if !strings.Contains(out, fmt.Sprintf("MESSAGES %d", plain)) {
			t.Errorf("%s: %s, want %d messages (one per plain feeder)", u, out, plain)
		}
	}
}

// lineDot finds what bytes.Index(b, "\n.") finds.
func TestLineDot(t *testing.T) {
	cases := []string{"", ".", "\n", "\n.", "a.b.c", "a.\n.b", "a\n.", "..\n..", "x\r\n.y", "no dots\nat all\n", ".\n.\n."}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = "a.\n"[r.IntN(3)]
		}
		cases = append(cases, string(b))
	}
	for _, c := range cases {
		if got, want := lineDot([]byte(c)), bytes.Index([]byte(c), []byte("\n.")); got != want {
			t.Fatalf("lineDot(%q) = %d, want %d", c, got, want)
		}
	}
}

// Every feeder: a sender whose context ends (the run stops) gets its
// answer at once, class io, although the server stalls; a server that
// never answers QUIT after accepting the message holds the sender about a
// second (quitWait), not until the transaction's deadline, and the send
// is accepted.
func TestFeedersStopAndQuit(t *testing.T) {
	stall := mailtest.ScriptedSMTP(t, func(nc net.Conn, r *bufio.Reader) { io.Copy(io.Discard, r) })
	for _, f := range feeders() {
		if f.tls != noTLS {
			continue // the TLS handshake would stall, not the exchange
		}
		var calls []string
		tx := testTxn([]string{"u@x"}, []byte("b\r\n"), time.Minute, &calls)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		t0 := time.Now()
		if f.runCtx(t, ctx, tx, stall, time.Minute); driver.Classify(tx.err) != driver.IO || !strings.Contains(tx.err.Error(), "SMTP EHLO: stopped") || time.Since(t0) > 3*time.Second {
			t.Errorf("%s, stopped: %v (class %v) after %v", f.name, tx.err, driver.Classify(tx.err), time.Since(t0))
		}
		cancel()
	}
	for _, pipelining := range []bool{true, false} {
		noQuit := mailtest.FakeSMTP(t, pipelining, "QUIT")
		for _, f := range feeders() {
			if f.tls != noTLS {
				continue
			}
			var calls []string
			tx := testTxn([]string{"u@x"}, []byte("b\r\n"), time.Minute, &calls)
			t0 := time.Now()
			if f.run(t, tx, noQuit, time.Minute); tx.err != nil || strings.Join(calls, " ") != "e[] a" || time.Since(t0) > quitWait+2*time.Second {
				t.Errorf("%s, pipelining %v, no answer to QUIT: %v, calls %v, after %v", f.name, pipelining, tx.err, calls, time.Since(t0))
			}
		}
	}
}
