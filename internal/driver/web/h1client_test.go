package web

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/testenv"
)

// leanOf returns the lean HTTP/1.1 client of a journey user against target.
func leanOf(t *testing.T, target string) *h1client {
	t.Helper()
	c, _, _ := journeyOf(t, target, `
users: 1
closed: {iterations: 1}
web: {insecure_skip_verify: true}
journeys:
  - name: j
    steps: [{name: s, path: /}]
`)
	b := open(t, c, 0, 1)
	if b.h1 == nil {
		t.Fatal("an HTTP/1.1 journey user has no lean client")
	}
	b.h1.keepBody = true
	return b.h1
}

// roundTrip sends one request and reads its body whole.
func roundTrip(t *testing.T, h *h1client, method, url string, body io.Reader) (*http.Response, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := h.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), nil
}

// The lean client against a real nginx: a chunked body longer than the
// read buffer, HEAD, 304 and 204 without a body, each leaving the
// connection usable for the next request (one dial), and Connection: close
// honoured (the next request dials again).
func TestLeanClientAgainstNginx(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 5000) + "END"
	ng := testenv.Nginx(t, testenv.NginxOptions{Files: map[string][]byte{"big.html": []byte(big)}})
	h := leanOf(t, ng.URL)
	type want struct {
		status    int
		body      string
		header    string // name=value that must be in the response's head
		dialsThen int
	}
	for _, tc := range []struct {
		method, path string
		want         want
	}{
		{"GET", "/chunked/big.html", want{200, big, "Transfer-Encoding=chunked", 1}},
		{"GET", "/one.html", want{200, "x", "Content-Length=1", 1}},
		{"HEAD", "/big.html", want{200, "", "Content-Length=80003", 1}},
		{"GET", "/one.html", want{200, "x", "", 1}},
		{"GET", "/notmodified", want{304, "", "", 1}},
		{"GET", "/nocontent", want{204, "", "", 1}},
		{"GET", "/chunked/one.html", want{200, "x", "Transfer-Encoding=chunked", 1}},
		{"GET", "/close", want{200, "closed\n", "Connection=close", 1}},
		{"GET", "/one.html", want{200, "x", "", 2}},
	} {
		resp, body, err := roundTrip(t, h, tc.method, ng.URL+tc.path, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		if resp.StatusCode != tc.want.status || body != tc.want.body {
			t.Errorf("%s %s: status %d, body %.40q (%d bytes); want %d, %.40q (%d bytes)", tc.method, tc.path,
				resp.StatusCode, body, len(body), tc.want.status, tc.want.body, len(tc.want.body))
		}
		if tc.want.header != "" {
			k, v, _ := strings.Cut(tc.want.header, "=")
			if got := resp.Header.Get(k); got != v {
				t.Errorf("%s %s: header %s %q, want %q", tc.method, tc.path, k, got, v)
			}
		}
		if h.dials != tc.want.dialsThen {
			t.Errorf("%s %s: %d connections dialled so far, want %d", tc.method, tc.path, h.dials, tc.want.dialsThen)
		}
	}
}

// Over TLS (https, HTTP/1.1 by ALPN's absence), on one connection.
func TestLeanClientTLSNginx(t *testing.T) {
	ng := testenv.Nginx(t, testenv.NginxOptions{HTTP2: true})
	h := leanOf(t, ng.TLSURL)
	for i := range 3 {
		resp, body, err := roundTrip(t, h, "GET", ng.TLSURL+"/chunked/one.html", nil)
		if err != nil || resp.StatusCode != 200 || body != "x" || resp.Header.Get("Transfer-Encoding") != "chunked" {
			t.Fatalf("request %d: %v %v %q", i, err, resp, body)
		}
	}
	if h.dials != 1 {
		t.Errorf("%d connections dialled, want 1", h.dials)
	}
	if _, ok := h.conns[0].conn.(*tls.Conn); !ok {
		t.Errorf("connection %T, want TLS", h.conns[0].conn)
	}
}

