package web

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/driver"
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
