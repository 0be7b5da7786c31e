package engine

import (
	"context"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/plan"
)

// journey is one user's way through one journey: which step comes next and
// how many times it has been done. It reads no clock and does no I/O, so it
// can move as is into the engine's pure workload step (where an iteration
// begins, Next yields the journey's steps one by one and Done moves it on).
//
// The rules: the steps run in order; a step is done Repeat times, or, with
// While, again as long as the driver says its condition holds (checked
// before each time, at most Max times); a failed step ends the journey
// (the iteration) there: later steps would act on a page the user did not
// get. Each step is followed by its think time, the last one too.
type journey struct {
	p     *plan.Plan
	j     int // the journey, index in p.Journeys
	k     int // the current step, index in the journey
	round int // times the current step was done
}

// stepNext is what the journey asks next.
type stepNext struct {
	action int  // index in the plan's actions
	test   bool // ask the driver whether its condition holds first
	end    bool // the journey is over
}

func newJourney(p *plan.Plan, j int) journey { return journey{p: p, j: j} }

// next returns the next step to do, or end.
func (c *journey) next() stepNext {
	jr := &c.p.Journeys[c.j]
	for c.k < jr.N {
		a := jr.First + c.k
		s := &c.p.Steps[a]
		limit := s.Repeat
		if s.While {
			limit = s.Max
		}
		if c.round < limit {
			return stepNext{action: a, test: s.While}
		}
		c.k, c.round = c.k+1, 0
	}
	return stepNext{end: true}
}

// done records that the step of the last next was done; ok false ends the
// journey.
func (c *journey) done(ok bool) {
	if !ok {
		c.k = c.p.Journeys[c.j].N
		return
	}
	c.round++
}

// skip records that the condition of the step of the last next did not
// hold: the journey goes on with the following step.
func (c *journey) skip() { c.k, c.round = c.k+1, 0 }

// doJourney runs journey j of user us, due at sched: its steps, each timed
// from its own due time and recorded as its action, then the journey's
// own row, timed from sched to the end of its last step, with the class of
// the step that failed it. It returns when the user is free again (after
// the last step's think time) and false when the run is stopping. A step
// due at or after the user's stop time is not begun: the journey is cut
// there, without a row of its own (Outcome.Aborted counts it).
func (g *goroutines) doJourney(ctx context.Context, us *user, sl *sleeper, j int, sched time.Duration) (free time.Duration, ok bool) {
	p, st := g.cfg.Plan, us.st
	cur := newJourney(p, j)
	if c, ok := us.sess.(driver.Conditions); ok {
		c.Begin()
	}
	next, first := sched, time.Duration(-1)
	var end time.Duration
	class, cause := driver.OK, error(nil)
	for {
		s := cur.next()
		if s.end {
			break
		}
		if us.u.Stop != plan.Open && next >= us.u.Stop {
			// The user's stop time (the end of the run, or its turn to
			// leave in the ramp-down) comes before this step: the journey
			// is cut there, not finished past the bound. It was not done,
			// so it has no row: it counts as cut off by a stop.
			us.st.aborted.Add(1)
			return us.u.Stop, true
		}
		if !sl.until(ctx, next) {
			return 0, false
		}
		if s.test {
			holds, err := us.holds(s.action)
			if err != nil {
				t := st.Now()
				us.rec.Record(s.action, next, t-next, 0, 0, 0, driver.Classify(err), err)
				class, cause, end = driver.Classify(err), err, t
				break
			}
			if !holds {
				cur.skip()
				continue
			}
		}
		if first < 0 {
			first = st.Now()
		}
		t1, c, err, _, _, ok := us.doClass(ctx, s.action, next)
		if !ok {
			return 0, false
		}
		end = t1
		if c != driver.OK {
			class, cause = c, err
			cur.done(false)
			next = t1
			break
		}
		cur.done(true)
		next = t1 + p.Steps[s.action].Think
	}
	if first < 0 {
		first, end = sched, max(end, sched) // no step was done (every condition false)
	}
	// The journey's bytes are its steps': counted there, not twice.
	us.rec.Record(p.JourneyRow(j), sched, end-sched, end-first, 0, 0, class, cause)
	return max(next, end), true
}

// holds asks the user's session whether action a's condition holds.
func (us *user) holds(a int) (bool, error) {
	c, ok := us.sess.(driver.Conditions)
	if !ok {
		return false, nil
	}
	return c.Holds(us.g.cfg.Actions[a])
}
