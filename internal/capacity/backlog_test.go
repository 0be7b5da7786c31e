package capacity

import (
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/threshold"
)

// A step judged on loss == 0 whose deliveries' latency climbs through it
// (a queue growing: 1 s to 10 s) is a load not sustained, though nothing
// was lost in it; the same climb without a loss SLO, a flat delivery
// latency, or a small rise (1,000 to 1,090 ms: significant, but not a
// queue growing) leave the step valid.
func TestFromRunGrowingBacklogUnderALossSLO(t *testing.T) {
	req := Request{Kind: Bisect, Load: 10, Duration: 10 * time.Second}
	mk := func(deliver func(i int) float64) *result.Run {
		var ivs []result.Interval
		for i := range 10 {
			ivs = append(ivs, result.Interval{Phase: "steady", Actions: []result.ActionInterval{acts(200, 10), acts(100, deliver(i))}})
		}
		return mkRun("closed", []string{"send", "deliver"}, 1, ivs)
	}
	for _, c := range []struct {
		name    string
		slos    []string
		deliver func(i int) float64
		backlog bool
	}{
		{"climbing, loss judged", []string{"p95 < 1s", "loss == 0"}, func(i int) float64 { return 1000 + 1000*float64(i) }, true},
		{"climbing, loss not judged", []string{"p95 < 1s"}, func(i int) float64 { return 1000 + 1000*float64(i) }, false},
		{"flat", []string{"p95 < 1s", "loss == 0"}, func(i int) float64 { return 1000 + 100*float64(i%2) }, false},
		{"a small rise", []string{"p95 < 1s", "loss == 0"}, func(i int) float64 { return 1000 + 10*float64(i) }, false},
	} {
		var slos []threshold.Threshold
		for _, s := range c.slos {
			slos = append(slos, mustSLO(t, s))
		}
		cfg := Config{SLOs: slos, Dimension: Users, Min: 1, Max: 100}
		st := FromRun(cfg, req, mk(c.deliver), time.Second)
		got := st.has(Unsteady)
		if got != c.backlog {
			t.Errorf("%s: unsteady %v (invalid %v), want %v", c.name, got, st.Invalid, c.backlog)
		}
		if got && !st.Invalid[0].Rising {
			t.Errorf("%s: a growing backlog not counted as rising: %v", c.name, st.Invalid)
		}
		if f := st.SLOs[len(st.SLOs)-1]; c.slos[len(c.slos)-1] == "loss == 0" && f.Value != 0 {
			t.Errorf("%s: loss figure %v, want 0: the step lost nothing", c.name, f.Value)
		}
	}
}
