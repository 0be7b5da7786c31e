package compare

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/stats"
)

// Alpha is the error rate of a comparison's verdicts: when every run is
// the same configuration, the chance that any row of the comparison is
// called different is at most Alpha (under either Family).
const Alpha = 0.05

// Families of error control over a comparison's differences.
const (
	// FDR (the default): Benjamini–Hochberg's false discovery rate. When
	// the runs are the same configuration every call is wrong, and the
	// false discovery rate is then the chance of any call: at most Alpha,
	// as under FWER. When several rows truly differ (a change of
	// configuration moves latency, rate and cost rows together), at most
	// Alpha of the rows called different are expected to be wrong, and
	// it finds far more of the true differences than FWER with 5 runs.
	FDR = "fdr"
	// FWER: Holm's family-wise error: the chance of any wrong call is at
	// most Alpha whatever the differences are; the strictest, the least
	// able to see a difference with few runs.
	FWER = "fwer"
)

// Families lists the accepted families.
var Families = []string{FDR, FWER}

// Power is the chance of calling a true difference that RunsNeeded aims
// at.
const Power = 0.8

// methodText describes how the verdicts were reached.
func methodText(family string) string {
	control := "its Benjamini-Hochberg adjusted p-value over every row and run of the comparison is below 0.05 " +
		"(a false discovery rate of 5%: with identical configurations every call would be false, so none is made " +
		"at least 95% of the time; when rows truly differ, at most 5% of those called different are expected not to)"
	if family == FWER {
		control = "its Holm-adjusted p-value over every row and run of the comparison is below 0.05 (family-wise: " +
			"the chance of any false call is at most 5%)"
	}
	level := "Benjamini-Yekutieli's false-coverage-rate level 1 - max(called,1)*0.05/tested"
	if family == FWER {
		level = "the level of Holm's last step, 1 - 0.05/(tested - called)"
	}
	return "the unit of replication is the repetition (a run): each value is the trimmed mean of the " +
		"repetitions' values (each run's trim at each end); the difference of each run against the first is tested " +
		"with Yuen's test of trimmed means (Welch's t-test when nothing is trimmed, or when trimming would leave " +
		"a side constant whose values vary; exact for normal data, and a run's figures are means over many " +
		"intervals); a row is called better, worse, higher or lower only when " + control + "; its confidence " +
		"interval is at " + level + ", so that it excludes 0 exactly when the row is called (with nothing called, " +
		"Bonferroni's: every interval holds its true difference, all together, at least 95% of the time); " +
		"runs whose repetitions alternated in one throng run " +
		"(A B A B ...) are paired by round (a paired t-test of the round-by-round differences, their mean the " +
		"difference shown), so the machine's drift cancels; with fewer than 2 repetitions on a side a difference cannot be judged"
}

// trimmed is the row's shown value: the trimmed mean with the run's trim,
// lowered as stats.Trimmed does so that two values are left.
func trimmed(x []float64, trim int) (float64, int) { return stats.Trimmed(x, trim) }

// difference is run b against run a on one measure, from their
// repetitions' values xa and xb (of the repetitions ia and ib). Runs whose
// repetitions alternated in one throng run (the same Meta.Interleave) are
// paired by round: the machine's drift from round to round, which hits
// both alike, cancels in each round's difference; D is then the mean of
// the differences (the paired t-test: trimming the differences of 5 pairs
// would leave 2 degrees of freedom, and a tail in one run only widens the
// interval). Its verdict is left to judge, which sees the whole family.
func difference(a, b *view, xa, xb []float64, ia, ib []int) Diff {
	nan := result.Num(math.NaN())
	d := Diff{Change: nan, D: nan, Lo: nan, Hi: nan, P: nan, PAdj: nan, N: [2]int{len(xa), len(xb)}}
	if len(xa) == 0 || len(xb) == 0 {
		d.Verdict = NoData
		return d
	}
	ta, _ := trimmed(xa, a.col.Trim)
	tb, _ := trimmed(xb, b.col.Trim)
	d.D, d.Change = result.Num(tb-ta), result.Num(change(ta, tb))
	if il := a.run.Meta.Interleave; il != "" && il == b.run.Meta.Interleave {
		var diffs []float64
		for i, r := range ia {
			if k := slices.Index(ib, r); k >= 0 {
				diffs = append(diffs, xb[k]-xa[i])
			}
		}
		if r, ok := stats.YuenPaired(diffs, 0, 0.95); ok {
			d.Paired = true
			d.D, d.P, d.se, d.df = result.Num(r.D), result.Num(r.P), r.SE, r.DF
			d.Change = result.Num(change(ta, ta+r.D))
			d.sd = sd(diffs) / math.Sqrt2
			return d
		}
	}
	if len(xa) < 2 || len(xb) < 2 {
		d.Verdict = CannotJudge
		return d
	}
	r, _ := stats.Yuen(xa, xb, a.col.Trim, b.col.Trim, 0.95)
	d.D, d.P, d.se, d.df = result.Num(r.D), result.Num(r.P), r.SE, r.DF
	if r.Untrimmed {
		// The trim would have left a side constant while it varies
		// (small counts): the test compared the plain means, and the
		// change shown is theirs.
		d.Change = result.Num(change(ta, ta+r.D))
	}
	return d
}

