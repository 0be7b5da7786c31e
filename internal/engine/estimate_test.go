package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/scenario"
)

// The goroutine executor's per-user memory (UserBytes) is a lower bound
// of what it holds, and not far below: measured with 20,000 users all
// logged on and idle, the plan excluded, on a goroutine each and on the
// timeline (closed users thinking 1 h act seldom: UserBytes counts them
// as timeline users).
func TestUserBytes(t *testing.T) {
	const n = 20_000
	p := compile(t, fmt.Sprintf("users: %d\nclosed: {think: 1h}\nphases: {steady: 1h}\nactions: [{name: a}]\n", n))
	if !onTimeline(p, 0) {
		t.Fatal("users thinking 1 h are not on the timeline")
	}
	for _, c := range []struct {
		name     string
		timeline bool
		est      int64
	}{
		{"goroutines", false, n * goroutineUserBytes},
		{"timeline", true, UserBytes("goroutines", p)},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &sleepDriver{}
			acts := make([]driver.Action, len(p.Actions))
			for i, a := range p.Actions {
				acts[i] = a.Name
			}
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				if _, err := Run(ctx, Config{Plan: p, Driver: d, Actions: acts, Kind: scenario.EngineGoroutines,
					timeline: func(*plan.Plan, int) bool { return c.timeline }}); err != nil {
					t.Error(err)
				}
			}()
			for deadline := time.Now().Add(30 * time.Second); d.calls.Load() < n; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d of %d users acted", d.calls.Load(), n)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&m1)
			cancel()
			<-done
			held := float64(m1.HeapInuse+m1.StackInuse) - float64(m0.HeapInuse+m0.StackInuse)
			est := float64(c.est)
			t.Logf("held %.0f B per user, estimate %.0f", held/n, est/n)
			if est > held || est < held/2 {
				t.Errorf("estimate %.0f B per user, held %.0f", est/n, held/n)
			}
		})
	}
	if lo := UserBytes("epoll", p); lo <= 0 || lo >= n*goroutineUserBytes {
		t.Errorf("loops estimate %d for %d users", lo, n)
	}
}
