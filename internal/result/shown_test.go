package result

import "testing"

// An outcome shows its phase once: the phase judged, then the threshold's
// expression, whatever phases it was written with; a result written
// before the expression was kept shows the same.
func TestThresholdOutcomeShowsItsPhaseOnce(t *testing.T) {
	for _, c := range []struct {
		o    ThresholdOutcome
		want string
	}{
		{ThresholdOutcome{Threshold: "p95 < 500ms", Expr: "p95 < 500ms", Phase: "steady"}, "steady: p95 < 500ms"},
		{ThresholdOutcome{Threshold: "ramp-up,steady: p95 < 1s", Expr: "p95 < 1s", Phase: "ramp-up"}, "ramp-up: p95 < 1s"},
		{ThresholdOutcome{Threshold: "all: corrupt == 0", Expr: "corrupt == 0", Phase: "all", Default: true}, "all: corrupt == 0 (default)"},
		{ThresholdOutcome{Threshold: "all: corrupt == 0", Phase: "all", Default: true}, "all: corrupt == 0 (default)"},
		{ThresholdOutcome{Threshold: "p99 < 1ms", Phase: "steady"}, "steady: p99 < 1ms"},
	} {
		if got := c.o.Shown(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.o, got, c.want)
		}
	}
}
