package web

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"golang.org/x/net/http2/hpack"

	"github.com/throng-io/throng/internal/driver"
)

// staticH2 compiles a static h2c scenario and returns its config and the
// header blocks of its actions, by name.
func staticH2(t *testing.T, src string) (*Config, map[string][]byte) {
	t.Helper()
	c, acts, errs := compileAll("http://127.0.0.1:8080/base/", src)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	blocks := map[string][]byte{}
	for name, a := range acts {
		wa, ok := a.(driver.WireH2Action)
		if !ok {
			t.Fatalf("action %s (%T) has no HTTP/2 header block", name, a)
		}
		blocks[name] = wa.WireH2Headers()
	}
	return c, blocks
}

func decodeAll(t *testing.T, d *hpack.Decoder, block []byte) []hpack.HeaderField {
	t.Helper()
	fields, err := d.DecodeFull(block)
	if err != nil {
		t.Fatalf("decoding %x: %v", block, err)
	}
	for i := range fields {
		fields[i].Sensitive = false
	}
	return fields
}

// A static request's header block is encoded once and sent as is on every
// connection, many times: it must decode to the request's fields whatever
// the server's decoder holds in its dynamic table (the blocks of other
// actions, entries another client added), and must add nothing to it.
func TestH2HeaderBlock(t *testing.T) {
	c, blocks := staticH2(t, `users: 1
closed: {iterations: 1}
web: {protocol: h2c, streams: 4, headers: {X-Team: blue, Connection: keep-alive}}
actions:
  - {name: a, path: /one.html}
  - {name: b, method: HEAD, path: /two?q=1, headers: {Accept: text/html, Host: example.org}}
`)
	if streams, ok := c.WireH2(); !ok || streams != 4 {
		t.Fatalf("WireH2 = %d, %v: want 4, true", streams, ok)
	}
	if _, plain := c.WireAddr(); !plain {
		t.Fatal("a static h2c run is not plain TCP for the event loops")
	}
	want := map[string][]hpack.HeaderField{
		"a": {{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "http"}, {Name: ":authority", Value: "127.0.0.1:8080"},
			{Name: ":path", Value: "/base/one.html"}, {Name: "user-agent", Value: "throng/dev"}, {Name: "x-team", Value: "blue"}},
		"b": {{Name: ":method", Value: "HEAD"}, {Name: ":scheme", Value: "http"}, {Name: ":authority", Value: "example.org"},
			{Name: ":path", Value: "/base/two?q=1"}, {Name: "user-agent", Value: "throng/dev"}, {Name: "accept", Value: "text/html"}, {Name: "x-team", Value: "blue"}},
	}
	// A decoder whose dynamic table another client filled: a block that
	// referred to entries by dynamic index would decode to those.
	var junk bytes.Buffer
	e := hpack.NewEncoder(&junk)
	for _, v := range []string{"1", "2", "3"} {
		e.WriteField(hpack.HeaderField{Name: "x-junk", Value: v})
	}
	filled := hpack.NewDecoder(4096, nil)
	decodeAll(t, filled, junk.Bytes())
	fresh := hpack.NewDecoder(4096, nil)
	for round := range 50 {
		for _, name := range []string{"a", "b", "a", "a", "b"} {
			for _, d := range []*hpack.Decoder{fresh, filled} {
				if got := decodeAll(t, d, blocks[name]); !slices.Equal(got, want[name]) {
					t.Fatalf("round %d, %s: decoded %v, want %v", round, name, got, want[name])
				}
			}
		}
	}
	// Nothing entered the fresh decoder's table: index 62, its first
	// dynamic entry, does not exist.
	if _, err := fresh.DecodeFull([]byte{0x80 | 62}); err == nil {
		t.Error("the blocks added entries to the decoder's dynamic table")
	}
	// And the junk's entries are still where the other client left them.
	if got := decodeAll(t, filled, []byte{0x80 | 62}); len(got) != 1 || got[0].Value != "3" {
		t.Errorf("the other client's newest entry is now %v, want x-junk: 3", got)
	}
}

// HTTP/2 on the event loops is for the static storm over h2c only: a
// dynamic run (a check), TLS, one connection per request, or a body are
// served otherwise, and a static run records its protocol.
func TestH2WireAbility(t *testing.T) {
	for _, tc := range []struct {
		name, target, src string
		wire, block       bool
	}{
		{"static", "http://127.0.0.1:1", "users: 1\nclosed: {iterations: 1}\nweb: {protocol: h2c}\nactions: [{path: /}]\n", true, true},
		{"dynamic", "http://127.0.0.1:1", "users: 1\nclosed: {iterations: 1}\nweb: {protocol: h2c}\nactions: [{path: /, status: 200}]\n", false, false},
		{"tls", "https://127.0.0.1:1", "users: 1\nclosed: {iterations: 1}\nweb: {protocol: h2}\nactions: [{path: /}]\n", false, false},
		{"close", "http://127.0.0.1:1", "users: 1\nclosed: {iterations: 1}\nweb: {protocol: h2c, keepalive: false}\nactions: [{path: /}]\n", false, true},
		{"body", "http://127.0.0.1:1", "users: 1\nclosed: {iterations: 1}\nweb: {protocol: h2c}\nactions: [{method: POST, path: /, body: hello}]\n", true, false},
		{"http1", "http://127.0.0.1:1", "users: 1\nclosed: {iterations: 1}\nactions: [{path: /}]\n", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, acts, errs := compileAll(tc.target, tc.src)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			_, wire := c.WireH2()
			if wire != tc.wire {
				t.Errorf("WireH2 ok = %v, want %v", wire, tc.wire)
			}
			for _, a := range acts {
				wa, _ := a.(driver.WireH2Action)
				if got := wa != nil && wa.WireH2Headers() != nil; got != tc.block {
					t.Errorf("header block %v, want %v", got, tc.block)
				}
			}
		})
	}
}

// A static h2c run through net/http (the goroutine executor) keeps no
// cookies and follows no redirect: a 302 is its answer, as on the loops.
func TestH2StaticOnGoroutines(t *testing.T) {
	srv, _ := protoServer(t, false, true)
	c, acts, errs := compileAll(srv.URL, "users: 1\nclosed: {iterations: 1}\nweb: {protocol: h2c, streams: 2}\nactions: [{name: a, path: /}]\n")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if err := c.Preflight(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := c.Describe()["protocol"]; got != "h2c (prior knowledge)" {
		t.Errorf("protocol %q", got)
	}
	s, err := c.Open(context.Background(), driver.User{ID: 0, Users: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.(*browser)
	if b.jar != nil {
		t.Error("a static run's user has a cookie jar")
	}
	if _, err := s.Do(context.Background(), acts["a"]); err != nil {
		t.Fatal(err)
	}
}
