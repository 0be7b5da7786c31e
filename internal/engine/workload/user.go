package workload

import (
	"time"

	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/scenario"
)

// Options are what the executor knows that the plan does not.
type Options struct {
	// Take claims one of the plan's shared actions (closed.total): false
	// when they are all taken. Required when the plan has a Total.
	Take func() bool
	// LogonAtStart: a per-user open user logs on at its start, before its
	// first arrival (the driver's driver.LogonAtStart ability). A failure
	// is not tried again then: the first action logs on and records it.
	LogonAtStart bool
}

// stage is where a user is in its life.
type stage uint8

const (
	waiting stage = iota // before its start
	logon                // to log on at logonAt
	active               // between steps
	busy                 // a Run was handed out; Done (or LogonFailed) not yet called
	gone                 // left
)

// User is one user's life in the closed model, the per-user open model, or
// a passive group (users who log on and stay). Its zero value is not
// useful: use NewUser. A User is a value, so an executor can hold it in
// place (an event loop keeps one per connection in an array).
//
// The rules, in order of the steps a user goes through:
//
//   - It starts (Start) at its planned start time. A passive user then
//     logs on (Logon), and when that fails tries again OpenRetry later,
//     until its stop time. A per-user open user logs on at its start when
//     Options.LogonAtStart says so.
//   - Closed model: an iteration is due at the user's start, then at the
//     end of the previous action plus a think time drawn from the user's
//     own stream, or, with pacing, one pace after the previous iteration
//     was due (a fixed schedule: a user that falls behind does the
//     iterations it owes back to back, each timed from its slot). When an
//     iteration is due, the user leaves, finished, if it did its
//     iterations or the shared total is taken (Options.Take); otherwise it
//     picks an action by weight (one draw) and runs it, timed from when it
//     was due. An action that could not log on uses up its iteration, and
//     the next one is due OpenRetry later at the earliest.
//   - Per-user open model: arrivals come at the user's own Poisson times
//     (gap and action drawn from its stream), one action at a time; an
//     arrival that comes due while the user is busy waits, and is dropped
//     (Drop) when it could not start within the group's max_delay. The
//     schedule never moves with the server.
//   - It leaves at its stop time (Wait until then, then Leave), staying
//     logged on until then even when its next iteration or arrival would
//     come after it.
type User struct {
	p       *plan.Plan
	u       plan.User
	rng     *plan.Rand
	take    func() bool
	next    time.Duration // when the next iteration or arrival is due
	sched   time.Duration // closed: when the iteration in progress was due
	logonAt time.Duration // when the next log-on is due
	done    int           // closed: iterations begun
	a       int           // per-user open: the next arrival's action
	jr      journey       // closed, with journeys: the iteration's journey
	stepAt  time.Duration // journey: when its next step is due
	begun   bool          // journey: its first step was handed out
	stage   stage
	atStart bool // log on at the start (per-user open, Options.LogonAtStart)
	fin     bool // left, finished
	single  bool // one journey of an aggregate open session (NewJourney)
}

// NewUser returns the life of user u of plan p, in a group of the closed
// model, of the per-user open model or a passive one (the aggregate open
// model's sessions are served by Open instead). Its random stream is the
// user's own (seeded from u.Seed), so a user does the same in whichever
// executor, thread or segment runs it.
func NewUser(p *plan.Plan, u plan.User, o Options) User {
	g := &p.Groups[u.Group]
	if p.Total > 0 && o.Take == nil && !g.Passive && g.Model == scenario.Closed {
		panic("workload: the plan shares a total and Options.Take is nil")
	}
	return User{
		p: p, u: u, rng: plan.NewRand(u.Seed), take: o.Take, jr: journey{j: -1},
		atStart: o.LogonAtStart && g.Model == scenario.Open && !g.Passive,
	}
}

// NewJourney returns the life of one journey j of the aggregate open
// model's session u, the arrival due at at: the journey's steps by the
// closed user's rules (the first due at at; cut at the user's stop time),
// EndJourney (or Cut), then a Wait until the session is free again (the
// last step's think time passed, not past the stop time), then Leave: the
// session may take its next arrival.
func NewJourney(p *plan.Plan, u plan.User, j int, at time.Duration) User {
	return User{p: p, u: u, jr: journey{j: j}, sched: at, stepAt: at, stage: active, single: true}
}

