package result

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/stats"
)

// Validity says whether a repetition's figures can be trusted, and why
// not: the checks of Lancet (Kogias et al., USENIX ATC 2019) on its
// measured phase (steady, or the whole repetition when it has none).
//
//   - complete:  the repetition finished its plan (not cut short);
//   - generator: no interval of the phase was client-bound (the load
//     generator was not the bottleneck);
//   - steady:    no trend in throughput nor in latency p50 across the phase:
//     a Mann–Kendall test on batch means (p < 0.05) of a change of
//     SteadyChange or more from the first batch to the last (Sen's slope);
//   - p99:       the phase's p99 is known to within P99Within (relative
//     half-width of its 95 % confidence interval from batch p99s);
//   - schedule:  open model: the generator's scheduling lag (the highest
//     interval p99) is at most the mean time between arrivals; a closed
//     model has no schedule to lag (n/a);
//   - counters:  every counter source answered in every interval.
//
// Batches: the phase's usable intervals (at least half the recording
// interval long) are cut into k consecutive batches, k = min(20, n); while
// k ≥ 10 and the batch throughputs or p99s have a lag-1 autocorrelation
// above 1.645/√k, batches are doubled in length. Fewer than MinBatches
// intervals: steadiness and the p99's interval are unknown (too short).
// Valid is true when no check failed and none is unknown.
type Validity struct {
	Valid  bool    `json:"valid"`
	Phase  string  `json:"phase"`
	Checks []Check `json:"checks"`
	// The p99 of the phase (ms) and the half-width of its 95 % confidence
	// interval (NaN/null when unknown), from Batches batches.
	P99Ms     Num `json:"p99_ms"`
	P99HalfMs Num `json:"p99_ci_half_ms"`
	Batches   int `json:"batches"`
}

// Check is one condition of a Validity.
type Check struct {
	Name    string `json:"name"`   // complete, generator, steady, p99, schedule, counters
	Status  string `json:"status"` // pass, fail, unknown, n/a
	Message string `json:"message"`
}

// Check statuses.
const (
	Pass    = "pass"
	Fail    = "fail"
	Unknown = "unknown"
	NA      = "n/a"
)

// Limits of the validity checks.
const (
	MinBatches   = 5
	MaxBatches   = 20
	SteadyChange = 0.05 // 5 % from the first batch to the last
	P99Within    = 0.10 // ±10 %
	MinP99Count  = 200  // timed actions per batch for a batch p99
	trendAlpha   = 0.05
)

// MeasuredPhase is the phase a repetition's verdicts are about: steady when
// it has one with intervals, else all.
func MeasuredPhase(rep *Repetition) string {
	if s := Find(rep.Summaries, "steady"); s != nil && s.Intervals > 0 {
		return "steady"
	}
	return All
}

// ValidityOf returns the repetition's stored verdict, or computes it (a
// result written before verdicts, a journal).
func ValidityOf(m *Meta, rep *Repetition) *Validity {
	if rep.Validity != nil {
		return rep.Validity
	}
	return CheckValidity(m, rep)
}

// RunValid reports whether every repetition of the run is valid, with the
// (1-based) numbers of those that are not.
func RunValid(run *Run) (bool, []int) {
	var bad []int
	for i := range run.Repetitions {
		if !ValidityOf(&run.Meta, &run.Repetitions[i]).Valid {
			bad = append(bad, i+1)
		}
	}
	return len(bad) == 0 && len(run.Repetitions) > 0, bad
}

// CheckValidity computes a repetition's verdict from the intervals it
// holds and its summaries.
func CheckValidity(m *Meta, rep *Repetition) *Validity {
	return CheckValidityOf(m, rep, slices.Values(ptrs(rep.Intervals)))
}

// Intervals are a repetition's intervals in order. The verdict ranges over
// them a few times, so a sequence read back from a journal or a result file
// (SourceIntervals) is read again each time rather than held in memory.
type Intervals = iter.Seq[*Interval]

func ptrs(ivs []Interval) []*Interval {
	out := make([]*Interval, len(ivs))
	for i := range ivs {
		out[i] = &ivs[i]
	}
	return out
}

// SourceIntervals is the k-th repetition's intervals as a fresh source
// gives them, read anew at every range. A source that fails ends the
// sequence there (the result's taints say which intervals are missing).
func SourceIntervals(newSource func() Source, k int, rep *Repetition) Intervals {
	return func(yield func(*Interval) bool) {
		src := newSource()
		for {
			iv, err := src.Next(k, rep)
			if iv == nil || err != nil || !yield(iv) {
				return
			}
		}
	}
}

