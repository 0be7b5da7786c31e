package engine

import (
	"testing"
	"time"
)

// The Linux waker is a timerfd; it goes off when armed, not before, can be
// re-armed and disarmed from another goroutine, and close ends a wait.
func TestFdWaker(t *testing.T) {
	w, ok := newWaker().(*fdWaker)
	if !ok {
		t.Fatal("newWaker did not return a timerfd waker")
	}
	t0 := time.Now()
	w.arm(30 * time.Millisecond)
	if err := w.wait(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el < 30*time.Millisecond {
		t.Errorf("went off after %s, armed for 30ms", el)
	}
	// Re-armed earlier from another goroutine while waiting.
	w.arm(time.Hour)
	go func() { time.Sleep(10 * time.Millisecond); w.arm(0) }()
	t0 = time.Now()
	if err := w.wait(); err != nil || time.Since(t0) > 10*time.Second {
		t.Fatalf("re-armed wait: %v after %s", err, time.Since(t0))
	}
	// Disarmed: closing ends the wait with an error.
	w.arm(20 * time.Millisecond)
	w.disarm()
	go func() { time.Sleep(50 * time.Millisecond); w.close() }()
	if err := w.wait(); err == nil {
		t.Error("a disarmed waker went off")
	}
}
