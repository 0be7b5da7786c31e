package runner

import (
	"fmt"
	"strings"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/threshold"
)

// parseThresholds reads the scenario's thresholds (the settings' among
// them), each problem positioned like the file's other errors. events are
// the family's event actions: thresholds may name them (deliver.p99).
// A threshold on a row known only once the driver's block is decoded (a
// web check) is checked later, by checkJourneys.
func parseThresholds(s *scenario.Scenario, events []string) ([]threshold.Threshold, []error) {
	var out []threshold.Threshold
	var errs []error
	names := rowNames(s)
	names = append(names, events...)
	for i, text := range s.Thresholds {
		path := fmt.Sprintf("thresholds[%d]", i)
		t, err := threshold.Parse(text)
		if err == nil && !deferredAction(t.Action) {
			err = t.CheckAction(names)
		}
		if err != nil {
			errs = append(errs, s.Errorf(path, "%v", err))
			continue
		}
		out = append(out, t)
	}
	return out, errs
}

// rowNames are the rows a scenario's thresholds may name before its
// driver's block is decoded: its actions and its journeys.
func rowNames(s *scenario.Scenario) []string {
	var names []string
	for _, a := range s.Actions {
		names = append(names, a.Name)
	}
	for _, j := range s.Journeys {
		names = append(names, scenario.JourneyPrefix+j.Name)
	}
	return names
}

// checkJourneys checks, once the driver's block is decoded and its actions
// compiled, what depends on both: a scenario with journeys needs a family
// that runs them; a data set must be long enough for the plan
// (driver.PlanChecker); a threshold on a driver's event row (check:NAME)
// must name one.
func checkJourneys(s *scenario.Scenario, drv driver.Config, ths []threshold.Threshold) []error {
	var errs []error
	if _, ok := drv.(driver.Journeys); s.HasJourneys() && !ok {
		errs = append(errs, s.Errorf("journeys", "the %s family does not run journeys: give actions", s.Driver))
	}
	if pc, ok := drv.(driver.PlanChecker); ok {
		errs = append(errs, placeErrors(s, pc.CheckPlan(s.Users, s.Closed.Iterations))...)
	}
	names := rowNames(s)
	if ev, ok := drv.(driver.Events); ok {
		names = append(names, ev.EventActions()...)
	}
	for i, t := range ths {
		if t.Default || !deferredAction(t.Action) {
			continue
		}
		if err := t.CheckAction(names); err != nil {
			errs = append(errs, s.Errorf(fmt.Sprintf("thresholds[%d]", i), "%v", err))
		}
	}
	return errs
}

// deferredAction reports whether a threshold's action is a row known only
// once the driver's block is decoded (a web check: "check:NAME").
func deferredAction(action string) bool {
	return strings.HasPrefix(action, "check:")
}
