// Package workload is the simulated user's life, written once: when a user
// is next due, which action it does, whether a late arrival is dropped or
// run, how long it thinks or how it is paced, and when it stops. It reads
// no clock, starts no goroutine and does no I/O: an executor passes the
// time in, and the step says what happens next. The engine's executors
// (one goroutine per user, the timeline of seldom-acting users, the event
// loops of package netloop) only decide how to wait until a step is due and
// how to do an action; none of them decides what happens next.
//
// Two kinds of step machine cover the models of a plan:
//
//   - User is one user of the closed model (iterations per user, a total
//     shared by the users, think time or pacing, a stop time) or of the
//     per-user open model (its own Poisson arrivals, one action at a time,
//     an arrival dropped when it could not start within max_delay), or a
//     passive user (logs on and stays).
//   - Open is the aggregate open model: the plan's arrivals handed to free
//     sessions, waiting in a bounded FIFO while none is free, and dropped
//     when they could not start within max_delay.
//
// An executor asks Next(now) and acts on the Step it gets: it waits until
// Step.At when the Kind is Wait and asks again; it runs Step.Action when
// the Kind is Run, times it from Step.At (the scheduled start: latency
// includes any wait), and reports the end with Done; it counts a Drop; it
// ends the user on Leave. Times are offsets from the run's start on the
// executor's clock. Neither type is safe for concurrent use: each has one
// owner (a user's goroutine, a timeline worker holding its entry, a loop
// thread). Next, Done and the other methods allocate nothing.
//
// # What each model measures
//
// A Run's At is the time the action was due, and executors time latency
// from it. In the open models that is the arrival's time, fixed in advance,
// so a server that falls behind shows as latency and drops. In the closed
// model with pacing it is the iteration's slot on the paced schedule (the
// user's start plus a whole number of paces), which also does not move
// with the server. In the closed model without pacing it is the end of the
// previous action plus the think time: a stalled action delays the
// actions after it instead of adding to their latency (coordinated
// omission), so closed-loop latency then measures service time as seen
// from each iteration's start.
//
// # Journeys
//
// When the plan has journeys, a closed user's iteration is one journey,
// picked by weight, instead of one action: Next yields Run for each of its
// steps in turn, due at the end of the step before plus that step's think
// time (the first at the iteration's due time), and each is timed from its
// due time. A step with a condition (While) comes with Test: the executor
// asks the session whether it holds and reports Skip when it does not; the
// first step comes with Begin (tell the session a journey begins). A step
// that fails (Fail) ends the journey. When the journey is over, Next yields
// EndJourney, the journey's own row (Action, plan.Plan.JourneyRow) timed
// from At, the iteration's due time. The iteration's rules (count, shared
// total, pacing, stop time) apply where an iteration begins, the group's
// think time or pacing after the journey. A step due at or after the
// user's stop time is not begun: the journey is cut there (Cut, no row of
// its own), and the user stays until its stop time.
//
// In the aggregate open model with journeys an arrival is one journey (its
// action is the journey's first step, plan.Plan.JourneyAt): NewJourney
// gives its steps, by the same rules, to the session Open handed it to;
// a dropped one counts in the journey's row (ArrivalRow).
package workload

import (
	"math"
	"time"
)

// Kind says what a step asks of the executor.
type Kind uint8

const (
	// Wait: nothing is due before At (Never: nothing until an action
	// ends). Wait until then, and ask again.
	Wait Kind = iota
	// Start: the user joins the run now (count it active). Ask again.
	Start
	// Logon: open the user's session now and report it with LoggedOn.
	Logon
	// Run: do Action, scheduled at At: latency is timed from At, service
	// time from the real start. Report its end with Done (or LogonFailed
	// when the user could not log on to do it).
	Run
	// Drop: the arrival of Action at At could not start within max_delay:
	// count it dropped, do nothing. Ask again.
	Drop
	// Leave: the user leaves now (close its session). Finished: it did its
	// count (iterations, or the shared total is taken); a user that leaves
	// at its stop time has not.
	Leave
	// EndJourney: the journey of the iteration due at At is over: record
	// its own row, Action (plan.Plan.JourneyRow), timed from At to the end
	// of its last step, failed when a step failed. Ask again.
	EndJourney
	// Cut: the journey of the iteration due at At was cut at the user's
	// stop time (its next step was due at or after it, and is not begun):
	// it has no row of its own; count it aborted. Ask again.
	Cut
)

var kindNames = [...]string{"wait", "start", "logon", "run", "drop", "leave", "end journey", "cut"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind?"
}

// Step is what happens next.
type Step struct {
	Kind     Kind
	Finished bool // Leave: the user did its count
	// Run of a journey's step: Test, ask the session whether the step's
	// condition holds first (User.Skip when it does not); Begin, the
	// journey's first step: tell the session a journey begins.
	Test, Begin bool
	At          time.Duration // Wait: until when; Run, Drop: when the action was due; EndJourney: when the journey was
	Action      int           // Run, Drop: index in the plan's actions; EndJourney: the journey's row
}

// Never is a Wait's At when only the end of an action in flight can bring
// something to do.
const Never = time.Duration(math.MaxInt64)

// OpenRetry is how long a user waits before it tries to log on again after
// its session could not be opened: a passive user's next attempt, and a
// closed user's next iteration at the earliest.
const OpenRetry = 100 * time.Millisecond

// add returns a+b, saturating at Never.
func add(a, b time.Duration) time.Duration {
	if b > 0 && a > Never-b {
		return Never
	}
	return a + b
}
