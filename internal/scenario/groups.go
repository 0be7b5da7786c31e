package scenario

import (
	"fmt"
)

// Group is one kind of user in a scenario with several (the iPush study: 5
// publishers and 3,000 subscribers). Each group has its own users, model and
// actions; the phases are shared. A group without actions is passive: its
// users log on (the driver's Open: connect, subscribe) and stay until they
// leave. A scenario with groups gives no top-level users, model or actions.
type Group struct {
	Name   string      `yaml:"name"`   // required, unique
	Users  int         `yaml:"users"`  // users in this group
	Model  string      `yaml:"model"`  // "closed" (default) or "open" (per-action rates)
	Closed ClosedModel `yaml:"closed"` // as at the top level
	Open   OpenModel   `yaml:"open"`   // as at the top level; no aggregate rate in a group
	// Start delays the group's first logon from the run's start (publishers
	// that start once the subscribers are connected).
	Start Duration `yaml:"start"`
	// RampUp is the group's own logon ramp (default: phases.ramp_up).
	RampUp  *RampUp  `yaml:"ramp_up"`
	Actions []Action `yaml:"actions"`
	// Journeys are the group's ordered flows (see Journey), instead of
	// actions: each iteration of its users is one of them, picked by
	// weight. Closed model only. Once loaded, Actions are their steps.
	Journeys []Journey `yaml:"journeys"`
}

// GroupView is one group as the plan sees it: a scenario without groups is
// one view of its top-level settings. Paths locate the settings in the
// file, for messages.
type GroupView struct {
	Name    string
	Users   int
	Model   string
	Closed  ClosedModel
	Open    OpenModel
	Start   Duration
	RampUp  RampUp
	First   int // index in Scenario.Actions of the group's first action
	Actions []Action
	prefix  string // "" or "groups[2]."
}

// Prefix is the key path of the group's keys: "" without groups, else
// like "groups[2].".
func (v GroupView) Prefix() string { return v.prefix }

// Grouped reports whether the scenario has a groups list.
func (s *Scenario) Grouped() bool { return len(s.Groups) > 0 }

// Views returns the scenario's groups (one for a scenario without groups).
func (s *Scenario) Views() []GroupView {
	if !s.Grouped() {
		return []GroupView{{Name: "users", Users: s.Users, Model: s.Model, Closed: s.Closed, Open: s.Open,
			RampUp: s.Phases.RampUp, Actions: s.Actions}}
	}
	var out []GroupView
	first := 0
	for i, g := range s.Groups {
		v := GroupView{Name: g.Name, Users: g.Users, Model: g.Model, Closed: g.Closed, Open: g.Open,
			Start: g.Start, RampUp: s.Phases.RampUp, First: first, Actions: g.Actions, prefix: fmt.Sprintf("groups[%d].", i)}
		if g.RampUp != nil {
			v.RampUp = *g.RampUp
		}
		first += len(g.Actions)
		out = append(out, v)
	}
	return out
}

// normalizeGroups fills each group's defaults and gathers every group's
// actions into Scenario.Actions (Action.Group says whose), and the users
// into Scenario.Users, so the rest of throng sees one list of each.
func (s *Scenario) normalizeGroups() {
	if !s.Grouped() {
		return
	}
	s.Actions = nil
	s.Users = 0
	for gi := range s.Groups {
		g := &s.Groups[gi]
		prefix := fmt.Sprintf("groups[%d].", gi)
		if g.Model == "" {
			g.Model = Closed
		}
		if g.Closed.ThinkDistribution == "" {
			g.Closed.ThinkDistribution = Fixed
		}
		if g.Open.Arrivals == "" {
			g.Open.Arrivals = Poisson
		}
		if !s.Has(prefix + "open.max_delay") {
			g.Open.MaxDelay = DefaultMaxDelay
		}
		if g.Name == "" {
			g.Name = fmt.Sprintf("group%d", gi+1)
		}
		if len(g.Journeys) > 0 && len(g.Actions) == 0 {
			// Its steps are its actions; the scenario's journeys are every
			// group's, in order.
			g.Actions = s.journeyActions(g.Journeys, prefix+"journeys")
			s.Journeys = append(s.Journeys, g.Journeys...)
		} else {
			s.defaultActions(g.Actions, prefix+"actions")
		}
		for i := range g.Actions {
			g.Actions[i].Group = g.Name
		}
		s.Actions = append(s.Actions, g.Actions...)
		s.Users += g.Users
	}
}

// validateGroups checks what is particular to scenarios with groups.
func (s *Scenario) validateGroups() []error {
	var errs []error
	if !s.Grouped() {
		return nil
	}
	for _, key := range []string{"users", "model", "closed", "open", "actions", "journeys"} {
		if _, inFile := s.pos[key]; inFile {
			errs = append(errs, s.Errorf(key, "with groups, %s belongs in each group", key))
		}
	}
	if s.Phases.Steady == 0 {
		errs = append(errs, s.Errorf("phases.steady", "a scenario with groups needs a steady state duration (phases.steady)"))
	}
	names := map[string]int{}
	for i, g := range s.Groups {
		p := fmt.Sprintf("groups[%d].", i)
		if j, dup := names[g.Name]; dup {
			errs = append(errs, s.Errorf(p+"name", "group name %q is already used by groups[%d]", g.Name, j))
		}
		names[g.Name] = i
		if g.Users < 1 {
			errs = append(errs, s.Errorf(p+"users", "users is %d: a group needs at least 1 user", g.Users))
		}
		if g.Start < 0 {
			errs = append(errs, s.Errorf(p+"start", "start must not be negative"))
		}
		if g.Model == Open && g.Open.Rate.PerSecond > 0 {
			errs = append(errs, s.Errorf(p+"open.rate", "a group's open model takes per-action rates (actions[].rate), not an aggregate rate"))
		}
		if len(g.Journeys) > 0 {
			if s.Has(p + "actions") {
				errs = append(errs, s.Errorf(p+"journeys", "give a group actions (a weighted mix) or journeys (ordered steps), not both"))
			}
			if g.Model != Closed {
				errs = append(errs, s.Errorf(p+"model", "a group's journeys run in the closed model (journeys arrive at an aggregate open.rate, which a group does not take)"))
			}
			errs = append(errs, s.validateJourneyList(g.Journeys, p+"journeys")...)
		}
		if g.Model == Closed && g.Closed.Iterations > 0 && len(g.Journeys) == 0 {
			errs = append(errs, s.Errorf(p+"closed.iterations", "a group of actions runs for the phases; iterations belong to scenarios without groups, or to a group's journeys"))
		}
		if g.Model == Closed && g.Closed.Total > 0 {
			errs = append(errs, s.Errorf(p+"closed.total", "a group runs for the phases; total belongs to scenarios without groups"))
		}
	}
	return errs
}
