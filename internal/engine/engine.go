// Package engine runs one repetition of a plan: it starts and stops users
// on the plan's timeline, schedules their actions (closed loop with think
// time or pacing, per-user Poisson rates, or aggregate arrivals), times
// every action from its scheduled start, records it, and cuts the recording
// into intervals labelled with their phase. It never imports a concrete
// driver.
//
// What a user does next is decided in one place, package workload: a pure,
// clock-free step. Two executors take those steps: goroutines (one per
// user, calling the driver's Session.Do, with a timeline for users who act
// seldom) for every driver, and event loops (many connections per locked
// OS thread, io_uring or epoll) for drivers with the Wire ability. They
// decide only how to wait and how to do an action, and share this
// package's recorders.
package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
)

// Config is one repetition's work.
type Config struct {
	Plan    *plan.Plan
	Driver  driver.Config
	Actions []driver.Action // compiled, in the plan's action order
	// Kind is the executor: scenario.EngineGoroutines, EngineEpoll or
	// EngineIOUring (resolve "auto" with Choose first).
	Kind    string
	Threads int // event-loop threads (0: one per core, at most one per user)
	// OnInterval, when set, receives each interval as soon as it is cut, in
	// order, from one goroutine. The engine then keeps no interval list (a
	// run's memory does not grow with its length) and never modifies an
	// interval it handed out: the receiver may keep a shallow copy. What
	// finishes in the very instant of the final cut goes into the last
	// interval, handed out again as Outcome.Amended.
	OnInterval func(*result.Interval)
	// Counters, when set, are read at the start and at every cut, so each
	// interval carries the server's and the machine's counters over exactly
	// its own span.
	Counters Counters
	// DrainMax bounds the driver's Drain (Events ability); default 30 s.
	DrainMax time.Duration
	// OnStart, when set, is called with the instant the repetition's clock
	// starts from (every offset in its intervals and plan is from it),
	// before any user starts and any interval is handed out.
	OnStart func(time.Time)
	// AutoProcs lets the goroutine executor run on one processor
	// (GOMAXPROCS 1) while the generator is steady and nearly idle, and on
	// all of them otherwise (procs.go). Set it unless the user pinned
	// GOMAXPROCS; the event loops ignore it.
	AutoProcs bool

	// timeline, when set (tests), says which groups the goroutine executor
	// runs on its timeline instead of onTimeline.
	timeline func(p *plan.Plan, g int) bool
}

// DefaultDrainMax bounds a driver's Drain when the scenario sets no bound.
const DefaultDrainMax = 30 * time.Second

// Counters reads counter sources (see sampler.Sampler). Sample must return
// within its own time limit.
type Counters interface {
	Sample(ctx context.Context) sampler.Reading
}

// Outcome is what a repetition produced.
type Outcome struct {
	// Intervals are the repetition's intervals when Config.OnInterval is
	// nil; none otherwise (they were handed out).
	Intervals []result.Interval
	// Amended, when set, replaces the last interval handed out through
	// OnInterval (same index): actions finished in the instant of the final
	// cut were added to it.
	Amended *result.Interval
	Elapsed time.Duration
	Drain   time.Duration // how long the driver's Drain took (Events ability)
	Partial bool
	Reason  string
	Aborted uint64 // actions cut off by a stop, not recorded
	Threads int    // event-loop threads used, 0 for goroutines
}

// ErrStopped is the cause given to the run's context when a user asked to
// stop (Ctrl-C, SIGTERM); ErrMaxDuration when the hard bound was reached.
var (
	ErrStopped     = errors.New("interrupted")
	ErrMaxDuration = errors.New("max_duration reached")
)

// state is shared by the executor and the collector.
type state struct {
	plan    *plan.Plan
	actions int // recorded actions: the plan's, its journeys', then the driver's events
	base    time.Time
	// phases attributes every outcome to the phase of its scheduled start
	// (events: of their cause); the recorders count by it.
	phases  *metrics.Phases
	recs    []*metrics.Recorder
	active  atomic.Int64 // users logged on
	conns   atomic.Int64 // open connections (event loops)
	aborted atomic.Uint64
	taken   atomic.Int64 // actions claimed of the plan's shared total

	// firstDone is closed when the first user of a count-bound run finishes
	// its iterations: the steady state ends there.
	firstDone     chan struct{}
	firstDoneOnce sync.Once

	mu      sync.Mutex
	threads []int // Linux thread IDs of the event loops, for the guard
}

// Now returns the time since the repetition started (monotonic).
func (s *state) Now() time.Duration { return time.Since(s.base) }

// take claims one of the plan's shared actions (closed.total); false when
// they are all taken, or the plan shares none.
func (s *state) take() bool { return s.taken.Add(1) <= s.plan.Total }

func (s *state) userFinished() {
	s.firstDoneOnce.Do(func() {
		s.phases.Begin(plan.RampDown, s.Now)
		close(s.firstDone)
	})
}

// newPhases is a plan's attribution: its phases, then those that begin
// while it runs — the ramp-down of a count-bound run (when its first user
// is done) and, with events, the drain.
func newPhases(p *plan.Plan, events bool) *metrics.Phases {
	var names []string
	var starts []time.Duration
	for _, ph := range p.Phases {
		names = append(names, ph.Name)
		starts = append(starts, ph.Start)
	}
	var later []string
	if p.CountBound {
		later = append(later, plan.RampDown)
	}
	if events {
		later = append(later, plan.Drain)
	}
	return metrics.NewPhases(names, starts, later...)
}

