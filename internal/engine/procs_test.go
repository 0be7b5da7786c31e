package engine

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
)

// fakeProcs drives a governor with a fake clock and CPU meter.
type fakeProcs struct {
	g    *procsGovernor
	t0   time.Time
	now  time.Time
	cpu  time.Duration
	sets []int
}

func newFakeProcs(full int) *fakeProcs {
	f := &fakeProcs{t0: time.Unix(0, 0)}
	f.now = f.t0
	f.g = newProcsGovernor(full, func(n int) { f.sets = append(f.sets, n) }, func() time.Duration { return f.cpu })
	f.g.start(f.now)
	return f
}

// tick advances the clock by d, during which the process used cores, and
// ticks the governor.
func (f *fakeProcs) tick(d time.Duration, cores float64, lag time.Duration, usersChanged bool) {
	f.now = f.now.Add(d)
	f.cpu += time.Duration(cores * float64(d))
	f.g.tick(f.now, lag, usersChanged)
}

func TestProcsGovernorLowersAfterAQuietWindowAndRaisesOnWork(t *testing.T) {
	f := newFakeProcs(4)
	// Nearly idle (0.05 cores), ticks on time: one processor once the quiet
	// window (which opens at the first quiet tick) has lasted procsQuietFor.
	for range 10 {
		f.tick(200*time.Millisecond, 0.05, 0, false)
	}
	if len(f.sets) != 0 {
		t.Fatalf("after 1.8 s quiet: sets %v, want none", f.sets)
	}
	f.tick(200*time.Millisecond, 0.05, 0, false)
	if len(f.sets) != 1 || f.sets[0] != 1 {
		t.Fatalf("after 2 s quiet: sets %v, want [1]", f.sets)
	}
	if n := f.g.take(); n != 1 {
		t.Errorf("take = %d, want 1 (it went down to 1)", n)
	}
	// A late tick gives all of them back at once, and the next window
	// starts over.
	f.tick(200*time.Millisecond, 0.05, 3*time.Millisecond, false)
	if f.sets[len(f.sets)-1] != 4 {
		t.Fatalf("after a late tick: sets %v, want 4 last", f.sets)
	}
	if n := f.g.take(); n != 1 {
		t.Errorf("take = %d, want 1 (fewest since the last take)", n)
	}
	if n := f.g.take(); n != 4 {
		t.Errorf("take = %d, want 4 (none lowered since)", n)
	}
	for range 11 {
		f.tick(200*time.Millisecond, 0.05, 0, false)
	}
	// Users logging on: all processors at once.
	f.tick(20*time.Millisecond, 0.05, 0, true)
	if got := f.sets; len(got) != 4 || got[2] != 1 || got[3] != 4 {
		t.Fatalf("sets %v, want [1 4 1 4]", got)
	}
	for range 11 {
		f.tick(200*time.Millisecond, 0.05, 0, false)
	}
	// Busy since the tick before (0.8 cores): all processors.
	f.tick(100*time.Millisecond, 0.8, 0, false)
	if got := f.sets; len(got) != 6 || got[5] != 4 {
		t.Fatalf("sets %v, want 4 last after a busy tick", got)
	}
	f.g.stop()
	if len(f.sets) != 6 {
		t.Errorf("stop on full processors set again: %v", f.sets)
	}
}

func TestProcsGovernorKeepsAllProcessorsForABusyGenerator(t *testing.T) {
	f := newFakeProcs(2)
	// 0.3 cores: under the busy mark but over the quiet one.
	for range 50 {
		f.tick(200*time.Millisecond, 0.3, 0, false)
	}
	// Quiet ticks but a late one every second: never a full quiet window.
	for i := range 50 {
		lag := time.Duration(0)
		if i%5 == 4 {
			lag = 5 * time.Millisecond
		}
		f.tick(200*time.Millisecond, 0.01, lag, false)
	}
	if len(f.sets) != 0 {
		t.Errorf("sets %v, want none", f.sets)
	}
	if newProcsGovernor(1, nil, nil) != nil {
		t.Error("a one-processor process has a governor")
	}
}

// procsSeen records the GOMAXPROCS each action saw, by time.
type procsSeen struct {
	mu   sync.Mutex
	seen []struct {
		at    time.Duration
		procs int
	}
}

func (p *procsSeen) add(at time.Duration) {
	p.mu.Lock()
	p.seen = append(p.seen, struct {
		at    time.Duration
		procs int
	}{at, runtime.GOMAXPROCS(0)})
	p.mu.Unlock()
}

// A run with AutoProcs goes down to one processor while its users are
// nearly idle, back to all of them when they work, reports the fewest in
// its intervals, and leaves GOMAXPROCS as it found it.
func TestAutoProcsInARun(t *testing.T) {
	full := runtime.GOMAXPROCS(0)
	if full < 2 {
		t.Skip("one processor: nothing to govern")
	}
	defer func(q, l time.Duration) { procsQuietFor, procsLate = q, l }(procsQuietFor, procsLate)
	procsQuietFor, procsLate = 300*time.Millisecond, 20*time.Millisecond

	// Idle actions (20 ms sleeps) for 2.5 s, then spinning ones.
	const busyFrom = 2500 * time.Millisecond
	p := compile(t, "users: 2\ninterval: 500ms\nclosed: {}\nphases: {steady: 4s}\nactions: [{name: a}]\n")
	var seen procsSeen
	var t0 atomic.Int64
	d := &sleepDriver{takeOf: func(int) time.Duration {
		at := time.Duration(time.Now().UnixNano() - t0.Load())
		seen.add(at)
		if at < busyFrom {
			return 20 * time.Millisecond
		}
		for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
		}
		return 0
	}}
	acts := make([]driver.Action, len(p.Actions))
	for i, a := range p.Actions {
		acts[i] = a.Name
	}
	t0.Store(time.Now().UnixNano())
	out, err := Run(context.Background(), Config{Plan: p, Driver: d, Actions: acts, Kind: scenario.EngineGoroutines, AutoProcs: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := runtime.GOMAXPROCS(0); got != full {
		t.Errorf("GOMAXPROCS %d after the run, want %d as before", got, full)
	}
	var idleOne bool
	var lastOne time.Duration
	for _, s := range seen.seen {
		if s.procs == 1 {
			lastOne = s.at
			if s.at < busyFrom {
				idleOne = true
			}
		}
	}
	if !idleOne {
		t.Errorf("no idle action ran on one processor")
	}
	if lastOne > busyFrom+time.Second {
		t.Errorf("an action at %v, busy since %v, still ran on one processor", lastOne, busyFrom)
	}
	var fewest []int
	for _, iv := range out.Intervals {
		fewest = append(fewest, iv.Client.ProcsMin)
	}
	if !containsInt(fewest, 1) || fewest[len(fewest)-1] != full {
		t.Errorf("intervals' procs_min %v: want 1 while idle, %d last (busy)", fewest, full)
	}
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
