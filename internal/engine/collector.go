package engine

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
)

// Client-bound thresholds: an interval in which the generator used more than
// BoundShare of the cores it can use (or one event-loop thread was busier than
// that), in which its threads waited for a CPU more than BoundWait of the time
// they were runnable and at least BoundWaitCores of a core in all while the
// CPUs it may run on (the machine's, unless it is pinned) were over
// BoundWaitBusy busy, or in which its scheduling lag exceeded BoundLag,
// measured the client rather than the server. Waiting counts only on busy
// CPUs: on a virtual machine, waking a thread on an idle vCPU
// takes tens of microseconds, counted as waiting, a third of the runnable
// time of a generator doing short work per wake-up (measured here from 2 %
// to 30 % of a core with the machine 2-22 % busy) that withholds nothing.
// A CPU quota (a cgroup's, a container's CPU limit) withholds the CPU on an
// idle machine too: throttled more than BoundThrottled of an interval, the
// generator measured itself.
const (
	BoundShare     = 0.85
	BoundWait      = 0.25
	BoundWaitCores = 0.1
	BoundWaitBusy  = 0.75
	BoundLag       = 20 * time.Millisecond
	BoundThrottled = 0.05
)

// collector cuts the recording into intervals: every Interval of the run's
// clock, and at every phase boundary, so an interval spans one phase. An
// interval holds what finished in it, each outcome counted in the phase of
// its scheduled start (result.Interval.Carried holds those of other phases
// than the interval's own).
type collector struct {
	st       *state
	cfg      Config
	capacity float64
	lag      *lagProbe

	stop  chan struct{}
	done  chan struct{}
	drain chan chan struct{} // the drain begins: cut, then acknowledge

	// The collector keeps no interval list (a run's memory must not grow
	// with its length): only the last interval handed out, which the final
	// cut may amend, and the list itself when nobody takes the intervals
	// (Config.OnInterval nil, as in tests).
	lastIv   result.Interval
	n        int // intervals cut
	amended  bool
	keep     bool
	kept     []result.Interval
	carry    bool          // c.actions holds what was recorded in the instant of the last cut
	cut      time.Duration // start of the current interval
	phase    string
	last     sampler.SelfSample
	counters sampler.Reading            // the last reading of the counter sources
	switched bool                       // count-bound: the steady state has ended
	draining bool                       // the driver is draining its events
	actions  [][]metrics.ActionSnapshot // by phase (st.phases), then action
}

func newCollector(st *state, cfg Config) *collector {
	capacity := float64(min(runtime.GOMAXPROCS(0), sampler.Cores()))
	c := &collector{
		st: st, cfg: cfg, capacity: capacity, lag: newLagProbe(st.active.Load, st.plan.Interval),
		stop: make(chan struct{}), done: make(chan struct{}), drain: make(chan chan struct{}),
		keep: cfg.OnInterval == nil,
	}
	if cfg.AutoProcs && cfg.Kind == scenario.EngineGoroutines {
		c.lag.gov = newProcsGovernor(runtime.GOMAXPROCS(0), setProcs, sampler.ProcessCPU)
	}
	return c
}

// start begins the first interval; the state's clock has just started.
func (c *collector) start() {
	c.phase = c.st.plan.PhaseAt(0).Name
	c.last = sampler.ReadSelf(c.threads())
	if c.cfg.Counters != nil {
		c.counters = c.cfg.Counters.Sample(context.Background())
	}
	c.lag.start()
	go c.loop()
}

func (c *collector) threads() []int {
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	return append([]int(nil), c.st.threads...)
}

// nextCut returns when the current interval must end: after one interval,
// or earlier at the next planned phase boundary.
func (c *collector) nextCut() time.Duration {
	p := c.st.plan
	next := c.cut + p.Interval
	for _, ph := range p.Phases {
		if ph.End != plan.Open && ph.End > c.cut && ph.End < next {
			next = ph.End
		}
	}
	return next
}

