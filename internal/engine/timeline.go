package engine

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/engine/workload"
	"github.com/throng-io/throng/internal/plan"
)

// Users who act seldom (the mail profiles' users act a few times an hour)
// run on a timeline instead of a goroutine each: a user is an entry in a
// time-ordered heap, and a small pool of workers, as many as actions run at
// once, takes each entry when it is due and runs it. An idle user holds no
// goroutine, stack or runtime timer of its own: one idle worker (the
// leader) has its timer set for the earliest entry, and a worker that
// finishes a step takes the next entry at once if it is due.
//
// The timeline runs the groups whose users are bound to act seldom
// (plan.Plan.MaxUserRate): passive groups (users who log on and stay),
// per-user open groups whose users act at most timelineUserRate times a
// second on average, and closed groups whose think times (or pacing) hold
// each user to at most that rate (a journey of six steps each followed by
// 1 s of thinking: 1 a second), as long as all the users of such groups
// together stay under timelineMaxRate a second: above that, workers would
// be busy most of the time and readiness is polled less promptly than
// runtime timers fire. A closed user's next step is due at the end of its
// last plus its think time whichever executor waits for it: the workload
// step (workload.User) says when, the timeline only keeps the time.
const (
	timelineUserRate = 1.0  // per user per second
	timelineMaxRate  = 2000 // per second, all timeline users together
	// timelineIdle is how many idle workers stay: the rest end, so a burst
	// (a log-on storm) leaves no crowd of parked goroutines behind.
	timelineIdle = 64
)

// onTimeline reports whether group g's users run on the timeline: their
// rate bound is at most timelineUserRate, and the bounds of every user in
// such a group sum to at most timelineMaxRate.
func onTimeline(p *plan.Plan, g int) bool {
	if p.MaxUserRate(g) > timelineUserRate {
		return false
	}
	rates := make([]float64, len(p.Groups))
	for i := range p.Groups {
		rates[i] = p.MaxUserRate(i)
	}
	var total float64
	for _, u := range p.Users {
		if r := rates[u.Group]; r <= timelineUserRate {
			total += r
		}
	}
	return total <= timelineMaxRate
}

// entry is one timeline user and when its next step is due.
type entry struct {
	us *user
	at time.Duration
	i  int // index in the heap
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
		heap.Push(&t.h, &entry{us: g.newUser(st, u, st.recs[i%g.n]), at: u.Start})
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
		if !e.us.started {
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			e.us.leave()
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

// run takes e's user's steps (workload.User) until it is to wait, and
// sets e's time to the end of that wait; it reports true when the user is
// gone (left at its stop time, or the run is stopping).
func (t *timeline) run(e *entry) (gone bool) {
	us := e.us
	if t.ctx.Err() != nil {
		us.leave()
		return true
	}
	for {
		s := us.w.Next(t.st.Now())
		if s.Kind == workload.Wait {
			e.at = s.At
			return false
		}
		if !us.act(t.ctx, s) {
			us.leave()
			return true
		}
	}
}
