//go:build linux

package netloop

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/web"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/sampler"
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

// nginxCount reads the requests nginx has served (stub_status), this one
// included.
func nginxCount(t *testing.T, ng *testenv.Server) int64 {
	t.Helper()
	n, err := testenv.NginxRequests(ng.URL)
	if err != nil {
		t.Fatal(err)
	}
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

// delayServer is Go's HTTP/2 server without TLS answering every request
// after delay, with at most maxStreams streams per connection (0: Go's
// default); peak is the most requests it ever held at once.
func delayServer(t *testing.T, delay time.Duration, maxStreams int) (url string, peak *atomic.Int64) {
	var cur atomic.Int64
	peak = new(atomic.Int64)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := cur.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(delay)
		cur.Add(-1)
		w.Write([]byte("x"))
	}))
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = p
	srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: maxStreams}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, peak
}

// Latency is timed per stream from its scheduled start: against a server
// that answers after a known delay, the percentiles are that delay; when
// the server allows 2 streams at a time to 8 users on one connection,
// each request waits for three others ahead of it, and its latency is
// four delays, while the server never holds more than 2.
func TestH2Latency(t *testing.T) {
	const delay = 100 * time.Millisecond
	for _, tc := range []struct {
		name               string
		users, streams, mx int
		want               time.Duration
	}{
		{"delay", 8, 4, 0, delay},
		{"max-concurrent-streams", 8, 8, 2, 4 * delay},
	} {
		for _, kind := range kinds(t) {
			t.Run(tc.name+"/"+kind, func(t *testing.T) {
				url, peak := delayServer(t, delay, tc.mx)
				// The server's own delay is exact; what comes on top is the
				// scheduling of the machine (measured on a loaded 2-core VM:
				// p50 +1 to +4 %, p90 up to +15 %; with the machine's load
				// average at 50, p90 +70 % and more). As in the web truth
				// test (internal/cli), an attempt that misses while the
				// process's threads waited for a CPU over half the time they
				// had work was starved, and is made again, up to 3 times; a
				// miss on a machine that left it its CPU fails at once.
				for attempt := 1; ; attempt++ {
					peak.Store(0)
					before := sampler.ReadSelf(nil)
					p, cfg := setupH2(t, kind, 1, fmt.Sprintf("users: %d\nclosed: {iterations: 8}\nweb: {protocol: h2c, streams: %d}\nactions: [{path: /}]\n", tc.users, tc.streams), url)
					h := newHarness(p, 1)
					run(t, context.Background(), p, cfg, h)
					s := h.collect()[0]
					if s.Count != uint64(tc.users*8) || s.ErrorCount() != 0 {
						t.Fatalf("%d requests, errors%s", s.Count, classErrors(s.Errors))
					}
					if tc.mx > 0 && peak.Load() != int64(tc.mx) {
						t.Fatalf("the server held %d requests at once, want its limit %d", peak.Load(), tc.mx)
					}
					p50, p90 := time.Duration(s.Latency.Quantile(0.5))*time.Microsecond, time.Duration(s.Latency.Quantile(0.9))*time.Microsecond
					t.Logf("attempt %d, %s: latency p50 %v p90 %v, server peak %d", attempt, kind, p50, p90, peak.Load())
					if p50 >= tc.want && p50 <= tc.want*105/100 && p90 >= tc.want && p90 <= tc.want*120/100 {
						return
					}
					wait := sampler.CPUWaitShare(before, sampler.ReadSelf(nil))
					if wait <= 0.5 || attempt == 3 {
						t.Fatalf("attempt %d, CPU wait %.0f %%: latency p50 %v, p90 %v: want %v (p50 +5 %%, p90 +20 %%)", attempt, 100*wait, p50, p90, tc.want)
					}
					t.Logf("attempt %d/3: starved (CPU wait %.0f %%)", attempt, 100*wait)
				}
			})
		}
	}
}

// The frames nginx does not send on demand, from a scripted server.
func TestH2Frames(t *testing.T) {
	for _, kind := range kinds(t) {
		t.Run(kind, func(t *testing.T) { h2Frames(t, kind) })
	}
}