// CheckValidityOf computes a repetition's verdict from its summaries and
// its intervals, ranged over a few times and never held.
func CheckValidityOf(m *Meta, rep *Repetition, intervals Intervals) *Validity {
	ph := MeasuredPhase(rep)
	v := &Validity{Phase: ph, P99Ms: Num(math.NaN()), P99HalfMs: Num(math.NaN())}
	add := func(name, status, format string, args ...any) {
		v.Checks = append(v.Checks, Check{Name: name, Status: status, Message: fmt.Sprintf(format, args...)})
	}
	sum := Find(rep.Summaries, ph)
	if rep.Partial {
		add("complete", Fail, "the repetition was cut short: %s", strings.TrimSuffix(rep.Reason, "."))
	} else {
		add("complete", Pass, "the repetition finished its plan")
	}
	// The phase's intervals, and those long enough to be batched.
	minDur := 0.5 * m.IntervalS
	inPhase := func(iv *Interval) bool { return ph == All || iv.Phase == ph }
	usable := func(iv *Interval) bool { return inPhase(iv) && iv.DurationS > 0 && iv.DurationS >= minDur }
	all, n, bound, why, lag := 0, 0, 0, "", 0.0
	for iv := range intervals {
		if !inPhase(iv) {
			continue
		}
		all++
		if usable(iv) {
			n++
		}
		// The generator.
		if iv.Client.Bound {
			bound++
			if why == "" {
				why = iv.Client.BoundWhy
			}
		}
		lag = max(lag, iv.Client.LagP99Ms)
	}
	if bound > 0 {
		add("generator", Fail, "the load generator was the bottleneck in %d of %d intervals (%s): there the figures measure it, not the server", bound, all, why)
	} else {
		add("generator", Pass, "the load generator was not the bottleneck (0 of %d intervals client-bound)", all)
	}
	users := len(m.Actions) - len(m.Events)
	bs := batchUp(func(yield func(*Interval) bool) {
		for iv := range intervals {
			if usable(iv) && !yield(iv) {
				return
			}
		}
	}, n, users)
	v.Batches = len(bs)
	if sum != nil && sum.Total.Timed() > 0 {
		v.P99Ms = Num(sum.Total.Latency.P99Ms)
	}
	switch {
	case len(bs) < MinBatches:
		msg := fmt.Sprintf("too short to tell: %d usable interval%s, at least %d needed", n, map[bool]string{true: "", false: "s"}[n == 1], MinBatches)
		add("steady", Unknown, "%s", msg)
		add("p99", Unknown, "%s", msg)
	default:
		steady(v, bs, add)
		p99(v, bs, add)
	}
	schedule(m, ph, lag, sum, add)
	counters(sum, add)
	v.Valid = true
	for _, c := range v.Checks {
		if c.Status == Fail || c.Status == Unknown {
			v.Valid = false
		}
	}
	return v
}

// batch is a run of consecutive intervals merged: its throughput, its
// latency p50 and p99 (ms) and how many actions were timed.
type batch struct {
	rate, p50, p99 float64
	timed          uint64
}

// batchUp cuts the n usable intervals into batches (see Validity),
// ranging over them once per batch length tried.
func batchUp(ivs Intervals, n, users int) []batch {
	if n < MinBatches {
		return nil
	}
	make1 := func(k int) []batch {
		ranges := stats.Batches(n, k)
		out := make([]batch, 0, len(ranges))
		var h metrics.Hist
		var count uint64
		dur := 0.0
		b, i := 0, 0
		for iv := range ivs {
			if b == len(ranges) {
				break
			}
			dur += iv.DurationS
			for a := range iv.Actions {
				if a >= users {
					break
				}
				count += iv.Actions[a].Count
				h.Merge(&iv.Actions[a].Latency)
			}
			i++
			if i == ranges[b][1] {
				bt := batch{rate: float64(count) / dur, timed: h.N, p50: math.NaN(), p99: math.NaN()}
				if h.N > 0 {
					bt.p50, bt.p99 = float64(h.Quantile(0.5))/1000, float64(h.Quantile(0.99))/1000
				}
				out = append(out, bt)
				h, count, dur = metrics.Hist{}, 0, 0
				b++
			}
		}
		return out
	}
	k := min(MaxBatches, n)
	bs := make1(k)
	for k >= 2*MinBatches {
		lim := 1.645 / math.Sqrt(float64(k))
		if stats.Lag1(field(bs, func(b batch) float64 { return b.rate })) <= lim &&
			stats.Lag1(field(bs, func(b batch) float64 { return b.p99 })) <= lim {
			break
		}
		k /= 2
		bs = make1(k)
	}
	return bs
}

