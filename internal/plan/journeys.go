package plan

import (
	"time"

	"github.com/throng-io/throng/internal/scenario"
)

// Journey is a compiled journey: its steps are Plan.Actions[First:First+N],
// in order. Its own row in results is Plan.JourneyRow(j).
type Journey struct {
	Name   string
	Weight float64
	First  int
	N      int
}

// Step is how a journey step is done: the pause after it and how often.
type Step struct {
	Think  time.Duration // speedup applied
	Repeat int           // times in a row (1 for a plain step)
	While  bool          // done again while the driver says its condition holds
	Max    int           // bound of a While step's times
}

// compileJourneys fills p.Journeys and each action's Step from the
// scenario's journeys.
func (p *Plan) compileJourneys(s *scenario.Scenario) {
	p.Steps = make([]Step, len(s.Actions))
	var weights []float64
	for i, a := range s.Actions {
		p.Steps[i] = Step{Think: time.Duration(float64(a.Think.D()) / s.Speedup), Repeat: max(a.Repeat, 1), While: a.While != "", Max: max(a.MaxRounds, 1)}
		if a.Journey == "" {
			continue
		}
		if n := len(p.Journeys); n == 0 || p.Journeys[n-1].Name != a.Journey {
			p.Journeys = append(p.Journeys, Journey{Name: a.Journey, First: i})
		}
		p.Journeys[len(p.Journeys)-1].N++
	}
	for j := range p.Journeys {
		jr := &p.Journeys[j]
		jr.Weight = s.Journeys[j].Weight
		weights = append(weights, jr.Weight)
	}
	p.journeys = newChooser(weights)
}

// ChooseJourney picks a journey by weight from a uniform number u in [0, 1).
func (p *Plan) ChooseJourney(u float64) int { return p.journeys.pick(u) }

// ChooseJourneyIn picks a journey of group g by weight (an index in
// Plan.Journeys); in a plan without groups, as ChooseJourney.
func (p *Plan) ChooseJourneyIn(g int, u float64) int {
	gr := &p.Groups[g]
	return gr.firstJourney + gr.journeys.pick(u)
}

// groupJourneys gives group g the chooser of its journeys: those whose
// steps are among its actions.
func (p *Plan) groupJourneys(g *Group) {
	var weights []float64
	g.firstJourney = -1
	for j, jr := range p.Journeys {
		if jr.First >= g.First && jr.First < g.First+g.N {
			if g.firstJourney < 0 {
				g.firstJourney = j
			}
			weights = append(weights, jr.Weight)
		}
	}
	g.firstJourney = max(g.firstJourney, 0)
	g.journeys = newChooser(weights)
}

// JourneyAt returns the journey whose first step is action a, or -1.
func (p *Plan) JourneyAt(a int) int {
	for j := range p.Journeys {
		if p.Journeys[j].First == a {
			return j
		}
	}
	return -1
}

// JourneyRow is the index of journey j's own row among the recorded
// actions: after the plan's actions.
func (p *Plan) JourneyRow(j int) int { return len(p.Actions) + j }

// Rows is the number of rows the engine records for the plan's users:
// its actions, then one per journey.
func (p *Plan) Rows() int { return len(p.Actions) + len(p.Journeys) }

// RowNames names the rows of Rows, in order ("journey:NAME" for journeys).
func (p *Plan) RowNames() []string {
	out := make([]string, 0, p.Rows())
	for _, a := range p.Actions {
		out = append(out, a.Name)
	}
	for _, j := range p.Journeys {
		out = append(out, scenario.JourneyPrefix+j.Name)
	}
	return out
}
