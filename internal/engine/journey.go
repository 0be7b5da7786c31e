package engine

import (
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/engine/workload"
)

// journeyRec is what an executor keeps of the journey in progress to
// record its own row: what happens next is workload.User's to say (its
// Run steps with Begin and Test, and EndJourney).
type journeyRec struct {
	first, end time.Duration // real start of its first step done (-1: none), end of its last
	class      driver.Class  // of the step that failed it
	cause      error
}

// begin tells the session that a journey begins (driver.Conditions).
func (us *user) beginJourney() {
	if c, ok := us.sess.(driver.Conditions); ok {
		c.Begin()
	}
	us.jr = journeyRec{first: -1}
}

// test asks the session whether the condition of step s (a Run with Test)
// holds. A condition that cannot be evaluated is recorded against the
// step, in its class, and fails the journey. It reports whether to do the
// step.
func (us *user) test(s workload.Step) bool {
	var holds bool
	var err error
	if c, ok := us.sess.(driver.Conditions); ok {
		holds, err = c.Holds(us.g.cfg.Actions[s.Action])
	}
	if err != nil {
		t := us.st.Now()
		class := driver.Classify(err)
		us.rec.Record(s.Action, s.At, t-s.At, 0, 0, 0, class, err)
		us.jr.class, us.jr.cause, us.jr.end = class, err, t
		us.w.Fail(t)
		return false
	}
	if !holds {
		us.w.Skip()
	}
	return holds
}

// endJourney records the journey's own row (step s, EndJourney): timed from
// its due time to the end of its last step, its service time from the real
// start of its first; its bytes are its steps', counted there.
func (us *user) endJourney(s workload.Step) {
	j := us.jr
	if j.first < 0 { // no step was done (every condition false)
		j.first, j.end = s.At, max(j.end, s.At)
	}
	us.rec.Record(s.Action, s.At, j.end-s.At, j.end-j.first, 0, 0, j.class, j.cause)
	us.jr = journeyRec{}
}
