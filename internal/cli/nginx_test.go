package cli

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/result"
	webtarget "github.com/throng-io/throng/internal/targets/web"
	"github.com/throng-io/throng/internal/testenv"
)

// engines are the executors every real-server test runs with. epoll must
// work on every Linux; io_uring may be refused by the kernel (then skipped).
var engines = []string{"goroutines", "epoll", "io_uring"}

func requireEngine(t *testing.T, eng string) {
	t.Helper()
	if engineAvailable(eng) {
		return
	}
	if eng == "io_uring" {
		t.Skipf("io_uring is not available here: %v", engine.Supported(eng))
	}
	t.Fatalf("engine %s is not available: %v", eng, engine.Supported(eng))
}

// runResult runs throng in-process and reads its result.
func runResult(t *testing.T, args ...string) *result.Run {
	t.Helper()
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := throng(t, append(args, "-q", "-o", out)...)
	if code != 0 {
		t.Fatalf("throng %v: exit %d\n%s\n%s", args, code, stdout, stderr)
	}
	run, err := result.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func total(run *result.Run) *result.ActionSummary {
	return &result.Find(run.Repetitions[0].Summaries, result.All).Total
}

// web-static (the IIS study) against the real nginx: every request counted
// exactly, none failed, bytes match nginx's 1-byte responses.
func TestNginxWebStatic(t *testing.T) {
	ng := testenv.Nginx(t, testenv.NginxOptions{})
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			requireEngine(t, eng)
			run := runResult(t, "run", "web-static", "--target", ng.URL, "--users", "4", "--iterations", "2500", "--engine", eng)
			tot := total(run)
			if tot.Count != 10_000 || tot.Errors != 0 {
				t.Fatalf("count %d errors %d %v", tot.Count, tot.Errors, tot.Messages)
			}
			if run.Meta.Engine != eng {
				t.Errorf("engine %s, asked %s", run.Meta.Engine, eng)
			}
			// nginx answers /one.html with about 230 bytes of headers and 1 of body.
			all := result.Find(run.Repetitions[0].Summaries, result.All)
			perReq := tot.BytesInPerS * all.DurationS / float64(tot.Count)
			if perReq < 150 || perReq > 400 {
				t.Errorf("%.0f bytes received per request", perReq)
			}
		})
	}
}

// nginx closing connections after keepalive_requests, a new connection for
// every request, and 404s: all counted right.
func TestNginxConnectionsAndStatuses(t *testing.T) {
	ng := testenv.Nginx(t, testenv.NginxOptions{KeepaliveRequests: 7})
	dir := t.TempDir()
	file := filepath.Join(dir, "mix.yaml")
	os.WriteFile(file, []byte(`
users: 3
closed: {iterations: 300}
actions:
  - {name: page, path: /one.html, weight: 2}
  - {name: missing, path: /no-such-page, weight: 1}
`), 0o644)
	for _, eng := range engines {
		for _, keep := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/keepalive=%v", eng, keep), func(t *testing.T) {
				requireEngine(t, eng)
				f := file
				if !keep {
					f = filepath.Join(t.TempDir(), "close.yaml")
					b, _ := os.ReadFile(file)
					os.WriteFile(f, append(b, []byte("web: {keepalive: false}\n")...), 0o644)
				}
				run := runResult(t, "run", f, "--target", ng.URL, "--engine", eng)
				s := result.Find(run.Repetitions[0].Summaries, result.All)
				page, missing := s.Actions[0], s.Actions[1]
				if s.Total.Count != 900 || page.Errors != 0 || missing.Count != missing.ErrorsByClass["status_4xx"] {
					t.Fatalf("count %d, page errors %d %v, missing %d of which 4xx %d",
						s.Total.Count, page.Errors, page.Messages, missing.Count, missing.ErrorsByClass["status_4xx"])
				}
				if missing.Count < 200 || missing.Count > 400 {
					t.Errorf("%d of 900 picked the weight-1 action", missing.Count)
				}
			})
		}
	}
}