// judge gives every difference its verdict: the family's adjustment over
// the whole comparison (BH or Holm), then the direction from the difference's sign and the
// measure's good direction; then every tested difference its confidence
// interval at the comparison's level (ciLevel), which agrees with the
// verdicts. Undecided differences get the runs a side that would decide
// them.
func judge(c *Comparison, views []*view) {
	var ps []float64
	type at struct{ r, k int }
	var where []at
	withData := 0
	for r := range c.Rows {
		for k := 1; k < len(c.Rows[r].Diffs); k++ {
			d := &c.Rows[r].Diffs[k]
			if d.Verdict != NoData {
				withData++
			}
			if !math.IsNaN(float64(d.P)) {
				ps = append(ps, float64(d.P))
				where = append(where, at{r, k})
			}
		}
	}
	c.Tested = len(ps)
	adj := stats.BH(ps)
	if c.Family == FWER {
		adj = stats.Holm(ps)
	}
	for i, w := range where {
		row := &c.Rows[w.r]
		d := &row.Diffs[w.k]
		d.PAdj = result.Num(adj[i])
		switch {
		case adj[i] >= Alpha:
			d.Verdict = Same
		case row.Better == "":
			d.Verdict = map[bool]Verdict{true: Higher, false: Lower}[d.D > 0]
		default:
			d.Verdict = map[bool]Verdict{true: Better, false: Worse}[(d.D > 0) == (row.Better == "higher")]
		}
	}
	called := 0
	for _, a := range adj {
		if a < Alpha {
			called++
		}
	}
	c.CILevel = ciLevel(c.Family, c.Tested, called)
	for _, w := range where {
		d := &c.Rows[w.r].Diffs[w.k]
		d.Lo, d.Hi = interval(float64(d.D), d.se, d.df, c.CILevel)
	}
	family := max(c.Tested, withData, 1)
	for r := range c.Rows {
		row := &c.Rows[r]
		for k := 1; k < len(row.Diffs); k++ {
			d := &row.Diffs[k]
			if (d.Verdict != Same && d.Verdict != CannotJudge) || d.D == 0 || math.IsNaN(float64(d.D)) {
				continue
			}
			s := d.sd
			if s == 0 {
				s = spreadFor(row, views, k)
			}
			// Trimming g at each end leaves n−2g values to the test.
			g := max(views[0].col.Trim, views[k].col.Trim)
			if n := stats.RunsNeeded(float64(d.D), s, Alpha/float64(family), Power); n > 0 {
				d.RunsNeeded = min(n+2*g, stats.MaxRuns)
			}
		}
	}
}

