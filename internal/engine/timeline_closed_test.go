package engine

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/scenario"
)

// serveDriver is stampDriver with a server that takes serve to answer.
type serveDriver struct {
	stampDriver
	serve time.Duration
}

func (d *serveDriver) JourneySteps() bool { return true }
func (d *serveDriver) Open(ctx context.Context, u driver.User) (driver.Session, error) {
	s, err := d.stampDriver.Open(ctx, u)
	if err != nil {
		return nil, err
	}
	return &serveSession{Session: s, serve: d.serve}, nil
}

type serveSession struct {
	driver.Session
	serve time.Duration
}

func (s *serveSession) Do(ctx context.Context, a driver.Action) (driver.Outcome, error) {
	out, err := s.Session.Do(ctx, a)
	time.Sleep(s.serve)
	return out, err
}

// runServed runs plan p against d (in a synctest bubble), its groups on
// the timeline when timeline, else a goroutine per user, and returns the
// outcome and the rows of the whole run.
func runServed(t *testing.T, ctx context.Context, p *plan.Plan, d *serveDriver, timeline bool) (*Outcome, map[string]result.ActionSummary) {
	t.Helper()
	acts := make([]driver.Action, len(p.Actions))
	for i, a := range p.Actions {
		acts[i] = a.Name
	}
	d.stamps, d.refused = map[int][]stamp{}, map[int]bool{}
	d.opens.Store(0)
	d.closes.Store(0)
	d.base = time.Now()
	out, err := Run(ctx, Config{Plan: p, Driver: d, Actions: acts, Kind: scenario.EngineGoroutines,
		timeline: func(*plan.Plan, int) bool { return timeline }})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]result.ActionSummary{}
	for _, s := range result.Summarize(p.RowNames(), p.Rows()-len(p.Actions), out.Intervals) {
		if s.Phase == "all" {
			for _, a := range s.Actions {
				rows[a.Name] = a
			}
			rows["total"] = s.Total
		}
	}
	return out, rows
}

// Closed users whose think time holds them to a second per action run on
// the timeline, and do what they would on a goroutine each: 50 users, a
// server that answers in R = 250 ms and Z = 1 s of thinking make, by
// Little's law, X = N / (R + Z) = 40 actions a second. Over 10 s each user
// starts an action at 0, 1.25, ..., 8.75 s (the one due at 10 s is at its
// stop time: not begun), 8 each, 400 in all, each timed 250 ms.
func TestTimelineClosedLittlesLaw(t *testing.T) {
	const n, r, z, secs = 50, 250 * time.Millisecond, time.Second, 10
	p := compile(t, fmt.Sprintf("users: %d\nclosed: {think: %s}\nphases: {steady: %ds}\nactions: [{name: a}]\n", n, z, secs))
	if !onTimeline(p, 0) {
		t.Fatalf("closed users thinking %s (at most %g actions a second each) are not on the timeline", z, p.MaxUserRate(0))
	}
	little := float64(n) / (r + z).Seconds()
	for _, timeline := range []bool{false, true} {
		t.Run(fmt.Sprintf("timeline=%v", timeline), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := &serveDriver{serve: r}
				_, rows := runServed(t, context.Background(), p, d, timeline)
				a := rows["a"]
				if a.Count != 8*n || a.Errors != 0 {
					t.Fatalf("%d actions, %d errors; want %d and none", a.Count, a.Errors, 8*n)
				}
				if x := float64(a.Count) / secs; math.Abs(x-little) > 1e-9 {
					t.Errorf("throughput %g/s, Little's law N/(R+Z) = %g/s", x, little)
				}
				if a.Latency.MinMs != 250 || a.Latency.MaxMs != 250 {
					t.Errorf("latency %g..%g ms, want 250 (the server's time; thinking is not latency)", a.Latency.MinMs, a.Latency.MaxMs)
				}
				for id, got := range d.stamps {
					for k, s := range got {
						if want := time.Duration(k) * (r + z); s.at != want {
							t.Fatalf("user %d action %d began at %s, want %s (the end of the one before plus the think time)", id, k, s.at, want)
						}
					}
				}
				if d.opens.Load() != n || d.closes.Load() != n {
					t.Errorf("%d sessions opened, %d closed; want %d each", d.opens.Load(), d.closes.Load(), n)
				}
			})
		})
	}
}

