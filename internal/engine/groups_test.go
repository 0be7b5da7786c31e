package engine

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/scenario"
)

// groupDriver records which users of which group logged on, and when.
type groupDriver struct {
	sleepDriver
	mu     sync.Mutex
	opened map[string][]time.Duration
	start  time.Time
}

func (d *groupDriver) Open(ctx context.Context, u driver.User) (driver.Session, error) {
	d.mu.Lock()
	d.opened[u.Group] = append(d.opened[u.Group], time.Since(d.start))
	d.mu.Unlock()
	return &sleepSession{d: &d.sleepDriver}, nil
}

func TestGroupsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, `
interval: 1s
phases: {steady: 2s}
groups:
  - {name: subs, users: 20, ramp_up: {every: 50ms}}
  - name: pubs
    users: 2
    start: 1s
    model: open
    actions: [{name: publish, rate: 10/s}]
`)
		d := &groupDriver{opened: map[string][]time.Duration{}, start: time.Now()}
		out, err := Run(context.Background(), Config{Plan: p, Driver: d, Actions: []driver.Action{"publish"}, Kind: scenario.EngineGoroutines})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.opened["subs"]) != 20 || len(d.opened["pubs"]) != 2 {
			t.Fatalf("opened %v", d.opened)
		}
		if last := d.opened["subs"][19]; last != 950*time.Millisecond {
			t.Errorf("the last subscriber logged on at %v, want 950ms", last)
		}
		for _, at := range d.opened["pubs"] {
			if at < time.Second {
				t.Errorf("a publisher logged on at %v, before its group's start", at)
			}
		}
		all := result.Find(result.Summarize([]string{"publish"}, 0, out.Intervals), result.All)
		// Two publishers at 10/s for the 2 s of the steady state (1 s to 3 s).
		if n := all.Total.Count; n < 25 || n > 55 || all.UsersMax != 22 {
			t.Errorf("published %d, users max %d", n, all.UsersMax)
		}
		if out.Elapsed != 3*time.Second {
			t.Errorf("elapsed %v: passive users stay until the end", out.Elapsed)
		}
	})
}

// eagerDriver is a groupDriver whose users log on at their start.
type eagerDriver struct {
	groupDriver
	eager bool
}

func (d *eagerDriver) LogonAtStart() bool { return d.eager }

// With driver.LogonAtStart, per-user open users log on during the ramp (at
// their start), before their first action, and every action is counted
// once; without it, a user logs on at its first action.
func TestLogonAtStart(t *testing.T) {
	for _, eager := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			p := compile(t, `
users: 10
model: open
interval: 1s
phases: {ramp_up: {every: 100ms}, steady: 3s}
actions: [{name: act, rate: 1/h}]
`)
			d := &eagerDriver{groupDriver: groupDriver{opened: map[string][]time.Duration{}, start: time.Now()}, eager: eager}
			out, err := Run(context.Background(), Config{Plan: p, Driver: d, Actions: []driver.Action{"act"}, Kind: scenario.EngineGoroutines})
			if err != nil {
				t.Fatal(err)
			}
			opened := d.opened[""]
			if eager {
				if len(opened) != 10 || opened[9] != 900*time.Millisecond {
					t.Errorf("eager: logged on at %v, want 10 log-ons, the last at 900ms", opened)
				}
			} else if len(opened) > 1 {
				t.Errorf("lazy: %d log-ons at a rate of 1/h per user", len(opened))
			}
			all := result.Find(result.Summarize([]string{"act"}, 0, out.Intervals), result.All)
			if int(all.Total.Count) != int(d.calls.Load()) {
				t.Errorf("%d actions counted, %d done", all.Total.Count, d.calls.Load())
			}
		})
	}
}
