package mail

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
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/rawsock"
	"github.com/throng-io/throng/internal/scenario"
	mailtarget "github.com/throng-io/throng/internal/targets/mail"
	"github.com/throng-io/throng/internal/testenv"
)

// embedded starts the embedded server for a test.
func embedded(t testing.TB) *mailtarget.Server {
	t.Helper()
	s, err := mailtarget.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// load decodes a scenario's mail block and actions for target.
func load(t testing.TB, src, target string) (*Config, map[string]driver.Action) {
	t.Helper()
	s, err := scenario.Parse("test.yaml", []byte(src), []string{"web", Name})
	if err != nil {
		t.Fatal(err)
	}
	c, errs := Decode(s.DriverConfig, target)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c.SetLog(func(string) {})
	t.Cleanup(c.closeSMTP) // outside the engine, nobody calls Drain
	acts := map[string]driver.Action{}
	for _, a := range s.Actions {
		ca, errs := c.Compile(a)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		acts[a.Name] = ca
	}
	return c, acts
}

// events records the driver's events.
type events struct {
	mu      sync.Mutex
	byClass [driver.NumClasses]int
	byEvent [3]int  // deliver, misdeliver, duplicate
	logons  []evRec // the log-on events, kept apart from the deliveries' figures
	lat     []time.Duration
	msgs    []string
	log     []evRec // every event
	bytes   int64   // received
	sent    int64
}

// evRec is one event as the sink saw it.
type evRec struct {
	ev    int
	class driver.Class
	cause time.Time
	lat   time.Duration
}

func (e *events) Event(ev int, cause time.Time, lat time.Duration, in, out int64, c driver.Class, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if ev == evLogon {
		e.logons = append(e.logons, evRec{ev, c, cause, lat})
		return
	}
	e.byClass[c]++
	e.byEvent[ev]++
	e.log = append(e.log, evRec{ev, c, cause, lat})
	e.bytes += in
	e.sent += out
	if lat >= 0 {
		e.lat = append(e.lat, lat)
	}
	if err != nil {
		e.msgs = append(e.msgs, err.Error())
	}
}

func (e *events) count(c driver.Class) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byClass[c]
}

func (e *events) timed() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.lat)
}

// prepare runs Prepare for users 0..n-1.
func prepare(t testing.TB, c *Config, n int, seed uint64) {
	t.Helper()
	users := make([]int, n)
	for i := range users {
		users[i] = i
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Prepare(ctx, driver.Population{TotalUsers: n, Users: users, Seed: seed}); err != nil {
		t.Fatal(err)
	}
}

// open logs users 0..n-1 on.
func open(t testing.TB, c *Config, n int) []driver.Session {
	t.Helper()
	var ss []driver.Session
	for i := range n {
		s, err := c.Open(context.Background(), driver.User{ID: i, Users: n, Seed: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
		t.Cleanup(func() { s.Close() })
	}
	return ss
}

func startAt(addr string) (*mailtarget.Server, error) { return mailtarget.Start(addr) }

// scriptedSMTP serves every connection with script until the test ends;
// it returns the address.
func scriptedSMTP(t *testing.T, script func(nc net.Conn, r *bufio.Reader)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				script(nc, bufio.NewReader(nc))
			}()
		}
	}()
	return ln.Addr().String()
}

// testTxn is a transaction from f@x to rcpts with body, due within d,
// that notes the tracker's calls in *calls: e[refused,...], a, c.
func testTxn(rcpts []string, body []byte, d time.Duration, calls *[]string) *smtpTxn {
	return &smtpTxn{ehlo: "c", from: "f@x", rcpts: rcpts, body: stuffed(body), deadline: time.Now().Add(d),
		expect:   func(r []string) { *calls = append(*calls, "e["+strings.Join(r, ",")+"]") },
		accepted: func(time.Time) { *calls = append(*calls, "a") },
		cancel:   func() { *calls = append(*calls, "c") },
	}
}

// fakeSMTP is a minimal SMTP server (PIPELINING offered or not) that
// accepts every command and message, except that it stops answering, and
// reads on, from the first command that starts with stallAfter ("": never).
func fakeSMTP(t *testing.T, pipelining bool, stallAfter string) string {
	ehlo := "250 fake.test\r\n"
	if pipelining {
		ehlo = "250-fake.test\r\n250 PIPELINING\r\n"
	}
	return scriptedSMTP(t, func(nc net.Conn, r *bufio.Reader) {
		nc.Write([]byte("220 fake.test ESMTP\r\n"))
		inData := false
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			cmd := strings.TrimRight(line, "\r\n")
			if inData {
				if cmd != "." {
					continue
				}
				inData = false
			}
			if stallAfter != "" && strings.HasPrefix(cmd, stallAfter) {
				io.Copy(io.Discard, r) // read on, never answer
				return
			}
			switch {
			case strings.HasPrefix(cmd, "EHLO"):
				nc.Write([]byte(ehlo))
			case strings.HasPrefix(cmd, "DATA"):
				inData = true
				nc.Write([]byte("354 go on\r\n"))
			case cmd == "QUIT":
				nc.Write([]byte("221 bye\r\n"))
				return
			default:
				nc.Write([]byte("250 ok\r\n"))
			}
		}
	})
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
	fs := []feeder{{"goroutine", smtpNoTLS, false}, {"goroutine tls", smtpImplicitTLS, false}, {"goroutine starttls", smtpStartTLS, false}}
	if submitLoopSupported {
		fs = append([]feeder{{"loop", smtpNoTLS, true}}, fs...)
	}
	return fs
}

// run runs tx to its end against addr through f; tx's deadline is
// timeout from now. It returns the bytes on the wire.
func (f feeder) run(t *testing.T, tx *smtpTxn, addr string, timeout time.Duration) (in, out int64) {
	t.Helper()
	return f.runCtx(t, context.Background(), tx, addr, timeout)
}

// runCtx is run with the sender's context.
func (f feeder) runCtx(t *testing.T, ctx context.Context, tx *smtpTxn, addr string, timeout time.Duration) (in, out int64) {
	t.Helper()
	tx.deadline = time.Now().Add(timeout)
	tx.startTLS = f.tls == smtpStartTLS
	if f.loop {
		l, err := newSubmitLoop()
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		sa, err := rawsock.Resolve(addr)
		if err != nil {
			t.Fatal(err)
		}
		return l.submit(ctx, tx, sa, timeout)
	}
	c := &Config{Settings: Settings{SMTPTLS: f.tls}, smtpAddr: addr, smtpTLSCfg: &tls.Config{InsecureSkipVerify: true}}
	return c.converse(ctx, tx, timeout)
}

// testCert is a self-signed certificate for the tests' TLS servers.
var testCert = sync.OnceValue(func() tls.Certificate {
	cert, _, _, err := testenv.SelfSigned()
	if err != nil {
		panic(err)
	}
	return cert
})

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
	cfg := &tls.Config{Certificates: []tls.Certificate{testCert()}}
	addr := scriptedSMTP(t, func(nc net.Conn, r *bufio.Reader) {
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
		if f.tls == smtpImplicitTLS {
			tc := tls.Server(nc, cfg)
			conn, r = tc, bufio.NewReader(tc)
		}
		for i, reply := range replies {
			send(reply)
			if i == 0 && f.tls == smtpStartTLS && strings.HasPrefix(reply, "220") && len(replies) > 1 {
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
