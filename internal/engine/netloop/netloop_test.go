//go:build linux

package netloop

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/driver/web"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/scenario"
)

// TestMain gives the in-process test servers their own Ps: a loop thread
// holds its P while it waits in the kernel (a blocking Syscall keeps it
// until sysmon retakes it), so with as many loop threads as GOMAXPROCS the
// servers' goroutines would only run when a loop yields (every few ms).
func TestMain(m *testing.M) {
	runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 6))
	os.Exit(m.Run())
}

// kinds returns the loop kinds this machine runs; io_uring is skipped (and
// logged) where the kernel refuses it.
func kinds(t *testing.T) []string {
	ks := []string{Epoll}
	if err := Supported(IOUring); err != nil {
		t.Logf("io_uring not tested: %v", err)
	} else {
		ks = append(ks, IOUring)
	}
	return ks
}

// forKinds runs f for every kind as a subtest.
func forKinds(t *testing.T, f func(t *testing.T, kind string)) {
	for _, k := range kinds(t) {
		t.Run(k, func(t *testing.T) {
			t.Parallel()
			f(t, k)
		})
	}
}

// setup compiles a scenario (YAML) for a target URL into a plan and a
// loop configuration, with the real web driver's requests and parser.
func setup(t testing.TB, kind string, threads int, yaml, url string) (*plan.Plan, Config) {
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
	addr, plain := wc.WireAddr()
	if !plain {
		t.Fatal("not plain TCP")
	}
	cfg := Config{
		Kind: kind, Threads: threads, Addr: addr,
		KeepAlive: wc.WireKeepAlive(), Timeout: wc.WireTimeout(), NewParser: wc.NewWireParser,
	}
	for _, a := range s.Actions {
		ca, errs := wc.Compile(a)
		if len(errs) > 0 {
			t.Fatalf("action %s: %v", a.Name, errs)
		}
		cfg.Actions = append(cfg.Actions, ca)
		cfg.Requests = append(cfg.Requests, ca.(driver.WireAction).WireRequest())
		cfg.Idempotent = append(cfg.Idempotent, driver.IsIdempotent(ca))
	}
	return p, cfg
}

// harness is the engine's side for a test: clock, recorders, counters.
type harness struct {
	base     time.Time
	recs     []*metrics.Recorder
	actions  int
	started  atomic.Int64
	stopped  atomic.Int64
	finished atomic.Int64
	opened   atomic.Int64
	closed   atomic.Int64
	aborted  atomic.Int64
	threads  atomic.Int64
	mu       sync.Mutex
	starts   []time.Duration // when Started was called
}

func newHarness(p *plan.Plan, threads int) *harness {
	h := &harness{base: time.Now(), actions: len(p.Actions)}
	for range threads {
		h.recs = append(h.recs, metrics.NewRecorder(len(p.Actions), nil))
	}
	return h
}

func (h *harness) now() time.Duration { return time.Since(h.base) }

func (h *harness) hooks() Hooks {
	return Hooks{
		Now:       h.now,
		Recorders: h.recs,
		Started: func() {
			h.started.Add(1)
			h.mu.Lock()
			h.starts = append(h.starts, h.now())
			h.mu.Unlock()
		},
		Stopped: func(finished bool) {
			h.stopped.Add(1)
			if finished {
				h.finished.Add(1)
			}
		},
		ConnOpened: func() { h.opened.Add(1) },
		ConnClosed: func() { h.closed.Add(1) },
		Thread:     func(int) { h.threads.Add(1) },
		Aborted:    func() { h.aborted.Add(1) },
	}
}

// collect takes everything recorded so far, by action, all threads merged.
func (h *harness) collect() []metrics.ActionSnapshot {
	out := make([]metrics.ActionSnapshot, h.actions)
	for _, r := range h.recs {
		snaps := r.Snapshots()
		r.Collect(snaps)
		for i := range out {
			out[i].Merge(&snaps[0][i])
		}
	}
	return out
}

func total(snaps []metrics.ActionSnapshot) (count, dropped uint64, errs [driver.NumClasses]uint64) {
	for _, s := range snaps {
		count += s.Count
		dropped += s.Dropped
		for c := range errs {
			errs[c] += s.Errors[c]
		}
	}
	return
}

