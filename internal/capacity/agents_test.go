package capacity_test

import (
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/agent"
	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/threshold"
)

// segmentRun is segment seg's run: 10 steady 1-second intervals of 200
// actions at 20 ms, the first bound of them client-bound.
func segmentRun(seg string, bound int) *result.Run {
	var ivs []result.Interval
	for i := range 10 {
		var a result.ActionInterval
		for range 200 {
			a.Latency.Record(20_000)
			a.Service.Record(20_000)
		}
		a.Count = 200
		iv := result.Interval{Index: i, StartS: float64(i), DurationS: 1, Phase: "steady", ActiveUsers: 10, UsersMean: 10,
			Actions: []result.ActionInterval{a}, Client: result.Client{CPUCores: 0.5, Capacity: 2}}
		if i < bound {
			iv.Client.Bound, iv.Client.BoundWhy = true, "generator CPU 95% of 2 cores"
		}
		ivs = append(ivs, iv)
	}
	names := []string{"get"}
	start := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	return &result.Run{Schema: result.Schema, Meta: result.Meta{Scenario: "s", Actions: names, Segment: seg, IntervalS: 1, StartedAt: start},
		Repetitions: []result.Repetition{{StartedAt: start, ElapsedS: 10, Intervals: ivs, Summaries: result.Summarize(names, 0, ivs)}}}
}

// A step run over two agents, merged, is generator-bound when one agent's
// generator was the bottleneck, though the other's was not, and says
// which agent; its counts are the two agents' together.
func TestFromRunGeneratorBoundPerAgent(t *testing.T) {
	slo, err := threshold.Parse("p99 < 50ms")
	if err != nil {
		t.Fatal(err)
	}
	cfg := capacity.Config{SLOs: []threshold.Threshold{slo}, Dimension: capacity.Rate, Min: 1, Max: 1000}
	req := capacity.Request{Kind: capacity.Bisect, Load: 400, Duration: 10 * time.Second}
	for _, c := range []struct {
		bound      int
		generator  bool
		agentNamed string
	}{{0, false, ""}, {3, true, "agent gen2:7070 (segment 2/2) in 3 intervals"}} {
		run, err := agent.Merge([]agent.Part{{Name: "gen1:7070", Run: segmentRun("1/2", 0)}, {Name: "gen2:7070", Run: segmentRun("2/2", c.bound)}})
		if err != nil {
			t.Fatal(err)
		}
		st := capacity.FromRun(cfg, req, run, 12*time.Second)
		if st.Count != 4000 {
			t.Errorf("agent 2 bound %d: %d actions, want the two agents' 2,000 each", c.bound, st.Count)
		}
		var why string
		for _, iv := range st.Invalid {
			if iv.Kind == capacity.GeneratorBound {
				why = iv.Why
			}
		}
		switch {
		case !c.generator && why != "":
			t.Errorf("no agent bound, yet generator-bound: %s", why)
		case c.generator && why == "":
			t.Errorf("agent 2 bound in %d intervals, the step is not generator-bound: %v", c.bound, st.Invalid)
		case c.generator && !strings.Contains(why, c.agentNamed):
			t.Errorf("the step's reason does not name the agent (%q): %s", c.agentNamed, why)
		}
	}
}
