package engine

import (
	"context"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/engine/workload"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/scenario"
)

// goroutines runs one goroutine per user, each with its own driver session,
// except users who act seldom: they run on a timeline (timeline.go). What a
// user does next is its workload.User's to say (the aggregate open model's
// arrivals: workload.Open's); this file only waits and does the actions.
type goroutines struct {
	cfg      Config
	n        int
	opts     workload.Options
	timeline func(p *plan.Plan, g int) bool // which groups run on the timeline
}

func newGoroutines(cfg Config) *goroutines {
	g := &goroutines{cfg: cfg, n: shards(len(cfg.Plan.Users)), timeline: onTimeline}
	if cfg.timeline != nil {
		g.timeline = cfg.timeline
	}
	la, ok := cfg.Driver.(driver.LogonAtStart)
	g.opts.LogonAtStart = ok && la.LogonAtStart()
	return g
}

func (g *goroutines) recorders() int { return g.n }

func (g *goroutines) run(ctx context.Context, st *state) error {
	p := g.cfg.Plan
	if p.Total > 0 {
		g.opts.Take = st.take
	}
	if p.Model == scenario.Open && !p.PerUserRates {
		g.runOpen(ctx, st)
		return nil
	}
	timeline := make([]bool, len(p.Groups))
	for gi := range p.Groups {
		timeline[gi] = g.timeline(p, gi)
	}
	var wg sync.WaitGroup
	var later []int // users on the timeline
	for i, u := range p.Users {
		if timeline[u.Group] {
			later = append(later, i)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.runUser(ctx, st, g.newUser(st, u, st.recs[i%g.n]))
		}()
	}
	g.runTimeline(ctx, st, later)
	wg.Wait()
	return nil
}

// runUser runs one user's life on its own goroutine: it waits for each
// step on its own timer and does it.
func (g *goroutines) runUser(ctx context.Context, st *state, us *user) {
	defer us.leave()
	sl := newSleeper(st)
	for {
		s := us.w.Next(st.Now())
		if s.Kind == workload.Wait {
			if !sl.until(ctx, s.At) {
				return
			}
			continue
		}
		if !us.act(ctx, s) {
			return
		}
	}
}

// user is what every user goroutine (or timeline entry) holds.
type user struct {
	g       *goroutines
	st      *state
	u       plan.User
	rec     *metrics.Recorder
	sess    driver.Session
	w       workload.User
	jr      journeyRec // the journey in progress, if any
	started bool       // counted active
	drops   int        // arrivals dropped (a stop is checked every stopCheck)
}

func (g *goroutines) newUser(st *state, u plan.User, rec *metrics.Recorder) *user {
	return &user{g: g, st: st, u: u, rec: rec, w: workload.NewUser(g.cfg.Plan, u, g.opts)}
}

// act does step s (any kind but Wait). It reports false when the user is
// gone: it left, or the run is stopping.
func (us *user) act(ctx context.Context, s workload.Step) bool {
	st := us.st
	switch s.Kind {
	case workload.Start:
		if ctx.Err() != nil {
			return false
		}
		st.active.Add(1)
		us.started = true
	case workload.Logon:
		// A failure is not recorded here: a passive user's driver records
		// its own connection events, and a per-user open user's first
		// action logs on again and records it, so counts stay per action.
		sess, err := us.g.cfg.Driver.Open(ctx, us.driverUser())
		if err != nil && ctx.Err() != nil {
			return false
		}
		if err == nil {
			us.sess = sess
		}
		us.w.LoggedOn(st.Now(), err == nil)
	case workload.Run:
		if !us.session(ctx, s.Action, s.At) {
			if ctx.Err() != nil {
				return false
			}
			us.w.LogonFailed(st.Now())
			return true
		}
		if s.Begin {
			us.beginJourney()
		}
		if s.Test && !us.test(s) {
			return true
		}
		if us.jr.first < 0 {
			us.jr.first = st.Now()
		}
		end, class, err, ok := us.do(ctx, s.Action, s.At)
		if !ok {
			return false
		}
		us.jr.end = end
		if class != driver.OK {
			us.jr.class, us.jr.cause = class, err
			us.w.Fail(end)
			return true
		}
		us.w.Done(end)
	case workload.EndJourney:
		us.endJourney(s)
	case workload.Cut:
		st.aborted.Add(1) // no row: the journey was not done
		us.jr = journeyRec{}
	case workload.Drop:
		us.rec.RecordDropped(s.Action, s.At)
		// Arrivals far behind (a rate beyond the machine) are dropped
		// one step at a time, none of them a wait: a stop is seen within
		// a batch.
		if us.drops++; us.drops%stopCheck == 0 && ctx.Err() != nil {
			return false
		}
	case workload.Leave:
		if s.Finished && us.g.cfg.Plan.CountBound {
			st.userFinished()
		}
		return false
	}
	return true
}

