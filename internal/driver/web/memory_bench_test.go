package web

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/scenario"
	webtarget "github.com/throng-io/throng/internal/targets/web"
	"github.com/throng-io/throng/presets"
)

// shopChildEnv makes TestShopChild serve the demo shop: the memory
// benchmark's server runs in a process of its own, so the shop's sessions
// and connections do not count as the client's.
const shopChildEnv = "THRONG_TEST_SHOP_CHILD"

// TestShopChild serves the demo shop until its stdin closes, when started
// by shopProcess (skipped otherwise).
func TestShopChild(t *testing.T) {
	if os.Getenv(shopChildEnv) == "" {
		t.Skip("the memory benchmark's server")
	}
	s, err := webtarget.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fmt.Println(s.URL())
	bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes it
}

// shopProcess starts the demo shop in a child process and returns its URL.
func shopProcess(tb testing.TB) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestShopChild$")
	cmd.Env = append(os.Environ(), shopChildEnv+"=1")
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { in.Close(); cmd.Wait() })
	url, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(url, "http://") {
		tb.Fatalf("shop child: %q %v", url, err)
	}
	return strings.TrimSpace(url)
}

// BenchmarkIdleJourneyUser measures what a journey user holds while it
// thinks: 2,000 users each do the web-shop preset's buy journey (home,
// log-in with its redirect, cookie and CSRF token, search, add to the cart
// twice, check out) against the shop in another process, and stay open;
// the heap in use after a collection, less before, per user, is
// heap-B/user (live-B/user: the bytes of live objects).
func BenchmarkIdleJourneyUser(b *testing.B) {
	const n = 2000
	url := shopProcess(b)
	_, src, _ := presets.Source("web-shop")
	c, acts, errs := compileAll(url, string(src))
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	steps := []string{"home", "login", "search", "add-to-cart", "add-to-cart", "checkout"}
	for b.Loop() {
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		users := make([]driver.Session, n)
		for i := range users {
			s, err := c.Open(context.Background(), driver.User{ID: i, Users: n, Seed: uint64(i) + 1})
			if err != nil {
				b.Fatal(err)
			}
			s.(driver.Conditions).Begin()
			for _, name := range steps {
				if _, err := s.Do(context.Background(), acts[name]); err != nil {
					b.Fatalf("user %d, %s: %v", i, name, err)
				}
			}
			users[i] = s
		}
		runtime.GC()
		runtime.GC() // pooled buffers freed too (sync.Pool keeps them a cycle)
		runtime.ReadMemStats(&m1)
		b.ReportMetric(float64(m1.HeapInuse-m0.HeapInuse)/n, "heap-B/user")
		b.ReportMetric(float64(m1.HeapAlloc-m0.HeapAlloc)/n, "live-B/user")
		b.ReportMetric(float64(m1.StackInuse-m0.StackInuse)/n, "stack-B/user")
		for _, s := range heldUsers {
			s.Close()
		}
		heldUsers = users
	}
}

// heldUsers keeps the last run's users open until the next, so that a heap
// profile written at the end (-memprofile) shows what they hold.
var heldUsers []driver.Session

// countingConfig counts the steps its sessions did (a web Config's
// sessions, with their conditions).
type countingConfig struct {
	*Config
	steps atomic.Int64
}

func (c *countingConfig) Open(ctx context.Context, u driver.User) (driver.Session, error) {
	s, err := c.Config.Open(ctx, u)
	if err != nil {
		return nil, err
	}
	return &countingSession{browser: s.(*browser), c: c}, nil
}

type countingSession struct {
	*browser
	c *countingConfig
}

func (s *countingSession) Do(ctx context.Context, a driver.Action) (driver.Outcome, error) {
	out, err := s.browser.Do(ctx, a)
	s.c.steps.Add(1)
	return out, err
}

// BenchmarkThinkingJourneyUser measures what a journey user costs the
// whole generator (engine and driver) while it thinks: 2,000 users log in
// (a form POST, its redirect, a cookie and a token) and think for an hour,
// run by engine.Run against the shop in another process; the heap and
// stacks in use after a collection, less before, per user. The timeline
// case is the preset's kind of journey (one action per think time); the
// goroutines case the same user with a further step that may repeat 4,000
// times without thinking (a while that never holds), which puts its bound
// over a step a second and the users on a goroutine each.
func BenchmarkThinkingJourneyUser(b *testing.B) {
	const n = 2000
	url := shopProcess(b)
	const journey = `
users: %d
phases: {steady: 1h}
journeys:
  - name: j
    steps:
      - name: login
        method: POST
        path: /shop/login
        headers: {Content-Type: application/x-www-form-urlencoded}
        body: user=user{{ .user }}&password=demo
        extract: {csrf: {html: 'form#checkout input[name=csrf]'}}
        think: 1h
%s`
	for _, c := range []struct{ name, more string }{
		{"timeline", ""},
		{"goroutines", "      - {name: more, path: /shop/, while: '{{ false }}', max: 4000}\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, err := scenario.Parse("t.yaml", []byte(fmt.Sprintf(journey, n, c.more)), []string{"web"})
			if err != nil {
				b.Fatal(err)
			}
			p, err := plan.Compile(s, plan.Whole)
			if err != nil {
				b.Fatal(err)
			}
			wc, errs := Decode(s.DriverConfig, url)
			if len(errs) > 0 {
				b.Fatal(errs)
			}
			acts := make([]driver.Action, len(s.Actions))
			for i, a := range s.Actions {
				ca, es := wc.Compile(a)
				if len(es) > 0 {
					b.Fatal(es)
				}
				acts[i] = ca
			}
			for b.Loop() {
				d := &countingConfig{Config: wc}
				var m0, m1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&m0)
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					_, err := engine.Run(ctx, engine.Config{Plan: p, Driver: d, Actions: acts, Kind: scenario.EngineGoroutines})
					done <- err
				}()
				for deadline := time.Now().Add(time.Minute); d.steps.Load() < n; time.Sleep(20 * time.Millisecond) {
					if time.Now().After(deadline) {
						b.Fatalf("%d of %d users logged in", d.steps.Load(), n)
					}
				}
				time.Sleep(100 * time.Millisecond) // the last steps recorded
				runtime.GC()
				runtime.GC() // pooled buffers of the log-in burst freed too (sync.Pool keeps them a cycle)
				runtime.ReadMemStats(&m1)
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(m1.HeapInuse-m0.HeapInuse)/n, "heap-B/user")
				b.ReportMetric(float64(m1.StackInuse-m0.StackInuse)/n, "stack-B/user")
				b.ReportMetric(float64(m1.HeapInuse+m1.StackInuse-m0.HeapInuse-m0.StackInuse)/n, "B/user")
			}
		})
	}
}
