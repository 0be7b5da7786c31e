package web

import (
	"context"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/testenv"
)

// Against a real nginx (internal/testenv): redirect chains followed and
// counted, a loop ended at the bound; cookies kept, sent back on their
// path only, and forgotten when nginx expires them; HTTP/2 over TLS and
// h2c, negotiated and used.
func TestAgainstNginx(t *testing.T) {
	ng := testenv.Nginx(t, testenv.NginxOptions{HTTP2: true})
	src := `
users: 1
closed: {iterations: 1}
web: {redirects: 5, insecure_skip_verify: true, protocol: %s}
journeys:
  - name: j
    steps:
      - {name: chain, path: /redirect/3, checks: [{name: page, equals: "x"}]}
      - {name: loop, path: /loop}
      - {name: set, path: /cookie/set}
      - {name: elsewhere, path: /cookie/elsewhere}
      - name: show
        path: /cookie/show
        checks:
          - {name: sent-back, contains: "nginx_sid=abc123"}
          - {name: not-on-its-path, not_contains: scoped}
      - {name: expire, path: /cookie/expire}
      - name: show-again
        path: /cookie/show
        checks: [{name: forgotten, equals: "cookie=[]\n"}]
`
	for _, tc := range []struct{ name, url, proto, want string }{
		{"http1", ng.URL, "http1", "http/1.1"},
		{"h2", ng.TLSURL, "h2", "h2 (TLS, ALPN)"},
		{"h2c", ng.H2CURL, "h2c", "h2c (prior knowledge)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, acts, sink := journeyOf(t, tc.url, strings.Replace(src, "%s", tc.proto, 1))
			if err := c.Preflight(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := c.Describe()["protocol"]; got != tc.want {
				t.Errorf("protocol %q, want %q", got, tc.want)
			}
			b := open(t, c, 0, 1)
			b.Begin()
			for _, step := range []string{"chain", "loop", "set", "elsewhere", "show", "expire", "show-again"} {
				_, err := b.Do(context.Background(), acts[step])
				switch {
				case step == "loop":
					if driver.Classify(err) != driver.RedirectLoop {
						t.Errorf("loop: %v, want class redirect_loop", err)
					}
				case err != nil:
					t.Errorf("%s: %v", step, err)
				}
			}
			// 3 in the chain, 5 in the loop before its bound.
			if sink.n["redirect/ok"] != 8 {
				t.Errorf("redirects %d, want 8", sink.n["redirect/ok"])
			}
			for _, ck := range []string{"page", "sent-back", "not-on-its-path", "forgotten"} {
				if sink.n["check:"+ck+"/ok"] != 1 {
					t.Errorf("check %s: %v %v", ck, sink.n, sink.msgs)
				}
			}
		})
	}
}