// ArrivalRow is the row an arrival of action a counts in when dropped:
// the action's, or with journeys the journey's (a is its first step).
func ArrivalRow(p *plan.Plan, a int) int {
	if len(p.Journeys) > 0 {
		if j := p.JourneyAt(a); j >= 0 {
			return p.JourneyRow(j)
		}
	}
	return a
}

// Next returns the user's next step at time now.
func (w *User) Next(now time.Duration) Step {
	switch w.stage {
	case waiting:
		if now < w.u.Start {
			return Step{Kind: Wait, At: w.u.Start}
		}
		w.join()
		return Step{Kind: Start, At: w.u.Start}
	case logon:
		if now < w.logonAt {
			return Step{Kind: Wait, At: w.logonAt}
		}
		return Step{Kind: Logon, At: w.logonAt}
	case busy:
		return Step{Kind: Wait, At: Never}
	case gone:
		return Step{Kind: Leave, At: now, Finished: w.fin}
	}
	if w.jr.j >= 0 {
		return w.journeyStep(now)
	}
	if w.single {
		if now < w.next {
			return Step{Kind: Wait, At: w.next}
		}
		return w.leave(now, false)
	}
	g := &w.p.Groups[w.u.Group]
	switch {
	case g.Passive:
		return w.stay(now)
	case g.Model == scenario.Open:
		return w.arrival(now, g)
	}
	return w.iteration(now, g)
}

// join sets the user up at its start.
func (w *User) join() {
	g := &w.p.Groups[w.u.Group]
	w.stage = active
	switch {
	case g.Passive:
		w.stage, w.logonAt = logon, w.u.Start
	case g.Model == scenario.Open:
		gap, a := w.p.NextArrivalIn(w.u.Group, w.rng)
		w.next, w.a = add(w.u.Start, gap), a
		if w.atStart && (w.u.Stop == plan.Open || w.u.Start < w.u.Stop) {
			w.stage, w.logonAt = logon, w.u.Start
		}
	default:
		w.next = w.u.Start
	}
}

// LoggedOn reports the outcome of a Logon step at time now.
func (w *User) LoggedOn(now time.Duration, ok bool) {
	if w.stage != logon {
		return
	}
	w.stage = active
	if ok || !w.p.Groups[w.u.Group].Passive {
		return
	}
	// A passive user tries again, until its stop time.
	stop := w.u.Stop
	if stop != plan.Open && now >= stop {
		w.stage = gone
		return
	}
	if at := add(now, OpenRetry); stop == plan.Open || at < stop {
		w.stage, w.logonAt = logon, at
	}
	// Otherwise it stays, logged off, until its stop time.
}

// iteration is the closed model's next step.
func (w *User) iteration(now time.Duration, g *plan.Group) Step {
	if g.Iterations > 0 && w.done >= g.Iterations {
		return w.leave(now, true)
	}
	if w.u.Stop != plan.Open && w.next >= w.u.Stop {
		return w.stay(now)
	}
	if now < w.next {
		return Step{Kind: Wait, At: w.next}
	}
	return w.begin(now)
}

// begin starts the iteration due at w.next: the shared total is claimed
// and the action, or the journey, picked here.
func (w *User) begin(now time.Duration) Step {
	if w.p.Total > 0 && !w.take() {
		return w.leave(now, true)
	}
	w.done++
	w.sched = w.next
	if len(w.p.Journeys) > 0 {
		w.jr = journey{j: w.p.ChooseJourneyIn(w.u.Group, w.rng.Float64())}
		w.stepAt, w.begun = w.sched, false
		return w.journeyStep(now)
	}
	a := w.p.ChooseIn(w.u.Group, w.rng.Float64())
	w.stage = busy
	return Step{Kind: Run, At: w.sched, Action: a}
}