// executor runs the users of a plan until they are all done or ctx ends.
type executor interface {
	run(ctx context.Context, st *state) error
	// recorders returns how many recorders the executor writes to.
	recorders() int
}

// Run executes one repetition. It returns when every user is done, or when
// ctx ends (Ctrl-C, max_duration): then the outcome is partial and the
// reason is ctx's cause. It fails only when the run cannot start.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	p := cfg.Plan
	if len(cfg.Actions) != len(p.Actions) {
		return nil, fmt.Errorf("engine: %d compiled actions for %d planned", len(cfg.Actions), len(p.Actions))
	}
	var ex executor
	switch cfg.Kind {
	case scenario.EngineGoroutines:
		ex = newGoroutines(cfg)
	case scenario.EngineEpoll, scenario.EngineIOUring:
		l, err := newLoops(cfg)
		if err != nil {
			return nil, err
		}
		ex = l
	default:
		return nil, fmt.Errorf("engine: unknown kind %q", cfg.Kind)
	}
	events, _ := cfg.Driver.(driver.Events)
	st := &state{plan: p, actions: p.Rows(), firstDone: make(chan struct{})}
	if events != nil {
		st.actions += len(events.EventActions())
	}
	st.phases = newPhases(p, events != nil)
	for range ex.recorders() {
		st.recs = append(st.recs, metrics.NewRecorder(st.actions, st.phases))
	}
	if events != nil {
		rec := metrics.NewRecorder(st.actions, st.phases)
		st.recs = append(st.recs, rec)
		events.Observe(&sink{st: st, rec: rec, base: p.Rows()})
	}
	col := newCollector(st, cfg)
	st.base = time.Now()
	if cfg.OnStart != nil {
		cfg.OnStart(st.base)
	}
	col.start()

	errc := make(chan error, 1)
	go func() { errc <- ex.run(ctx, st) }()
	err := <-errc
	if end := p.End(); end != plan.Open && err == nil {
		// The users may be done before the plan's end (the last arrival
		// was earlier and nothing is in flight): its phases still last
		// their planned time, so that their rates are over it.
		newSleeper(st).until(ctx, end)
	}
	var drain time.Duration
	if im, ok := events.(driver.ImmediateEvents); ok && im.EventsImmediate() {
		events = nil // nothing in flight: no drain
	}
	if events != nil {
		// Everything is sent: wait for what is in flight, in its own phase.
		col.enterDrain()
		max := cfg.DrainMax
		if max <= 0 {
			max = DefaultDrainMax
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max)
		if ctx.Err() != nil {
			// Stopped early: a short drain, so what is counted lost is not
			// merely late.
			dctx, cancel = context.WithTimeout(context.Background(), min(max, 2*time.Second))
		}
		t0 := time.Now()
		if derr := events.Drain(dctx); derr != nil && err == nil {
			err = fmt.Errorf("drain: %w", derr)
		}
		drain = time.Since(t0)
		cancel()
	}
	out := col.finish()
	out.Drain = drain
	out.Aborted = st.aborted.Load()
	if l, ok := ex.(*loops); ok {
		out.Threads = l.threads
	}
	if cause := context.Cause(ctx); ctx.Err() != nil {
		out.Partial = true
		out.Reason = cause.Error()
		if errors.Is(cause, ErrMaxDuration) {
			out.Reason = fmt.Sprintf("stopped at max_duration (%s) before the plan was done", p.MaxDuration)
		}
	}
	if err != nil && !out.Partial {
		out.Partial = true
		out.Reason = err.Error()
	}
	return out, nil
}

// sink records a driver's events into their own recorder, each in the
// phase of its cause (now, when the driver gives none).
type sink struct {
	st   *state
	rec  *metrics.Recorder
	base int // index of the first event action
}

func (s *sink) Event(event int, cause time.Time, latency time.Duration, in, out int64, class driver.Class, err error) {
	var at time.Duration
	if cause.IsZero() {
		at = s.st.Now()
	} else {
		at = cause.Sub(s.st.base)
	}
	if latency < 0 {
		s.rec.RecordUntimed(s.base+event, at, class, err)
		return
	}
	s.rec.Record(s.base+event, at, latency, latency, in, out, class, err)
}

// sleeper waits until offsets of the run's clock, reusing one timer.
type sleeper struct {
	st *state
	t  *time.Timer
}

func newSleeper(st *state) *sleeper {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &sleeper{st: st, t: t}
}

// until blocks until offset at, and reports false when ctx ended first.
func (s *sleeper) until(ctx context.Context, at time.Duration) bool {
	d := at - s.st.Now()
	if d <= 0 {
		return ctx.Err() == nil
	}
	s.t.Reset(d)
	select {
	case <-s.t.C:
		return true
	case <-ctx.Done():
		s.t.Stop()
		return false
	}
}

// shards returns how many recorders goroutine users share: enough that
// writers rarely meet on one, few enough to keep memory small.
func shards(users int) int {
	n := 4 * runtime.GOMAXPROCS(0)
	return max(1, min(n, users))
}
