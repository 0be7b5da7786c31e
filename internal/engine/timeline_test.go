package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/scenario"
)

// stampDriver records when each user's actions start, on the run's clock;
// LogonAtStart and a log-on time are optional.
type stampDriver struct {
	base        time.Time
	logon       bool
	openFor     time.Duration
	refuseFirst func(user int) bool // the user's first log-on fails
	refused     map[int]bool

	mu     sync.Mutex
	stamps map[int][]stamp
	opens  atomic.Int64
	closes atomic.Int64
}

type stamp struct {
	action string
	at     time.Duration
}

func (d *stampDriver) Validate() []error                                  { return nil }
func (d *stampDriver) Compile(a scenario.Action) (driver.Action, []error) { return a.Name, nil }
func (d *stampDriver) Prepare(context.Context, driver.Population) error   { return nil }
func (d *stampDriver) LogonAtStart() bool                                 { return d.logon }
func (d *stampDriver) Open(ctx context.Context, u driver.User) (driver.Session, error) {
	if d.openFor > 0 {
		time.Sleep(d.openFor)
	}
	if d.refuseFirst != nil && d.refuseFirst(u.ID) {
		d.mu.Lock()
		first := !d.refused[u.ID]
		d.refused[u.ID] = true
		d.mu.Unlock()
		if first {
			return nil, driver.Errorf(driver.Dial, errors.New("connection refused"))
		}
	}
	d.opens.Add(1)
	return &stampSession{d: d, user: u.ID}, nil
}

type stampSession struct {
	d    *stampDriver
	user int
}

func (s *stampSession) Do(ctx context.Context, a driver.Action) (driver.Outcome, error) {
	at := time.Since(s.d.base)
	s.d.mu.Lock()
	s.d.stamps[s.user] = append(s.d.stamps[s.user], stamp{a.(string), at})
	s.d.mu.Unlock()
	return driver.Outcome{BytesIn: 1}, nil
}

func (s *stampSession) Close() error { s.d.closes.Add(1); return nil }

// expected is each user's planned arrivals: the same draws as the engine's.
func expected(p *plan.Plan) map[int][]stamp {
	want := map[int][]stamp{}
	for _, u := range p.Users {
		r := plan.NewRand(u.Seed)
		gap, a := p.NextArrivalIn(u.Group, r)
		for next := u.Start + gap; next < u.Stop; next += gap {
			want[u.ID] = append(want[u.ID], stamp{p.Actions[a].Name, next})
			gap, a = p.NextArrivalIn(u.Group, r)
		}
	}
	return want
}

// goroutinesAt reports how many goroutines run after d (in the bubble).
func goroutinesAt(d time.Duration) <-chan int {
	c := make(chan int, 1)
	go func() {
		time.Sleep(d)
		c <- runtime.NumGoroutine()
	}()
	return c
}