// field lists one figure of every batch, leaving out the missing ones.
func field(bs []batch, f func(batch) float64) []float64 {
	var out []float64
	for _, b := range bs {
		if x := f(b); !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}

func steady(v *Validity, bs []batch, add func(name, status, format string, args ...any)) {
	var drift []string
	var calm []string
	for _, s := range []struct {
		name string
		f    func(batch) float64
	}{{"throughput", func(b batch) float64 { return b.rate }}, {"latency p50", func(b batch) float64 { return b.p50 }}} {
		y := field(bs, s.f)
		if len(y) < MinBatches {
			calm = append(calm, s.name+" not measured")
			continue
		}
		t := stats.MannKendall(y)
		mid := median(y)
		change := 0.0
		if mid != 0 {
			change = t.Slope * float64(len(y)-1) / math.Abs(mid)
		}
		if t.P < trendAlpha && math.Abs(change) >= SteadyChange {
			drift = append(drift, fmt.Sprintf("%s %s %.0f%% across the phase (Mann–Kendall p=%.2g on %d batches)",
				s.name, map[bool]string{true: "rose", false: "fell"}[change > 0], 100*math.Abs(change), t.P, len(y)))
		} else {
			calm = append(calm, fmt.Sprintf("%s %+.1f%% (p=%.2g)", s.name, 100*change, t.P))
		}
	}
	if len(drift) > 0 {
		add("steady", Fail, "not steady: %s", strings.Join(drift, "; "))
		return
	}
	add("steady", Pass, "steady: no trend over %d batches (%s)", len(bs), strings.Join(calm, ", "))
}

func p99(v *Validity, bs []batch, add func(name, status, format string, args ...any)) {
	var y []float64
	fewest := uint64(math.MaxUint64)
	for _, b := range bs {
		fewest = min(fewest, b.timed)
		if !math.IsNaN(b.p99) {
			y = append(y, b.p99)
		}
	}
	if fewest < MinP99Count {
		add("p99", Unknown, "the p99 cannot be measured: a batch (of %d) holds %d timed actions, fewer than %d",
			len(bs), fewest, MinP99Count)
		return
	}
	half := stats.BatchCI(y, 0.95)
	v.P99HalfMs = Num(half)
	p := float64(v.P99Ms)
	rel := 0.0
	if p > 0 {
		rel = half / p
	}
	msg := fmt.Sprintf("p99 %.4g ms ± %.2g ms (±%.1f%%, 95%% CI from %d batch p99s)", p, half, 100*rel, len(y))
	if rel > P99Within {
		add("p99", Fail, "%s: known only to ±%.0f%%, more than ±%.0f%%; a longer phase would narrow it", msg, 100*rel, 100*P99Within)
		return
	}
	add("p99", Pass, "%s", msg)
}

// schedule judges the lag, the highest interval p99 of the phase.
func schedule(m *Meta, ph string, lag float64, sum *Summary, add func(name, status, format string, args ...any)) {
	open := m.Model == "open"
	for _, g := range m.Groups {
		open = open || g.Model == "open" && len(g.Actions) > 0
	}
	if !open {
		add("schedule", NA, "a closed model has no schedule to lag: each action starts when the last one ends (and is timed from then)")
		return
	}
	if sum == nil || sum.DurationS <= 0 {
		add("schedule", Unknown, "no %s phase to judge", ph)
		return
	}
	arrivals := float64(sum.Total.Count+sum.Total.Dropped) / sum.DurationS
	if arrivals <= 0 {
		add("schedule", Unknown, "no arrival in the %s phase", ph)
		return
	}
	gap := 1000 / arrivals
	msg := fmt.Sprintf("scheduling lag p99 %.3g ms (highest interval) against %.3g ms between arrivals (%.4g/s)", lag, gap, arrivals)
	if lag > gap {
		add("schedule", Fail, "%s: arrivals bunched up behind the generator's lag", msg)
		return
	}
	add("schedule", Pass, "%s", msg)
}

func counters(sum *Summary, add func(name, status, format string, args ...any)) {
	if sum == nil {
		add("counters", Unknown, "no summary of the phase")
		return
	}
	var gaps, names []string
	for _, c := range sum.Counters {
		names = append(names, c.Source)
		if c.Down > 0 {
			why := ""
			if len(c.Errors) > 0 {
				why = ": " + c.Errors[0]
			}
			gaps = append(gaps, fmt.Sprintf("%s did not answer in %d of %d intervals%s", c.Source, c.Down, c.Up+c.Down, why))
		}
	}
	switch {
	case len(gaps) > 0:
		add("counters", Fail, "a counter source is missing: %s", strings.Join(gaps, "; "))
	case len(names) == 0:
		add("counters", NA, "no counter source was read")
	default:
		slices.Sort(names)
		add("counters", Pass, "every counter source answered (%s)", strings.Join(names, ", "))
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
