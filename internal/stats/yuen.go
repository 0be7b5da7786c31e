package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Trimmed returns the mean of x after dropping its g smallest and g largest
// values, and g as used: g is lowered until at least two values are left
// (one when x has one), so a trim that would leave nothing never does.
// NaN when x is empty.
func Trimmed(x []float64, g int) (float64, int) {
	s := slices.Clone(x)
	slices.Sort(s)
	g = fitTrim(len(s), g)
	if len(s) == 0 {
		return math.NaN(), 0
	}
	sum := 0.0
	for _, v := range s[g : len(s)-g] {
		sum += v
	}
	return sum / float64(len(s)-2*g), g
}

// fitTrim lowers g until n−2g ≥ 2 (or to 0): at most (n−2)/2, computed,
// so a trim from a damaged file (1e18) costs nothing.
func fitTrim(n, g int) int {
	return max(0, min(g, (n-2)/2))
}

// WinsorizedVar is the sample variance (n−1 denominator) of x after its g
// smallest values are raised to the (g+1)-th and its g largest lowered to
// the (n−g)-th. 0 for fewer than two values.
func WinsorizedVar(x []float64, g int) float64 {
	n := len(x)
	if n < 2 {
		return 0
	}
	s := slices.Clone(x)
	slices.Sort(s)
	g = fitTrim(n, g)
	for i := 0; i < g; i++ {
		s[i], s[n-1-i] = s[g], s[n-1-g]
	}
	m := 0.0
	for _, v := range s {
		m += v
	}
	m /= float64(n)
	ss := 0.0
	for _, v := range s {
		ss += (v - m) * (v - m)
	}
	return ss / float64(n-1)
}

// Diff is the comparison of two samples' trimmed means: y's minus x's.
type Diff struct {
	X, Y   float64 // the trimmed means
	GX, GY int     // values trimmed at each end of x and of y
	D      float64 // Y − X
	SE     float64 // its standard error
	DF     float64 // Welch–Satterthwaite degrees of freedom (Inf when SE is 0)
	T      float64 // D / SE
	P      float64 // two-sided p-value
	Lo, Hi float64 // the confidence interval of D at Level
	Level  float64
	// Untrimmed: the trim asked for was dropped (GX and GY are 0)
	// because it left a side constant whose values are not; X, Y and D
	// are then the plain means.
	Untrimmed bool
}

// collapses reports whether trimming g at each end of x leaves a
// winsorized variance of 0 while x itself varies: the trim would hide all
// of x's spread (0 0 0 1 0 with g = 1), and a test would take its
// difference for certain.
func collapses(x []float64, g int) bool {
	return g > 0 && WinsorizedVar(x, g) == 0 && WinsorizedVar(x, 0) > 0
}