// leave closes the user's session and stops counting it active.
func (us *user) leave() {
	us.close()
	if us.started {
		us.started = false
		us.st.active.Add(-1)
	}
}

// session returns the user's session, opening it if needed. On failure the
// error is recorded against action a, scheduled at sched.
func (us *user) session(ctx context.Context, a int, sched time.Duration) bool {
	if us.sess != nil {
		return true
	}
	t0 := us.st.Now()
	s, err := us.g.cfg.Driver.Open(ctx, us.driverUser())
	if err != nil {
		if ctx.Err() == nil {
			t1 := us.st.Now()
			us.rec.Record(a, sched, t1-sched, t1-t0, 0, 0, driver.Classify(err), err)
		}
		return false
	}
	us.sess = s
	return true
}

// do performs action a scheduled at sched and records it; it returns its
// end, class and error. It reports false when the run is stopping (the
// action is then not recorded).
func (us *user) do(ctx context.Context, a int, sched time.Duration) (end time.Duration, class driver.Class, err error, ok bool) {
	t0 := us.st.Now()
	o, err := us.sess.Do(ctx, us.g.cfg.Actions[a])
	t1 := us.st.Now()
	if err != nil && ctx.Err() != nil {
		us.st.aborted.Add(1)
		return t1, driver.OK, nil, false
	}
	// The action ended before Do's untimed work (driver.Outcome.Untimed).
	done := t1 - min(max(o.Untimed, 0), t1-t0)
	class = driver.Classify(err)
	us.rec.Record(a, sched, done-sched, done-t0, o.BytesIn, o.BytesOut, class, err)
	return t1, class, err, true
}

// driverUser is the user as the driver sees it.
func (us *user) driverUser() driver.User {
	p := us.g.cfg.Plan
	du := driver.User{ID: us.u.ID, Users: p.TotalUsers, Seed: us.u.Seed}
	if p.Scenario.Grouped() {
		du.Group = p.Groups[us.u.Group].Name
	}
	return du
}

func (us *user) close() {
	if us.sess != nil {
		us.sess.Close()
		us.sess = nil
	}
}

// stopCheck is how many steps taken without a wait (arrivals dropped one
// after the other) may pass before the run's context is looked at.
const stopCheck = 4096

// --- the aggregate open model

// session is one session of the aggregate open model, as the dispatcher
// sees it: it hands the session an arrival through ch.
type session struct{ ch chan arrival }

// arrival is one aggregate arrival handed to a session.
type arrival struct {
	at     time.Duration
	action int
}

// runOpen serves the plan's aggregate arrivals with one goroutine per
// session and a dispatcher that takes workload.Open's steps.
func (g *goroutines) runOpen(ctx context.Context, st *state) {
	p := g.cfg.Plan
	free := make(chan *session, len(p.Users)) // never full: a session is in it at most once
	sessions := make([]*session, len(p.Users))
	var wg sync.WaitGroup
	for i, u := range p.Users {
		s := &session{ch: make(chan arrival, 1)}
		sessions[i] = s
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.serve(ctx, st, &user{g: g, st: st, u: u, rec: st.recs[i%g.n]}, s, free)
		}()
	}
	g.dispatch(ctx, st, sessions, free)
	wg.Wait()
}