// balanced checks the gauges after Run returned.
func (h *harness) balanced(t *testing.T) {
	t.Helper()
	if s, e := h.started.Load(), h.stopped.Load(); s != e {
		t.Errorf("Started %d times, Stopped %d times", s, e)
	}
	if o, c := h.opened.Load(), h.closed.Load(); o != c {
		t.Errorf("ConnOpened %d, ConnClosed %d", o, c)
	}
}

// run runs the loop and returns how long it took.
func run(t *testing.T, ctx context.Context, p *plan.Plan, cfg Config, h *harness) time.Duration {
	t.Helper()
	start := time.Now()
	if err := Run(ctx, p, cfg, h.hooks()); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return time.Since(start)
}

func classErrors(errs [driver.NumClasses]uint64) string {
	var b strings.Builder
	for c, n := range errs {
		if n > 0 {
			fmt.Fprintf(&b, " %s=%d", driver.Class(c), n)
		}
	}
	return b.String()
}

func TestSupported(t *testing.T) {
	if err := Supported(Epoll); err != nil {
		t.Errorf("epoll: %v", err)
	}
	if err := Supported("kqueue"); err == nil {
		t.Error("kqueue: no error")
	}
	t.Logf("io_uring: %v", Supported(IOUring))
}

// closed.total: the threads' users share one count through the Take hook
// and the server sees exactly that many requests.
func TestClosedSharedTotal(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := newServer(t)
		p, cfg := setup(t, kind, 2, `
users: 5
closed: {total: 1001}
actions: [{path: /ok}]
`, srv.url())
		h := newHarness(p, 2)
		var taken atomic.Int64
		hooks := h.hooks()
		hooks.Take = func() bool { return taken.Add(1) <= p.Total }
		if err := Run(context.Background(), p, cfg, hooks); err != nil {
			t.Fatal(err)
		}
		count, _, errs := total(h.collect())
		if count != 1001 || errs != [driver.NumClasses]uint64{} || srv.requests.Load() != 1001 {
			t.Fatalf("recorded %d (errors%s), server saw %d, want 1001", count, classErrors(errs), srv.requests.Load())
		}
		if h.finished.Load() != 5 {
			t.Errorf("%d users finished, want 5", h.finished.Load())
		}
		h.balanced(t)
		hooks.Take = nil
		if err := Run(context.Background(), p, cfg, hooks); err == nil || !strings.Contains(err.Error(), "Take") {
			t.Errorf("no Take hook: %v", err)
		}
	})
}

func TestClosedCountBound(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keepalive=%v", keep), func(t *testing.T) {
			forKinds(t, func(t *testing.T, kind string) {
				srv := newServer(t)
				iters := 500
				if !keep {
					iters = 100
				}
				p, cfg := setup(t, kind, 2, fmt.Sprintf(`
users: 3
closed: {iterations: %d}
web: {keepalive: %v}
actions: [{path: /ok}]
`, iters, keep), srv.url())
				h := newHarness(p, 2)
				run(t, context.Background(), p, cfg, h)
				count, _, errs := total(h.collect())
				if want := uint64(3 * iters); count != want || errs != [driver.NumClasses]uint64{} {
					t.Fatalf("recorded %d (errors%s), want %d OK", count, classErrors(errs), want)
				}
				if srv.requests.Load() != int64(3*iters) {
					t.Errorf("server saw %d requests", srv.requests.Load())
				}
				if h.started.Load() != 3 || h.finished.Load() != 3 || h.threads.Load() != 2 {
					t.Errorf("started %d, finished %d, threads %d", h.started.Load(), h.finished.Load(), h.threads.Load())
				}
				wantConns := int64(3)
				if !keep {
					wantConns = int64(3 * iters)
				}
				if h.opened.Load() != wantConns || srv.accepted.Load() != wantConns {
					t.Errorf("opened %d connections, server accepted %d, want %d", h.opened.Load(), srv.accepted.Load(), wantConns)
				}
				h.balanced(t)
			})
		})
	}
}

// TestManyUsers runs enough users that io_uring waits for batches of
// completions.
func TestManyUsers(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := newServer(t)
		p, cfg := setup(t, kind, 1, `
users: 120
closed: {iterations: 100}
actions: [{path: /ok}]
`, srv.url())
		h := newHarness(p, 1)
		run(t, context.Background(), p, cfg, h)
		count, _, errs := total(h.collect())
		if count != 12000 || errs != [driver.NumClasses]uint64{} {
			t.Fatalf("recorded %d (errors%s), want 12000 OK", count, classErrors(errs))
		}
		if h.opened.Load() != 120 {
			t.Errorf("opened %d connections, want 120", h.opened.Load())
		}
		h.balanced(t)
	})
}

