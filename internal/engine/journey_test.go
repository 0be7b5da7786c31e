package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/result"
)

// stepDriver runs journeys: every step takes 10 ms (virtual time); a
// step named "page" has a condition that holds 3 times per journey (the
// count restarts at "home"); steps named in fail fail with a 503.
type stepDriver struct {
	sleepDriver
	fail map[string]bool
	mu   sync.Mutex
	seen []string // user 0's steps, in order
}

func (d *stepDriver) JourneySteps() bool { return true }
func (d *stepDriver) Open(ctx context.Context, u driver.User) (driver.Session, error) {
	return &stepSession{d: d, user: u.ID}, nil
}

type stepSession struct {
	d     *stepDriver
	user  int
	pages int
	begun int
}

func (s *stepSession) Begin() { s.begun++ }

func (s *stepSession) Holds(a driver.Action) (bool, error) {
	switch a.(string) {
	case "loop":
		return true, nil // never turns false: max ends it
	case "broken":
		return false, driver.Errorf(driver.Check, errors.New("template: no value"))
	case "page":
	default:
		return false, errors.New("no condition")
	}
	return s.pages < 3, nil
}

func (s *stepSession) Do(ctx context.Context, a driver.Action) (driver.Outcome, error) {
	name := a.(string)
	if s.user == 0 {
		s.d.mu.Lock()
		s.d.seen = append(s.d.seen, name)
		s.d.mu.Unlock()
	}
	switch name {
	case "home":
		s.pages = 0
	case "page":
		s.pages++
	}
	time.Sleep(10 * time.Millisecond)
	if s.d.fail[name] {
		return driver.Outcome{}, driver.Errorf(driver.Check, errors.New("check failed"))
	}
	return driver.Outcome{BytesIn: 100}, nil
}

func (s *stepSession) Close() error { return nil }

func journeyRun(t *testing.T, src string, d *stepDriver) (*Outcome, map[string]result.ActionSummary) {
	t.Helper()
	p := compile(t, src)
	acts := make([]driver.Action, len(p.Actions))
	for i, a := range p.Actions {
		acts[i] = a.Name
	}
	out, err := Run(context.Background(), Config{Plan: p, Driver: d, Actions: acts, Kind: "goroutines"})
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

const buyJourney = `
users: 2
closed: {iterations: 3}
journeys:
  - name: buy
    steps:
      - {name: home, think: 100ms}
      - {name: list, repeat: 2, think: 10ms}
      - {name: page, while: "more", max: 5}
      - {name: pay}
`

// A journey's steps run in order, repeat and while as written, each timed
// as its own row; the journey's row is timed from its due time to the end
// of its last step; iterations count journeys.
func TestJourneySteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &stepDriver{}
		out, rows := journeyRun(t, buyJourney, d)
		// home 10 + think 100, list 2 x (10 + 10), page 3 x 10, pay 10.
		const journey = 190 * time.Millisecond
		if out.Elapsed != 3*journey {
			t.Errorf("elapsed %v, want 3 journeys of %v", out.Elapsed, journey)
		}
		want := map[string]uint64{"home": 6, "list": 12, "page": 18, "pay": 6, "journey:buy": 6, "total": 42}
		for name, n := range want {
			if rows[name].Count != n || rows[name].Errors != 0 {
				t.Errorf("%s: %d done, %d errors; want %d and none", name, rows[name].Count, rows[name].Errors, n)
			}
		}
		if l := rows["journey:buy"].Latency; l.MinMs != 190 || l.MaxMs != 190 {
			t.Errorf("journey latency %+v, want 190 ms", l)
		}
		if l := rows["home"].Latency; l.MaxMs != 10 {
			t.Errorf("home latency %+v, want 10 ms", l)
		}
		order := []string{"home", "list", "list", "page", "page", "page", "pay"}
		if len(d.seen) != 3*len(order) {
			t.Fatalf("user 0 did %v", d.seen)
		}
		for i, s := range d.seen {
			if s != order[i%len(order)] {
				t.Fatalf("user 0 did %v, want %v three times", d.seen, order)
			}
		}
	})
}

