package engine

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/scenario"
)

// Users who act seldom (the mail profiles' users act a few times an hour)
// run on a timeline instead of a goroutine each: a user is an entry in a
// time-ordered heap, and a small pool of workers, as many as actions run at
// once, takes each entry when it is due and runs it. An idle user holds no
// goroutine, stack or runtime timer of its own: one idle worker (the
// leader) has its timer set for the earliest entry, and a worker that
// finishes a step takes the next entry at once if it is due.
//
// The timeline runs passive groups (users who log on and stay) and per-user
// open groups whose users act at most timelineUserRate times a second, when
// the latter's summed rate stays under timelineMaxRate: above that, workers would be busy most of the time and
// readiness is polled less promptly than runtime timers fire.
const (
	timelineUserRate = 1.0  // per user per second
	timelineMaxRate  = 2000 // per second, all timeline users together
	// timelineIdle is how many idle workers stay: the rest end, so a burst
	// (a log-on storm) leaves no crowd of parked goroutines behind.
	timelineIdle = 64
)

// onTimeline reports whether group g's users run on the timeline.
func onTimeline(p *plan.Plan, g int) bool {
	gr := &p.Groups[g]
	if !gr.Passive && (gr.Model != scenario.Open || !gr.PerUserRates || gr.UserRate() > timelineUserRate) {
		return false
	}
	var total float64
	for _, u := range p.Users {
		if gr := &p.Groups[u.Group]; !gr.Passive && gr.Model == scenario.Open && gr.PerUserRates {
			total += gr.UserRate()
		}
	}
	return total <= timelineMaxRate
}

// step is what a timeline entry does when it is due.
type step uint8

const (
	stepStart   step = iota // log on (if the driver does at start), draw the first arrival
	stepLogon               // a passive user's log-on, again after a failure
	stepArrival             // do (or drop) the arrival's action, draw the next
	stepStop                // leave: close the session
)

// entry is one timeline user and its next step.
type entry struct {
	u    plan.User
	rec  *metrics.Recorder
	us   *user // from its start on
	at   time.Duration
	step step
	a    int // the arrival's action
	i    int // index in the heap
}

// entries is a min-heap of entries by time.
type entries []*entry

func (h entries) Len() int           { return len(h) }
func (h entries) Less(i, j int) bool { return h[i].at < h[j].at }
func (h entries) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].i = i; h[j].i = j }
func (h *entries) Push(x any)        { e := x.(*entry); e.i = len(*h); *h = append(*h, e) }
func (h *entries) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// timeline runs its users' steps on a pool of workers.
type timeline struct {
	g   *goroutines
	st  *state
	ctx context.Context

	mu       sync.Mutex
	h        entries
	idle     []*worker // idle workers, the most recently idle last
	leader   *worker   // the idle worker armed for h[0], or nil
	leaderAt time.Duration
	live     int // users not yet gone
	stopping bool
	wg       sync.WaitGroup
}

// worker is one of the timeline's goroutines.
type worker struct{ w *waker }

// runTimeline runs users (indexes in the plan's users) on a timeline until
// they are all gone or ctx ends; it then closes what sessions are left.
func (g *goroutines) runTimeline(ctx context.Context, st *state, users []int) {
	if len(users) == 0 {
		return
	}
	t := &timeline{g: g, st: st, ctx: ctx, live: len(users)}
	t.h = make(entries, 0, len(users))
	for _, i := range users {
		u := g.cfg.Plan.Users[i]
		heap.Push(&t.h, &entry{u: u, rec: st.recs[i%g.n], at: u.Start, step: stepStart})
	}
	stop := context.AfterFunc(ctx, t.stop)
	t.mu.Lock()
	t.fix()
	t.mu.Unlock()
	t.wg.Wait()
	stop()
	// Stopped early: the users still waiting leave now, a few at a time
	// (closing a session may be a network exchange).
	t.mu.Lock()
	left := t.h
	t.h = nil
	t.mu.Unlock()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for _, e := range left {
		if e.us == nil {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			e.us.close()
			st.active.Add(-1)
		}()
	}
	wg.Wait()
}

// stop wakes every idle worker to end; busy ones end after their step.
func (t *timeline) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopping = true
	t.leader = nil
	for _, w := range t.idle {
		w.w.arm(0)
	}
}

// fix keeps the invariant, with t.mu held: while entries wait and the
// timeline runs, one idle worker (started if none is idle) is armed for the
// earliest.
func (t *timeline) fix() {
	if t.stopping {
		return
	}
	if len(t.h) == 0 {
		if t.leader != nil {
			t.leader.w.disarm()
			t.leader = nil
		}
		return
	}
	at := t.h[0].at
	if t.leader == nil {
		if n := len(t.idle); n > 0 {
			t.leader = t.idle[n-1]
		} else {
			t.leader = t.spawn()
		}
	} else if t.leaderAt == at {
		return
	}
	t.leaderAt = at
	t.leader.w.arm(at - t.st.Now())
}

// spawn starts an idle worker, with t.mu held.
func (t *timeline) spawn() *worker {
	w := &worker{w: newWaker()}
	t.idle = append(t.idle, w)
	t.wg.Add(1)
	go t.work(w)
	return w
}

