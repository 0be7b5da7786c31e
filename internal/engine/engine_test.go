package engine

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/scenario"
)

// sleepDriver is an in-process driver for engine tests: every action takes
// a fixed time (virtual time under synctest) and can fail on a pattern.
type sleepDriver struct {
	take   time.Duration
	takeOf func(user int) time.Duration // when set: how long user's actions take
	failAt func(n int64) bool           // fail the n-th action (1-based) with a 5xx
	calls  atomic.Int64
	opens  atomic.Int64
	closes atomic.Int64
}

func (d *sleepDriver) Validate() []error { return nil }
func (d *sleepDriver) Compile(a scenario.Action) (driver.Action, []error) {
	return a.Name, nil
}
func (d *sleepDriver) Prepare(context.Context, driver.Population) error { return nil }
func (d *sleepDriver) Open(ctx context.Context, u driver.User) (driver.Session, error) {
	d.opens.Add(1)
	return &sleepSession{d: d, user: u.ID}, nil
}

type sleepSession struct {
	d    *sleepDriver
	user int
}

func (s *sleepSession) Do(ctx context.Context, a driver.Action) (driver.Outcome, error) {
	n := s.d.calls.Add(1)
	take := s.d.take
	if s.d.takeOf != nil {
		take = s.d.takeOf(s.user)
	}
	select {
	case <-time.After(take):
	case <-ctx.Done():
		return driver.Outcome{}, ctx.Err()
	}
	if s.d.failAt != nil && s.d.failAt(n) {
		return driver.Outcome{BytesIn: 1}, driver.Errorf(driver.Status5xx, errors.New("HTTP status 503"))
	}
	return driver.Outcome{BytesIn: 100, BytesOut: 10}, nil
}

func (s *sleepSession) Close() error { s.d.closes.Add(1); return nil }

func compile(t *testing.T, src string) *plan.Plan {
	t.Helper()
	s, err := scenario.Parse("t.yaml", []byte(src), []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Compile(s, plan.Whole)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, ctx context.Context, p *plan.Plan, d *sleepDriver) *Outcome {
	t.Helper()
	acts := make([]driver.Action, len(p.Actions))
	for i, a := range p.Actions {
		acts[i] = a.Name
	}
	out, err := Run(ctx, Config{Plan: p, Driver: d, Actions: acts, Kind: scenario.EngineGoroutines})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func totals(out *Outcome) map[string]*result.Summary {
	m := map[string]*result.Summary{}
	sums := result.Summarize([]string{"a", "b"}[:len(out.Intervals[0].Actions)], 0, out.Intervals)
	for i := range sums {
		m[sums[i].Phase] = &sums[i]
	}
	return m
}

func TestClosedCountBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 3\nclosed: {iterations: 5}\nactions: [{name: a}]\n")
		d := &sleepDriver{take: 10 * time.Millisecond}
		out := run(t, context.Background(), p, d)
		s := totals(out)
		if out.Partial || s["all"].Total.Count != 15 || d.calls.Load() != 15 {
			t.Fatalf("partial=%v count=%d calls=%d, want 15", out.Partial, s["all"].Total.Count, d.calls.Load())
		}
		// Every user needs 5 x 10 ms; they all start at once.
		if out.Elapsed != 50*time.Millisecond {
			t.Errorf("elapsed %v, want 50ms", out.Elapsed)
		}
		if got := s["all"].Total.Latency; got.P50Ms != 10 || got.MaxMs != 10 {
			t.Errorf("latency %+v, want 10 ms", got)
		}
		if d.opens.Load() != 3 || d.closes.Load() != 3 {
			t.Errorf("opens %d closes %d, want 3", d.opens.Load(), d.closes.Load())
		}
	})
}

// closed.total: the users share the count, a free user taking the next
// action, so a slow user does fewer and nobody idles while actions are
// left. User 0 takes 30 ms per action, users 1 and 2 take 10 ms: by 60 ms
// user 0 did 2 and the others 6 each, the 14 shared actions.
func TestClosedSharedTotal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 3\nclosed: {total: 14}\nactions: [{name: a}]\n")
		d := &sleepDriver{takeOf: func(u int) time.Duration {
			if u == 0 {
				return 30 * time.Millisecond
			}
			return 10 * time.Millisecond
		}}
		out := run(t, context.Background(), p, d)
		s := totals(out)
		if out.Partial || s["all"].Total.Count != 14 || d.calls.Load() != 14 {
			t.Fatalf("partial=%v count=%d calls=%d, want 14", out.Partial, s["all"].Total.Count, d.calls.Load())
		}
		if out.Elapsed != 60*time.Millisecond {
			t.Errorf("elapsed %v, want 60ms (per-user counts would leave users idle)", out.Elapsed)
		}
	})
}

