package workload

import "github.com/throng-io/throng/internal/plan"

// journey is a user's way through one journey of the plan (an iteration
// when the plan has journeys): which step comes next and how many times it
// has been done.
//
// The rules: the steps run in order; a step is done Repeat times, or, with
// While, again as long as the session says its condition holds (asked
// before each time, at most Max times); a failed step ends the journey
// there: later steps would act on a page the user did not get. Each step
// is followed by its think time, the last one too.
type journey struct {
	j     int // the journey, index in p.Journeys; -1: none in progress
	k     int // the current step, index in the journey
	round int // times the current step was done
}

// journeyStep is what the journey asks next.
type journeyStep struct {
	action int  // index in the plan's actions
	test   bool // ask the session whether its condition holds first
	end    bool // the journey is over
}

// next returns the next step to do, or end.
func (c *journey) next(p *plan.Plan) journeyStep {
	jr := &p.Journeys[c.j]
	for c.k < jr.N {
		a := jr.First + c.k
		s := &p.Steps[a]
		limit := s.Repeat
		if s.While {
			limit = s.Max
		}
		if c.round < limit {
			return journeyStep{action: a, test: s.While}
		}
		c.k, c.round = c.k+1, 0
	}
	return journeyStep{end: true}
}

// done records that the step of the last next was done; ok false ends the
// journey.
func (c *journey) done(p *plan.Plan, ok bool) {
	if !ok {
		c.k = p.Journeys[c.j].N
		return
	}
	c.round++
}

// skip records that the condition of the step of the last next did not
// hold: the journey goes on with the following step.
func (c *journey) skip() { c.k, c.round = c.k+1, 0 }