func runStamped(t *testing.T, ctx context.Context, p *plan.Plan, d *stampDriver) *Outcome {
	t.Helper()
	acts := make([]driver.Action, len(p.Actions))
	for i, a := range p.Actions {
		acts[i] = a.Name
	}
	d.stamps, d.refused = map[int][]stamp{}, map[int]bool{}
	d.base = time.Now()
	out, err := Run(ctx, Config{Plan: p, Driver: d, Actions: acts, Kind: scenario.EngineGoroutines})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const seldom = `users: %d
model: open
phases: {ramp_up: {duration: %s}, steady: %s}
actions:
  - {name: a, rate: 30/min}
  - {name: b, rate: 15/min}
`

// Users who act seldom run on the timeline, and each of their actions
// starts exactly when planned (virtual time): the same arrivals as a
// goroutine per user would make.
func TestTimelineKeepsTheSchedule(t *testing.T) {
	p := compile(t, fmt.Sprintf(seldom, 300, "5s", "20s"))
	if !onTimeline(p, 0) {
		t.Fatal("a group acting 0.75 times a second is not on the timeline")
	}
	want := expected(p)
	synctest.Test(t, func(t *testing.T) {
		d := &stampDriver{logon: true}
		runStamped(t, context.Background(), p, d)
		for _, u := range p.Users {
			got := d.stamps[u.ID]
			if !slices.Equal(got, want[u.ID]) {
				t.Fatalf("user %d: %d actions %v, planned %d %v", u.ID, len(got), got, len(want[u.ID]), want[u.ID])
			}
		}
		if d.opens.Load() != 300 || d.closes.Load() != 300 {
			t.Errorf("%d sessions opened, %d closed, want 300 each", d.opens.Load(), d.closes.Load())
		}
	})
}

// An idle user holds no goroutine: after a log-on storm of 2,000 users
// (each log-on taking 20 ms), the run keeps a few dozen, not one per user.
func TestTimelineIdleUsersHoldNoGoroutine(t *testing.T) {
	p := compile(t, fmt.Sprintf(seldom, 2000, "0s", "10s"))
	synctest.Test(t, func(t *testing.T) {
		d := &stampDriver{logon: true, openFor: 20 * time.Millisecond}
		before, mid := runtime.NumGoroutine(), goroutinesAt(5*time.Second)
		out := runStamped(t, context.Background(), p, d)
		during := <-mid
		if d.opens.Load() != 2000 {
			t.Fatalf("%d log-ons, want 2000", d.opens.Load())
		}
		// The engine's own goroutines (collector, lag probe), the timeline's
		// idle workers and this test's.
		if limit := before + timelineIdle + 20; during > limit {
			t.Errorf("%d goroutines with 2,000 users logged on (%d before the run), want at most %d", during, before, limit)
		}
		if users := out.Intervals[len(out.Intervals)/2].ActiveUsers; users != 2000 {
			t.Errorf("mid-run interval counts %v users, want 2000", users)
		}
	})
}

// A run stopped early closes every session on the timeline and returns.
func TestTimelineStop(t *testing.T) {
	p := compile(t, fmt.Sprintf(seldom, 500, "2s", "60s"))
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d := &stampDriver{logon: true}
		out := runStamped(t, ctx, p, d)
		if !out.Partial || out.Elapsed > 11*time.Second {
			t.Errorf("partial %v after %s, want a partial run stopped at 10s", out.Partial, out.Elapsed)
		}
		if d.opens.Load() != 500 || d.closes.Load() != 500 {
			t.Errorf("%d sessions opened, %d closed, want 500 each", d.opens.Load(), d.closes.Load())
		}
	})
}

// On the real clock: every planned action is
// done, none before its time, and none late by much.
func TestTimelineRealClock(t *testing.T) {
	if testing.Short() {
		t.Skip("real time")
	}
	p := compile(t, fmt.Sprintf(seldom, 200, "1s", "3s"))
	want := expected(p)
	d := &stampDriver{logon: true}
	runStamped(t, context.Background(), p, d)
	var late []time.Duration
	for _, u := range p.Users {
		got, w := d.stamps[u.ID], want[u.ID]
		if len(got) != len(w) {
			t.Fatalf("user %d: %d actions, planned %d", u.ID, len(got), len(w))
		}
		for i := range got {
			if got[i].action != w[i].action || got[i].at < w[i].at {
				t.Fatalf("user %d action %d: %s at %s, planned %s at %s", u.ID, i, got[i].action, got[i].at, w[i].action, w[i].at)
			}
			late = append(late, got[i].at-w[i].at)
		}
	}
	slices.Sort(late)
	// Generous: a loaded CI machine; a waker that did not go off would
	// leave actions seconds late (or dropped).
	if p50 := late[len(late)/2]; p50 > 50*time.Millisecond {
		t.Errorf("median lateness %s over %d actions", p50, len(late))
	}
	if d.closes.Load() != 200 {
		t.Errorf("%d sessions closed, want 200", d.closes.Load())
	}
}

// Passive users (log on, stay) run on the timeline too: a failed log-on is
// tried again workload.OpenRetry later, every user ends logged on until its stop
// time, and none holds a goroutine meanwhile.
func TestTimelinePassiveUsers(t *testing.T) {
	p := compile(t, `
interval: 1s
phases: {steady: 10s}
groups:
  - {name: subs, users: 1000, ramp_up: {duration: 2s}}
`)
	if !onTimeline(p, 0) {
		t.Fatal("a passive group is not on the timeline")
	}
	synctest.Test(t, func(t *testing.T) {
		d := &stampDriver{refuseFirst: func(u int) bool { return u%10 == 0 }}
		before, mid := runtime.NumGoroutine(), goroutinesAt(5*time.Second)
		out := runStamped(t, context.Background(), p, d)
		during := <-mid
		if d.opens.Load() != 1000 || d.closes.Load() != 1000 || len(d.refused) != 100 {
			t.Errorf("%d log-ons, %d closed, %d refused first; want 1000, 1000, 100", d.opens.Load(), d.closes.Load(), len(d.refused))
		}
		if users := out.Intervals[5].ActiveUsers; users != 1000 {
			t.Errorf("interval 5 counts %d users, want 1000", users)
		}
		if limit := before + timelineIdle + 20; during > limit {
			t.Errorf("%d goroutines with 1,000 passive users logged on (%d before), want at most %d", during, before, limit)
		}
	})
}