// In a count-bound run the steady state ends when the first user is done:
// the rest is the ramp-down, reported apart.
func TestCountBoundRampDownStartsWithFirstUserDone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 2\nclosed: {iterations: 6, think: 100ms}\nphases: {ramp_up: {duration: 310ms}}\nactions: [{name: a}]\n")
		d := &sleepDriver{take: 0}
		out := run(t, context.Background(), p, d)
		s := totals(out)
		// user 0 starts at 0 and acts at 0,100,...,500 ms; user 1 starts at
		// 155 ms and acts at 155..655 ms. User 0 is done at 500 ms. (No
		// action falls on the 310 ms boundary, where the order of two events
		// at one instant would decide.)
		if s["ramp-up"] == nil || s["steady"] == nil || s["ramp-down"] == nil {
			t.Fatalf("phases %v", s)
		}
		if got := s["ramp-up"].DurationS; got != 0.31 {
			t.Errorf("ramp-up lasted %vs", got)
		}
		if got := s["ramp-down"].StartS; got != 0.5 {
			t.Errorf("ramp-down started at %vs, want 0.5 s when user 0 was done", got)
		}
		if s["ramp-up"].Total.Count != 6 || s["steady"].Total.Count != 4 || s["all"].Total.Count != 12 || out.Elapsed != 655*time.Millisecond {
			t.Errorf("ramp-up %d, steady %d, all %d in %v; want 6, 4 (355..500 ms), 12 in 655ms",
				s["ramp-up"].Total.Count, s["steady"].Total.Count, s["all"].Total.Count, out.Elapsed)
		}
	})
}

func TestClosedThinkTimeAndIntervalsCutAtPhases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 2\ninterval: 1s\nclosed: {think: 100ms}\nphases: {ramp_up: {duration: 1500ms}, steady: 2s, ramp_down: 500ms}\nactions: [{name: a}]\n")
		d := &sleepDriver{}
		out := run(t, context.Background(), p, d)
		var cuts []string
		for _, iv := range out.Intervals {
			cuts = append(cuts, fmt.Sprintf("%s@%.1f+%.1f", iv.Phase, iv.StartS, iv.DurationS))
		}
		want := "[ramp-up@0.0+1.0 ramp-up@1.0+0.5 steady@1.5+1.0 steady@2.5+1.0 ramp-down@3.5+0.5]"
		if fmt.Sprint(cuts) != want {
			t.Errorf("intervals %v\nwant      %v", cuts, want)
		}
		// user 0: 0..4.0s stop (ramp-down evenly: user 0 leaves last at 4.0s):
		// actions at 0,0.1,...,3.9 = 40; user 1 starts at 0.75s, leaves at
		// 3.75s: actions at 0.75..3.65 = 30.
		if got := totals(out)["all"].Total.Count; got != 70 {
			t.Errorf("%d actions, want 70", got)
		}
	})
}

func TestOpenAggregateTimesFromSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 4\nmodel: open\nopen: {rate: 100/s, arrivals: uniform}\nphases: {steady: 2s}\nactions: [{name: a}]\n")
		d := &sleepDriver{take: 5 * time.Millisecond}
		out := run(t, context.Background(), p, d)
		s := totals(out)["all"]
		if s.Total.Count != 200 || s.Total.Dropped != 0 {
			t.Errorf("count %d dropped %d, want 200 and 0", s.Total.Count, s.Total.Dropped)
		}
		if s.Total.Latency.MaxMs != 5 || s.Total.Service.MaxMs != 5 {
			t.Errorf("latency %+v service %+v, want 5 ms", s.Total.Latency, s.Total.Service)
		}
	})
}

// A slow server under an open load: arrivals wait for a free session, their
// latency counts the wait (scheduled start), the service time does not, and
// those that cannot start within max_delay are dropped, not queued.
func TestOpenOverloadDropsAndCountsTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 2\nmodel: open\nopen: {rate: 100/s, arrivals: uniform, max_delay: 150ms}\nphases: {steady: 2s}\nactions: [{name: a}]\n")
		d := &sleepDriver{take: 100 * time.Millisecond}
		out := run(t, context.Background(), p, d)
		s := totals(out)["all"]
		// Two sessions serve at most 20/s of the 100/s offered.
		if s.Total.Count < 35 || s.Total.Count > 45 {
			t.Errorf("served %d, want about 40", s.Total.Count)
		}
		if s.Total.Count+s.Total.Dropped != 200 {
			t.Errorf("served %d + dropped %d != 200 arrivals", s.Total.Count, s.Total.Dropped)
		}
		if s.Total.Service.MaxMs != 100 || s.Total.Latency.MaxMs <= 100 || s.Total.Latency.MaxMs > 250 {
			t.Errorf("service max %v, latency max %v: latency must include the wait, at most max_delay", s.Total.Service.MaxMs, s.Total.Latency.MaxMs)
		}
	})
}

