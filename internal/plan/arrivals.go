package plan

import (
	"math"
	"time"

	"github.com/throng-io/throng/internal/scenario"
)

// Arrivals generates the aggregate arrivals of an open-model plan in time
// order: arrival j (counted over the whole plan, from 0) comes at a time
// drawn from the rate profile (RateAt) and does the action picked for j.
// The sequence depends only on the scenario seed, so every segment and every
// thread that generates it sees the same arrivals and keeps its own share.
//
// Times come from inverting the cumulative intensity Λ(t) = ∫ RateAt: a
// Poisson process takes exponential steps of mean 1 in Λ, a uniform one steps
// of exactly 1.
type Arrivals struct {
	p      *Plan
	rng    *Rand
	lambda float64 // Λ of the next arrival
	j      int64
	share  func(j int64) bool

	// Λ at the end of the ramp-up, the steady state and the ramp-down.
	l1, l2, l3 float64
}

// Arrivals returns a generator of the plan's aggregate arrivals that keeps
// those for which share(j) is true (nil keeps this segment's share).
func (p *Plan) Arrivals(share func(j int64) bool) *Arrivals {
	if share == nil {
		seg := p.Segment
		share = seg.Owns
	}
	a := &Arrivals{p: p, share: share, rng: NewRand(splitmix64(p.Seed ^ 0xa441a15))}
	r := p.Rate
	ru, s, rd := p.rampUp.Seconds(), p.steady.Seconds(), p.rampDown.Seconds()
	if p.steps > 0 {
		n := float64(p.steps)
		a.l1 = r * ru * (n + 1) / (2 * n)
	} else {
		a.l1 = r * ru / 2
	}
	a.l2 = a.l1 + r*s
	a.l3 = a.l2 + r*rd/2
	if !p.UniformArrivals {
		a.lambda = a.rng.Exp()
	}
	return a
}

// Next returns the next arrival of this share: its global index, its time
// offset and its action (with journeys, the first step of the journey
// picked by weight: Plan.JourneyAt names it). ok is false when the plan has no more arrivals.
func (a *Arrivals) Next() (j int64, t time.Duration, action int, ok bool) {
	for {
		if a.lambda >= a.l3 || a.p.Rate <= 0 {
			return 0, 0, 0, false
		}
		j, lam := a.j, a.lambda
		a.j++
		if a.p.UniformArrivals {
			a.lambda = float64(a.j)
		} else {
			a.lambda += a.rng.Exp()
		}
		if !a.share(j) {
			continue
		}
		u := unitFloat(splitmix64(a.p.Seed ^ uint64(j)*0x9e3779b97f4a7c15))
		if len(a.p.Journeys) > 0 {
			// An arrival is one journey, picked by weight: its first step.
			return j, a.timeOf(lam), a.p.Journeys[a.p.ChooseJourney(u)].First, true
		}
		return j, a.timeOf(lam), a.p.ChooseAction(u), true
	}
}

// Count returns how many arrivals the whole plan has in expectation (Λ at
// the end), for sizing and tests.
func (a *Arrivals) Count() float64 { return a.l3 }

// timeOf inverts Λ: the time at which the cumulative intensity reaches lam.
func (a *Arrivals) timeOf(lam float64) time.Duration {
	p := a.p
	r := p.Rate
	ru, s, rd := p.rampUp.Seconds(), p.steady.Seconds(), p.rampDown.Seconds()
	var sec float64
	switch {
	case lam < a.l1 && p.steps > 0:
		n := float64(p.steps)
		step := ru / n
		// Λ at the end of stair k (1-based): r*step*k(k+1)/(2n).
		k := 1.0
		for ; k < n; k++ {
			if lam < r*step*k*(k+1)/(2*n) {
				break
			}
		}
		before := r * step * (k - 1) * k / (2 * n)
		sec = (k-1)*step + (lam-before)/(r*k/n)
	case lam < a.l1:
		sec = math.Sqrt(2 * lam * ru / r)
	case lam < a.l2:
		sec = ru + (lam-a.l1)/r
	default:
		x := (lam - a.l2) / (r * rd)
		sec = ru + s + rd*(1-math.Sqrt(math.Max(0, 1-2*x)))
	}
	return time.Duration(sec * float64(time.Second))
}

// ThinkTime returns one think time for a user: Think, or an exponential
// draw with mean Think (a plan of one group).
func (p *Plan) ThinkTime(r *Rand) time.Duration { return p.Groups[0].ThinkTime(r) }

// ThinkTime returns one think time for a user of the group.
func (g *Group) ThinkTime(r *Rand) time.Duration {
	if g.Think <= 0 {
		return 0
	}
	if g.ThinkExponential {
		return time.Duration(r.Exp() * float64(g.Think))
	}
	return g.Think
}

// NextUserArrival returns the gap to a user's next action in the per-user
// open model and the action: the superposition of each action's Poisson
// process, so the gap is exponential with the summed rate.
func (p *Plan) NextUserArrival(r *Rand) (gap time.Duration, action int) {
	return p.NextArrivalIn(0, r)
}

// NextArrivalIn is NextUserArrival for a user of group g; the action is an
// index in Plan.Actions.
func (p *Plan) NextArrivalIn(g int, r *Rand) (gap time.Duration, action int) {
	gr := &p.Groups[g]
	if gr.userRate <= 0 {
		return time.Duration(math.MaxInt64), gr.First
	}
	// A gap past the longest run (a rate of 1/1000y) is as good as never,
	// and must not overflow the user's clock.
	gap = time.Duration(min(r.Exp()/gr.userRate*float64(time.Second), float64(scenario.MaxLength)))
	return gap, gr.First + gr.chooser.pick(r.Float64())
}

// UserRate is a per-user open group's summed action rate, per user per
// second (speedup applied); 0 for other groups.
func (g *Group) UserRate() float64 { return g.userRate }