func h2Frames(t *testing.T, kind string) {
	t.Run("ping", func(t *testing.T) {
		srv := newH2Server(t, func(w *h2Writer, _ int64, _ int, id uint32, _ string) { w.ok(id) })
		srv.hello = func(w *h2Writer) { w.ping([8]byte{1, 2, 3, 4, 5, 6, 7, 8}) }
		p, cfg := setupH2(t, kind, 1, "users: 2\nclosed: {iterations: 20}\nweb: {protocol: h2c, streams: 2}\nactions: [{path: /}]\n", "http://"+srv.addr())
		h := newHarness(p, 1)
		run(t, context.Background(), p, cfg, h)
		select {
		case got := <-srv.pingAck:
			if got != [8]byte{1, 2, 3, 4, 5, 6, 7, 8} {
				t.Errorf("PING acknowledged with %v", got)
			}
		case <-time.After(5 * time.Second):
			t.Error("PING not acknowledged")
		}
		if s := h.collect()[0]; s.Count != 40 || s.ErrorCount() != 0 {
			t.Errorf("%d requests, errors%s", s.Count, classErrors(s.Errors))
		}
	})
	t.Run("goaway", func(t *testing.T) {
		// Each connection answers 5 requests, says GOAWAY after the 5th
		// and ignores the streams above it: they were not processed, and
		// are sent again on a new connection.
		var answered atomic.Int64
		srv := newH2Server(t, func(w *h2Writer, _ int64, n int, id uint32, _ string) {
			if n <= 5 {
				answered.Add(1)
				w.ok(id)
			}
			if n == 5 {
				w.goAway(id)
			}
		})
		p, cfg := setupH2(t, kind, 1, "users: 4\nclosed: {iterations: 10}\nweb: {protocol: h2c, streams: 4}\nactions: [{path: /}]\n", "http://"+srv.addr())
		h := newHarness(p, 1)
		run(t, context.Background(), p, cfg, h)
		s := h.collect()[0]
		if s.Count != 40 || s.ErrorCount() != 0 || answered.Load() != 40 {
			t.Errorf("%d requests recorded, %d answered, errors%s: want 40, 40, none", s.Count, answered.Load(), classErrors(s.Errors))
		}
		if c := srv.conns.Load(); c < 8 {
			t.Errorf("%d connections for 40 requests at 5 each", c)
		}
		h.balanced(t)
	})
	t.Run("rst-stream", func(t *testing.T) {
		srv := newH2Server(t, func(w *h2Writer, _ int64, _ int, id uint32, path string) {
			if path == "/rst" {
				w.rst(id, http2.ErrCodeInternal)
				return
			}
			w.ok(id)
		})
		p, cfg := setupH2(t, kind, 1, "users: 4\nclosed: {iterations: 20}\nweb: {protocol: h2c, streams: 4}\nactions: [{name: ok, path: /ok}, {name: rst, path: /rst}]\n", "http://"+srv.addr())
		h := newHarness(p, 1)
		run(t, context.Background(), p, cfg, h)
		snaps := h.collect()
		ok, rst := snaps[0], snaps[1]
		if ok.Count+rst.Count != 80 || ok.ErrorCount() != 0 || rst.Count == 0 || rst.Errors[driver.IO] != rst.Count {
			t.Errorf("ok: %d, errors%s; rst: %d, errors%s", ok.Count, classErrors(ok.Errors), rst.Count, classErrors(rst.Errors))
		}
		if m := rst.Messages[driver.IO]; !strings.Contains(m, "INTERNAL_ERROR") {
			t.Errorf("message %q", m)
		}
		if c := srv.conns.Load(); c != 1 {
			t.Errorf("%d connections: a reset stream must not close its connection", c)
		}
	})
	t.Run("close", func(t *testing.T) {
		// The first connection closes at its 3rd request, unanswered: the
		// streams in flight fail in class io, the users go on over a new
		// connection.
		var answered atomic.Int64
		srv := newH2Server(t, func(w *h2Writer, conn int64, n int, id uint32, _ string) {
			if conn == 1 && n == 3 {
				w.c.Close()
				return
			}
			answered.Add(1)
			w.ok(id)
		})
		p, cfg := setupH2(t, kind, 1, "users: 2\nclosed: {iterations: 10}\nweb: {protocol: h2c, streams: 2}\nactions: [{path: /}]\n", "http://"+srv.addr())
		h := newHarness(p, 1)
		run(t, context.Background(), p, cfg, h)
		s := h.collect()[0]
		if s.Count != 20 || s.Errors[driver.IO] < 1 || s.Errors[driver.IO] > 2 || s.ErrorCount() != s.Errors[driver.IO] || s.Count-s.Errors[driver.IO] != uint64(answered.Load()) {
			t.Errorf("%d requests, %d answered, errors%s", s.Count, answered.Load(), classErrors(s.Errors))
		}
		if c := srv.conns.Load(); c != 2 {
			t.Errorf("%d connections, want 2", c)
		}
		h.balanced(t)
	})
}

// The open model over h2c: every arrival is recorded or dropped, against
// a server that answers after 100 ms, 80 sessions 10 to a connection, and
// its latency is that delay from the arrival's time.
func TestH2Open(t *testing.T) {
	const delay = 100 * time.Millisecond
	url, _ := delayServer(t, delay, 0)
	forKinds(t, func(t *testing.T, kind string) {
		// A starved attempt is made again (see TestH2Latency).
		for attempt := 1; ; attempt++ {
			before := sampler.ReadSelf(nil)
			p, cfg := setupH2(t, kind, 2, "users: 80\nmodel: open\nopen: {rate: 400/s}\nphases: {steady: 2s}\nweb: {protocol: h2c, streams: 10}\nactions: [{path: /}]\n", url)
			h := newHarness(p, 2)
			run(t, context.Background(), p, cfg, h)
			s := h.collect()[0]
			want := arrivalsOf(p)
			if s.Count+s.Dropped != uint64(want) || s.ErrorCount() != 0 {
				t.Errorf("recorded %d + dropped %d (errors%s), the plan has %d arrivals", s.Count, s.Dropped, classErrors(s.Errors), want)
			}
			if o := h.opened.Load(); o < 1 || o > 8 {
				t.Errorf("%d connections for 80 sessions at 10 streams, want at most 8", o)
			}
			h.balanced(t)
			p50 := time.Duration(s.Latency.Quantile(0.5)) * time.Microsecond
			t.Logf("attempt %d: latency p50 %v, %d dropped", attempt, p50, s.Dropped)
			if p50 >= delay && p50 <= delay*105/100 && s.Dropped == 0 {
				return
			}
			wait := sampler.CPUWaitShare(before, sampler.ReadSelf(nil))
			if wait <= 0.5 || attempt == 3 {
				t.Fatalf("attempt %d, CPU wait %.0f %%: latency p50 %v, want %v (+5 %%); %d dropped, want none", attempt, 100*wait, p50, delay, s.Dropped)
			}
			t.Logf("attempt %d/3: starved (CPU wait %.0f %%)", attempt, 100*wait)
		}
	})
}
