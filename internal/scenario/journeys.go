package scenario

import (
	"fmt"
)

// Journey is an ordered flow of steps: what one kind of user does in one
// iteration of the closed model, or in one arrival of the open model at
// open.rate (log in, browse, search, add to the cart, check out). A scenario gives either actions (a weighted mix: each
// iteration is one action) or journeys (each iteration is one journey,
// picked by weight, its steps done in order).
type Journey struct {
	Name   string  `yaml:"name"`   // unique; names the journey's row in reports ("journey:NAME")
	Weight float64 `yaml:"weight"` // share of the iterations; default 1
	Steps  []Step  `yaml:"steps"`
}

// Step is one step of a journey: an action of the driver (its keys kept in
// Params, like an action's) with the pause that follows it and how often it
// is done.
type Step struct {
	Name string `yaml:"name"` // unique among all the steps and actions; default "JOURNEY.N"
	// Think is the pause after the step, before the next one (after the
	// last, before the user's next iteration, with closed.think).
	Think Duration `yaml:"think"`
	// Repeat does the step this many times in a row (default 1), each
	// followed by its think time.
	Repeat int `yaml:"repeat"`
	// While does the step again as long as this condition holds, checked
	// before each time (so maybe never); the driver reads it (web: a
	// template over the user's variables, true unless it renders to "",
	// "false" or "0"). Not with Repeat.
	While string `yaml:"while"`
	// Max bounds the times a While step is done in one iteration (default
	// DefaultMaxRounds): a condition that never turns false ends there.
	Max    int  `yaml:"max"`
	Params Node `yaml:",rest"`
	Node   Node `yaml:",node"` // the step's whole mapping, for positions
}

// DefaultMaxRounds is the bound of a While step when it gives no max.
const DefaultMaxRounds = 100

// MaxRepeat bounds repeat and max.
const MaxRepeat = 1_000_000

// JourneyPrefix names a journey's own row in reports: "journey:NAME" is
// timed from the journey's scheduled start to the end of its last step.
const JourneyPrefix = "journey:"

// HasJourneys reports whether the scenario's users go through journeys.
func (s *Scenario) HasJourneys() bool { return len(s.Journeys) > 0 }

// normalizeJourneys gives the top-level journeys and their steps their
// defaults and gathers the steps into Scenario.Actions, in order
// (Action.Journey says whose), so that the rest of throng compiles, names
// and records them like actions. A group's journeys are gathered by
// normalizeGroups.
func (s *Scenario) normalizeJourneys() {
	if !s.HasJourneys() || s.Grouped() {
		return
	}
	if len(s.Actions) > 0 {
		return // refused by validateJourneys
	}
	s.Actions = s.journeyActions(s.Journeys, "journeys")
}

// journeyActions gives the journeys of a list at path ("journeys",
// "groups[1].journeys") and their steps their defaults and returns the
// steps as actions, in order.
func (s *Scenario) journeyActions(journeys []Journey, path string) []Action {
	var out []Action
	for j := range journeys {
		jr := &journeys[j]
		jp := fmt.Sprintf("%s[%d]", path, j)
		if jr.Name == "" {
			jr.Name = fmt.Sprintf("journey%d", j+1)
		}
		if _, ok := s.pos[jp+".weight"]; !ok {
			jr.Weight = 1
		}
		for k := range jr.Steps {
			st := &jr.Steps[k]
			sp := fmt.Sprintf("%s.steps[%d]", jp, k)
			if st.Name == "" {
				st.Name = fmt.Sprintf("%s.%d", jr.Name, k+1)
			}
			if st.Repeat == 0 && !s.Has(sp+".repeat") {
				st.Repeat = 1
			}
			if st.Max == 0 && !s.Has(sp+".max") {
				st.Max = DefaultMaxRounds
			}
			params := st.Params
			if params.node == nil {
				params = Node{src: st.Node.src, path: sp}
			} else {
				params.path = sp
			}
			node := st.Node
			node.path = sp
			out = append(out, Action{
				Name: st.Name, Weight: 1, Params: params, path: sp,
				Journey: jr.Name, Think: st.Think, Repeat: st.Repeat, While: st.While, MaxRounds: st.Max,
				Node: node,
			})
		}
	}
	return out
}

// validateJourneys checks the journeys and what they exclude.
func (s *Scenario) validateJourneys() []error {
	if !s.HasJourneys() {
		return nil
	}
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, s.Errorf(path, format, args...))
	}
	if _, ok := s.pos["actions"]; ok {
		bad("actions", "give actions (a weighted mix) or journeys (ordered steps), not both")
	}
	if s.Grouped() {
		// Each group's journeys were checked with the group
		// (validateGroups); their names are unique across groups.
		names := map[string]string{}
		for g, gr := range s.Groups {
			for j, jr := range gr.Journeys {
				jp := fmt.Sprintf("groups[%d].journeys[%d]", g, j)
				if other, dup := names[jr.Name]; dup {
					bad(jp+".name", "journey name %q is already used by %s", jr.Name, other)
				}
				names[jr.Name] = jp
			}
		}
		return errs
	}
	if s.Model == Open && !s.Has("open.rate") {
		bad("model", "journeys in the open model arrive at open.rate, each arrival one journey: give open.rate (per-user rates are for actions)")
	}
	return append(errs, s.validateJourneyList(s.Journeys, "journeys")...)
}

// validateJourneyList checks a list of journeys at path ("journeys",
// "groups[1].journeys"): names unique in the list, weights, steps.
func (s *Scenario) validateJourneyList(journeys []Journey, path string) []error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, s.Errorf(path, format, args...))
	}
	names := map[string]string{}
	total := 0.0
	for j, jr := range journeys {
		jp := fmt.Sprintf("%s[%d]", path, j)
		if other, dup := names[jr.Name]; dup && !s.Grouped() {
			bad(jp+".name", "journey name %q is already used by %s", jr.Name, other)
		}
		names[jr.Name] = jp
		if !(jr.Weight >= 0) || !finite(jr.Weight) {
			bad(jp+".weight", "weight must be a number, not negative")
		} else {
			total += jr.Weight
		}
		if len(jr.Steps) == 0 {
			bad(jp+".steps", "journey %q has no steps", jr.Name)
		}
		for k, st := range jr.Steps {
			sp := fmt.Sprintf("%s.steps[%d]", jp, k)
			if st.Think < 0 {
				bad(sp+".think", "think must not be negative")
			} else if st.Think > MaxLength {
				bad(sp+".think", "%s is longer than throng can time (at most %s, 100 years)", st.Think, MaxLength)
			}
			if st.Repeat < 1 || st.Repeat > MaxRepeat {
				bad(sp+".repeat", "repeat %d is not between 1 and %d", st.Repeat, MaxRepeat)
			}
			if st.While != "" && s.Has(sp+".repeat") {
				bad(sp+".while", "give repeat (a count) or while (a condition), not both")
			}
			if s.Has(sp+".while") && st.While == "" {
				bad(sp+".while", "while needs a condition, like '{{ .next }}'")
			}
			if s.Has(sp+".max") && st.While == "" {
				bad(sp+".max", "max bounds a while step: give while too")
			}
			if st.Max < 1 || st.Max > MaxRepeat {
				bad(sp+".max", "max %d is not between 1 and %d", st.Max, MaxRepeat)
			}
		}
	}
	if total == 0 && len(journeys) > 0 && len(errs) == 0 {
		bad(path, "every journey has weight 0: none would ever be picked")
	}
	return errs
}
