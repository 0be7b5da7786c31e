package web

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// protoServer answers with the protocol of the request and counts its
// connections.
func protoServer(t *testing.T, tlsOn, h2 bool) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(r.Proto))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	p := new(http.Protocols)
	p.SetHTTP1(true)
	if tlsOn {
		p.SetHTTP2(h2)
		srv.EnableHTTP2 = h2
		srv.Config.Protocols = p
		srv.StartTLS()
	} else {
		p.SetUnencryptedHTTP2(h2)
		srv.Config.Protocols = p
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, &conns
}

// h2 over TLS (ALPN) and h2c (prior knowledge) carry the users'
// requests as HTTP/2, streams users to a connection; the protocol found
// before the run is recorded; a server without HTTP/2 is refused before
// the run with what it offers instead.
func TestHTTP2(t *testing.T) {
	for _, tc := range []struct {
		name, web string
		tls       bool
		want      string
	}{
		{"h2", "{protocol: h2, streams: 2, insecure_skip_verify: true}", true, "h2 (TLS, ALPN)"},
		{"h2c", "{protocol: h2c, streams: 2}", false, "h2c (prior knowledge)"},
		{"http1-tls", "{protocol: http1, cookies: true, insecure_skip_verify: true}", true, "http/1.1 (TLS, ALPN)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, conns := protoServer(t, tc.tls, tc.name != "http1-tls")
			c, acts, _ := journeyOf(t, srv.URL, "users: 4\nclosed: {iterations: 1}\nweb: "+tc.web+"\nactions: [{name: a, path: /, checks: [{name: proto, contains: HTTP/}]}]\n")
			if err := c.Preflight(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := c.Describe()["protocol"]; got != tc.want {
				t.Errorf("protocol %q, want %q", got, tc.want)
			}
			preflight := conns.Load()
			var bs []*browser
			for u := range 4 {
				bs = append(bs, open(t, c, u, 4))
			}
			wantProto := "HTTP/2.0"
			if tc.name == "http1-tls" {
				wantProto = "HTTP/1.1"
			}
			for round := range 3 {
				for u, b := range bs {
					b.Begin()
					out, err := b.Do(context.Background(), acts["a"])
					if err != nil {
						t.Fatalf("user %d round %d: %v", u, round, err)
					}
					_ = out
				}
			}
			// The server echoed its protocol into each check's body.
			b := bs[0]
			resp, err := b.client.Get(srv.URL + "/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != wantProto {
				t.Errorf("the server saw %q, want %q", body, wantProto)
			}
			// HTTP/2: 4 users, 2 to a connection; HTTP/1.1: the pool
			// reuses a connection a user at a time.
			if got := conns.Load() - preflight; tc.name != "http1-tls" && got != 2 {
				t.Errorf("%d connections for 4 users at 2 streams each, want 2", got)
			}
		})
	}
	// A server without HTTP/2.
	srv, _ := protoServer(t, true, false)
	c, _, _ := journeyOf(t, srv.URL, "users: 1\nclosed: {iterations: 1}\nweb: {protocol: h2, insecure_skip_verify: true}\nactions: [{path: /}]\n")
	if err := c.Preflight(context.Background()); err == nil || !strings.Contains(err.Error(), `does not offer HTTP/2 (ALPN chose "http/1.1")`) {
		t.Errorf("h2 against HTTP/1.1 only: %v", err)
	}
	plain, _ := protoServer(t, false, false)
	c, _, _ = journeyOf(t, plain.URL, "users: 1\nclosed: {iterations: 1}\nweb: {protocol: h2c}\nactions: [{path: /}]\n")
	if err := c.Preflight(context.Background()); err == nil || !strings.Contains(err.Error(), "does not speak HTTP/2 without TLS") {
		t.Errorf("h2c against HTTP/1.1 only: %v", err)
	}
}
