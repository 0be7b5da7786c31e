// Package compare holds the pure statistics of throng: trimmed means,
// medians and spreads across repetitions, and (later) A/B comparisons.
package compare

import (
	"math"
	"slices"
	"sort"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/stats"
)

// TrimmedMean returns the mean of values after dropping the trim smallest and
// the trim largest. It returns NaN when nothing is left (stats.Trimmed, which
// compare's rows use, lowers the trim instead).
func TrimmedMean(values []float64, trim int) float64 {
	if trim < 0 || 2*trim >= len(values) {
		return math.NaN()
	}
	m, _ := stats.Trimmed(values, trim)
	return m
}

// Median returns the median of values (NaN when empty).
func Median(values []float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	s := slices.Clone(values)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// measures are the figures aggregated across repetitions, per phase.
var measures = []struct {
	name string
	get  func(r *result.Repetition, s *result.Summary) float64
}{
	{"elapsed_s", func(r *result.Repetition, s *result.Summary) float64 { return s.DurationS }},
	{"rate_per_s", func(_ *result.Repetition, s *result.Summary) float64 { return s.Total.RatePerS }},
	{"ok_per_s", func(_ *result.Repetition, s *result.Summary) float64 { return s.Total.OKPerS }},
	{"error_rate", func(_ *result.Repetition, s *result.Summary) float64 { return s.Total.ErrorRate }},
	{"latency_mean_ms", func(_ *result.Repetition, s *result.Summary) float64 { return s.Total.Latency.MeanMs }},
	{"latency_p50_ms", func(_ *result.Repetition, s *result.Summary) float64 { return s.Total.Latency.P50Ms }},
	{"latency_p95_ms", func(_ *result.Repetition, s *result.Summary) float64 { return s.Total.Latency.P95Ms }},
	{"latency_p99_ms", func(_ *result.Repetition, s *result.Summary) float64 { return s.Total.Latency.P99Ms }},
	{"client_cpu_cores", func(_ *result.Repetition, s *result.Summary) float64 { return s.ClientCPUMean }},
}

// Aggregate summarizes repetitions: the runs are ranked from fastest to
// slowest (by elapsed time when countBound, else by the rate of the steady
// state), trim are dropped at each end, and every measure of every phase is
// averaged over the same kept runs, as the SMB study does ("5 runs, drop the
// fastest and the slowest, mean of the middle 3").
func Aggregate(reps []result.Repetition, trim int, countBound bool) *result.Aggregate {
	if len(reps) < 2 {
		return nil
	}
	agg := &result.Aggregate{Trim: trim, RankedBy: "rate_per_s"}
	if countBound {
		agg.RankedBy = "elapsed_s"
	}
	rank := make([]int, len(reps))
	key := make([]float64, len(reps))
	for i := range reps {
		rank[i] = i
		s := result.Find(reps[i].Summaries, "steady")
		if s == nil || countBound {
			s = result.Find(reps[i].Summaries, result.All)
		}
		if s == nil {
			continue
		}
		if countBound {
			key[i] = s.DurationS // shorter is faster
		} else {
			key[i] = -s.Total.RatePerS // higher is faster
		}
	}
	sort.SliceStable(rank, func(a, b int) bool { return key[rank[a]] < key[rank[b]] })
	if trim < 0 || 2*trim >= len(reps) {
		trim = 0
	}
	kept := slices.Clone(rank[trim : len(rank)-trim])
	sort.Ints(kept)
	agg.Kept = kept
	agg.Trim = trim

	var phases []string
	for _, r := range reps {
		for _, s := range r.Summaries {
			if !slices.Contains(phases, s.Phase) {
				phases = append(phases, s.Phase)
			}
		}
	}
	for _, ph := range phases {
		ap := result.AggregatePhase{Phase: ph}
		for _, m := range measures {
			me := result.Measure{Name: m.name}
			var keptVals []float64
			for i := range reps {
				v := math.NaN()
				if s := result.Find(reps[i].Summaries, ph); s != nil {
					v = m.get(&reps[i], s)
				}
				me.Values = append(me.Values, result.Num(v))
				if slices.Contains(kept, i) && !math.IsNaN(v) {
					keptVals = append(keptVals, v)
				}
			}
			me.TrimmedMean = result.Num(mean(keptVals))
			present := dropNaN(me.Values)
			me.Median = result.Num(Median(present))
			me.Min, me.Max = result.Num(math.NaN()), result.Num(math.NaN())
			if len(present) > 0 {
				me.Min, me.Max = result.Num(slices.Min(present)), result.Num(slices.Max(present))
			}
			ap.Measures = append(ap.Measures, me)
		}
		agg.Phases = append(agg.Phases, ap)
	}
	return agg
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func dropNaN(v []result.Num) []float64 {
	var out []float64
	for _, x := range v {
		if !math.IsNaN(float64(x)) {
			out = append(out, float64(x))
		}
	}
	return out
}
