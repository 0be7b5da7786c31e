//go:build linux

package netloop

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/web"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/testenv"
)

// setupH2 is setup for a static h2c storm: the web driver's header blocks
// and status table, as the engine passes them.
func setupH2(t testing.TB, kind string, threads int, yaml, url string) (*plan.Plan, Config) {
	t.Helper()
	s, err := scenario.Parse("test.yaml", []byte(yaml), []string{web.Name})
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	p, err := plan.Compile(s, plan.Whole)
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	wc, errs := web.Decode(s.DriverConfig, url)
	if len(errs) > 0 {
		t.Fatalf("web: %v", errs)
	}
	cfg := Config{Kind: kind, Threads: threads, Timeout: wc.WireTimeout(), NewParser: wc.NewWireParser, KeepAlive: true}
	for _, a := range s.Actions {
		ca, errs := wc.Compile(a)
		if len(errs) > 0 {
			t.Fatalf("action %s: %v", a.Name, errs)
		}
		cfg.Actions = append(cfg.Actions, ca)
		cfg.Requests = append(cfg.Requests, ca.(driver.WireAction).WireRequest())
		cfg.Idempotent = append(cfg.Idempotent, driver.IsIdempotent(ca))
		cfg.H2Headers = append(cfg.H2Headers, ca.(driver.WireH2Action).WireH2Headers())
	}
	streams, ok := wc.WireH2()
	addr, plain := wc.WireAddr()
	if !ok || !plain {
		t.Fatalf("not a static h2c run: WireH2 %v, plain %v", ok, plain)
	}
	cfg.Addr, cfg.H2Streams, cfg.Status = addr, streams, wc.WireStatus
	return p, cfg
}

var nginxRequests = regexp.MustCompile(`\n\s*\d+\s+\d+\s+(\d+)\s*\n`)

// nginxCount reads the requests nginx has served (stub_status), this one
// included.
func nginxCount(t *testing.T, ng *testenv.Server) int64 {
	t.Helper()
	resp, err := http.Get(ng.URL + "/nginx_status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := nginxRequests.FindSubmatch(b)
	if m == nil {
		t.Fatalf("stub_status: %q", b)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

func startH2Nginx(t *testing.T) *testenv.Server {
	t.Helper()
	testenv.RequireBinary(t, "nginx", testenv.NginxPaths...)
	big := []byte(strings.Repeat("0123456789abcdef", (1<<20)/16))
	ng, err := testenv.StartNginx(context.Background(), testenv.NginxOptions{HTTP2: true, Files: map[string][]byte{"big.bin": big}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ng.Stop() })
	return ng
}

// A static storm over h2c against nginx: every request throng counts is
// one nginx served (stub_status), a missing page is status_4xx, a 1 MiB
// body (16 times a stream's window) completes, and streams share
// connections (users / streams of them).
func TestH2Nginx(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		ng := startH2Nginx(t) // its own: the kinds run in parallel
		yaml := `users: 24
closed: {iterations: 30}
web: {protocol: h2c, streams: 8}
actions:
  - {name: page, weight: 6, path: /one.html}
  - {name: missing, weight: 2, path: /nothing-here}
  - {name: big, weight: 1, path: /big.bin}
`
		p, cfg := setupH2(t, kind, 2, yaml, ng.H2CURL)
		h := newHarness(p, 2)
		before := nginxCount(t, ng)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		run(t, ctx, p, cfg, h)
		served := nginxCount(t, ng) - before - 1
		snaps := h.collect()
		count, _, errs := total(snaps)
		if count != 24*30 {
			t.Errorf("%d requests recorded, want %d", count, 24*30)
		}
		if served != int64(count) {
			t.Errorf("nginx served %d requests, throng recorded %d", served, count)
		}
		page, missing, big := snaps[0], snaps[1], snaps[2]
		if page.Errors != ([driver.NumClasses]uint64{}) || big.Errors != ([driver.NumClasses]uint64{}) {
			t.Errorf("errors: page%s, big%s", classErrors(page.Errors), classErrors(big.Errors))
		}
		if missing.Count == 0 || missing.Errors[driver.Status4xx] != missing.Count {
			t.Errorf("missing: %d requests, errors%s: want all status_4xx", missing.Count, classErrors(missing.Errors))
		}
		if big.Count == 0 || big.BytesIn < big.Count<<20 {
			t.Errorf("big: %d requests, %d bytes in: want at least 1 MiB each", big.Count, big.BytesIn)
		}
		if o := h.opened.Load(); o != 4 {
			t.Errorf("%d connections for 24 users at 8 streams each over 2 threads, want 4", o)
		}
		h.balanced(t)
		_ = errs
	})
}
