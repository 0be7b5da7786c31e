package capacity

import (
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/threshold"
)

// run makes a one-action run of 1-second steady intervals, the i-th with
// n actions of latency lat(i) ms each.
func fakeRun(intervals, n int, lat func(i int) float64, bound int) *result.Run {
	var ivs []result.Interval
	for i := range intervals {
		var a result.ActionInterval
		for range n {
			a.Latency.Record(uint64(lat(i) * 1000))
			a.Service.Record(uint64(lat(i) * 1000))
		}
		a.Count = uint64(n)
		iv := result.Interval{Index: i, StartS: float64(i), DurationS: 1, Phase: "steady", ActiveUsers: 10, UsersMean: 10,
			Actions: []result.ActionInterval{a}, Client: result.Client{CPUCores: 0.5, Capacity: 2}}
		if i < bound {
			iv.Client.Bound, iv.Client.BoundWhy = true, "generator CPU 90% of 2 cores"
		}
		ivs = append(ivs, iv)
	}
	names := []string{"get"}
	return &result.Run{Meta: result.Meta{Actions: names}, Repetitions: []result.Repetition{{
		Intervals: ivs, Summaries: result.Summarize(names, 0, ivs)}}}
}

func TestFromRun(t *testing.T) {
	cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p99 < 50ms"), mustSLO(t, "errors == 0")}, Dimension: Rate, Min: 1, Max: 10}
	req := Request{Kind: Bisect, Load: 100, Duration: 10 * time.Second}
	// Steady: alternating 20 and 22 ms, 200 actions a second.
	st := FromRun(cfg, req, fakeRun(10, 200, func(i int) float64 { return 20 + 2*float64(i%2) }, 0), 12*time.Second)
	if !st.Valid() {
		t.Fatalf("a steady step is invalid: %v", st.Invalid)
	}
	if f := st.SLOs[0]; f.Value < 21.9 || f.Value > 22.1 || !(f.HalfWidth > 0) || f.HalfWidth > 2 {
		t.Errorf("p99 figure %+v, want 22 ms with a small positive half-width", f)
	}
	if f := st.SLOs[1]; f.Value != 0 || f.HalfWidth != 0 {
		t.Errorf("errors figure %+v, want an exact 0", f)
	}
	if st.Throughput != 200 || st.Offered != 100 || st.Elapsed != 12*time.Second || st.Counters.GeneratorCPU != 0.25 {
		t.Errorf("throughput %g offered %g elapsed %s generator %g", st.Throughput, st.Offered, st.Elapsed, st.Counters.GeneratorCPU)
	}
	// Client-bound intervals make the step invalid.
	st = FromRun(cfg, req, fakeRun(10, 200, func(int) float64 { return 20 }, 2), time.Second)
	if !st.has(GeneratorBound) {
		t.Errorf("2 client-bound intervals: invalid %v, want generator-bound", st.Invalid)
	}
	// Too few actions for a p99: 10 × 50 = 500 < 1,000.
	st = FromRun(cfg, req, fakeRun(10, 50, func(int) float64 { return 20 }, 0), time.Second)
	if !st.has(FewSamples) {
		t.Errorf("500 actions for a p99: invalid %v, want few samples", st.Invalid)
	}
	// A latency that climbs through the step: unsteady, rising.
	st = FromRun(cfg, req, fakeRun(10, 200, func(i int) float64 { return 20 + 10*float64(i) }, 0), time.Second)
	if !st.has(Unsteady) || !st.Invalid[0].Rising {
		t.Errorf("a climbing p99: invalid %v, want unsteady and rising", st.Invalid)
	}
	// Nothing recorded: partial, figures missing.
	st = FromRun(cfg, req, &result.Run{}, time.Second)
	if !st.has(Partial) || len(st.SLOs) != 2 {
		t.Errorf("an empty run: %+v", st)
	}
}