func (c *collector) loop() {
	defer close(c.done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	firstDone, drain := c.st.firstDone, c.drain
	for {
		t.Reset(max(0, c.nextCut()-c.st.Now()))
		select {
		case <-t.C:
			c.cutNow(false)
		case ack := <-drain:
			drain = nil
			c.st.phases.Begin(plan.Drain, c.st.Now)
			c.cutNow(false)
			c.draining = true
			c.phase = plan.Drain
			close(ack)
		case <-firstDone:
			firstDone = nil
			c.cutNow(false)
			c.switched = true
			c.phase = plan.RampDown
		case <-c.stop:
			c.cutNow(true)
			return
		}
	}
}

// cutNow ends the current interval now and starts the next one; final is
// the last cut of the repetition.
func (c *collector) cutNow(final bool) {
	now := c.st.Now()
	p := c.st.plan
	if c.actions == nil {
		c.actions = make([][]metrics.ActionSnapshot, c.st.phases.Len())
		for i := range c.actions {
			c.actions[i] = make([]metrics.ActionSnapshot, c.st.actions)
		}
	}
	if !c.carry {
		for _, ph := range c.actions {
			clear(ph)
		}
	}
	c.carry = false
	for _, r := range c.st.recs {
		r.Collect(c.actions)
	}
	if now <= c.cut {
		// No time has passed since the last cut (the clock's resolution,
		// or a cut right after a phase switch): what was recorded since
		// finished in the instant of that cut. It goes into the next
		// interval, or, at the final cut, into the last one, which is then
		// handed out again through Outcome.Amended (with no interval yet, a
		// first one of no duration holds it).
		switch {
		case !final:
			c.carry = true
			return
		case !c.anyRecorded():
			return
		case c.n > 0:
			c.lastIv.Actions, c.lastIv.Carried = c.content(&c.lastIv)
			c.amended = true
			if c.keep {
				c.kept[len(c.kept)-1] = c.lastIv
			}
			return
		}
	}
	active := c.st.active.Load()
	mean, peak := c.lag.takeUsers(active)
	iv := result.Interval{
		Index:       c.n,
		StartS:      c.cut.Seconds(),
		DurationS:   (now - c.cut).Seconds(),
		Phase:       c.phase,
		ActiveUsers: int(active),
		UsersMean:   mean,
		UsersMax:    int(peak),
		Client:      c.client(),
	}
	iv.Actions, iv.Carried = c.content(&iv)
	if c.cfg.Counters != nil {
		cur := c.cfg.Counters.Sample(context.Background())
		iv.Counters = sampler.Rates(c.counters, cur)
		c.counters = cur
	}
	c.n++
	c.lastIv = iv
	if c.keep {
		c.kept = append(c.kept, iv)
	} else {
		c.cfg.OnInterval(&iv)
	}
	c.cut = now
	// The next interval's phase: the plan's, except that a count-bound run
	// ramps down once a user is done, and that what comes after the planned
	// end (users finishing their last actions, counted in the phases they
	// were scheduled in) is the run's tail, a phase of no action of its own.
	switch {
	case c.draining:
		c.phase = plan.Drain
	case c.switched:
		c.phase = plan.RampDown
	case p.End() != plan.Open && now >= p.End()-time.Millisecond:
		c.phase = plan.Tail
	default:
		c.phase = p.PhaseAt(now + time.Millisecond).Name
	}
}

// client reads the generator's own counters for the interval just ended and
// decides whether it was client-bound.
func (c *collector) client() result.Client {
	now := sampler.ReadSelf(c.threads())
	prev := c.last
	c.last = now
	p99, mx := c.lag.take()
	cl := result.Client{
		CPUCores:    sampler.CPUCores(prev, now),
		Capacity:    c.capacity,
		MachineBusy: sampler.MachineBusy(prev, now),
		CPUWait:     sampler.CPUWaitShare(prev, now),
		LagP99Ms:    float64(p99) / 1e6,
		LagMaxMs:    float64(mx) / 1e6,
		RSSBytes:    now.RSSBytes,
		Goroutines:  now.Goroutines,
		Connections: int(c.st.conns.Load()),
	}
	if c.lag.gov != nil {
		cl.ProcsMin = c.lag.gov.take()
	}
	if len(prev.ThreadCPU) == len(now.ThreadCPU) {
		cl.ThreadBusy = sampler.ThreadBusy(prev, now)
	}
	wait := waitOf(prev, now)
	if why := boundReasons(c.cfg.Kind == scenario.EngineGoroutines, cl.CPUCores, c.capacity, cl.ThreadBusy, wait, p99); len(why) > 0 {
		cl.Bound = true
		cl.BoundWhy = strings.Join(why, "; ")
	}
	return cl
}

// boundReasons says why an interval measured the client rather than the
// server: the process used more than BoundShare of the cores it can use
// (goroutine engine), an event-loop thread was busier than BoundShare of a
// core, its threads waited for a CPU more than BoundWait of the time they had
// work and BoundWaitCores in all on CPUs over BoundWaitBusy busy (other
// processes starved it), or the scheduling
// lag's p99 exceeded BoundLag, or the CPU quota of its cgroup held it back
// more than BoundThrottled of the time (on any machine, busy or not). Empty:
// not bound.
func boundReasons(processWide bool, cpuCores, capacity float64, threadBusy []float64, wait waitFigures, lagP99 time.Duration) []string {
	var why []string
	if processWide && capacity > 0 && cpuCores > BoundShare*capacity {
		why = append(why, fmt.Sprintf("generator CPU %.0f%% of %.0f cores", 100*cpuCores/capacity, capacity))
	}
	for i, b := range threadBusy {
		if b > BoundShare {
			why = append(why, fmt.Sprintf("event loop %d busy %.0f%%", i, 100*b))
		}
	}
	if wait.share > BoundWait && wait.cores >= BoundWaitCores && wait.cpusBusy > BoundWaitBusy {
		why = append(why, fmt.Sprintf("its threads waited for a CPU %.0f%% of the time they had work", 100*wait.share))
	}
	if wait.throttled > BoundThrottled {
		why = append(why, fmt.Sprintf("its CPU quota (cgroup) held it back %.0f%% of the time", 100*wait.throttled))
	}
	if lagP99 > BoundLag {
		why = append(why, fmt.Sprintf("scheduling lag p99 %.0f ms", float64(lagP99)/1e6))
	}
	return why
}

// waitFigures is how long the generator's threads waited for a CPU in an
// interval: as a share of their runnable time, and in cores (wait time per
// second of wall time, summed over the threads); and how busy the CPUs it
// may run on were (0..1 of their time: the machine's when it may run on
// all; a generator pinned by taskset to a CPU that others keep busy is
// starved while the machine's other CPUs idle).
// Throttled is the time the CPU quota of its cgroups held it back, per
// second of wall time.
type waitFigures struct{ share, cores, cpusBusy, throttled float64 }

// waitOf is the wait figures between two readings of the generator.
func waitOf(prev, now sampler.SelfSample) waitFigures {
	return waitFigures{share: sampler.CPUWaitShare(prev, now), cores: sampler.CPUWaitCores(prev, now),
		cpusBusy: sampler.CPUsBusy(prev, now), throttled: sampler.CPUThrottledShare(prev, now)}
}

// anyRecorded reports whether c.actions holds anything, in any phase.
func (c *collector) anyRecorded() bool {
	for _, ph := range c.actions {
		if recorded(ph) {
			return true
		}
	}
	return false
}

// enterDrain starts the drain phase: the interval so far is cut and the
// following ones are labelled "drain". It returns once the cut is made.
func (c *collector) enterDrain() {
	ack := make(chan struct{})
	c.drain <- ack
	<-ack
}

// finish cuts the last interval and returns the outcome.
func (c *collector) finish() *Outcome {
	close(c.stop)
	<-c.done
	c.lag.stop()
	out := &Outcome{Intervals: c.kept, Elapsed: c.cut}
	if c.amended && !c.keep {
		out.Amended = &c.lastIv
	}
	return out
}

// content is the interval's actions: those of its own phase, and those
// of other phases (scheduled there, finished in this interval), added to
// what iv holds already (an amended interval) and collected in c.actions.
func (c *collector) content(iv *result.Interval) (own []result.ActionInterval, carried []result.PhaseActions) {
	prev := func(phase string) []result.ActionInterval {
		if phase == iv.Phase {
			return iv.Actions
		}
		for _, pa := range iv.Carried {
			if pa.Phase == phase {
				return pa.Actions
			}
		}
		return nil
	}
	for k, snaps := range c.actions {
		name := c.st.phases.Name(k)
		before := prev(name)
		if name != iv.Phase && before == nil && !recorded(snaps) {
			continue
		}
		acts := make([]result.ActionInterval, len(snaps))
		for i := range snaps {
			merged := snaps[i]
			if i < len(before) {
				b := before[i].Snapshot()
				merged.Merge(&b)
			}
			acts[i] = result.FromSnapshot(&merged)
		}
		if name == iv.Phase {
			own = acts
		} else {
			carried = append(carried, result.PhaseActions{Phase: name, Actions: acts})
		}
	}
	if own == nil { // the interval's phase holds no action of its own (the tail)
		own = make([]result.ActionInterval, c.st.actions)
	}
	return own, carried
}

// recorded reports whether anything was recorded in snapshots.
func recorded(s []metrics.ActionSnapshot) bool {
	for i := range s {
		a := &s[i]
		if a.Count > 0 || a.Dropped > 0 || a.BytesIn > 0 || a.BytesOut > 0 || a.Latency.N > 0 || a.Service.N > 0 {
			return true
		}
		for _, e := range a.Errors {
			if e > 0 {
				return true
			}
		}
	}
	return false
}
