package compare

import (
	"math"
	"sort"

	"github.com/throng-io/throng/internal/result"
)

// Alpha is the significance level of every verdict: a difference is called
// real when the two-sided p-value is below it.
const Alpha = 0.05

// UTest is the outcome of a two-sided Mann-Whitney U test (Wilcoxon
// rank-sum) of two independent samples x and y.
//
// It asks whether a value drawn from one sample tends to be larger than one
// drawn from the other, without assuming any distribution: it uses ranks
// only, so a few outliers (a GC pause, a slow interval) cannot dominate it
// the way they dominate a t-test on latencies.
type UTest struct {
	N1, N2 int     // sizes of x and y (NaNs dropped)
	U1     float64 // pairs (x, y) with x > y, ties counted one half
	U2     float64 // pairs with y > x, ties counted one half: U1+U2 = N1*N2
	Z      float64 // normal score with continuity correction (asymptotic only)
	P      float64 // two-sided p-value; 1 when nothing can be said
	Exact  bool    // P comes from the exact distribution of U
	Ties   bool    // some values occur in both or twice
	// MinP is the smallest two-sided p-value any data of these sizes can
	// give (2 / C(N1+N2, N1)). When it is not below Alpha, no difference can
	// ever be called real: the samples are too few.
	MinP float64
}

// TooFew reports whether samples of these sizes can never reach Alpha.
func (t UTest) TooFew() bool { return t.N1 == 0 || t.N2 == 0 || t.MinP >= Alpha }

// Significant reports whether the test finds a difference at Alpha.
func (t UTest) Significant() bool { return !t.TooFew() && t.P < Alpha }

// YHigher reports whether y tends to be larger than x (U2 > U1).
func (t UTest) YHigher() bool { return t.U2 > t.U1 }

// maxExact bounds the size of the larger sample for the exact test; beyond
// it the normal approximation is used even for a small other sample.
const maxExact = 1000

