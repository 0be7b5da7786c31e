package engine

import (
	"context"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/scenario"
)

// openRetry is how long a user waits before it tries to log on again after
// its session could not be opened.
const openRetry = 100 * time.Millisecond

// goroutines runs one goroutine per user, each with its own driver session,
// except users who act seldom: they run on a timeline (timeline.go).
type goroutines struct {
	cfg Config
	n   int
}

func newGoroutines(cfg Config) *goroutines {
	return &goroutines{cfg: cfg, n: shards(len(cfg.Plan.Users))}
}

func (g *goroutines) recorders() int { return g.n }

func (g *goroutines) run(ctx context.Context, st *state) error {
	p := g.cfg.Plan
	var wg sync.WaitGroup
	if p.Model == scenario.Open && !p.PerUserRates {
		ch := make(chan arrival, max(1, len(p.Users)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.dispatch(ctx, st, ch)
		}()
		for i, u := range p.Users {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g.live(ctx, st, u, st.recs[i%g.n], func(us *user, sl *sleeper) { g.worker(ctx, us, sl, ch) })
			}()
		}
		wg.Wait()
		return nil
	}
	timeline := make([]bool, len(p.Groups))
	for gi := range p.Groups {
		timeline[gi] = onTimeline(p, gi)
	}
	var later []int // users on the timeline
	for i, u := range p.Users {
		if timeline[u.Group] {
			later = append(later, i)
			continue
		}
		body := g.openUser
		switch gr := p.Groups[u.Group]; {
		case gr.Passive:
			body = g.passiveUser
		case gr.Model == scenario.Closed:
			body = g.closedUser
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.live(ctx, st, u, st.recs[i%g.n], func(us *user, sl *sleeper) { body(ctx, us, sl) })
		}()
	}
	g.runTimeline(ctx, st, later)
	wg.Wait()
	return nil
}

// live runs one user's life: it waits for the user's start, counts it
// active while body runs, and closes its session afterwards.
func (g *goroutines) live(ctx context.Context, st *state, u plan.User, rec *metrics.Recorder, body func(*user, *sleeper)) {
	sl := newSleeper(st)
	if !sl.until(ctx, u.Start) {
		return
	}
	st.active.Add(1)
	defer st.active.Add(-1)
	us := &user{g: g, st: st, u: u, rec: rec, rng: plan.NewRand(u.Seed)}
	defer us.close()
	body(us, sl)
}

// user is what every user goroutine holds.
type user struct {
	g    *goroutines
	st   *state
	u    plan.User
	rec  *metrics.Recorder
	sess driver.Session
	rng  *plan.Rand
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

// do performs action a scheduled at sched and records it. It reports false
// when the run is stopping (the action is then not recorded).
func (us *user) do(ctx context.Context, a int, sched time.Duration) (end time.Duration, ok bool) {
	end, _, _, _, _, ok = us.doClass(ctx, a, sched)
	return end, ok
}

// doClass is do that also returns the action's class, error and bytes.
func (us *user) doClass(ctx context.Context, a int, sched time.Duration) (end time.Duration, class driver.Class, err error, in, out int64, ok bool) {
	t0 := us.st.Now()
	o, err := us.sess.Do(ctx, us.g.cfg.Actions[a])
	t1 := us.st.Now()
	if err != nil && ctx.Err() != nil {
		us.st.aborted.Add(1)
		return t1, driver.OK, nil, 0, 0, false
	}
	// The action ended before Do's untimed work (driver.Outcome.Untimed).
	done := t1 - min(max(o.Untimed, 0), t1-t0)
	class = driver.Classify(err)
	us.rec.Record(a, sched, done-sched, done-t0, o.BytesIn, o.BytesOut, class, err)
	return t1, class, err, o.BytesIn, o.BytesOut, true
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
	}
}

// closedUser does actions back to back, with think time, until its
// iterations are done, the shared total is taken, or its stop time comes.
func (g *goroutines) closedUser(ctx context.Context, us *user, sl *sleeper) {
	p, st, u := g.cfg.Plan, us.st, us.u
	gr := &p.Groups[u.Group]
	next := u.Start
	done := 0
	for gr.Iterations == 0 || done < gr.Iterations {
		if u.Stop != plan.Open && next >= u.Stop {
			sl.until(ctx, u.Stop) // logged on until its stop time
			return
		}
		if !sl.until(ctx, next) {
			return
		}
		if p.Total > 0 && !st.take() {
			break
		}
		var a, j int
		if len(p.Journeys) > 0 {
			// An iteration is one journey, picked by weight.
			j = p.ChooseJourney(us.rng.Float64())
			a = p.Journeys[j].First
		} else {
			a = p.ChooseIn(u.Group, us.rng.Float64())
		}
		done++
		if !us.session(ctx, a, next) {
			if ctx.Err() != nil {
				return
			}
			next = st.Now() + max(openRetry, gr.ThinkTime(us.rng))
			continue
		}
		var end time.Duration
		var ok bool
		if len(p.Journeys) > 0 {
			end, ok = g.doJourney(ctx, us, sl, j, next)
		} else {
			end, ok = us.do(ctx, a, next)
		}
		if !ok {
			return
		}
		next = end + gr.ThinkTime(us.rng)
	}
	if p.CountBound {
		st.userFinished()
	}
}

