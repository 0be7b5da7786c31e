//go:build linux

package netloop

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// steadyAllocs runs users closed-loop users against srv for iterations
// each and measures, in the middle of the run (between 20 % and 80 % of
// the server's requests), the allocations of the whole process (loop,
// recorder, server) per request. It returns that and the requests per
// second of the run.
func steadyAllocs(t testing.TB, kind string, users, iterations int) (allocsPerReq, reqPerSec float64) {
	srv := newServer(t)
	p, cfg := setup(t, kind, 1, fmt.Sprintf(`
users: %d
closed: {iterations: %d}
actions: [{path: /ok}]
`, users, iterations), srv.url())
	h := newHarness(p, 1)
	n := int64(users * iterations)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- Run(context.Background(), p, cfg, h.hooks()) }()

	waitFor := func(k int64) bool {
		for srv.requests.Load() < k {
			select {
			case err := <-done:
				done <- err
				return false
			default:
				time.Sleep(200 * time.Microsecond)
			}
		}
		return true
	}
	var m1, m2 runtime.MemStats
	ok := waitFor(n / 5)
	runtime.ReadMemStats(&m1)
	r1 := srv.requests.Load()
	ok = ok && waitFor(4*n/5)
	runtime.ReadMemStats(&m2)
	r2 := srv.requests.Load()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if count, _, errs := total(h.collect()); count != uint64(n) || errs[0] != 0 || !ok {
		t.Fatalf("recorded %d of %d (errors%s)", count, n, classErrors(errs))
	}
	return float64(m2.Mallocs-m1.Mallocs) / float64(r2-r1), float64(n) / took.Seconds()
}

// TestNoAllocs checks that the hot path (schedule, send, receive, parse,
// record) allocates nothing: the whole process makes no allocation per
// request in the steady state.
func TestNoAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, kind := range kinds(t) {
		t.Run(kind, func(t *testing.T) {
			a, rate := steadyAllocs(t, kind, 20, 2000)
			t.Logf("%.4f allocations per request, %.0f req/s (in-process server)", a, rate)
			if a > 0.001 {
				t.Errorf("%.4f allocations per request", a)
			}
		})
	}
}

// BenchmarkLoop drives b.N requests through the loop, closed model, no
// think time, against the in-process server (which shares the CPU: the
// figure is for allocations and regressions, not for comparisons with
// wrk; see bench/netloop for that).
func BenchmarkLoop(b *testing.B) {
	for _, kind := range []string{Epoll, IOUring} {
		if err := Supported(kind); err != nil {
			b.Logf("%s: %v", kind, err)
			continue
		}
		for _, users := range []int{10, 50} {
			b.Run(fmt.Sprintf("%s/conns=%d", kind, users), func(b *testing.B) {
				iters := max(b.N/users, 50)
				b.ReportAllocs()
				b.ResetTimer()
				a, rate := steadyAllocs(b, kind, users, iters)
				b.StopTimer()
				b.ReportMetric(a, "allocs/req")
				b.ReportMetric(rate, "req/s")
			})
		}
	}
}
