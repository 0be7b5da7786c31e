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
//     a Mann–Kendall test of the intervals corrected for their
//     autocorrelation (ModifiedMannKendall), each measure at
//     trendAlpha/2 (Bonferroni), of a change of SteadyChange or more from
//     the start of the phase to its end (Sen's slope);
//   - p99:       the phase's p99 is known to within P99Within (relative
//     half-width of its 95 % confidence interval from batch p99s, widened
//     for the batches' remaining autocorrelation);
//   - schedule:  open model: the generator's scheduling lag (the highest
//     interval p99) is at most the mean time between arrivals; a closed
//     model has no schedule to lag (n/a);
//   - counters:  every counter source answered in every interval.
//
// The intervals: the phase's usable intervals (at least half the
// recording interval long), grouped into at most MaxCells consecutive
// cells of nearly equal length (one interval each in a phase of up to
// MaxCells intervals). Their autocorrelation r: for each of the cells'
// throughput, p50 and p99, the lag-1 autocorrelation after removing the
// trend (Sen's slope), corrected for its bias and raised by one standard
// error (stats.Lag1Bound); the steady test uses each measure's own, the
// p99 the highest. The p99's batches: k consecutive batches of cells, long
// enough that an AR(1) process of autocorrelation r leaves their means
// correlated at most MaxBatchRho (stats.BatchLength), k between
// MinBatches and MaxBatches, each of MinP99Count timed actions or more;
// the interval t_{k−1}·sd/√k of the batch p99s is widened by
// √stats.BatchInflation for the correlation left. Fewer than MinBatches
// usable intervals: steadiness and the p99's interval are unknown (too
// short); fewer than MinBatches·MinP99Count timed actions: the p99's
// interval is unknown. Valid is true when no check failed and none is
// unknown.
type Validity struct {
	Valid  bool    `json:"valid"`
	Phase  string  `json:"phase"`
	Checks []Check `json:"checks"`
	// The p99 of the phase (ms) and the half-width of its 95 % confidence
	// interval (NaN/null when unknown), from Batches batches.
	P99Ms     Num `json:"p99_ms"`
	P99HalfMs Num `json:"p99_ci_half_ms"`
	Batches   int `json:"batches"`
	// Lag1 is the autocorrelation r the p99's batches and interval allow
	// for (NaN/null when too short to tell).
	Lag1 Num `json:"lag1"`
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
	MinBatches   = 5 // usable intervals for any verdict on steadiness or the p99, and p99 batches
	MaxBatches   = 20
	MaxCells     = 120  // the intervals are grouped into at most this many cells
	MaxBatchRho  = 0.3  // correlation of neighbouring p99 batches allowed for by their length
	SteadyChange = 0.05 // 5 % from the start of the phase to its end
	P99Within    = 0.10 // ±10 %
	MinP99Count  = 200  // timed actions per batch for a batch p99
	trendAlpha   = 0.05 // over both measures (each at half)
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
	v := &Validity{Phase: ph, P99Ms: Num(math.NaN()), P99HalfMs: Num(math.NaN()), Lag1: Num(math.NaN())}
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
	if sum != nil && sum.Total.Timed() > 0 {
		v.P99Ms = Num(sum.Total.Latency.P99Ms)
	}
	if n < MinBatches {
		msg := fmt.Sprintf("too short to tell: %d usable interval%s, at least %d needed", n, map[bool]string{true: "", false: "s"}[n == 1], MinBatches)
		add("steady", Unknown, "%s", msg)
		add("p99", Unknown, "%s", msg)
	} else {
		cs := cellsOf(func(yield func(*Interval) bool) {
			for iv := range intervals {
				if usable(iv) && !yield(iv) {
					return
				}
			}
		}, n, users)
		steady(cs, add)
		p99(v, cs, add)
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

// cell is a run of consecutive usable intervals merged: its throughput,
// its latency histogram (the users' actions), p50 and p99 (ms; NaN when
// nothing was timed), and how long it lasted.
type cell struct {
	rate, p50, p99 float64
	dur            float64
	count          uint64
	h              metrics.Hist
}

// cellsOf groups the n usable intervals into at most MaxCells cells (see
// Validity), ranging over them once.
func cellsOf(ivs Intervals, n, users int) []cell {
	ranges := stats.Batches(n, min(n, MaxCells))
	out := make([]cell, 0, len(ranges))
	var c cell
	b, i := 0, 0
	for iv := range ivs {
		if b == len(ranges) {
			break
		}
		c.dur += iv.DurationS
		for a := range iv.Actions {
			if a >= users {
				break
			}
			c.count += iv.Actions[a].Count
			c.h.Merge(&iv.Actions[a].Latency)
		}
		i++
		if i == ranges[b][1] {
			c.rate, c.p50, c.p99 = float64(c.count)/c.dur, math.NaN(), math.NaN()
			if c.h.N > 0 {
				c.p50, c.p99 = float64(c.h.Quantile(0.5))/1000, float64(c.h.Quantile(0.99))/1000
			}
			out = append(out, c)
			c = cell{}
			b++
		}
	}
	return out
}

// field lists one figure of every cell, leaving out the missing ones.
func field(cs []cell, f func(*cell) float64) []float64 {
	var out []float64
	for i := range cs {
		if x := f(&cs[i]); !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}

var measures = []struct {
	name string
	f    func(*cell) float64
}{
	{"throughput", func(c *cell) float64 { return c.rate }},
	{"latency p50", func(c *cell) float64 { return c.p50 }},
}

// autocorrelation is the cautious lag-1 autocorrelation of a series
// after its trend (Sen's slope) is removed: stats.Lag1Bound.
func autocorrelation(y []float64) float64 {
	t := stats.MannKendall(y)
	e := make([]float64, len(y))
	for i, x := range y {
		e[i] = x - t.Slope*float64(i)
	}
	return stats.Lag1Bound(e)
}

func steady(cs []cell, add func(name, status, format string, args ...any)) {
	var drift []string
	var calm []string
	alpha := trendAlpha / float64(len(measures)) // Bonferroni over the measures
	for _, s := range measures {
		y := field(cs, s.f)
		if len(y) < MinBatches {
			calm = append(calm, s.name+" not measured")
			continue
		}
		r := autocorrelation(y)
		t := stats.ModifiedMannKendall(y, r)
		mid := median(y)
		change := 0.0
		if mid != 0 {
			change = t.Slope * float64(len(y)-1) / math.Abs(mid)
		}
		if t.P < alpha && math.Abs(change) >= SteadyChange {
			drift = append(drift, fmt.Sprintf("%s %s %.0f%% across the phase (Mann–Kendall p=%.2g on %d intervals, allowing for their autocorrelation %.2f)",
				s.name, map[bool]string{true: "rose", false: "fell"}[change > 0], 100*math.Abs(change), t.P, len(y), r))
		} else {
			calm = append(calm, fmt.Sprintf("%s %+.1f%% (p=%.2g, autocorrelation %.2f)", s.name, 100*change, t.P, r))
		}
	}
	if len(drift) > 0 {
		add("steady", Fail, "not steady: %s", strings.Join(drift, "; "))
		return
	}
	add("steady", Pass, "steady: no trend over %d intervals (%s; each tested at %.3g)", len(cs), strings.Join(calm, ", "), alpha)
}

func p99(v *Validity, cs []cell, add func(name, status, format string, args ...any)) {
	r := 0.0
	for _, f := range []func(*cell) float64{measures[0].f, measures[1].f, func(c *cell) float64 { return c.p99 }} {
		if y := field(cs, f); len(y) >= MinBatches {
			r = math.Max(r, autocorrelation(y))
		}
	}
	v.Lag1 = Num(r)
	var timed uint64
	for i := range cs {
		timed += cs[i].h.N
	}
	n := len(cs)
	b := stats.BatchLength(r, MaxBatchRho, n)
	k := min(max(n/b, MinBatches), MaxBatches, n, int(timed/MinP99Count))
	if k < MinBatches {
		add("p99", Unknown, "the p99 cannot be measured: the phase timed %d actions, fewer than %d batches of %d",
			timed, MinBatches, MinP99Count)
		return
	}
	ranges := stats.Batches(n, k)
	var y []float64
	fewest := uint64(math.MaxUint64)
	for _, rg := range ranges {
		var h metrics.Hist
		for i := rg[0]; i < rg[1]; i++ {
			h.Merge(&cs[i].h)
		}
		fewest = min(fewest, h.N)
		y = append(y, float64(h.Quantile(0.99))/1000)
	}
	v.Batches = k
	if fewest < MinP99Count {
		add("p99", Unknown, "the p99 cannot be measured: a batch (of %d) holds %d timed actions, fewer than %d",
			k, fewest, MinP99Count)
		return
	}
	widen := math.Sqrt(stats.BatchInflation(r, n/k, k))
	half := stats.BatchCI(y, 0.95) * widen
	v.P99HalfMs = Num(half)
	p := float64(v.P99Ms)
	rel := 0.0
	if p > 0 {
		rel = half / p
	}
	msg := fmt.Sprintf("p99 %.4g ms ± %.2g ms (±%.1f%%, 95%% CI from %d batch p99s", p, half, 100*rel, k)
	if widen > 1.005 {
		msg += fmt.Sprintf(", widened ×%.2f for their autocorrelation", widen)
	}
	msg += ")"
	if rel > P99Within {
		add("p99", Fail, "%s: wider than ±%.0f%%; a longer phase would narrow it", msg, 100*P99Within)
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