// openUser does actions at its own Poisson arrival times (the per-user open
// model), one at a time: an arrival that finds the user busy waits, and is
// dropped when it could not start within MaxDelay.
func (g *goroutines) openUser(ctx context.Context, us *user, sl *sleeper) {
	p, st, u, rec := g.cfg.Plan, us.st, us.u, us.rec
	gr := &p.Groups[u.Group]
	gap, a := p.NextArrivalIn(u.Group, us.rng)
	next := u.Start + gap
	if la, ok := g.cfg.Driver.(driver.LogonAtStart); ok && la.LogonAtStart() && u.Start < u.Stop {
		// Log on now. A failure is not recorded here: the first action
		// logs on again and records it, so counts stay per action.
		if s, err := g.cfg.Driver.Open(ctx, us.driverUser()); err == nil {
			us.sess = s
		} else if ctx.Err() != nil {
			return
		}
	}
	for next < u.Stop {
		if !sl.until(ctx, next) {
			return
		}
		if st.Now()-next > gr.MaxDelay {
			rec.RecordDropped(a, next)
		} else if us.session(ctx, a, next) {
			if _, ok := us.do(ctx, a, next); !ok {
				return
			}
		} else if ctx.Err() != nil {
			return
		}
		gap, a = p.NextArrivalIn(u.Group, us.rng)
		next += gap
	}
	sl.until(ctx, u.Stop) // logged on until its stop time
}

// passiveUser logs on and stays until its stop time, doing nothing itself: a
// subscriber whose deliveries the driver records as events. A failed logon
// is retried after openRetry (the driver records its own connection events).
func (g *goroutines) passiveUser(ctx context.Context, us *user, sl *sleeper) {
	for us.sess == nil {
		s, err := g.cfg.Driver.Open(ctx, us.driverUser())
		if err == nil {
			us.sess = s
			break
		}
		if !sl.until(ctx, min(us.st.Now()+openRetry, us.u.Stop)) || us.st.Now() >= us.u.Stop {
			return
		}
	}
	sl.until(ctx, us.u.Stop)
}

// arrival is one aggregate arrival handed to a worker.
type arrival struct {
	at     time.Duration
	action int
}

// dispatch releases the plan's aggregate arrivals on time. An arrival that
// finds the queue full (every user busy and as many arrivals waiting) is
// dropped at once: arrivals are never queued without limit.
func (g *goroutines) dispatch(ctx context.Context, st *state, ch chan<- arrival) {
	defer close(ch)
	sl := newSleeper(st)
	arr := g.cfg.Plan.Arrivals(nil)
	for {
		_, at, a, ok := arr.Next()
		if !ok {
			return
		}
		if !sl.until(ctx, at) {
			return
		}
		select {
		case ch <- arrival{at, a}:
		default:
			st.recs[0].RecordDropped(g.arrivalRow(a), at)
		}
	}
}

// arrivalRow is the row an arrival of action a counts in when dropped:
// the action's, or with journeys the journey's (a is its first step).
func (g *goroutines) arrivalRow(a int) int {
	p := g.cfg.Plan
	if len(p.Journeys) > 0 {
		if j := p.JourneyAt(a); j >= 0 {
			return p.JourneyRow(j)
		}
	}
	return a
}

// worker is one session of the aggregate open model: it serves arrivals
// from the shared queue until the arrivals end. With journeys an arrival
// is one journey (its first step is the arrival's action), after which
// the worker is free again once the last step's think time has passed.
func (g *goroutines) worker(ctx context.Context, us *user, sl *sleeper, ch <-chan arrival) {
	p, st, rec := g.cfg.Plan, us.st, us.rec
	for {
		var arr arrival
		var ok bool
		select {
		case arr, ok = <-ch:
		case <-ctx.Done():
			return
		}
		if !ok {
			return
		}
		if st.Now()-arr.at > p.MaxDelay {
			rec.RecordDropped(g.arrivalRow(arr.action), arr.at)
			continue
		}
		if !us.session(ctx, arr.action, arr.at) {
			if ctx.Err() != nil {
				return
			}
			continue
		}
		if j := p.JourneyAt(arr.action); len(p.Journeys) > 0 && j >= 0 {
			free, ok := g.doJourney(ctx, us, sl, j, arr.at)
			if us.u.Stop != plan.Open {
				free = min(free, us.u.Stop) // not past the end of the arrivals
			}
			if !ok || !sl.until(ctx, free) {
				return
			}
			continue
		}
		if _, ok := us.do(ctx, arr.action, arr.at); !ok {
			return
		}
	}
}
