package agent

import (
	"context"
	"testing"
	"time"
)

// A controller that connects while the agent's previous session is still
// ending (a capacity search's next step) waits for it; one that connects
// during a run that goes on is refused once the wait is over.
func TestAcquireWaitsForTheSessionEnding(t *testing.T) {
	s := &Server{}
	s.busy.Store(true)
	go func() {
		time.Sleep(100 * time.Millisecond)
		s.busy.Store(false)
	}()
	start := time.Now()
	if !s.acquire(context.Background(), busyWait) {
		t.Fatal("the agent refused a controller as its previous session ended")
	}
	if d := time.Since(start); d < 90*time.Millisecond {
		t.Errorf("acquired after %s, while the session still held the agent", d)
	}
	if !s.busy.Load() {
		t.Error("acquired without marking the agent busy")
	}
	start = time.Now()
	if s.acquire(context.Background(), 200*time.Millisecond) {
		t.Fatal("two sessions at once")
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 2*time.Second {
		t.Errorf("refused after %s, want after the 200ms wait", d)
	}
}
