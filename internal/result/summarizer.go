package result

import (
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/plan"
)

// Summarizer builds a repetition's summaries and taints one interval at a
// time. Its memory does not grow with the number of intervals, only with the
// phases, the actions, the counter series and the histograms' occupied
// buckets (at most metrics.NumBuckets, 16 bytes each, per histogram: two per
// action, per phase and for "all"), so a run of a day summarizes in the
// memory of a run of an hour: the runner
// keeps no interval list, and reads the intervals back from the journal when
// it writes the result.
//
// The latest interval is held apart until the next one comes, so that
// Replace can still change it (the engine amends the last interval of a
// repetition when actions finish in the very instant of its final cut).
type Summarizer struct {
	actions []string
	events  int
	order   []string
	phases  map[string]*phaseSum
	all     phaseSum
	last    Interval
	held    bool // last holds an interval not yet folded
	n       int
}

// NewSummarizer returns a summarizer for a run's actions (Meta.Actions),
// the last events of which are the driver's events (Meta.Events), left out
// of the totals.
func NewSummarizer(actions []string, events int) *Summarizer {
	return &Summarizer{actions: actions, events: events, phases: map[string]*phaseSum{}}
}

// Add adds the next interval. The summarizer keeps a shallow copy of it
// until the next Add: the caller must not modify what it references.
func (s *Summarizer) Add(iv *Interval) {
	s.fold()
	s.last, s.held = *iv, true
	s.n++
}

// Replace replaces the interval added last (with the same kept-copy rule as
// Add); with none, it adds iv.
func (s *Summarizer) Replace(iv *Interval) {
	if !s.held {
		s.Add(iv)
		return
	}
	s.last = *iv
}

// Count returns how many intervals were added (replacements not counted).
func (s *Summarizer) Count() int { return s.n }

func (s *Summarizer) fold() {
	if !s.held {
		return
	}
	iv := &s.last
	n := len(s.actions)
	p := s.phase(iv.Phase)
	p.addSpan(iv)
	p.addContent(iv.Actions, n)
	s.all.addSpan(iv)
	s.all.addContent(iv.Actions, n)
	for _, c := range iv.Carried {
		s.phase(c.Phase).addContent(c.Actions, n)
		s.all.addContent(c.Actions, n)
	}
	s.last, s.held = Interval{}, false
}

// phase returns the accumulator of a phase, made when first seen.
func (s *Summarizer) phase(name string) *phaseSum {
	p := s.phases[name]
	if p == nil {
		p = &phaseSum{}
		s.phases[name] = p
		s.order = append(s.order, name)
	}
	return p
}

// shown reports whether a phase gets a summary: every phase of the plan
// does, and the drain when something counts in it (an event with no cause
// of its own); the tail, whose actions count in the phases they were
// scheduled in, never does.
func (p *phaseSum) shown(name string) bool {
	switch name {
	case plan.Tail:
		return false
	case plan.Drain:
		return p.content
	}
	return true
}

// Summaries returns one Summary per phase shown (see phaseSum.shown), in
// the order the phases first appeared, then one for the whole repetition
// (phase "all"). Adding after it goes on from where it was.
func (s *Summarizer) Summaries() []Summary {
	s.fold()
	out := make([]Summary, 0, len(s.order)+1)
	for _, ph := range s.order {
		if p := s.phases[ph]; p.shown(ph) {
			out = append(out, p.summary(ph, s.actions, s.events))
		}
	}
	return append(out, s.all.summary(All, s.actions, s.events))
}

// Taints returns the taints a reader must see next to the figures of the
// intervals added so far, each with its reason in words; a repetition that
// did not finish (partial) gets one saying why.
func (s *Summarizer) Taints(partial bool, reason string) []Taint {
	s.fold()
	var out []Taint
	for _, ph := range s.order {
		if p := s.phases[ph]; p.shown(ph) {
			out = append(out, p.taints(ph)...)
		}
	}
	if partial {
		out = append(out, Taint{Kind: "partial", Message: "this repetition did not finish as planned: " + reason})
	}
	return out
}

// phaseSum accumulates one phase, or all of them: the time, users, client
// and counters of the intervals that span it, and the actions that count
// in it (scheduled in it, wherever they finished).
type phaseSum struct {
	content                           bool    // an action counts in the phase
	sum                               Summary // the running figures: StartS, DurationS, Intervals, maxima, BoundIntervals
	usersSum, cpuSum, busySum, weight float64
	acts                              []metrics.ActionSnapshot
	counters                          counterSum
	server                            serverSum
	saturated                         int    // intervals with the load machine saturated
	boundWhy                          string // the first client-bound interval's reason
	dropped                           uint64 // arrivals dropped, every action
}

// addContent adds actions that count in the phase.
func (p *phaseSum) addContent(acts []ActionInterval, actions int) {
	if p.acts == nil {
		p.acts = make([]metrics.ActionSnapshot, actions)
	}
	for i := range acts {
		p.dropped += acts[i].Dropped
		if acts[i].Count > 0 || acts[i].Dropped > 0 {
			p.content = true
		}
		if i < len(p.acts) {
			snap := acts[i].Snapshot()
			p.acts[i].Merge(&snap)
		}
	}
}

// addSpan adds an interval that spans the phase: its time, users, client
// and counters.
func (p *phaseSum) addSpan(iv *Interval) {
	s := &p.sum
	if s.Intervals == 0 {
		s.StartS = iv.StartS
	}
	s.Intervals++
	s.DurationS += iv.DurationS
	w := iv.DurationS
	p.weight += w
	p.usersSum += iv.UsersMean * w
	p.cpuSum += iv.Client.CPUCores * w
	p.busySum += iv.Client.MachineBusy * w
	s.UsersMax = max(s.UsersMax, iv.UsersMax, iv.ActiveUsers)
	s.ClientCPUMax = max(s.ClientCPUMax, iv.Client.CPUCores)
	if iv.Client.Bound {
		s.BoundIntervals++
		if p.boundWhy == "" {
			p.boundWhy = iv.Client.BoundWhy
		}
	}
	if iv.Client.MachineBusy > MachineSaturated {
		p.saturated++
	}
	p.counters.add(iv)
	p.server.add(iv)
}

// summary computes the phase's Summary; the accumulator is left as it was.
func (p *phaseSum) summary(phase string, actions []string, events int) Summary {
	s := p.sum
	s.Phase = phase
	s.Actions = nil
	if p.weight > 0 {
		s.UsersMean = p.usersSum / p.weight
		s.ClientCPUMean = p.cpuSum / p.weight
		s.MachineBusy = p.busySum / p.weight
	}
	acts := p.acts
	if len(acts) < len(actions) {
		acts = make([]metrics.ActionSnapshot, len(actions))
	}
	var total metrics.ActionSnapshot
	for i, name := range actions {
		s.Actions = append(s.Actions, summarizeAction(name, &acts[i], s.DurationS))
		if i < len(actions)-events {
			total.Merge(&acts[i])
		} else {
			// The events' bytes are traffic all the same (a subscriber's
			// deliveries are what it receives).
			total.BytesIn += acts[i].BytesIn
			total.BytesOut += acts[i].BytesOut
		}
	}
	s.Total = summarizeAction(All, &total, s.DurationS)
	s.Counters = p.counters.result()
	s.Server = p.server.rows(&s.Total, s.UsersMean)
	return s
}