// MannWhitney runs the two-sided Mann-Whitney U test of x against y. NaNs
// are dropped. The method follows scipy.stats.mannwhitneyu's default
// (method "auto", use_continuity=True), so results can be checked against
// it:
//
//   - exact: when there are no ties and one sample has at most 8 values, P
//     is 2·P(U ≥ max(U1, U2)) under the null hypothesis, from the exact
//     distribution of U (every arrangement of the ranks equally likely);
//   - asymptotic otherwise: z = (max(U1,U2) − N1·N2/2 − ½) / σ with the tie
//     correction σ² = N1·N2/12 · ((n+1) − Σ(t³−t)/(n(n−1))), P = 2·(1−Φ(z)).
//     It is accurate from about 8 values per sample.
//
// P is capped at 1. When every value is the same (σ = 0), P is 1.
func MannWhitney(x, y []float64) UTest {
	x, y = dropNaNs(x), dropNaNs(y)
	n1, n2 := len(x), len(y)
	t := UTest{N1: n1, N2: n2, P: 1, MinP: 1}
	if n1 == 0 || n2 == 0 {
		return t
	}
	t.MinP = math.Min(1, 2/binomial(n1+n2, n1))

	type obs struct {
		v     float64
		fromX bool
	}
	all := make([]obs, 0, n1+n2)
	for _, v := range x {
		all = append(all, obs{v, true})
	}
	for _, v := range y {
		all = append(all, obs{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	// Mid-ranks for ties, and the tie term Σ(t³−t).
	var r1, tieTerm float64
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		rank := float64(i+j+1) / 2 // mean of ranks i+1 .. j
		for k := i; k < j; k++ {
			if all[k].fromX {
				r1 += rank
			}
		}
		if c := float64(j - i); c > 1 {
			tieTerm += c*c*c - c
			t.Ties = true
		}
		i = j
	}
	f1, f2 := float64(n1), float64(n2)
	t.U1 = r1 - f1*(f1+1)/2
	t.U2 = f1*f2 - t.U1
	u := math.Max(t.U1, t.U2)

	if !t.Ties && min(n1, n2) <= 8 && max(n1, n2) <= maxExact {
		t.Exact = true
		t.P = math.Min(1, 2*exactUpperTail(n1, n2, int(math.Round(u))))
		return t
	}
	n := f1 + f2
	sigma := math.Sqrt(f1 * f2 / 12 * ((n + 1) - tieTerm/(n*(n-1))))
	if sigma == 0 {
		return t
	}
	t.Z = (u - f1*f2/2 - 0.5) / sigma
	t.P = math.Min(1, math.Erfc(t.Z/math.Sqrt2)) // 2·(1−Φ(z))
	return t
}

// exactUpperTail returns P(U ≥ u) for samples of sizes m and n without ties.
//
// The number of arrangements of m x's and n y's (in rank order) whose U
// (pairs with x above y) equals k follows c(i, j, k) = c(i−1, j, k−j) +
// c(i, j−1, k): the largest value is an x, above all j y's, or a y. The
// counts are added in float64: every term is positive, so the result is
// accurate to a few ulps even when the counts exceed 2^53.
func exactUpperTail(m, n, u int) float64 {
	if m > n {
		m, n = n, m // U's distribution is symmetric in the sizes
	}
	maxU := m * n
	if u <= 0 {
		return 1
	}
	if u > maxU {
		return 0
	}
	// prev[i][k] holds c(i, j−1, k); cur[i][k] is c(i, j, k).
	prev := make([][]float64, m+1)
	cur := make([][]float64, m+1)
	for i := range prev {
		prev[i] = make([]float64, maxU+1)
		cur[i] = make([]float64, maxU+1)
	}
	prev[0][0] = 1 // j = 0: only the all-x arrangement, U = 0
	for i := 1; i <= m; i++ {
		prev[i][0] = 1
	}
	for j := 1; j <= n; j++ {
		clear(cur[0])
		cur[0][0] = 1
		for i := 1; i <= m; i++ {
			c, up, left := cur[i], cur[i-1], prev[i]
			for k := 0; k <= i*j; k++ {
				v := left[k]
				if k >= j {
					v += up[k-j]
				}
				c[k] = v
			}
			clear(c[i*j+1:])
		}
		prev, cur = cur, prev
	}
	total, tail := 0.0, 0.0
	for k, c := range prev[m] {
		total += c
		if k >= u {
			tail += c
		}
	}
	return tail / total
}

// binomial returns C(n, k) as a float64.
func binomial(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	k = min(k, n-k)
	r := 1.0
	for i := 1; i <= k; i++ {
		r = r * float64(n-k+i) / float64(i)
	}
	return r
}

func dropNaNs(v []float64) []float64 {
	out := make([]float64, 0, len(v))
	for _, x := range v {
		if !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}

// The rest of this file applies the test to a comparison's rows: which
// samples, and which verdict.

// Test is the significance test of one run against the first on one row.
type Test struct {
	Verdict Verdict    `json:"verdict"`
	P       result.Num `json:"p"`                 // two-sided; null when not tested
	Samples string     `json:"samples,omitempty"` // "repetitions" or "intervals"
	N       [2]int     `json:"n"`                 // sample sizes: the first run's, this run's
	Exact   bool       `json:"exact,omitempty"`
}

// Verdict is a row's judgement of one run against the first.
type Verdict string

// Verdicts. Better and Worse are for measures with a known good direction,
// Higher and Lower for the others.
const (
	Baseline Verdict = ""
	Better   Verdict = "better"
	Worse    Verdict = "worse"
	Higher   Verdict = "higher"
	Lower    Verdict = "lower"
	Noise    Verdict = "noise"   // p ≥ Alpha
	TooFew   Verdict = "too_few" // samples that can never reach Alpha
	NoData   Verdict = "no_data" // a run lacks the measure
)

// Text is the verdict as printed in tables.
func (v Verdict) Text() string {
	switch v {
	case Noise:
		return "~ within noise"
	case TooFew:
		return "too few samples"
	case NoData:
		return "no data"
	}
	return string(v)
}

// minSampleShare: intervals shorter than this share of the recording
// interval (cut at a phase boundary or at the end) are left out of the
// samples; their rates and percentiles rest on too little time.
const minSampleShare = 0.5

// samples are the values the test compares: one per repetition, or one
// per usable interval.
func (v *view) samples(m measure, byRepetition bool) []float64 {
	var out []float64
	if byRepetition {
		for _, s := range v.sums {
			if s != nil {
				if x, ok := m.get(s); ok {
					out = append(out, x)
				}
			}
		}
		return out
	}
	sums := v.intervalSummaries()
	for i := range sums {
		if x, ok := m.get(&sums[i]); ok {
			out = append(out, x)
		}
	}
	return out
}

// testRow tests run b against run a on one measure whose shown values are
// va and vb.
func testRow(m measure, a, b *view, va, vb float64) Test {
	byRep := len(a.sums) >= 3 && len(b.sums) >= 3
	t := Test{Samples: "intervals", P: result.Num(math.NaN())}
	if byRep {
		t.Samples = "repetitions"
	}
	if math.IsNaN(va) || math.IsNaN(vb) {
		t.Verdict = NoData
		return t
	}
	u := MannWhitney(a.samples(m, byRep), b.samples(m, byRep))
	t.N, t.Exact = [2]int{u.N1, u.N2}, u.Exact
	if u.N1 > 0 && u.N2 > 0 {
		t.P = result.Num(u.P)
	}
	switch {
	case u.TooFew():
		t.Verdict = TooFew
	case !u.Significant():
		t.Verdict = Noise
	case m.better == "":
		t.Verdict = map[bool]Verdict{true: Higher, false: Lower}[u.YHigher()]
	default:
		t.Verdict = map[bool]Verdict{true: Better, false: Worse}[u.YHigher() == (m.better == "higher")]
	}
	return t
}

const method = "two-sided Mann-Whitney U test, p < 0.05, of each run against the first: on the per-repetition values " +
	"when both have 3 or more repetitions, else on the per-interval values of the phase (interval rates, " +
	"percentiles of each interval's own histogram, counter rates; intervals shorter than half the recording " +
	"interval left out); exact for small samples without ties, else the normal approximation with tie correction"
