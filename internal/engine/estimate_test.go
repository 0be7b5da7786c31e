package engine

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"
)

// The goroutine executor's per-user memory (UserBytes) is a lower bound
// of what it holds, and not far below: measured with 20,000 users all
// logged on and idle, the plan excluded.
func TestUserBytes(t *testing.T) {
	const n = 20_000
	p := compile(t, fmt.Sprintf("users: %d\nclosed: {think: 1h}\nphases: {steady: 1h}\nactions: [{name: a}]\n", n))
	d := &sleepDriver{}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { run(t, ctx, p, d); close(done) }()
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
	est := float64(UserBytes("goroutines", p))
	t.Logf("held %.0f B per user, estimate %.0f", held/n, est/n)
	if est > held || est < held/2 {
		t.Errorf("estimate %.0f B per user, held %.0f", est/n, held/n)
	}
	if lo := UserBytes("epoll", p); lo <= 0 || lo >= int64(est) {
		t.Errorf("loops estimate %d for %d users", lo, n)
	}
}
