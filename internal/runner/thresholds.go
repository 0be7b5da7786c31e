package runner

import (
	"fmt"

	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/threshold"
)

// parseThresholds reads the scenario's thresholds (the settings' among
// them), each problem positioned like the file's other errors. events are
// the family's event actions: thresholds may name them (deliver.p99).
func parseThresholds(s *scenario.Scenario, events []string) ([]threshold.Threshold, []error) {
	var out []threshold.Threshold
	var errs []error
	var names []string
	for _, a := range s.Actions {
		names = append(names, a.Name)
	}
	names = append(names, events...)
	for i, text := range s.Thresholds {
		path := fmt.Sprintf("thresholds[%d]", i)
		t, err := threshold.Parse(text)
		if err == nil {
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