// Yuen compares the trimmed means of y and x (g trimmed at each end of
// each, gx and gy) with Yuen's test (Yuen 1974; Wilcox, "Introduction to
// Robust Estimation and Hypothesis Testing", §5.3): the standard error of
// each trimmed mean is d = (n−1)·s²_w / (h(h−1)), with s²_w the winsorized
// variance and h = n − 2g the values kept; T = (ȳ_t − x̄_t)/√(d_x+d_y) has
// about a Student t distribution with Welch–Satterthwaite degrees of
// freedom (d_x+d_y)² / (d_x²/(h_x−1) + d_y²/(h_y−1)). With nothing trimmed
// it is Welch's t-test. It matches scipy.stats.ttest_ind(x, y,
// equal_var=False, trim=γ) with g = ⌊γn⌋.
//
// When trimming leaves a sample's winsorized variance at 0 while its
// values vary (small counts: 0 0 0 1 0 trimmed by 1), the trim is dropped
// on both sides and the test is Welch's on the plain means (Untrimmed):
// a constant-after-trim sample is not a constant one.
//
// Both samples need two values or more (else ok is false). When both
// standard errors are 0 (every value alike within each sample), the
// difference is certain: P is 1 when D is 0, else 0, and the interval is
// [D, D]. level is the interval's confidence, like 0.95.
func Yuen(x, y []float64, gx, gy int, level float64) (Diff, bool) {
	if len(x) < 2 || len(y) < 2 {
		return Diff{}, false
	}
	r := Diff{Level: level}
	r.X, r.GX = Trimmed(x, gx)
	r.Y, r.GY = Trimmed(y, gy)
	if collapses(x, r.GX) || collapses(y, r.GY) {
		// Trimming made a side look constant when it is not (small
		// counts: 0 0 0 1 0): its winsorized variance of 0 would make any
		// difference "certain". Compare the untrimmed means (Welch).
		r.X, r.GX = Trimmed(x, 0)
		r.Y, r.GY = Trimmed(y, 0)
		r.Untrimmed = true
	}
	r.D = r.Y - r.X
	hx, hy := float64(len(x)-2*r.GX), float64(len(y)-2*r.GY)
	dx := float64(len(x)-1) * WinsorizedVar(x, r.GX) / (hx * (hx - 1))
	dy := float64(len(y)-1) * WinsorizedVar(y, r.GY) / (hy * (hy - 1))
	r.SE = math.Sqrt(dx + dy)
	if r.SE == 0 || r.SE < 1e-12*math.Abs(r.D) {
		r.SE, r.DF, r.Lo, r.Hi = 0, math.Inf(1), r.D, r.D
		r.T, r.P = math.Inf(1), 0
		if r.D == 0 {
			r.T, r.P = 0, 1
		}
		return r, true
	}
	r.DF = (dx + dy) * (dx + dy) / (dx*dx/(hx-1) + dy*dy/(hy-1))
	r.T = r.D / r.SE
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: r.DF}
	r.P = math.Min(1, 2*t.Survival(math.Abs(r.T)))
	q := t.Quantile(1 - (1-level)/2)
	r.Lo, r.Hi = r.D-q*r.SE, r.D+q*r.SE
	return r, true
}

// YuenPaired tests whether the trimmed mean of paired differences d (y−x
// of each pair) is 0: the one-sample form of Yuen's test (Wilcox, §5.9):
// the trimmed mean of d (g at each end) with the standard error
// √((n−1)·s²_w / (h(h−1))), s²_w the winsorized variance and h = n − 2g,
// and h − 1 degrees of freedom. With g = 0 it is the paired t-test
// (scipy.stats.ttest_1samp(d, 0)). X and Y of the result are 0; D is the
// trimmed mean of d (the plain mean when the trim would leave d looking
// constant while it is not, as in Yuen). It needs two differences or more.
func YuenPaired(d []float64, g int, level float64) (Diff, bool) {
	n := len(d)
	if n < 2 {
		return Diff{}, false
	}
	r := Diff{Level: level}
	r.D, r.GX = Trimmed(d, g)
	if collapses(d, r.GX) {
		r.D, r.GX = Trimmed(d, 0)
		r.Untrimmed = true
	}
	r.GY = r.GX
	h := float64(n - 2*r.GX)
	r.SE = math.Sqrt(float64(n-1) * WinsorizedVar(d, r.GX) / (h * (h - 1)))
	if r.SE == 0 || r.SE < 1e-12*math.Abs(r.D) {
		r.SE, r.DF, r.Lo, r.Hi = 0, math.Inf(1), r.D, r.D
		r.T, r.P = math.Inf(1), 0
		if r.D == 0 {
			r.T, r.P = 0, 1
		}
		return r, true
	}
	r.DF = h - 1
	r.T = r.D / r.SE
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: r.DF}
	r.P = math.Min(1, 2*t.Survival(math.Abs(r.T)))
	q := t.Quantile(1 - (1-level)/2)
	r.Lo, r.Hi = r.D-q*r.SE, r.D+q*r.SE
	return r, true
}
