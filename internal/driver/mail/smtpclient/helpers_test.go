package smtpclient

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver/mail/internal/mailtest"
	"github.com/throng-io/throng/internal/rawsock"
)

// A feeder's TLS: the values of mail.smtp_tls.
const (
	noTLS       = "none"
	startTLS    = "starttls"
	implicitTLS = "tls"
)

// testTxn is a transaction from f@x to rcpts with body, due within d,
// that notes the tracker's calls in *calls: e[refused,...], a, c.
func testTxn(rcpts []string, body []byte, d time.Duration, calls *[]string) *Txn {
	return &Txn{EHLO: "c", From: "f@x", Rcpts: rcpts, Body: Stuffed(body), Deadline: time.Now().Add(d),
		Expect:   func(r []string) { *calls = append(*calls, "e["+strings.Join(r, ",")+"]") },
		Accepted: func(time.Time) { *calls = append(*calls, "a") },
		Cancel:   func() { *calls = append(*calls, "c") },
	}
}

// A feeder is one way a transaction is fed: the submission loop, or a
// goroutine over its own connection, in plain text, TLS from the first
// byte, or STARTTLS.
type feeder struct {
	name string
	tls  string // smtp_tls
	loop bool
}

func feeders() []feeder {
	fs := []feeder{{"goroutine", noTLS, false}, {"goroutine tls", implicitTLS, false}, {"goroutine starttls", startTLS, false}}
	if LoopSupported {
		fs = append([]feeder{{"loop", noTLS, true}}, fs...)
	}
	return fs
}

// run runs tx to its end against addr through f; tx's deadline is
// timeout from now. It returns the bytes on the wire.
func (f feeder) run(t *testing.T, tx *Txn, addr string, timeout time.Duration) (in, out int64) {
	t.Helper()
	return f.runCtx(t, context.Background(), tx, addr, timeout)
}

// runCtx is run with the sender's context.
func (f feeder) runCtx(t *testing.T, ctx context.Context, tx *Txn, addr string, timeout time.Duration) (in, out int64) {
	t.Helper()
	tx.Deadline = time.Now().Add(timeout)
	tx.StartTLS = f.tls == startTLS
	if f.loop {
		l, err := NewLoop()
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		sa, err := rawsock.Resolve(addr)
		if err != nil {
			t.Fatal(err)
		}
		return l.Submit(ctx, tx, sa, timeout)
	}
	return Converse(ctx, tx, Server{Addr: addr, ImplicitTLS: f.tls == implicitTLS, TLSConfig: &tls.Config{InsecureSkipVerify: true}}, timeout)
}

// replaySMTP serves one conversation per connection for f: it sends
// replies[i] and then expects the client to write exactly writes[i]
// (checked, byte for byte); after the last it expects the client to close
// without writing more. Each reply goes out in two pieces, a moment
// apart, so replies split anywhere are read whole. With TLS, the server
// speaks TLS at once, or offers STARTTLS after its greeting and upgrades
// when asked before it goes on with the script's EHLO reply. What went
// wrong is sent on the returned channel ("" when nothing did).
func replaySMTP(t *testing.T, f feeder, replies, writes []string) (string, <-chan string) {
	verdict := make(chan string, 8)
	cfg := &tls.Config{Certificates: []tls.Certificate{mailtest.Cert()}}
	addr := mailtest.ScriptedSMTP(t, func(nc net.Conn, r *bufio.Reader) {
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		var conn net.Conn = nc
		send := func(s string) {
			h := len(s) / 2
			conn.Write([]byte(s[:h]))
			time.Sleep(time.Millisecond)
			conn.Write([]byte(s[h:]))
		}
		expect := func(want string) bool {
			got := make([]byte, len(want))
			if _, err := io.ReadFull(r, got); err != nil || string(got) != want {
				verdict <- fmt.Sprintf("the client wrote %q (%v), want %q", got, err, want)
				return false
			}
			return true
		}
		if f.tls == implicitTLS {
			tc := tls.Server(nc, cfg)
			conn, r = tc, bufio.NewReader(tc)
		}
		for i, reply := range replies {
			send(reply)
			if i == 0 && f.tls == startTLS && strings.HasPrefix(reply, "220") && len(replies) > 1 {
				if !expect(writes[0]) {
					return
				}
				send("250-starttls.test\r\n250 STARTTLS\r\n")
				if !expect("STARTTLS\r\n") {
					return
				}
				send("220 go ahead\r\n")
				tc := tls.Server(nc, cfg)
				conn, r = tc, bufio.NewReader(tc)
			}
			if !expect(writes[i]) {
				return
			}
		}
		switch b, err := r.ReadByte(); {
		case err == nil:
			rest, _ := r.Peek(r.Buffered())
			verdict <- fmt.Sprintf("the client wrote %q after the script", append([]byte{b}, rest...))
		case errors.Is(err, os.ErrDeadlineExceeded):
			verdict <- "the client did not close its connection after the script"
		default:
			verdict <- ""
		}
	})
	return addr, verdict
}
