package compare

import (
	"math"
	"testing"

	"github.com/throng-io/throng/internal/result"
)

func TestTrimmedMeanAndMedian(t *testing.T) {
	// The SMB study's SMB 3.0 runs (docs/studies.md), in seconds: 4:29, 5:17, 6:48, 7:03, 7:32.
	runs := []float64{452, 317, 408, 423, 269}
	// Drop the fastest and the slowest: mean of 317, 408, 423 = 382.67 s
	// (the study prints 6:23 = 383 s).
	if got := TrimmedMean(runs, 1); math.Abs(got-382.667) > 0.01 {
		t.Errorf("TrimmedMean = %v, want 382.67", got)
	}
	if got := TrimmedMean(runs, 0); math.Abs(got-373.8) > 1e-9 {
		t.Errorf("TrimmedMean(trim 0) = %v", got)
	}
	if !math.IsNaN(TrimmedMean(runs, 3)) || !math.IsNaN(Median(nil)) {
		t.Error("nothing left should give NaN")
	}
	if Median(runs) != 408 || Median([]float64{1, 2, 3, 10}) != 2.5 {
		t.Errorf("Median = %v", Median(runs))
	}
	if runs[0] != 452 {
		t.Error("TrimmedMean sorted its argument in place")
	}
}

// Repetitions are ranked by speed and the same kept runs give every measure.
func TestAggregateKeepsTheSameRuns(t *testing.T) {
	mk := func(elapsed, p99 float64) result.Repetition {
		return result.Repetition{Summaries: []result.Summary{{
			Phase: result.All, DurationS: elapsed,
			Total: result.ActionSummary{RatePerS: 1000 / elapsed, Latency: result.Latency{P99Ms: p99}},
		}}}
	}
	reps := []result.Repetition{mk(10, 5), mk(7, 50), mk(12, 1), mk(9, 3), mk(8, 4)}
	agg := Aggregate(reps, 1, true)
	// Fastest run (7 s) and slowest (12 s) are dropped: runs 0, 3, 4 remain.
	if agg.RankedBy != "elapsed_s" || len(agg.Kept) != 3 || agg.Kept[0] != 0 || agg.Kept[1] != 3 || agg.Kept[2] != 4 {
		t.Fatalf("kept %v ranked by %s", agg.Kept, agg.RankedBy)
	}
	m := map[string]result.Measure{}
	for _, me := range agg.Phases[0].Measures {
		m[me.Name] = me
	}
	if got := float64(m["elapsed_s"].TrimmedMean); got != 9 {
		t.Errorf("elapsed trimmed mean %v, want 9", got)
	}
	// p99 of the kept runs 5, 3, 4: mean 4 — not the middle three p99s.
	if got := float64(m["latency_p99_ms"].TrimmedMean); got != 4 {
		t.Errorf("p99 trimmed mean %v, want 4 (same runs as elapsed)", got)
	}
	if m["latency_p99_ms"].Max != 50 || m["latency_p99_ms"].Min != 1 || m["latency_p99_ms"].Median != 4 {
		t.Errorf("p99 spread %+v", m["latency_p99_ms"])
	}
	if Aggregate(reps[:1], 0, true) != nil {
		t.Error("one repetition has no aggregate")
	}
}