// TestActionWeights checks that every user picks its actions exactly as the
// goroutine executor would: the same random stream, one draw per iteration.
func TestActionWeights(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := newServer(t)
		p, cfg := setup(t, kind, 2, `
users: 4
closed: {iterations: 300}
actions:
  - {name: a, weight: 3, path: /ok}
  - {name: b, weight: 1, path: /404}
  - {name: c, weight: 0, path: /500}
`, srv.url())
		h := newHarness(p, 2)
		run(t, context.Background(), p, cfg, h)
		want := make([]uint64, len(p.Actions))
		for _, u := range p.Users {
			rng := plan.NewRand(u.Seed)
			for range p.Iterations {
				want[p.ChooseAction(rng.Float64())]++
				p.ThinkTime(rng)
			}
		}
		snaps := h.collect()
		for i, s := range snaps {
			if s.Count != want[i] {
				t.Errorf("action %s: %d, want %d", p.Actions[i].Name, s.Count, want[i])
			}
		}
		if snaps[0].Count < 800 || snaps[1].Count < 200 || snaps[2].Count != 0 {
			t.Errorf("counts %d/%d/%d do not follow the weights 3/1/0", snaps[0].Count, snaps[1].Count, snaps[2].Count)
		}
		if snaps[1].Errors[driver.Status4xx] != snaps[1].Count || snaps[0].ErrorCount() != 0 {
			t.Errorf("classes: a%s, b%s", classErrors(snaps[0].Errors), classErrors(snaps[1].Errors))
		}
		if !strings.Contains(snaps[1].Messages[driver.Status4xx], "404") {
			t.Errorf("4xx message %q", snaps[1].Messages[driver.Status4xx])
		}
		h.balanced(t)
	})
}

func TestThinkTime(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := newServer(t)
		p, cfg := setup(t, kind, 1, `
users: 2
closed: {iterations: 10, think: 20ms}
actions: [{path: /ok}]
`, srv.url())
		h := newHarness(p, 1)
		took := run(t, context.Background(), p, cfg, h)
		count, _, _ := total(h.collect())
		if count != 20 {
			t.Fatalf("recorded %d, want 20", count)
		}
		// No think time after the last iteration.
		if min := 9 * 20 * time.Millisecond; took < min {
			t.Errorf("took %s, want at least %s", took, min)
		}
		if took > 2*time.Second {
			t.Errorf("took %s", took)
		}
		h.balanced(t)
	})
}

// TestResponses covers the response framings and the failure classes. A
// failed response's sample message is the wire's own (driver.WireErrorer:
// the web parser's "HTTP status 500", as the goroutine executor's session
// says it), not the loop's generic one.
func TestResponses(t *testing.T) {
	cases := []struct {
		path    string
		class   driver.Class
		bytesIn uint64 // per response, 0: not checked
		msg     string // the class's sample message, "": not checked
	}{
		{"/500", driver.Status5xx, uint64(len(resp500)), "HTTP status 500"},
		{"/chunked", driver.OK, uint64(len(respChunked)), ""},
		{"/eof", driver.OK, uint64(len(respEOF)), ""},
		{"/mid", driver.IO, uint64(len(respMid)), ""},
		{"/big", driver.OK, uint64(len(respBig)), ""},
		{"/once", driver.OK, uint64(len(respOK)), ""},
		{"/garbage", driver.Protocol, 0, "malformed HTTP response"},
	}
	for _, tc := range cases {
		t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
			forKinds(t, func(t *testing.T, kind string) {
				srv := newServer(t)
				p, cfg := setup(t, kind, 1, fmt.Sprintf(`
users: 3
closed: {iterations: 40}
actions: [{path: %s}]
`, tc.path), srv.url())
				h := newHarness(p, 1)
				run(t, context.Background(), p, cfg, h)
				s := h.collect()[0]
				if s.Count != 120 {
					t.Fatalf("recorded %d, want 120", s.Count)
				}
				if tc.class == driver.OK && s.ErrorCount() != 0 || tc.class != driver.OK && s.Errors[tc.class] != s.Count {
					t.Fatalf("classes:%s, want all %s", classErrors(s.Errors), tc.class)
				}
				if tc.msg != "" && s.Messages[tc.class] != tc.msg {
					t.Errorf("%s message %q, want %q", tc.class, s.Messages[tc.class], tc.msg)
				}
				if tc.bytesIn > 0 && s.BytesIn != 120*tc.bytesIn {
					t.Errorf("bytes in %d, want %d", s.BytesIn, 120*tc.bytesIn)
				}
				if s.BytesOut < 120*uint64(len(cfg.Requests[0])) || tc.path != "/once" && s.BytesOut != 120*uint64(len(cfg.Requests[0])) {
					t.Errorf("bytes out %d, want %d", s.BytesOut, 120*len(cfg.Requests[0]))
				}
				h.balanced(t)
			})
		})
	}
}

