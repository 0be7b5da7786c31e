package sampler

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func spin(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
	}
}

func TestReadSelfMeasuresThisProcess(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	a := ReadSelf([]int{tid})
	spin(200 * time.Millisecond)
	b := ReadSelf([]int{tid})
	w := CPUWaitShare(a, b)
	if w < 0 || w >= 1 {
		t.Errorf("wait share %v", w)
	}
	// A spinning thread runs whenever it does not wait for a CPU: on a
	// machine kept busy by others (the suite's other packages) it gets
	// less than a core, by the share it waited.
	least := min(0.5, 0.8*(1-w))
	if cores := CPUCores(a, b); cores < least || cores > float64(runtime.NumCPU())+0.1 {
		t.Errorf("spinning one thread for 200 ms: %.2f cores (it waited for a CPU %.0f %% of the time)", cores, 100*w)
	}
	if busy := ThreadBusy(a, b); len(busy) != 1 || busy[0] < least || busy[0] > 1.05 {
		t.Errorf("the spinning thread was busy %v of a core (it waited for a CPU %.0f %% of the time)", busy, 100*w)
	}
	if m := MachineBusy(a, b); m <= 0 || m > 1 {
		t.Errorf("machine busy %v", m)
	}
	if b.TasksOnCPU <= a.TasksOnCPU || b.RSSBytes == 0 || b.Goroutines == 0 {
		t.Errorf("tasks on CPU %v -> %v, rss %d, goroutines %d", a.TasksOnCPU, b.TasksOnCPU, b.RSSBytes, b.Goroutines)
	}
	if Cores() < 1 {
		t.Error("no cores")
	}
}

func TestCPUWaitCores(t *testing.T) {
	t.Parallel()
	at := time.Unix(1000, 0)
	a := SelfSample{At: at, TasksWaiting: time.Second}
	b := SelfSample{At: at.Add(2 * time.Second), TasksWaiting: 1600 * time.Millisecond}
	if w := CPUWaitCores(a, b); w < 0.2999 || w > 0.3001 {
		t.Errorf("600 ms of waiting in 2 s: %v cores, want 0.3", w)
	}
	if w := CPUWaitCores(b, b); w != 0 {
		t.Errorf("no time passed: %v", w)
	}
}