// The open model against nginx: arrivals on schedule, latency from the
// schedule, nothing dropped when the server keeps up.
func TestNginxOpenModel(t *testing.T) {
	ng := testenv.Nginx(t, testenv.NginxOptions{})
	file := filepath.Join(t.TempDir(), "open.yaml")
	os.WriteFile(file, []byte(`
users: 16
interval: 500ms
model: open
open: {rate: 400/s}
phases: {ramp_up: {duration: 1s, steps: 2}, steady: 2s, ramp_down: 1s}
actions: [{path: /one.html}]
`), 0o644)
	for _, eng := range engines {
		t.Run(eng, func(t *testing.T) {
			requireEngine(t, eng)
			run := runResult(t, "run", file, "--target", ng.URL, "--engine", eng)
			tot := total(run)
			// Λ = 400*(1*3/4) + 400*2 + 400/2 = 1300 expected arrivals.
			if math.Abs(float64(tot.Count)-1300) > 150 || tot.Errors != 0 || tot.Dropped != 0 {
				t.Errorf("count %d errors %d dropped %d", tot.Count, tot.Errors, tot.Dropped)
			}
			var phases []string
			for _, s := range run.Repetitions[0].Summaries {
				phases = append(phases, s.Phase)
			}
			if fmt.Sprint(phases) != "[ramp-up steady ramp-down all]" {
				t.Errorf("phases %v", phases)
			}
			steady := result.Find(run.Repetitions[0].Summaries, "steady")
			if r := steady.Total.RatePerS; r < 340 || r > 460 {
				t.Errorf("steady rate %.0f/s, want about 400", r)
			}
		})
	}
}

// web-shop behind a real nginx: nginx proxies /shop/ to the demo shop (as
// a front end before its application server) and serves HTTP/1.1, HTTP/2
// over TLS and h2c; the journeys go through each, cookies and CSRF token
// included, and the result says what was spoken.
func TestNginxWebShop(t *testing.T) {
	shop, err := webtarget.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer shop.Close()
	ng := testenv.Nginx(t, testenv.NginxOptions{HTTP2: true, Upstream: shop.Addr()})
	for _, tc := range []struct{ name, url, proto, want string }{
		{"http1", ng.URL, "http1", "http/1.1"},
		{"h2", ng.TLSURL, "h2", "h2 (TLS, ALPN)"},
		{"h2c", ng.H2CURL, "h2c", "h2c (prior knowledge)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := runResult(t, "run", "web-shop", "--target", tc.url, "--users", "3", "--iterations", "4",
				"--set", "think=0s", "--set", "protocol="+tc.proto, "--set", "insecure=true")
			all := result.Find(run.Repetitions[0].Summaries, result.All)
			journeys := uint64(0)
			for _, a := range all.Actions {
				if a.Errors != 0 {
					t.Errorf("%s: %d errors %v", a.Name, a.Errors, a.Messages)
				}
				if a.Name == "journey:buy" || a.Name == "journey:browse" {
					journeys += a.Count
				}
			}
			if journeys != 12 || run.Meta.Settings["protocol"] != tc.want {
				t.Errorf("%d journeys (want 12), protocol %q (want %q)", journeys, run.Meta.Settings["protocol"], tc.want)
			}
		})
	}
}

// The static storm over h2c against nginx with HTTP/2: auto picks an event
// loop, every engine counts each request nginx served (web-static with
// protocol h2c, 8 users to a connection), and the result says what was
// spoken and on which engine.
func TestNginxWebStaticH2C(t *testing.T) {
	ng := testenv.Nginx(t, testenv.NginxOptions{HTTP2: true})
	scen := filepath.Join(t.TempDir(), "h2.yaml")
	if err := os.WriteFile(scen, []byte("name: h2\nusers: 16\nclosed: {iterations: 250}\nweb: {protocol: h2c, streams: 8}\nactions: [{name: page, path: /one.html}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, eng := range append([]string{"auto"}, engines...) {
		t.Run(eng, func(t *testing.T) {
			if eng != "auto" {
				requireEngine(t, eng)
			}
			before := nginxRequests(t, ng)
			run := runResult(t, "run", scen, "--target", ng.H2CURL, "--engine", eng)
			served := nginxRequests(t, ng) - before - 1 // this status request counts itself
			tot := total(run)
			if tot.Count != 4000 || tot.Errors != 0 || served != 4000 {
				t.Errorf("count %d errors %d %v; nginx served %d", tot.Count, tot.Errors, tot.Messages, served)
			}
			if p := run.Meta.Settings["protocol"]; p != "h2c (prior knowledge)" {
				t.Errorf("protocol %q", p)
			}
			if want := eng; eng != "auto" && run.Meta.Engine != want {
				t.Errorf("engine %q, want %q", run.Meta.Engine, want)
			} else if eng == "auto" && run.Meta.Engine == "goroutines" {
				t.Error("auto ran the static h2c storm on goroutines, not an event loop")
			}
		})
	}
}

// nginxRequests reads the requests nginx has served (stub_status), this
// one included.
func nginxRequests(t *testing.T, ng *testenv.Server) int64 {
	t.Helper()
	n, err := testenv.NginxRequests(ng.URL)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