// TestLargeRequest sends bodies larger than a socket buffer: epoll keeps
// the unsent tail for EPOLLOUT, io_uring sends with a completion.
func TestLargeRequest(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := newServer(t)
		p, cfg := setup(t, kind, 1, `
users: 2
closed: {iterations: 20}
actions: [{method: POST, path: /ok, body_size: 4MiB}]
`, srv.url())
		h := newHarness(p, 1)
		run(t, context.Background(), p, cfg, h)
		s := h.collect()[0]
		if s.Count != 40 || s.ErrorCount() != 0 {
			t.Fatalf("recorded %d, errors%s", s.Count, classErrors(s.Errors))
		}
		if s.BytesOut != 40*uint64(len(cfg.Requests[0])) {
			t.Errorf("bytes out %d, want %d", s.BytesOut, 40*len(cfg.Requests[0]))
		}
		if srv.accepted.Load() != 2 {
			t.Errorf("%d connections, want 2 (keep-alive)", srv.accepted.Load())
		}
		h.balanced(t)
	})
}

func TestRefused(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		p, cfg := setup(t, kind, 1, `
users: 3
closed: {iterations: 200}
actions: [{path: /ok}]
`, "http://"+refusedAddr(t))
		h := newHarness(p, 1)
		took := run(t, context.Background(), p, cfg, h)
		s := h.collect()[0]
		if s.Count != 600 || s.Errors[driver.Dial] != 600 {
			t.Fatalf("recorded %d, errors%s, want 600 dial errors", s.Count, classErrors(s.Errors))
		}
		if !strings.Contains(s.Messages[driver.Dial], "refused") {
			t.Errorf("dial message %q", s.Messages[driver.Dial])
		}
		if took > 3*time.Second {
			t.Errorf("took %s", took)
		}
		h.balanced(t)
	})
}

func TestTimeout(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := newServer(t)
		p, cfg := setup(t, kind, 1, `
users: 3
closed: {iterations: 2}
web: {timeout: 150ms}
actions: [{path: /stall}]
`, srv.url())
		h := newHarness(p, 1)
		took := run(t, context.Background(), p, cfg, h)
		s := h.collect()[0]
		if s.Count != 6 || s.Errors[driver.Timeout] != 6 {
			t.Fatalf("recorded %d, errors%s, want 6 timeouts", s.Count, classErrors(s.Errors))
		}
		if took < 300*time.Millisecond || took > 1500*time.Millisecond {
			t.Errorf("took %s, want about 300ms", took)
		}
		if lat := time.Duration(s.Latency.Min) * time.Microsecond; lat < 150*time.Millisecond {
			t.Errorf("a timeout after %s", lat)
		}
		h.balanced(t)
	})
}

func TestCancel(t *testing.T) {
	for _, path := range []string{"/stall", "/ok"} {
		t.Run(strings.TrimPrefix(path, "/"), func(t *testing.T) {
			forKinds(t, func(t *testing.T, kind string) {
				srv := newServer(t)
				p, cfg := setup(t, kind, 2, fmt.Sprintf(`
users: 20
phases: {steady: 1m}
actions: [{path: %s}]
`, path), srv.url())
				h := newHarness(p, 2)
				ctx, cancel := context.WithCancel(context.Background())
				var stoppedAt time.Time
				time.AfterFunc(300*time.Millisecond, func() {
					stoppedAt = time.Now()
					cancel()
				})
				run(t, ctx, p, cfg, h)
				if late := time.Since(stoppedAt); late > 200*time.Millisecond {
					t.Errorf("Run returned %s after the cancel", late)
				}
				before, _, _ := total(h.collect())
				if path == "/stall" && (h.aborted.Load() != 20 || before != 0) {
					t.Errorf("aborted %d, recorded %d; want 20 aborted, none recorded", h.aborted.Load(), before)
				}
				if path == "/ok" && (before == 0 || h.aborted.Load() > 20) {
					t.Errorf("recorded %d, aborted %d", before, h.aborted.Load())
				}
				time.Sleep(50 * time.Millisecond)
				if after, _, _ := total(h.collect()); after != 0 {
					t.Errorf("%d recorded after Run returned", after)
				}
				if h.started.Load() != 20 || h.finished.Load() != 0 {
					t.Errorf("started %d, finished %d", h.started.Load(), h.finished.Load())
				}
				h.balanced(t)
			})
		})
	}
}