// A failed step ends its journey: the later steps are not done, and the
// journey's row counts the failure in the step's class. max bounds a
// condition that always holds.
func TestJourneyFailsAtStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &stepDriver{fail: map[string]bool{"list": true}}
		_, rows := journeyRun(t, buyJourney, d)
		if rows["list"].Count != 6 || rows["list"].Errors != 6 || rows["page"].Count != 0 || rows["pay"].Count != 0 {
			t.Errorf("list %d (%d errors), page %d, pay %d; want 6 (6), 0, 0", rows["list"].Count, rows["list"].Errors, rows["page"].Count, rows["pay"].Count)
		}
		j := rows["journey:buy"]
		if j.Count != 6 || j.ErrorsByClass["check"] != 6 {
			t.Errorf("journey: %d, errors %v; want 6 in class check", j.Count, j.ErrorsByClass)
		}
		// Due at its start; home 10 ms, think 100 ms, list 10 ms.
		if j.Latency.MaxMs != 120 {
			t.Errorf("failed journey latency %+v, want 120 ms", j.Latency)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		d := &stepDriver{}
		_, rows := journeyRun(t, `
users: 1
closed: {iterations: 2}
journeys:
  - name: poll
    steps:
      - {name: page, while: "more", max: 4}
      - {name: loop, while: "always", max: 4}
      - {name: broken, while: "fails"}
      - {name: never}
`, d)
		// page's condition holds 3 times after home; without home it
		// counts on: 3 in the first journey, none in the second. loop's
		// always holds: 4 a journey. broken's cannot be evaluated: the
		// journey fails there, in the error's class, before never.
		if rows["page"].Count != 3 || rows["loop"].Count != 8 || rows["never"].Count != 0 {
			t.Errorf("page %d, loop %d, never %d; want 3, 8, 0", rows["page"].Count, rows["loop"].Count, rows["never"].Count)
		}
		if b := rows["broken"]; b.Count != 2 || b.ErrorsByClass["check"] != 2 {
			t.Errorf("broken: %d, %v; want 2 in class check", b.Count, b.ErrorsByClass)
		}
		if j := rows["journey:poll"]; j.Count != 2 || j.ErrorsByClass["check"] != 2 {
			t.Errorf("journeys %d, %v; want 2 failed in class check", j.Count, j.ErrorsByClass)
		}
	})
}

// A journey due to go on past its user's stop time (the end of a run
// bounded by time) is cut there: the steps due after it are not begun,
// the journey has no row, and the run ends at its planned end.
func TestJourneyCutAtStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &stepDriver{}
		out, rows := journeyRun(t, `
users: 1
phases: {steady: 1s}
journeys:
  - name: slow
    steps:
      - {name: s1, think: 300ms}
      - {name: s2, think: 300ms}
      - {name: s3, think: 300ms}
      - {name: s4, think: 300ms}
      - {name: s5, think: 300ms}
`, d)
		// Steps are due at 0, 310, 620 and 930 ms; s5's 1240 ms is past
		// the stop at 1 s.
		for name, n := range map[string]uint64{"s1": 1, "s2": 1, "s3": 1, "s4": 1, "s5": 0, "journey:slow": 0} {
			if rows[name].Count != n {
				t.Errorf("%s done %d times, want %d", name, rows[name].Count, n)
			}
		}
		if out.Aborted != 1 {
			t.Errorf("aborted %d, want the one journey cut", out.Aborted)
		}
		if out.Elapsed != time.Second {
			t.Errorf("elapsed %v, want the planned 1s", out.Elapsed)
		}
	})
}

// In the open model at open.rate each arrival is one journey, picked by
// weight, done by a free user; an arrival that cannot start within
// max_delay is dropped, counted in the journey's row.
func TestJourneyOpenArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := &stepDriver{}
		out, rows := journeyRun(t, `
users: 2
model: open
open: {rate: 10/s, arrivals: uniform}
phases: {steady: 1s}
journeys:
  - name: a
    steps: [{name: a1}, {name: a2}]
  - name: b
    steps: [{name: b1}]
`, d)
		// Ten arrivals, 0 to 900 ms, each found a free user.
		ja, jb := rows["journey:a"], rows["journey:b"]
		if ja.Count+jb.Count != 10 || ja.Count == 0 || jb.Count == 0 || ja.Errors+jb.Errors != 0 {
			t.Fatalf("journeys a %d, b %d (errors %d); want 10 between them, both picked", ja.Count, jb.Count, ja.Errors+jb.Errors)
		}
		if rows["a1"].Count != ja.Count || rows["a2"].Count != ja.Count || rows["b1"].Count != jb.Count {
			t.Errorf("steps a1 %d, a2 %d, b1 %d; want each journey's steps once per journey", rows["a1"].Count, rows["a2"].Count, rows["b1"].Count)
		}
		if l := ja.Latency; l.MinMs != 20 || l.MaxMs != 20 {
			t.Errorf("journey a latency %+v, want 20 ms (two steps of 10 ms)", l)
		}
		if out.Elapsed != time.Second {
			t.Errorf("elapsed %v, want the planned 1s", out.Elapsed)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		d := &stepDriver{}
		_, rows := journeyRun(t, `
users: 1
model: open
open: {rate: 10/s, arrivals: uniform, max_delay: 50ms}
phases: {steady: 1s}
journeys:
  - name: slow
    steps: [{name: s, think: 240ms}]
`, d)
		// One user, busy 250 ms a journey: the arrivals at 0, 300, 600 and
		// 900 ms run; of the others, one waits in the queue and is dropped
		// when it starts 150 ms late, the next finds the queue full.
		j := rows["journey:slow"]
		if j.Count != 4 || j.Dropped != 6 || rows["s"].Count != 4 || rows["s"].Dropped != 0 {
			t.Errorf("journeys %d (dropped %d), steps %d (dropped %d); want 4 (6), 4 (0)", j.Count, j.Dropped, rows["s"].Count, rows["s"].Dropped)
		}
	})
}