// dispatch takes the aggregate open model's steps on time: it hands each
// arrival that is to run to the session free the latest (its connection is
// the warmest), and counts the drops. It sleeps until the next arrival, or
// until a session is free when arrivals wait for one.
func (g *goroutines) dispatch(ctx context.Context, st *state, sessions []*session, free chan *session) {
	defer func() {
		for _, s := range sessions {
			close(s.ch)
		}
	}()
	p := g.cfg.Plan
	o := workload.NewOpen(p.Arrivals(nil), p.MaxDelay, workload.QueueSize(p, 1))
	idle := make([]*session, 0, len(sessions))
	t := time.NewTimer(time.Hour)
	t.Stop()
	for n := 1; ; n++ {
		// Arrivals far behind (a rate beyond the machine) keep this loop
		// dropping without a wait: a stop is seen within a batch.
		if n%stopCheck == 0 && ctx.Err() != nil {
			return
		}
	drain:
		for {
			select {
			case s := <-free:
				idle = append(idle, s)
			default:
				break drain
			}
		}
		s := o.Next(st.Now(), len(idle) > 0)
		switch s.Kind {
		case workload.Run:
			w := idle[len(idle)-1]
			idle = idle[:len(idle)-1]
			w.ch <- arrival{s.At, s.Action}
		case workload.Drop:
			st.recs[0].RecordDropped(workload.ArrivalRow(p, s.Action), s.At)
		case workload.Leave:
			return
		default: // Wait
			var freed <-chan *session
			if o.Waiting() > 0 {
				freed = free
			}
			var due <-chan time.Time
			if s.At != workload.Never {
				t.Reset(s.At - st.Now())
				due = t.C
			}
			select {
			case <-due:
			case w := <-freed:
				idle = append(idle, w)
				t.Stop()
			case <-ctx.Done():
				t.Stop()
				return
			}
		}
	}
}

// journey runs journey j of the aggregate open model's session us, due at
// at, and waits until the session is free again. It reports false when the
// run is stopping.
func (us *user) journey(ctx context.Context, sl *sleeper, j int, at time.Duration) bool {
	us.w = workload.NewJourney(us.g.cfg.Plan, us.u, j, at)
	for {
		s := us.w.Next(us.st.Now())
		switch s.Kind {
		case workload.Leave:
			return true
		case workload.Wait:
			if !sl.until(ctx, s.At) {
				return false
			}
			continue
		}
		if !us.act(ctx, s) {
			return false
		}
	}
}

// serve is one session of the aggregate open model: it does the arrivals
// the dispatcher hands it until the arrivals end. With journeys an
// arrival is one journey (its first step is the arrival's action), run by
// workload.NewJourney's steps: the session is free again once the last
// step's think time has passed (not past its stop time).
func (g *goroutines) serve(ctx context.Context, st *state, us *user, s *session, free chan<- *session) {
	if !newSleeper(st).until(ctx, us.u.Start) {
		return
	}
	st.active.Add(1)
	us.started = true
	defer us.leave()
	p, sl := g.cfg.Plan, newSleeper(st)
	for {
		free <- s
		var arr arrival
		var ok bool
		select {
		case arr, ok = <-s.ch:
		case <-ctx.Done():
			return
		}
		if !ok {
			return
		}
		if !us.session(ctx, arr.action, arr.at) {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		if j := p.JourneyAt(arr.action); len(p.Journeys) > 0 && j >= 0 {
			if !us.journey(ctx, sl, j, arr.at) {
				return
			}
			continue
		}
		if _, _, _, ok := us.do(ctx, arr.action, arr.at); !ok {
			return
		}
	}
}