func TestPerUserRates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 20\nspeedup: 3600\nmodel: open\nphases: {steady: 10s}\nactions: [{name: a, rate: 36/h}, {name: b, rate: 12/h}]\n")
		d := &sleepDriver{take: time.Millisecond}
		out := run(t, context.Background(), p, d)
		s := totals(out)["all"]
		// 48/h per user at speedup 3600 = 48/s; 20 users for 10 s: ~9,600.
		if n := s.Total.Count; n < 9000 || n > 10200 {
			t.Errorf("%d actions, want about 9,600", n)
		}
		if r := float64(s.Actions[0].Count) / float64(s.Total.Count); r < 0.72 || r > 0.78 {
			t.Errorf("action a share %.3f, want 0.75", r)
		}
	})
}

func TestMaxDurationStopsAndMarksPartial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 2\nmax_duration: 2s\nphases: {steady: 1h}\nactions: [{name: a}]\n")
		d := &sleepDriver{take: 300 * time.Millisecond}
		ctx, cancel := context.WithTimeoutCause(context.Background(), p.MaxDuration, ErrMaxDuration)
		defer cancel()
		out := run(t, ctx, p, d)
		if !out.Partial || out.Elapsed != 2*time.Second {
			t.Fatalf("partial=%v elapsed=%v reason=%q", out.Partial, out.Elapsed, out.Reason)
		}
		if out.Reason != "stopped at max_duration (2s) before the plan was done" {
			t.Errorf("reason %q", out.Reason)
		}
		// Each user finished 6 actions (1.8 s); the 7th was cut at 2 s and is
		// not recorded as an error of the server.
		s := totals(out)["all"]
		if s.Total.Count != 12 || s.Total.Errors != 0 || out.Aborted != 2 {
			t.Errorf("count %d errors %d aborted %d, want 12, 0, 2", s.Total.Count, s.Total.Errors, out.Aborted)
		}
	})
}

func TestInterruptIsPartialWithCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 1\nphases: {steady: 1h}\nactions: [{name: a}]\n")
		ctx, cancel := context.WithCancelCause(context.Background())
		time.AfterFunc(time.Second, func() { cancel(fmt.Errorf("%w by interrupt", ErrStopped)) })
		out := run(t, ctx, p, &sleepDriver{take: 10 * time.Millisecond})
		if !out.Partial || out.Reason != "interrupted by interrupt" || out.Elapsed != time.Second {
			t.Errorf("partial=%v reason=%q elapsed=%v", out.Partial, out.Reason, out.Elapsed)
		}
	})
}

func TestErrorsCountedByClass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := compile(t, "users: 1\nclosed: {iterations: 100}\nactions: [{name: a}]\n")
		d := &sleepDriver{take: time.Millisecond, failAt: func(n int64) bool { return n%4 == 0 }}
		s := totals(run(t, context.Background(), p, d))["all"]
		if s.Total.Errors != 25 || s.Total.ErrorsByClass["status_5xx"] != 25 || s.Total.Messages["status_5xx"] != "HTTP status 503" {
			t.Errorf("errors %d by class %v messages %v", s.Total.Errors, s.Total.ErrorsByClass, s.Total.Messages)
		}
		if s.Total.OK != 75 || s.Total.ErrorRate != 0.25 {
			t.Errorf("ok %d rate %v", s.Total.OK, s.Total.ErrorRate)
		}
	})
}

func TestUsersMeanIsATimeAverage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 10 users log on evenly over 10 s: about 5 on average, 10 at the end.
		p := compile(t, "users: 10\ninterval: 10s\nclosed: {think: 1s}\nphases: {ramp_up: {duration: 10s}, steady: 10s}\nactions: [{name: a}]\n")
		out := run(t, context.Background(), p, &sleepDriver{})
		iv := out.Intervals[0]
		if iv.Phase != "ramp-up" || iv.UsersMean < 4.4 || iv.UsersMean > 5.6 || iv.UsersMax != 10 {
			t.Errorf("ramp-up interval: users mean %.2f max %d", iv.UsersMean, iv.UsersMax)
		}
	})
}