// nginx closes an idle keep-alive connection (keepalive_timeout): a GET
// sent on it finds the close and is sent again once on a new connection,
// as net/http does; a POST is not sent on it at all, the close being seen
// before (h1alive). Neither is an error.
func TestLeanClientIdleCloseNginx(t *testing.T) {
	ng := testenv.Nginx(t, testenv.NginxOptions{KeepaliveTimeout: 100 * time.Millisecond})
	h := leanOf(t, ng.URL)
	step := func(method string, dials, retries int) {
		t.Helper()
		resp, body, err := roundTrip(t, h, method, ng.URL+"/cookie/show", strings.NewReader(""))
		if err != nil {
			t.Fatalf("%s after an idle close: %v", method, err)
		}
		if resp.StatusCode != 200 || body != "cookie=[]\n" {
			t.Errorf("%s: %d %q", method, resp.StatusCode, body)
		}
		if h.dials != dials || h.retries != retries {
			t.Errorf("%s: dials %d, retries %d; want %d, %d", method, h.dials, h.retries, dials, retries)
		}
	}
	step("GET", 1, 0)
	time.Sleep(400 * time.Millisecond)
	step("GET", 2, 1)
	time.Sleep(400 * time.Millisecond)
	step("POST", 3, 1)
}

// A server that takes a request on a kept-alive connection and closes it
// without an answer: a GET is sent again once on a new connection (and
// answered there), a POST is not sent twice: it fails in class io.
func TestLeanClientCloseWithoutAnswer(t *testing.T) {
	for _, method := range []string{"GET", "POST"} {
		t.Run(method, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			requests := make(chan string, 10)
			go func() {
				for n := 0; ; n++ {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					go func(conn net.Conn, first bool) {
						defer conn.Close()
						r := bufio.NewReader(conn)
						for i := 0; ; i++ {
							req, err := http.ReadRequest(r)
							if err != nil {
								return
							}
							io.Copy(io.Discard, req.Body)
							requests <- req.Method
							if first && i == 1 {
								return // the second request on the first connection: close, no answer
							}
							io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
						}
					}(conn, n == 0)
				}
			}()
			h := leanOf(t, "http://"+ln.Addr().String())
			url := "http://" + ln.Addr().String() + "/"
			if _, body, err := roundTrip(t, h, method, url, strings.NewReader("a=1")); err != nil || body != "ok" {
				t.Fatalf("first %s: %q %v", method, body, err)
			}
			_, body, err := roundTrip(t, h, method, url, strings.NewReader("a=1"))
			seen := len(requests)
			switch method {
			case "GET":
				if err != nil || body != "ok" || h.retries != 1 || h.dials != 2 || seen != 3 {
					t.Errorf("GET: %q %v, retries %d, dials %d, requests %d; want ok, 1 retry, 2 dials, 3 requests", body, err, h.retries, h.dials, seen)
				}
			case "POST":
				if driver.Classify(err) != driver.IO || h.retries != 0 || seen != 2 {
					t.Errorf("POST: %v (class %s), retries %d, requests %d; want class io, no retry, 2 requests", err, driver.Classify(err), h.retries, seen)
				}
			}
		})
	}
}

// The point of the lean client: users with a kept-alive connection each
// hold no goroutine besides their own (net/http's Transport holds two per
// connection, a reader and a writer).
func TestLeanClientNoGoroutinePerConnection(t *testing.T) {
	ng := testenv.Nginx(t, testenv.NginxOptions{})
	const users = 20
	before := runtime.NumGoroutine()
	var hs []*h1client
	for range users {
		h := leanOf(t, ng.URL)
		if _, body, err := roundTrip(t, h, "GET", ng.URL+"/one.html", nil); err != nil || body != "x" {
			t.Fatalf("%q %v", body, err)
		}
		hs = append(hs, h)
	}
	after := runtime.NumGoroutine()
	open := 0
	for _, h := range hs {
		open += len(h.conns)
	}
	if open != users || after-before > 2 {
		t.Errorf("%d users with %d connections open: %d goroutines more, want at most 2", users, open, after-before)
	}
}