// unidle takes w off the idle list, with t.mu held.
func (t *timeline) unidle(w *worker) {
	for i := len(t.idle) - 1; i >= 0; i-- {
		if t.idle[i] == w {
			t.idle = append(t.idle[:i], t.idle[i+1:]...)
			break
		}
	}
	if t.leader == w {
		t.leader = nil
	}
}

// take returns the entry idle worker w is to run now, nil when it is to
// wait, and false when it is to end; with t.mu held.
func (t *timeline) take(w *worker) (*entry, bool) {
	if t.stopping || (t.live == 0 && len(t.h) == 0) {
		t.unidle(w)
		return nil, false
	}
	if len(t.h) > 0 && t.h[0].at <= t.st.Now() {
		e := heap.Pop(&t.h).(*entry)
		t.unidle(w)
		t.fix()
		return e, true
	}
	if t.leader == w {
		t.leaderAt = -1 // woke early: arm again
	} else if len(t.idle) > timelineIdle {
		t.unidle(w)
		t.fix()
		return nil, false
	}
	t.fix()
	return nil, true
}

// work is a worker's loop: wait until an entry is due, run its step, put
// the user back at its next step's time.
func (t *timeline) work(w *worker) {
	defer t.wg.Done()
	defer w.w.disarm()
	for {
		t.mu.Lock()
		e, ok := t.take(w)
		t.mu.Unlock()
		if !ok {
			return
		}
		if e == nil {
			w.w.wait()
			continue
		}
		for e != nil {
			gone := t.run(e)
			t.mu.Lock()
			if gone {
				t.live--
			} else {
				heap.Push(&t.h, e)
			}
			t.idle = append(t.idle, w)
			e, ok = t.take(w) // the next entry if it is due: no wake-up
			if t.live == 0 && len(t.h) == 0 {
				t.stopping = true
				for _, o := range t.idle {
					o.w.arm(0)
				}
			}
			t.mu.Unlock()
			if !ok {
				return
			}
		}
	}
}

// run performs e's step and sets its next one; it reports true when the
// user is gone (left at its stop time, or the run is stopping).
func (t *timeline) run(e *entry) (gone bool) {
	ctx, st, p := t.ctx, t.st, t.g.cfg.Plan
	gr := &p.Groups[e.u.Group]
	if e.step != stepStart && ctx.Err() != nil {
		t.leave(e)
		return true
	}
	switch e.step {
	case stepStart:
		if ctx.Err() != nil {
			return true
		}
		st.active.Add(1)
		us := &user{g: t.g, st: st, u: e.u, rec: e.rec, rng: plan.NewRand(e.u.Seed)}
		e.us = us
		if gr.Passive {
			return t.logon(e)
		}
		gap, a := p.NextArrivalIn(e.u.Group, us.rng)
		if la, ok := t.g.cfg.Driver.(driver.LogonAtStart); ok && la.LogonAtStart() && e.u.Start < e.u.Stop {
			// As openUser: a failure is recorded by the first action.
			if s, err := t.g.cfg.Driver.Open(ctx, us.driverUser()); err == nil {
				us.sess = s
			} else if ctx.Err() != nil {
				t.leave(e)
				return true
			}
		}
		t.next(e, e.u.Start+gap, a)
	case stepArrival:
		us := e.us
		if st.Now()-e.at > gr.MaxDelay {
			e.rec.RecordDropped(e.a, e.at)
		} else if us.session(ctx, e.a, e.at) {
			if _, ok := us.do(ctx, e.a, e.at); !ok {
				t.leave(e)
				return true
			}
		} else if ctx.Err() != nil {
			t.leave(e)
			return true
		}
		gap, a := p.NextArrivalIn(e.u.Group, us.rng)
		t.next(e, e.at+gap, a)
	case stepLogon:
		return t.logon(e)
	case stepStop:
		t.leave(e)
		return true
	}
	return false
}

// logon logs a passive user on (as passiveUser does): it then stays until
// its stop time; a failed log-on is tried again after openRetry (the
// driver records its own connection events).
func (t *timeline) logon(e *entry) (gone bool) {
	ctx, st := t.ctx, t.st
	s, err := t.g.cfg.Driver.Open(ctx, e.us.driverUser())
	switch {
	case err == nil:
		e.us.sess = s
		e.at, e.step = e.u.Stop, stepStop
	case ctx.Err() != nil || st.Now() >= e.u.Stop:
		t.leave(e)
		return true
	default:
		e.at, e.step = min(st.Now()+openRetry, e.u.Stop), stepLogon
		if e.at == e.u.Stop {
			e.step = stepStop
		}
	}
	return false
}

// next sets e's next step: the arrival at `at`, or its stop.
func (t *timeline) next(e *entry, at time.Duration, a int) {
	if at < e.u.Stop {
		e.at, e.step, e.a = at, stepArrival, a
		return
	}
	e.at, e.step = e.u.Stop, stepStop
}

// leave closes e's session and counts the user gone.
func (t *timeline) leave(e *entry) {
	if e.us != nil {
		e.us.close()
		e.us = nil
		t.st.active.Add(-1)
	}
}