// ciLevel is the confidence level of a comparison's intervals, chosen so
// that every interval agrees with its verdict: it excludes 0 exactly when
// the row is called different. Of m differences tested, r were called.
//
//   - FDR: 1 − max(r,1)·α/m, the false-coverage-rate adjusted level of
//     Benjamini and Yekutieli (2005) for the r rows that Benjamini–Hochberg
//     selected: the expected share of the called rows whose interval misses
//     its true difference is at most α. A called row has p ≤ p₍ᵣ₎ < rα/m,
//     so its interval excludes 0; a row not called, of rank k > r, has
//     p₍ₖ₎ ≥ kα/m ≥ (r+1)α/m (else BH would have called it), so its interval
//     holds 0.
//   - FWER: 1 − α/(m−r) (1 − α when every row is called), the level of the
//     last step of Holm's procedure, at which it stopped: a called row of
//     rank i has p < α/(m−i+1) ≤ α/(m−r), a row not called has
//     p ≥ p₍ᵣ₊₁₎ ≥ α/(m−r).
//
// When nothing is called both are Bonferroni's 1 − α/m: the intervals of
// every row then hold their true differences all together with
// probability at least 1 − α. 1 − α when nothing was tested.
func ciLevel(family string, m, r int) float64 {
	switch {
	case m == 0:
		return 1 - Alpha
	case family == FWER:
		return 1 - Alpha/float64(max(1, m-r))
	}
	return 1 - float64(max(r, 1))*Alpha/float64(m)
}

// interval is the two-sided confidence interval at level of a difference
// d with standard error se and df degrees of freedom (Student's t); [d, d]
// when se is 0 (every value alike within each side), NaN when d is.
func interval(d, se, df, level float64) (result.Num, result.Num) {
	if math.IsNaN(d) || math.IsNaN(se) {
		return result.Num(math.NaN()), result.Num(math.NaN())
	}
	if se == 0 {
		return result.Num(d), result.Num(d)
	}
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(1 - (1-level)/2)
	return result.Num(d - q*se), result.Num(d + q*se)
}

// spreadFor estimates the standard deviation of one repetition's value of
// a row: pooled from the sides with two or more repetitions; else, from
// the first repetition's intervals by batch means (a lower bound: it
// leaves out what changes from run to run).
func spreadFor(row *Row, views []*view, k int) float64 {
	var ss, df float64
	for _, i := range []int{0, k} {
		c := row.Values[i]
		if c.N > 1 && !math.IsNaN(float64(c.Spread)) {
			ss += float64(c.Spread) * float64(c.Spread) * float64(c.N-1)
			df += float64(c.N - 1)
		}
	}
	if df > 0 {
		return math.Sqrt(ss / df)
	}
	var est []float64
	for _, i := range []int{0, k} {
		if s := withinRunSD(row, views[i]); !math.IsNaN(s) {
			est = append(est, s)
		}
	}
	if len(est) == 0 {
		return math.NaN()
	}
	return mean(est)
}

// withinRunSD estimates the standard deviation of a run's value of a row
// from its first repetition alone: the phase's usable intervals in up to
// 10 batches, each summarized like a phase; the spread of the batch values
// divided by √(batches).
func withinRunSD(row *Row, v *view) float64 {
	if len(v.reps) == 0 {
		return math.NaN()
	}
	m, ok := measureByRow(row, v)
	if !ok {
		return math.NaN()
	}
	rep := v.reps[0]
	var ivs []result.Interval
	for _, iv := range rep.Intervals {
		if (row.Phase == result.All || iv.Phase == row.Phase) && iv.DurationS >= 0.5*v.run.Meta.IntervalS && iv.DurationS > 0 {
			ivs = append(ivs, iv)
		}
	}
	bs := stats.Batches(len(ivs), 10)
	if len(bs) < 4 {
		return math.NaN()
	}
	var y []float64
	meta := &v.run.Meta
	for _, b := range bs {
		s := result.Summarize(meta.Actions, len(meta.Events), ivs[b[0]:b[1]])
		if x, ok := m.valueIn(&s[0], meta); ok {
			y = append(y, x)
		}
	}
	if len(y) < 4 {
		return math.NaN()
	}
	return sd(y) / math.Sqrt(float64(len(y)))
}

// measureByRow finds the definition of a row again (for its batches).
func measureByRow(row *Row, v *view) (measure, bool) {
	st := settingsOf([]*view{v})
	all := append(append(append(clientMeasures(st), actionMeasures(st)...), eventMeasures(st)...), serverMeasures([]*view{v})...)
	for _, m := range all {
		if m.id == row.ID {
			return m, true
		}
	}
	return measure{}, false
}
