package plan

import (
	"math"
	"time"

	"github.com/throng-io/throng/internal/scenario"
)

// MaxUserRate is the most actions a second one user of group g starts over
// the long run, whatever the server does (speedup applied): the bound an
// executor may count on when it decides how to run the group's users.
//
//   - A passive user: 0 (it logs on and stays).
//   - A per-user open user: its summed rate (UserRate), the mean rate of its
//     Poisson arrivals.
//   - A closed user: the most actions one iteration holds over the least
//     time it lasts on average. Without journeys an iteration is one
//     action; with journeys, for each of the group's journeys, its steps'
//     repeat counts summed (a while step counted at its max), over the
//     think times its steps surely wait (each step's think time its repeat
//     count times; a while step's none, as it may be done no time), and
//     the largest of these. An iteration lasts at least its pacing when
//     paced (a user that falls behind catches up back to back, but only
//     with iterations it owes, so over the long run no faster), and
//     otherwise its steps' think times plus the group's think time (the
//     mean of an exponential one). Server time only lowers the rate, so it
//     is left out. +Inf when that time is 0: nothing bounds such a user
//     but the server.
//   - The aggregate open model: +Inf (its sessions serve the group's
//     arrivals, not a rate of their own).
func (p *Plan) MaxUserRate(g int) float64 {
	gr := &p.Groups[g]
	switch {
	case gr.Passive:
		return 0
	case gr.Model == scenario.Open && gr.PerUserRates:
		return gr.userRate
	case gr.Model == scenario.Open:
		return math.Inf(1)
	}
	perSecond := func(actions int, least time.Duration) float64 {
		if gr.Pacing > 0 {
			least = max(least, gr.Pacing)
		} else {
			least += gr.Think
		}
		if least <= 0 {
			return math.Inf(1)
		}
		return float64(actions) / least.Seconds()
	}
	if len(p.Journeys) == 0 {
		return perSecond(1, 0)
	}
	most, found := 0.0, false
	for _, jr := range p.Journeys {
		if jr.First < gr.First || jr.First >= gr.First+gr.N {
			continue // another group's
		}
		actions, least := 0, time.Duration(0)
		for a := jr.First; a < jr.First+jr.N; a++ {
			s := &p.Steps[a]
			if s.While {
				actions += s.Max
				continue
			}
			actions += s.Repeat
			least += time.Duration(s.Repeat) * s.Think
		}
		most, found = max(most, perSecond(actions, least)), true
	}
	if !found {
		return perSecond(1, 0)
	}
	return most
}