// journeyStep is the next step of the journey in progress: its next step
// when due, or its end.
func (w *User) journeyStep(now time.Duration) Step {
	s := w.jr.next(w.p)
	if s.end {
		row := w.p.JourneyRow(w.jr.j)
		w.jr.j = -1
		w.iterated(w.stepAt, false)
		return Step{Kind: EndJourney, At: w.sched, Action: row}
	}
	if w.u.Stop != plan.Open && w.stepAt >= w.u.Stop {
		// The user's stop time (the end of the run, or its turn to leave
		// in the ramp-down) comes before this step: the journey is cut
		// there, not finished past the bound. It was not done, so it has
		// no row; the user stays until its stop time.
		w.jr.j = -1
		w.next = w.u.Stop
		return Step{Kind: Cut, At: w.sched}
	}
	if now < w.stepAt {
		return Step{Kind: Wait, At: w.stepAt}
	}
	w.stage = busy
	st := Step{Kind: Run, At: w.stepAt, Action: s.action, Test: s.test, Begin: !w.begun}
	w.begun = true
	return st
}

// arrival is the per-user open model's next step.
func (w *User) arrival(now time.Duration, g *plan.Group) Step {
	if w.u.Stop != plan.Open && w.next >= w.u.Stop {
		return w.stay(now)
	}
	if now < w.next {
		return Step{Kind: Wait, At: w.next}
	}
	at, a := w.next, w.a
	gap, next := w.p.NextArrivalIn(w.u.Group, w.rng)
	w.next, w.a = add(at, gap), next
	if now-at > g.MaxDelay {
		return Step{Kind: Drop, At: at, Action: a}
	}
	w.stage = busy
	return Step{Kind: Run, At: at, Action: a}
}

// stay keeps the user until its stop time, then makes it leave.
func (w *User) stay(now time.Duration) Step {
	switch {
	case w.u.Stop == plan.Open:
		return Step{Kind: Wait, At: Never}
	case now < w.u.Stop:
		return Step{Kind: Wait, At: w.u.Stop}
	}
	return w.leave(now, false)
}

func (w *User) leave(now time.Duration, finished bool) Step {
	w.stage, w.fin = gone, finished
	return Step{Kind: Leave, At: now, Finished: finished}
}

// Done reports that the action of the last Run step ended at end (the
// time the user is free again).
func (w *User) Done(end time.Duration) { w.ended(end, stepDone) }

// Fail reports that the action of the last Run step ended at end and
// failed (or its condition could not be evaluated): a journey ends there.
// Otherwise it is Done.
func (w *User) Fail(end time.Duration) { w.ended(end, stepFailed) }

// LogonFailed reports that the last Run step's action could not be done
// because the user could not log on (the executor recorded the failure);
// end is when the attempt ended. It uses up the iteration (a journey ends
// there, without its own row).
func (w *User) LogonFailed(end time.Duration) { w.ended(end, stepNoSession) }

// Skip reports that the condition of the last Run step (Test) does not
// hold: the journey goes on with its following step, due at the same time.
func (w *User) Skip() {
	if w.stage != busy || w.jr.j < 0 {
		return
	}
	w.stage = active
	w.jr.skip()
}

// How a Run step ended.
const (
	stepDone = iota
	stepFailed
	stepNoSession
)

func (w *User) ended(end time.Duration, how int) {
	if w.stage != busy {
		return
	}
	w.stage = active
	if w.p.Groups[w.u.Group].Model == scenario.Open && !w.single {
		return // arrivals keep their own schedule
	}
	if w.jr.j >= 0 && how != stepNoSession {
		// A journey's step: the next one is due after this one's think
		// time; a failure ends the journey at once.
		if how == stepDone {
			// done(true) keeps k on the step just done.
			w.stepAt = add(end, w.p.Steps[w.p.Journeys[w.jr.j].First+w.jr.k].Think)
		} else {
			w.stepAt = end
		}
		w.jr.done(w.p, how == stepDone)
		return
	}
	w.jr.j = -1
	w.iterated(end, how == stepNoSession)
}

// iterated sets when the next iteration is due, the iteration in progress
// having ended at end: one pace after it was due, or after a think time;
// OpenRetry after end at the earliest when the user could not log on.
func (w *User) iterated(end time.Duration, noSession bool) {
	if w.single { // free again at end, not past the stop time
		w.next = end
		if w.u.Stop != plan.Open {
			w.next = min(end, w.u.Stop)
		}
		return
	}
	g := &w.p.Groups[w.u.Group]
	var next time.Duration
	if g.Pacing > 0 {
		next = add(w.sched, g.Pacing)
	} else {
		next = add(end, g.ThinkTime(w.rng))
	}
	if noSession {
		next = max(next, add(end, OpenRetry))
	}
	w.next = next
}