// TestRamp checks that users log on at their planned start times.
func TestRamp(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := newServer(t)
		p, cfg := setup(t, kind, 2, `
users: 5
interval: 100ms
phases: {ramp_up: {duration: 500ms}, steady: 300ms}
closed: {think: 10ms}
actions: [{path: /ok}]
`, srv.url())
		h := newHarness(p, 2)
		took := run(t, context.Background(), p, cfg, h)
		var planned []time.Duration
		for _, u := range p.Users {
			planned = append(planned, u.Start)
		}
		sort.Slice(planned, func(i, j int) bool { return planned[i] < planned[j] })
		h.mu.Lock()
		starts := append([]time.Duration(nil), h.starts...)
		h.mu.Unlock()
		sort.Slice(starts, func(i, j int) bool { return starts[i] < starts[j] })
		if len(starts) != len(planned) {
			t.Fatalf("%d users started, want %d", len(starts), len(planned))
		}
		for i := range planned {
			if starts[i] < planned[i] || starts[i] > planned[i]+50*time.Millisecond {
				t.Errorf("user %d started at %s, planned %s", i, starts[i], planned[i])
			}
		}
		if took < 750*time.Millisecond || took > 2*time.Second {
			t.Errorf("took %s, want about 800ms", took)
		}
		count, _, errs := total(h.collect())
		if count == 0 || errs != [driver.NumClasses]uint64{} {
			t.Errorf("recorded %d, errors%s", count, classErrors(errs))
		}
		h.balanced(t)
	})
}

// arrivalsOf counts the plan's aggregate arrivals.
func arrivalsOf(p *plan.Plan) int {
	a := p.Arrivals(nil)
	n := 0
	for {
		if _, _, _, ok := a.Next(); !ok {
			return n
		}
		n++
	}
}

func TestOpen(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := newServer(t)
		p, cfg := setup(t, kind, 2, `
users: 50
model: open
open: {rate: 2000/s}
phases: {steady: 2s}
actions: [{path: /ok}]
`, srv.url())
		h := newHarness(p, 2)
		took := run(t, context.Background(), p, cfg, h)
		want := arrivalsOf(p)
		snaps := h.collect()
		s := snaps[0]
		if s.Count+s.Dropped != uint64(want) {
			t.Errorf("recorded %d + dropped %d, the plan has %d arrivals", s.Count, s.Dropped, want)
		}
		if math.Abs(float64(s.Count)-4000) > 0.05*4000 || s.ErrorCount() != 0 {
			t.Errorf("recorded %d (errors%s), want about 4000", s.Count, classErrors(s.Errors))
		}
		if took < 1900*time.Millisecond || took > 3*time.Second {
			t.Errorf("took %s", took)
		}
		// Latency is from the arrival's time: small when nothing waits. The
		// in-process server needs Ps besides the four loop threads of the
		// two kinds run in parallel (see TestMain; go test -cpu takes them).
		if p50 := s.Latency.Quantile(0.5); p50 > 2000 && runtime.GOMAXPROCS(0) >= 6 {
			t.Errorf("median latency %dµs", p50)
		}
		t.Logf("latency p50 %dµs p99 %dµs, service p50 %dµs", s.Latency.Quantile(0.5), s.Latency.Quantile(0.99), s.Service.Quantile(0.5))
		if h.started.Load() != 50 || h.finished.Load() != 0 {
			t.Errorf("started %d, finished %d", h.started.Load(), h.finished.Load())
		}
		h.balanced(t)
	})
}

