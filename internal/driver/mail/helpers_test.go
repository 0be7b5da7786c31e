package mail

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
	mailtarget "github.com/throng-io/throng/internal/targets/mail"
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
	lat     []time.Duration
	msgs    []string
	bytes   int64 // received
	sent    int64
}

func (e *events) Event(ev int, lat time.Duration, in, out int64, c driver.Class, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byClass[c]++
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
