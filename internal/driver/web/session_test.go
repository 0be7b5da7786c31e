package web

import (
	"bufio"
	"context"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
	webtarget "github.com/throng-io/throng/internal/targets/web"
)

// config decodes a scenario with one action per path and returns the
// driver config and its compiled actions.
func config(t *testing.T, target, web string, actions ...string) (*Config, []driver.Action) {
	t.Helper()
	src := "users: 1\nclosed: {iterations: 1}\nweb: " + web + "\nactions:\n"
	for _, a := range actions {
		src += "  - " + a + "\n"
	}
	s, err := scenario.Parse("t.yaml", []byte(src), []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	c, errs := Decode(s.DriverConfig, target)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var out []driver.Action
	for _, a := range s.Actions {
		ca, errs := c.Compile(a)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		out = append(out, ca)
	}
	return c, out
}

// blockOf returns the "web:" block of a minimal scenario.
func blockOf(t *testing.T, web string) scenario.Node {
	t.Helper()
	s, err := scenario.Parse("t.yaml", []byte("users: 1\nclosed: {iterations: 1}\nweb: "+web+"\nactions: [{path: /}]\n"), []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	return s.DriverConfig
}

func embedded(t testing.TB) string {
	t.Helper()
	s, err := webtarget.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.URL()
}

func do(t *testing.T, c *Config, a driver.Action) (driver.Outcome, error) {
	t.Helper()
	s, err := c.Open(context.Background(), driver.User{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return s.Do(context.Background(), a)
}

func TestAgainstEmbeddedServer(t *testing.T) {
	t.Parallel()
	url := embedded(t)
	c, acts := config(t, url, "{timeout: 2s}",
		"{path: /one.html}", "{path: /status/503}", "{path: /status/404}",
		"{method: POST, path: /echo, body_size: 1000}", "{method: HEAD, path: /size/5000}")
	s, _ := c.Open(context.Background(), driver.User{})
	defer s.Close()
	ctx := context.Background()
	out, err := s.Do(ctx, acts[0])
	if err != nil || out.BytesIn < 100 || out.BytesOut != int64(len(acts[0].(*action).req)) {
		t.Fatalf("GET /one.html: %+v %v", out, err)
	}
	if _, err := s.Do(ctx, acts[1]); driver.Classify(err) != driver.Status5xx || err.Error() != "HTTP status 503" {
		t.Errorf("/status/503: %v (class %v)", err, driver.Classify(err))
	}
	if _, err := s.Do(ctx, acts[2]); driver.Classify(err) != driver.Status4xx {
		t.Errorf("/status/404: %v", err)
	}
	out, err = s.Do(ctx, acts[3])
	if err != nil || out.BytesIn < 1000 || out.BytesOut < 1000 {
		t.Errorf("POST /echo: %+v %v", out, err)
	}
	// HEAD: no body even though Content-Length says 5000; the connection
	// stays usable for the next request.
	if _, err := s.Do(ctx, acts[4]); err != nil {
		t.Errorf("HEAD: %v", err)
	}
	if _, err := s.Do(ctx, acts[0]); err != nil {
		t.Errorf("GET after HEAD: %v", err)
	}
}

// countingServer answers every request on a connection with the 1-byte page
// and counts connections.
// respond writes one response and reports whether to keep the connection.
func countingServer(t *testing.T, respond func(w *bufio.Writer) bool) (url string, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = &atomic.Int64{}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				r, w := bufio.NewReader(c), bufio.NewWriter(c)
				for {
					// Read one request head.
					for {
						line, err := r.ReadString('\n')
						if err != nil {
							return
						}
						if line == "\r\n" {
							break
						}
					}
					keep := respond(w)
					if w.Flush() != nil || !keep {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), conns
}

func TestKeepAliveReusesOneConnection(t *testing.T) {
	t.Parallel()
	for _, keep := range []bool{true, false} {
		url, conns := countingServer(t, func(w *bufio.Writer) bool {
			w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")
			return true
		})
		web := "{keepalive: true}"
		if !keep {
			web = "{keepalive: false}"
		}
		c, acts := config(t, url, web, "{path: /}")
		s, _ := c.Open(context.Background(), driver.User{})
		for i := 0; i < 50; i++ {
			if _, err := s.Do(context.Background(), acts[0]); err != nil {
				t.Fatalf("keepalive=%v request %d: %v", keep, i, err)
			}
		}
		s.Close()
		want := int64(1)
		if !keep {
			want = 50
			if !strings.Contains(string(acts[0].(*action).req), "Connection: close\r\n") {
				t.Error("keepalive false does not send Connection: close")
			}
		}
		if got := conns.Load(); got != want {
			t.Errorf("keepalive=%v: %d connections for 50 requests, want %d", keep, got, want)
		}
	}
}

// A server that closes an idle keep-alive connection: the next request
// fails before any byte arrives and is retried once on a new connection.
func TestRetryAfterIdleClose(t *testing.T) {
	t.Parallel()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
				c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"))
				time.Sleep(20 * time.Millisecond)
				c.Close() // idle close, without Connection: close
			}()
		}
	}()
	c, acts := config(t, "http://"+ln.Addr().String(), "{}", "{path: /}")
	s, _ := c.Open(context.Background(), driver.User{})
	defer s.Close()
	for i := 0; i < 3; i++ {
		if _, err := s.Do(context.Background(), acts[0]); err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if conns.Load() != 3 {
		t.Errorf("%d connections, want 3", conns.Load())
	}
}

func TestFaultsAreClassified(t *testing.T) {
	t.Parallel()
	// A port nobody listens on.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	refused := "http://" + ln.Addr().String()
	ln.Close()

	// A server that sends half a response, then closes.
	half, _ := countingServer(t, func(w *bufio.Writer) bool {
		w.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
		return false // then close
	})
	// A server that accepts and never answers.
	stall, _ := net.Listen("tcp", "127.0.0.1:0")
	defer stall.Close()
	go func() {
		for {
			c, err := stall.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()

	for _, tt := range []struct {
		name   string
		target string
		want   driver.Class
	}{
		{"refused", refused, driver.Dial},
		{"closed mid-response", half, driver.IO},
		{"stalled", "http://" + stall.Addr().String(), driver.Timeout},
		{"name does not resolve", "http://no-such-host.invalid:80", driver.Dial},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, acts := config(t, tt.target, "{timeout: 300ms}", "{path: /}")
			start := time.Now()
			_, err := do(t, c, acts[0])
			if got := driver.Classify(err); got != tt.want {
				t.Errorf("error %v has class %v, want %v", err, got, tt.want)
			}
			if time.Since(start) > 2*time.Second {
				t.Errorf("took %v: the timeout was not honoured", time.Since(start))
			}
			if tt.want == driver.Dial {
				if err := c.Preflight(context.Background()); err == nil {
					t.Error("Preflight passed against a target that cannot be reached")
				}
			}
		})
	}
}

func TestStopUnblocksADoInProgress(t *testing.T) {
	t.Parallel()
	url := embedded(t)
	c, acts := config(t, url, "{timeout: 30s}", "{path: /sleep/20s}")
	ctx, cancel := context.WithCancel(context.Background())
	s, _ := c.Open(ctx, driver.User{})
	defer s.Close()
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := s.Do(ctx, acts[0])
	if err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("Do returned %v after %v; want an error soon after the stop", err, time.Since(start))
	}
}

func TestTLS(t *testing.T) {
	t.Parallel()
	srv := httptest.NewUnstartedServer(webtarget.Handler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	defer srv.Close()
	c, acts := config(t, srv.URL, "{insecure_skip_verify: true}", "{path: /one.html}")
	if _, ok := c.WireAddr(); ok {
		t.Error("a TLS target offered the plain-TCP Wire ability")
	}
	if _, err := do(t, c, acts[0]); err != nil {
		t.Errorf("TLS with insecure_skip_verify: %v", err)
	}
	c, acts = config(t, srv.URL, "{}", "{path: /one.html}")
	_, err := do(t, c, acts[0])
	if driver.Classify(err) != driver.TLS {
		t.Errorf("self-signed certificate without insecure_skip_verify: %v (class %v)", err, driver.Classify(err))
	}
}

func TestRequestBytes(t *testing.T) {
	t.Parallel()
	c, acts := config(t, "http://example.test:8080/base/", `{headers: {X-Token: abc, Accept: "*/*"}, user_agent: probe}`,
		`{method: POST, path: "/echo?q=1", body: hello, headers: {x-token: own}}`)
	got := string(acts[0].(*action).req)
	want := "POST /base/echo?q=1 HTTP/1.1\r\nHost: example.test:8080\r\nUser-Agent: probe\r\nAccept: */*\r\nX-Token: own\r\nContent-Length: 5\r\n\r\nhello"
	if got != want {
		t.Errorf("request:\n%q\nwant\n%q", got, want)
	}
	_ = c
}

func TestCompileErrorsArePositioned(t *testing.T) {
	t.Parallel()
	src := "users: 1\nclosed: {iterations: 1}\nactions:\n  - {path: no-slash, method: get}\n  - {path: /, body: x, body_size: 1KB}\n  - {path: /, methd: GET}\n"
	s, err := scenario.Parse("t.yaml", []byte(src), []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	c, errs := Decode(s.DriverConfig, "http://127.0.0.1:1")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	var all []string
	for _, a := range s.Actions {
		_, errs := c.Compile(a)
		for _, e := range errs {
			all = append(all, e.Error())
		}
	}
	want := []string{
		`t.yaml:4:22: actions[0].method: method "get" must be one upper-case word`,
		`t.yaml:4:6: actions[0].path: path "no-slash" must start with /`,
		`t.yaml:5:24: actions[1].body_size: give body or body_size, not both`,
		`t.yaml:6:15: actions[2].methd: unknown key "methd" (did you mean "method"?)`,
	}
	if len(all) != len(want) {
		t.Fatalf("errors:\n%s", strings.Join(all, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(all[i], want[i]) {
			t.Errorf("error %d = %q, want %q", i, all[i], want[i])
		}
	}
	if _, errs := Decode(s.DriverConfig, "ftp://x"); len(errs) == 0 {
		t.Error("an ftp:// target was accepted")
	}
	if _, errs := Decode(s.DriverConfig, "http://x"); len(errs) != 0 {
		t.Errorf("a good target was refused: %v", errs)
	}
}

// A server that reads a connection's second request and closes without
// answering (an idle close racing the request): a GET is sent again on a
// new connection, a POST is not (RFC 9110 §9.2.2) and fails in class io.
func TestRetryOnlyIdempotent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		method   string
		requests int64
		errs     int
	}{{"GET", 5, 0}, {"POST", 3, 1}} {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		var requests atomic.Int64
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() {
					defer c.Close()
					r := bufio.NewReader(c)
					for nth := 1; ; nth++ {
						for {
							line, err := r.ReadString('\n')
							if err != nil {
								return
							}
							if line == "\r\n" {
								break
							}
						}
						requests.Add(1)
						if nth >= 2 {
							return
						}
						c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"))
					}
				}()
			}
		}()
		c, acts := config(t, "http://"+ln.Addr().String(), "{}", "{path: /, method: "+tc.method+"}")
		s, _ := c.Open(context.Background(), driver.User{})
		errs := 0
		for i := 0; i < 3; i++ {
			if _, err := s.Do(context.Background(), acts[0]); err != nil {
				errs++
				if driver.Classify(err) != driver.IO {
					t.Errorf("%s: request %d: %v, want class io", tc.method, i, err)
				}
			}
		}
		s.Close()
		if errs != tc.errs || requests.Load() != tc.requests {
			t.Errorf("%s: %d errors and %d requests read, want %d and %d", tc.method, errs, requests.Load(), tc.errs, tc.requests)
		}
	}
}
