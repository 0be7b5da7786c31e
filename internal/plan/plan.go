// Package plan compiles a scenario once, before a run, into an immutable
// plan: the phase timeline, each user's window, the arrival schedules and
// the segment k/n this process runs. The plan does no I/O and reads no
// clock; every time in it is an offset from the run's start.
package plan

import (
	"context"
	"fmt"
	"time"

	"github.com/throng-io/throng/internal/scenario"
)

// Phase names. Every interval of a run is labelled with one of them.
const (
	RampUp   = "ramp-up"
	Steady   = "steady"
	RampDown = "ramp-down"
	// Drain follows the run when a driver waits for its events in flight
	// (messages published but not yet delivered).
	Drain = "drain"
	// Tail labels the intervals after a timed plan's end, while the last
	// actions finish. It is not a phase of the plan: nothing is scheduled
	// in it, and what finishes in it counts in the phase it was scheduled
	// in. Summaries never show it (its time is in "all").
	Tail = "tail"
)

// Phase is one stretch of the timeline. End is Open for the last phase of a
// closed run bounded by iterations: it lasts until the users are done.
type Phase struct {
	Name       string
	Start, End time.Duration
}

// Open marks a phase end that is not known in advance.
const Open = time.Duration(-1)

// User is one simulated user of this segment.
type User struct {
	ID    int           // global index, 0..TotalUsers-1, the same in every segment
	Group int           // index in Plan.Groups
	Start time.Duration // when the user logs on
	Stop  time.Duration // when it leaves; Open when it leaves after its iterations
	Seed  uint64        // seed of the user's own random stream, from (scenario seed, ID)
}

// Action is a scenario action as the schedule sees it.
type Action struct {
	Name   string
	Weight float64
	Rate   float64 // per user per second, speedup applied (per-user open model)
}

// Group is a compiled group of users (a scenario without groups has one):
// its model and its actions, which are Plan.Actions[First:First+N].
type Group struct {
	Name             string
	Model            string
	PerUserRates     bool
	Passive          bool // no actions: users log on and stay
	Iterations       int
	Think            time.Duration // speedup applied
	ThinkExponential bool
	Pacing           time.Duration // > 0: iterations due this far apart, on a fixed schedule (speedup applied)
	MaxDelay         time.Duration
	Start            time.Duration
	Users            int // users in the whole plan
	First, N         int
	chooser          chooser
	journeys         chooser // the group's journeys, by weight
	firstJourney     int     // index in Plan.Journeys of the group's first journey
	userRate         float64
}

// Plan is a compiled scenario. It is immutable and safe to share.
type Plan struct {
	Scenario *scenario.Scenario
	Segment  Segment
	Model    string // scenario.Closed or scenario.Open
	// PerUserRates: open model where each user has its own per-action rates.
	PerUserRates bool

	TotalUsers int    // users in the whole plan
	Users      []User // users of this segment, by ID
	Phases     []Phase
	// CountBound: a closed run that ends when every user has done Iterations
	// actions. Its steady phase ends (and ramp-down starts) when the first
	// user finishes, so the steady-state summary only holds full load.
	CountBound bool
	Iterations int
	// Total is this segment's share of closed.total: the actions its users
	// do together, each free user taking the next (see Segment.Share).
	Total int64

	Actions []Action
	// Steps says, by action, how a journey's step is done (think after it,
	// repeat, while); Journeys are the scenario's journeys, none when its
	// users do a weighted mix of actions. With journeys an iteration is
	// one journey: closed.iterations counts journeys, not requests.
	Steps    []Step
	Journeys []Journey
	journeys chooser
	// Groups: one for a scenario without groups. The top-level model fields
	// (Model, Iterations, Think, ...) are those of the first group.
	Groups  []Group
	chooser chooser

	Think            time.Duration // per action, speedup applied
	ThinkExponential bool
	Rate             float64 // aggregate arrivals per second in steady state, speedup applied
	UniformArrivals  bool
	MaxDelay         time.Duration
	Interval         time.Duration
	MaxDuration      time.Duration
	Seed             uint64
	Speedup          float64
	rampUp           time.Duration
	steps            int
	userRate         float64 // sum of the per-user action rates
	rampDown, steady time.Duration
}

// Compile builds the plan of segment seg of a valid scenario.
func Compile(s *scenario.Scenario, seg Segment) (*Plan, error) {
	return CompileContext(context.Background(), s, seg)
}

