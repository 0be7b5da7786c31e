package compare

import (
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/result"
)

// noContradiction fails the test on the first comparison whose verdicts
// and intervals disagree.
func noContradiction(t *testing.T, c *Comparison) {
	t.Helper()
	if bad := c.Disagreements(); len(bad) > 0 {
		t.Fatalf("%d rows contradict their interval:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

// The check itself: an interval that holds 0 under a call, or excludes
// it under no difference, is found.
func TestContradictionsFound(t *testing.T) {
	row := func(v Verdict, lo, hi float64) *Comparison {
		return &Comparison{CILevel: 0.95, Rows: []Row{{ID: "x", Unit: "ms", Values: []Cell{{Value: 10}, {Value: 12}},
			Diffs: []Diff{{}, {Verdict: v, D: 2, Lo: result.Num(lo), Hi: result.Num(hi), P: 0.01}}}}}
	}
	for _, tt := range []struct {
		v      Verdict
		lo, hi float64
		bad    bool
	}{{Worse, 0.5, 3.5, false}, {Worse, -0.5, 3.5, true}, {Same, -0.5, 3.5, false}, {Same, 0.5, 3.5, true}, {Same, 0, 3.5, false}} {
		if got := len(row(tt.v, tt.lo, tt.hi).Disagreements()) > 0; got != tt.bad {
			t.Errorf("%s %v … %v: contradiction %v", tt.v, tt.lo, tt.hi, got)
		}
	}
}