// A closed group with journeys, iterations, an exponential think time and
// a ramp up and down does on the timeline exactly what it does on a
// goroutine per user: every user's every step at the same instant, the
// same rows (journeys included), the same users counted; and so does a
// run stopped early, which closes every session.
func TestTimelineClosedSameAsGoroutines(t *testing.T) {
	p := compile(t, `
users: 300
closed: {iterations: 3, think: 2s, think_distribution: exponential}
phases: {ramp_up: {duration: 5s}, steady: 20s, ramp_down: 5s}
journeys:
  - name: buy
    weight: 3
    steps:
      - {name: home, think: 1s}
      - {name: cart, repeat: 2, think: 1s}
      - {name: pay, think: 1s}
  - name: look
    steps:
      - {name: list, think: 1s}
`)
	if !onTimeline(p, 0) {
		t.Fatalf("journeys of a step a second (bound %g a second) are not on the timeline", p.MaxUserRate(0))
	}
	for _, stop := range []time.Duration{0, 12 * time.Second} {
		t.Run(fmt.Sprintf("stop=%s", stop), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var stamps [2]map[int][]stamp
				var rows [2]map[string]result.ActionSummary
				var outs [2]*Outcome
				for i, timeline := range []bool{false, true} {
					ctx := context.Background()
					if stop > 0 {
						var cancel context.CancelFunc
						ctx, cancel = context.WithTimeout(ctx, stop)
						defer cancel()
					}
					d := &serveDriver{serve: 100 * time.Millisecond}
					outs[i], rows[i] = runServed(t, ctx, p, d, timeline)
					stamps[i] = d.stamps
					if d.opens.Load() != d.closes.Load() || d.opens.Load() == 0 {
						t.Errorf("timeline=%v: %d sessions opened, %d closed", timeline, d.opens.Load(), d.closes.Load())
					}
				}
				if rows[0]["total"].Count == 0 {
					t.Fatal("nothing done")
				}
				for _, name := range append(p.RowNames(), "total") {
					g, tl := rows[0][name], rows[1][name]
					if g.Count != tl.Count || g.Errors != tl.Errors || g.Latency != tl.Latency {
						t.Errorf("%s: goroutines %d done %d errors %+v; timeline %d done %d errors %+v", name, g.Count, g.Errors, g.Latency, tl.Count, tl.Errors, tl.Latency)
					}
				}
				if len(stamps[0]) != p.TotalUsers && stop == 0 {
					t.Errorf("%d users acted, want %d", len(stamps[0]), p.TotalUsers)
				}
				for id, g := range stamps[0] {
					if !slices.Equal(g, stamps[1][id]) {
						t.Fatalf("user %d: on goroutines %v, on the timeline %v", id, g, stamps[1][id])
					}
				}
				if outs[0].Elapsed != outs[1].Elapsed || outs[0].Aborted != outs[1].Aborted || outs[0].Partial != outs[1].Partial {
					t.Errorf("goroutines: elapsed %s, %d aborted, partial %v; timeline: %s, %d, %v",
						outs[0].Elapsed, outs[0].Aborted, outs[0].Partial, outs[1].Elapsed, outs[1].Aborted, outs[1].Partial)
				}
				// Active users are read at each interval's end: a user who
				// starts at that instant may be seen either side, and at the
				// end of an interval cut by the stop some users have left.
				for k := range min(len(outs[0].Intervals), len(outs[1].Intervals)) - 1 {
					a, b := outs[0].Intervals[k], outs[1].Intervals[k]
					if stop > 0 && time.Duration((a.StartS+a.DurationS)*float64(time.Second)) >= stop {
						break
					}
					if math.Abs(float64(a.ActiveUsers-b.ActiveUsers)) > 1 {
						t.Errorf("interval %d: %v users active on goroutines, %v on the timeline", k, a.ActiveUsers, b.ActiveUsers)
					}
				}
			})
		})
	}
}

// Which closed groups the timeline takes: those whose think times bound a
// user to at most timelineUserRate, while all of them together stay under
// timelineMaxRate.
func TestOnTimelineClosed(t *testing.T) {
	for _, c := range []struct {
		name string
		src  string
		want []bool
	}{
		{"think 1s", "users: 2000\nclosed: {think: 1s}\nphases: {steady: 1m}\nactions: [{name: a}]\n", []bool{true}},
		{"think 999ms", "users: 10\nclosed: {think: 999ms}\nphases: {steady: 1m}\nactions: [{name: a}]\n", []bool{false}},
		{"paced 2s", "users: 10\nclosed: {pacing: 2s}\nphases: {steady: 1m}\nactions: [{name: a}]\n", []bool{true}},
		{"no think", "users: 10\nclosed: {iterations: 5}\nactions: [{name: a}]\n", []bool{false}},
		{"2,001 users a second together", "users: 2001\nclosed: {think: 1s}\nphases: {steady: 1m}\nactions: [{name: a}]\n", []bool{false}},
		{"journey steps thinking 1s", "users: 10\nphases: {steady: 1m}\njourneys: [{name: j, steps: [{name: a, think: 1s}, {name: b, think: 1s}]}]\n", []bool{true}},
		{"a journey step without think", "users: 10\nphases: {steady: 1m}\njourneys: [{name: j, steps: [{name: a, think: 1s}, {name: b}]}]\n", []bool{false}},
		// A busy group off the timeline does not count toward its total.
		{"beside a busy group", `
phases: {steady: 1m}
groups:
  - {name: seldom, users: 1500, closed: {think: 1s}, actions: [{name: a}]}
  - {name: busy, users: 1000, closed: {think: 100ms}, actions: [{name: b}]}
`, []bool{true, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := compile(t, c.src)
			for g, want := range c.want {
				if got := onTimeline(p, g); got != want {
					t.Errorf("group %d on the timeline: %v, want %v (bound %g a second)", g, got, want, p.MaxUserRate(g))
				}
			}
		})
	}
}