// CompileContext is Compile that stops, with ctx's cause, when ctx ends:
// a plan of millions of users takes a while to build. Check the plan's
// Estimate first: Compile allocates its users.
func CompileContext(ctx context.Context, s *scenario.Scenario, seg Segment) (*Plan, error) {
	if err := seg.Validate(); err != nil {
		return nil, err
	}
	p := &Plan{
		Scenario:         s,
		Segment:          seg,
		Model:            s.Model,
		PerUserRates:     s.PerUserRates(),
		TotalUsers:       s.Users,
		Iterations:       s.Closed.Iterations,
		Think:            time.Duration(float64(s.Closed.Think.D()) / s.Speedup),
		ThinkExponential: s.Closed.ThinkDistribution == scenario.Exponential,
		Rate:             s.Open.Rate.PerSecond * s.Speedup,
		UniformArrivals:  s.Open.Arrivals == scenario.Uniform,
		MaxDelay:         s.Open.MaxDelay.D(),
		Interval:         s.Interval.D(),
		MaxDuration:      s.EffectiveMaxDuration(),
		Seed:             uint64(s.Seed),
		Speedup:          s.Speedup,
		rampUp:           s.RampUpLength(),
		steps:            s.Phases.RampUp.Steps,
		steady:           s.Phases.Steady.D(),
		rampDown:         s.Phases.RampDown.D(),
	}
	if p.Model != scenario.Closed && p.Model != scenario.Open && !s.Grouped() {
		return nil, fmt.Errorf("plan: unknown model %q", p.Model)
	}
	for _, a := range s.Actions {
		p.Actions = append(p.Actions, Action{Name: a.Name, Weight: a.Weight, Rate: a.Rate.PerSecond * s.Speedup})
	}
	p.compileJourneys(s)
	for _, v := range s.Views() {
		g := Group{
			Name: v.Name, Model: v.Model, PerUserRates: v.Model == scenario.Open && v.Open.Rate.PerSecond == 0,
			Passive: len(v.Actions) == 0, Iterations: v.Closed.Iterations,
			Think:            time.Duration(float64(v.Closed.Think.D()) / s.Speedup),
			ThinkExponential: v.Closed.ThinkDistribution == scenario.Exponential,
			Pacing:           time.Duration(float64(v.Closed.Pacing.D()) / s.Speedup),
			MaxDelay:         v.Open.MaxDelay.D(), Start: v.Start.D(), Users: v.Users,
			First: v.First, N: len(v.Actions),
		}
		weights := make([]float64, g.N)
		for i := range weights {
			a := p.Actions[g.First+i]
			weights[i] = a.Weight
			if g.PerUserRates {
				weights[i] = a.Rate
			}
			g.userRate += a.Rate
		}
		g.chooser = newChooser(weights)
		p.groupJourneys(&g)
		p.Groups = append(p.Groups, g)
	}
	g0 := p.Groups[0]
	p.chooser, p.userRate = g0.chooser, g0.userRate
	if s.Grouped() {
		p.Model, p.PerUserRates, p.Iterations = "groups", false, 0
	}
	if p.Model == scenario.Closed && s.Closed.Total > 0 {
		p.Total = seg.Share(int64(s.Closed.Total))
	}
	p.CountBound = p.Model == scenario.Closed && (p.Iterations > 0 || p.Total > 0) && p.steady == 0

	// Timeline.
	t := time.Duration(0)
	if p.rampUp > 0 {
		p.Phases = append(p.Phases, Phase{RampUp, 0, p.rampUp})
		t = p.rampUp
	}
	if p.CountBound {
		p.Phases = append(p.Phases, Phase{Steady, t, Open})
	} else {
		p.Phases = append(p.Phases, Phase{Steady, t, t + p.steady})
		t += p.steady
		if p.rampDown > 0 {
			p.Phases = append(p.Phases, Phase{RampDown, t, t + p.rampDown})
		}
	}

	views := s.Views()
	p.Users = make([]User, 0, seg.Share(int64(s.Users)))
	for id := 0; id < s.Users; id++ {
		if id%(1<<16) == 0 && ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if seg.Owns(int64(id)) {
			p.Users = append(p.Users, p.user(id, views))
		}
	}
	return p, nil
}

// user computes the window of the user with global index id; views are
// the scenario's.
func (p *Plan) user(id int, views []scenario.GroupView) User {
	u := User{ID: id, Seed: UserSeed(p.Seed, id), Stop: Open}
	n := p.TotalUsers
	// The user's group, and its index in it.
	j := id
	for u.Group < len(p.Groups)-1 && j >= p.Groups[u.Group].Users {
		j -= p.Groups[u.Group].Users
		u.Group++
	}
	aggregate := p.Model == scenario.Open && !p.PerUserRates
	if !aggregate {
		g := p.Groups[u.Group]
		u.Start = g.Start + scenario.RampOffset(views[u.Group].RampUp, j, g.Users)
	}
	if p.CountBound {
		return u
	}
	end := p.rampUp + p.steady
	if aggregate || p.rampDown == 0 {
		u.Stop = end + p.rampDown
		return u
	}
	// Users leave evenly over the ramp-down, the last to log on first.
	u.Stop = end + scenario.ScaleDuration(p.rampDown, int64(n-id), int64(n))
	return u
}

// End returns the planned end of the run, or Open for a count-bound run.
func (p *Plan) End() time.Duration {
	last := p.Phases[len(p.Phases)-1]
	return last.End
}

// PhaseAt returns the planned phase at offset t. Past the end it returns the
// last phase. In a count-bound run the engine, not the plan, decides when the
// steady phase ends.
func (p *Plan) PhaseAt(t time.Duration) Phase {
	for _, ph := range p.Phases {
		if ph.End == Open || t < ph.End {
			return ph
		}
	}
	return p.Phases[len(p.Phases)-1]
}

// RateAt returns the aggregate arrival rate (per second) at offset t: it
// rises over the ramp-up (linearly, or in Steps stairs), holds in the steady
// state and falls linearly over the ramp-down.
func (p *Plan) RateAt(t time.Duration) float64 {
	switch {
	case t < 0:
		return 0
	case t < p.rampUp:
		if p.steps > 0 {
			k := int(int64(t)*int64(p.steps)/int64(p.rampUp)) + 1
			return p.Rate * float64(k) / float64(p.steps)
		}
		return p.Rate * float64(t) / float64(p.rampUp)
	case t < p.rampUp+p.steady:
		return p.Rate
	case t < p.rampUp+p.steady+p.rampDown:
		left := p.rampUp + p.steady + p.rampDown - t
		return p.Rate * float64(left) / float64(p.rampDown)
	}
	return 0
}

// ChooseAction picks an action index by weight (or, with per-user rates, by
// rate) from a uniform number u in [0, 1), in a plan of one group.
func (p *Plan) ChooseAction(u float64) int { return p.chooser.pick(u) }

// ChooseIn picks an action of group g (an index in Plan.Actions).
func (p *Plan) ChooseIn(g int, u float64) int {
	gr := &p.Groups[g]
	return gr.First + gr.chooser.pick(u)
}
