package workload

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/scenario"
)

// The rules are tested row by row through every executor in the engine's
// TestWorkloadRules; these tests pin the steps themselves where a run
// cannot reach them cheaply (a full FIFO, the order of waiting arrivals, a
// passive user's retries near its stop time).

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

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func (s Step) String() string {
	switch s.Kind {
	case Wait:
		if s.At == Never {
			return "wait"
		}
		return fmt.Sprintf("wait %v", s.At)
	case Run, Drop:
		return fmt.Sprintf("%v %v", s.Kind, s.At)
	case Leave:
		if s.Finished {
			return "leave finished"
		}
	}
	return s.Kind.String()
}

// steps calls next at each time of at and lists the steps it returns.
func steps(next func(now time.Duration) Step, at ...time.Duration) string {
	var out []string
	for _, now := range at {
		out = append(out, next(now).String())
	}
	return strings.Join(out, ", ")
}

// The aggregate open model's FIFO: arrivals wait in order of arrival, a
// free session takes the oldest, a full FIFO pushes the oldest out, and a
// waiting arrival past max_delay is dropped when it is looked at.
func TestOpenQueue(t *testing.T) {
	// Uniform arrivals every 10 ms for 1 s, a FIFO of 3.
	const src = "users: 1\nmodel: open\nopen: {rate: 100/s, arrivals: uniform, max_delay: %s}\nphases: {steady: 1s}\nactions: [{name: a}]\n"
	for _, c := range []struct {
		name     string
		maxDelay string
		call     func(o *Open) string
		want     string
	}{
		{"a free session takes an arrival on time", "25ms", func(o *Open) string {
			return steps(func(now time.Duration) Step { return o.Next(now, true) }, 0, ms(5), ms(10))
		}, "run 0s, wait 10ms, run 10ms"},
		{"busy: arrivals wait, the oldest goes first", "25ms", func(o *Open) string {
			a := steps(func(now time.Duration) Step { return o.Next(now, false) }, ms(20))
			return a + fmt.Sprintf(" (%d waiting), ", o.Waiting()) +
				steps(func(now time.Duration) Step { return o.Next(now, true) }, ms(21), ms(21), ms(21), ms(21))
		}, "wait 30ms (3 waiting), run 0s, run 10ms, run 20ms, wait 30ms"},
		{"late waiting arrivals are dropped, not run", "25ms", func(o *Open) string {
			o.Next(ms(20), false)
			return steps(func(now time.Duration) Step { return o.Next(now, true) }, ms(36), ms(36), ms(36))
		}, "drop 0s, drop 10ms, run 20ms"},
		{"a late arrival is dropped as it comes", "25ms", func(o *Open) string {
			return steps(func(now time.Duration) Step { return o.Next(now, true) }, ms(26), ms(26))
		}, "drop 0s, run 10ms"},
		{"a full FIFO pushes the oldest out", "1s", func(o *Open) string {
			return steps(func(now time.Duration) Step { return o.Next(now, false) }, ms(25), ms(30), ms(30)) +
				fmt.Sprintf(" (%d waiting)", o.Waiting())
		}, "wait 30ms, drop 0s, wait 40ms (3 waiting)"},
		{"arrivals over: leave", "25ms", func(o *Open) string {
			for now := time.Duration(0); now < 2*time.Second; now += time.Millisecond {
				for s := o.Next(now, true); s.Kind != Wait && s.Kind != Leave; s = o.Next(now, true) {
				}
				if s := o.Next(now, true); s.Kind == Leave {
					return fmt.Sprintf("%v at %v", s, now)
				}
			}
			return "no leave"
		}, "leave at 990ms"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := compile(t, fmt.Sprintf(src, c.maxDelay))
			o := NewOpen(p.Arrivals(nil), p.MaxDelay, 3)
			if got := c.call(&o); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
	// 2.5 arrivals in max_delay: 1.5x + 8 sqrt(x) + 64 = 80.4.
	if n := QueueSize(compile(t, fmt.Sprintf(src, "25ms")), 1); n != 80 {
		t.Errorf("QueueSize %d, want 80", n)
	}
}

// The user's steps, one row per rule, on a hand-made clock.
func TestUserSteps(t *testing.T) {
	take := 2
	for _, c := range []struct {
		name  string
		src   string
		opts  Options
		calls []call
		want  string
	}{
		{"closed: start, run, think, iterations",
			"users: 1\nclosed: {iterations: 2, think: 100ms}\nactions: [{name: a}]\n", Options{},
			[]call{{now: 0}, {now: 0, end: 10}, {now: 50}, {now: 110, end: 120}, {now: 120}},
			"start, run 0s, wait 110ms, run 110ms, leave finished"},
		{"closed: a shared total ends every user, finished",
			"users: 1\nclosed: {total: 5}\nactions: [{name: a}]\n", Options{Take: func() bool { take--; return take >= 0 }},
			[]call{{now: 0}, {now: 0, end: 1}, {now: 1, end: 2}, {now: 2}},
			"start, run 0s, run 1ms, leave finished"},
		{"closed: pacing keeps its slots after a stall",
			"users: 1\nclosed: {iterations: 4, pacing: 100ms}\nactions: [{name: a}]\n", Options{},
			[]call{{now: 0}, {now: 0, end: 250}, {now: 250, end: 260}, {now: 260, end: 270}, {now: 270}, {now: 300, end: 301}, {now: 301}},
			"start, run 0s, run 100ms, run 200ms, wait 300ms, run 300ms, leave finished"},
		{"closed: a failed log-on uses the iteration, the next waits OpenRetry",
			"users: 1\nclosed: {iterations: 2}\nactions: [{name: a}]\n", Options{},
			[]call{{now: 0}, {now: 0, end: -5}, {now: 5}, {now: 105, end: 106}, {now: 106}},
			"start, run 0s, wait 105ms, run 105ms, leave finished"},
		{"closed: stay logged on until the stop time",
			"users: 1\nclosed: {think: 1s}\nphases: {steady: 1500ms}\nactions: [{name: a}]\n", Options{},
			[]call{{now: 0}, {now: 0, end: 600}, {now: 600}, {now: 1500}},
			"start, run 0s, wait 1.5s, leave"},
		{"passive: retry after OpenRetry, give up at the stop",
			"interval: 50ms\nphases: {steady: 250ms}\ngroups: [{name: s, users: 1}]\n", Options{},
			[]call{{now: 0}, {now: 0}, {now: 10}, {now: 100}, {now: 150}, {now: 200}, {now: 210}, {now: 250}},
			"start, logon, wait 100ms, logon, wait 200ms, logon, wait 250ms, leave"},
		{"per-user open: log on at the start when the driver does",
			"users: 1\nmodel: open\nphases: {steady: 1s}\nactions: [{name: a, rate: 1/h}]\n", Options{LogonAtStart: true},
			[]call{{now: 0}, {now: 0}, {now: 0}, {now: 1000}},
			"start, logon, wait 1s, leave"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := compile(t, c.src)
			w := NewUser(p, p.Users[0], c.opts)
			var got []string
			for _, k := range c.calls {
				now := ms(k.now)
				s := w.Next(now)
				got = append(got, s.String())
				switch {
				case s.Kind == Run && k.end > 0:
					w.Done(ms(k.end))
				case s.Kind == Run && k.end < 0:
					w.LogonFailed(ms(-k.end))
				case s.Kind == Logon:
					w.LoggedOn(now, k.ok)
				}
			}
			if g := strings.Join(got, ", "); g != c.want {
				t.Errorf("got  %s\nwant %s", g, c.want)
			}
		})
	}
}

// call is one call of Next at now (ms), and what the executor reports
// after a Run step: its end (ms), or -end for a failed log-on; after a
// Logon step: ok.
type call struct {
	now, end int
	ok       bool
}

// A per-user open user's arrivals come at its own draws whatever the
// server does, and one that could not start within max_delay is dropped.
func TestUserArrivals(t *testing.T) {
	p := compile(t, "users: 1\nmodel: open\nopen: {max_delay: 50ms}\nphases: {steady: 10s}\nactions: [{name: a, rate: 10/s}]\n")
	u := p.Users[0]
	r := plan.NewRand(u.Seed)
	var due []time.Duration
	gap, _ := p.NextArrivalIn(0, r)
	for at := gap; at < u.Stop; at += gap {
		due = append(due, at)
		gap, _ = p.NextArrivalIn(0, r)
	}
	w := NewUser(p, u, Options{})
	if s := w.Next(0); s.Kind != Start {
		t.Fatalf("first step %v", s)
	}
	// The first action takes 1 s, the others 1 ms: arrivals due more than
	// 50 ms before the user is free again are dropped when it is; the
	// rest run, each timed from its own time.
	free := due[0] + time.Second
	busy := time.Duration(0)
	var ran, dropped int
	for i, at := range due {
		now := max(at, busy)
		switch s := w.Next(now); {
		case s.Kind == Run && s.At == at:
			ran++
			busy = now + time.Millisecond
			if i == 0 {
				busy = free
			}
			w.Done(busy)
		case s.Kind == Drop && s.At == at:
			dropped++
		default:
			t.Fatalf("arrival %d due at %v: step %v at %v", i, at, s, now)
		}
	}
	late := 0
	for _, at := range due[1:] {
		if free-at > 50*time.Millisecond {
			late++
		}
	}
	if dropped != late || ran != len(due)-late || late == 0 {
		t.Errorf("ran %d, dropped %d of %d arrivals; %d were due more than 50ms before the user was free", ran, dropped, len(due), late)
	}
	if s := w.Next(u.Stop); s.Kind != Leave || s.Finished {
		t.Errorf("at the stop: %v", s)
	}
}

// A journey's steps through the pure step: Begin on the first, Test on a
// while step, Skip passes on to the next step at the same due time, a
// condition that holds runs the step again up to max, Fail ends the
// journey, EndJourney comes with the iteration's due time.
func TestJourneySteps(t *testing.T) {
	p := compile(t, "users: 1\nclosed: {iterations: 2, think: 100ms}\n"+
		"journeys: [{name: j, steps: [{name: a, think: 10ms}, {name: b, while: more, max: 2}, {name: c}]}]\n")
	w := NewUser(p, p.Users[0], Options{})
	var got []string
	// report says what the executor did with the last Run step: "done",
	// "fail", "skip" (its condition does not hold).
	next := func(now int, report string, end int) {
		s := w.Next(ms(now))
		out := s.String()
		switch s.Kind {
		case Run:
			out = fmt.Sprintf("%s %s", p.Actions[s.Action].Name, out)
			if s.Begin {
				out += " begin"
			}
			if s.Test {
				out += " test"
			}
		case EndJourney:
			out = fmt.Sprintf("end journey %v row %d", s.At, s.Action)
		}
		got = append(got, out)
		switch report {
		case "done":
			w.Done(ms(end))
		case "fail":
			w.Fail(ms(end))
		case "skip":
			w.Skip()
		}
	}
	next(0, "", 0)
	next(0, "done", 5)   // a 0-5
	next(5, "", 0)       // b due after a's think
	next(15, "skip", 0)  // b's condition does not hold
	next(15, "done", 20) // c at once
	next(20, "", 0)      // the journey's row
	next(20, "", 0)      // the group's think time
	next(120, "done", 125)
	next(135, "done", 140) // b holds: again
	next(140, "done", 150) // and again
	next(150, "fail", 160) // c fails
	next(160, "", 0)
	next(160, "", 0)
	want := "start, a run 0s begin, wait 15ms, b run 15ms test, c run 15ms, end journey 0s row 3, wait 120ms, " +
		"a run 120ms begin, b run 135ms test, b run 140ms test, c run 150ms, end journey 120ms row 3, leave finished"
	if g := strings.Join(got, ", "); g != want {
		t.Errorf("got  %s\nwant %s", g, want)
	}

	// A failed step ends the journey at once, a failed log-on without its
	// row: the next iteration is due OpenRetry later at the earliest.
	w = NewUser(p, p.Users[0], Options{})
	got = nil
	next(0, "", 0)
	next(0, "fail", 5)
	next(5, "", 0)
	next(5, "", 0)
	next(105, "", 0)
	w.LogonFailed(ms(106))
	next(106, "", 0)
	want = "start, a run 0s begin, end journey 0s row 3, wait 105ms, a run 105ms begin, leave finished"
	if g := strings.Join(got, ", "); g != want {
		t.Errorf("got  %s\nwant %s", g, want)
	}
}

// An aggregate open session's journey (NewJourney): its steps by the
// closed rules, its row, then free at once after the last step's think
// time; a step due at or after the stop is not begun (Cut), and the
// session is free again at the stop, not later.
func TestSessionJourney(t *testing.T) {
	p := compile(t, "users: 1\nmodel: open\nopen: {rate: 10/s}\nphases: {steady: 1s}\n"+
		"journeys: [{name: j, steps: [{name: a, think: 500ms}, {name: b, think: 30ms}]}]\n")
	w := NewJourney(p, p.Users[0], 0, 0)
	var got []string
	next := func(now, end int) {
		s := w.Next(ms(now))
		got = append(got, s.String())
		if s.Kind == Run && end > 0 {
			w.Done(ms(end))
		}
	}
	next(0, 10)
	next(10, 0)
	next(510, 520)
	next(520, 0)
	next(520, 0)
	next(550, 0)
	want := "run 0s, wait 510ms, run 510ms, end journey, wait 550ms, leave"
	if g := strings.Join(got, ", "); g != want {
		t.Errorf("got  %s\nwant %s", g, want)
	}
	w, got = NewJourney(p, p.Users[0], 0, ms(800)), nil
	next(800, 850)
	next(850, 0)
	next(850, 0)
	next(1000, 0)
	want = "run 800ms, cut, wait 1s, leave"
	if g := strings.Join(got, ", "); g != want {
		t.Errorf("got  %s\nwant %s", g, want)
	}
}