// TestOpenOverload runs an open model against a server slower than the
// arrivals: arrivals wait in the FIFO, the late ones are dropped, and every
// arrival is either done or dropped.
func TestOpenOverload(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := newServer(t)
		srv.slow.Store(int64(50 * time.Millisecond))
		p, cfg := setup(t, kind, 1, `
users: 5
model: open
open: {rate: 500/s, max_delay: 100ms}
phases: {steady: 1s}
actions: [{path: /slow}]
`, srv.url())
		h := newHarness(p, 1)
		run(t, context.Background(), p, cfg, h)
		want := arrivalsOf(p)
		s := h.collect()[0]
		if s.Count+s.Dropped != uint64(want) {
			t.Errorf("recorded %d + dropped %d, the plan has %d arrivals", s.Count, s.Dropped, want)
		}
		// 5 sessions at 50ms: about 100 done per second, plus what waited.
		if s.Count < 80 || s.Count > 160 || s.Dropped < 300 {
			t.Errorf("recorded %d, dropped %d", s.Count, s.Dropped)
		}
		// Nothing waited past max_delay before it started.
		if max := time.Duration(s.Latency.Max) * time.Microsecond; max > 200*time.Millisecond {
			t.Errorf("max latency %s", max)
		}
		if s.ErrorCount() != 0 {
			t.Errorf("errors%s", classErrors(s.Errors))
		}
		h.balanced(t)
	})
}

// TestIdleClose: the server closes every connection after one response
// without saying so; the loop notices the close, or retries once on a new
// connection, and nothing fails.
func TestIdleClose(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		srv := newServer(t)
		p, cfg := setup(t, kind, 1, `
users: 4
closed: {iterations: 50}
actions: [{path: /once}]
`, srv.url())
		h := newHarness(p, 1)
		run(t, context.Background(), p, cfg, h)
		s := h.collect()[0]
		if s.Count != 200 || s.ErrorCount() != 0 {
			t.Fatalf("recorded %d, errors%s", s.Count, classErrors(s.Errors))
		}
		h.balanced(t)
	})
}

// TestRetryOnlyIdempotent: a reused connection that the server closes after
// reading the request, unanswered. A GET is sent again on a fresh
// connection and succeeds; a POST is never sent twice (RFC 9110 §9.2.2):
// it fails in class io, and the server saw each POST once.
func TestRetryOnlyIdempotent(t *testing.T) {
	forKinds(t, func(t *testing.T, kind string) {
		for _, tc := range []struct {
			method           string
			requests, errors uint64
		}{
			// GET: the 2nd, 3rd and 4th requests each meet a dropped second
			// request and are sent again: 4 + 3 requests, no error.
			{"GET", 7, 0},
			// POST: requests 2 and 4 fail; the server saw 4 requests.
			{"POST", 4, 2},
		} {
			srv := newServer(t)
			p, cfg := setup(t, kind, 1, `
users: 1
closed: {iterations: 4}
actions: [{path: /drop-second, method: `+tc.method+`}]
`, srv.url())
			h := newHarness(p, 1)
			run(t, context.Background(), p, cfg, h)
			s := h.collect()[0]
			if s.Count != 4 || s.ErrorCount() != tc.errors || s.Errors[driver.IO] != tc.errors {
				t.Errorf("%s: recorded %d, errors%s; want 4 and %d io", tc.method, s.Count, classErrors(s.Errors), tc.errors)
			}
			if got := srv.requests.Load(); got != int64(tc.requests) {
				t.Errorf("%s: the server read %d requests, want %d", tc.method, got, tc.requests)
			}
		}
	})
}

func TestBadConfig(t *testing.T) {
	srv := newServer(t)
	p, cfg := setup(t, Epoll, 1, `
users: 1
closed: {iterations: 1}
actions: [{path: /ok}]
`, srv.url())
	h := newHarness(p, 1)
	bad := cfg
	bad.Addr = "no-such-host.invalid:80"
	if err := Run(context.Background(), p, bad, h.hooks()); err == nil {
		t.Error("unresolvable address: no error")
	}
	bad = cfg
	bad.Threads = 0
	if err := Run(context.Background(), p, bad, h.hooks()); err == nil {
		t.Error("0 threads: no error")
	}
	bad = cfg
	bad.Requests = nil
	if err := Run(context.Background(), p, bad, h.hooks()); err == nil {
		t.Error("no requests: no error")
	}
	if h.started.Load() != 0 {
		t.Error("users started")
	}
}
