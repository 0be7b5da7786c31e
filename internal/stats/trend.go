package stats

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Trend is the outcome of a Mann–Kendall trend test with Sen's slope.
type Trend struct {
	N     int
	S     float64 // Σ sign(x_j − x_i) over i < j
	VarS  float64 // its variance under no trend, corrected for ties (and for autocorrelation: VarFactor)
	Z     float64 // normal score with continuity correction
	P     float64 // two-sided p-value
	Slope float64 // Sen's slope: the median of (x_j − x_i)/(j − i), per step
	// VarFactor is what VarS was multiplied by for the series'
	// autocorrelation (ModifiedMannKendall); 1 for MannKendall.
	VarFactor float64
}

// MannKendall tests x (values at equal steps, in order) for a monotonic
// trend (Mann 1945, Kendall 1975), as pymannkendall.original_test does: S
// as above, Var(S) = [n(n−1)(2n+5) − Σ t(t−1)(2t+5)]/18 over groups of t
// tied values, Z = (S−1)/√Var(S) when S > 0, (S+1)/√Var(S) when S < 0, else
// 0, and P = 2(1 − Φ(|Z|)). It assumes independent values (else
// ModifiedMannKendall). P is 1 for fewer than 3 values.
func MannKendall(x []float64) Trend {
	n := len(x)
	t := Trend{N: n, P: 1}
	if n < 3 {
		return t
	}
	var slopes []float64
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			switch d := x[j] - x[i]; {
			case d > 0:
				t.S++
			case d < 0:
				t.S--
			}
			slopes = append(slopes, (x[j]-x[i])/float64(j-i))
		}
	}
	s := slices.Clone(x)
	slices.Sort(s)
	ties := 0.0
	for i := 0; i < n; {
		j := i
		for j < n && s[j] == s[i] {
			j++
		}
		if c := float64(j - i); c > 1 {
			ties += c * (c - 1) * (2*c + 5)
		}
		i = j
	}
	fn := float64(n)
	t.VarS = (fn*(fn-1)*(2*fn+5) - ties) / 18
	switch {
	case t.VarS <= 0:
	case t.S > 0:
		t.Z = (t.S - 1) / math.Sqrt(t.VarS)
	case t.S < 0:
		t.Z = (t.S + 1) / math.Sqrt(t.VarS)
	}
	t.P = math.Min(1, 2*distuv.UnitNormal.Survival(math.Abs(t.Z)))
	t.Slope = median(slopes)
	t.VarFactor = 1
	return t
}

// ModifiedMannKendall is the Mann–Kendall test of a series whose values
// follow an AR(1) process of lag-1 autocorrelation r under no trend (as
// the intervals of a run do): Var(S) is multiplied by the ratio of the
// series' length to its effective length (Hamed and Rao 1998; with the
// AR(1) form of Yue and Wang 2004),
//
//	n/n* = 1 + 2/(n(n−1)(n−2)) Σ_{k=1}^{n−1} (n−k)(n−k−1)(n−k−2) ρ_R(k),
//
// ρ_R(k) = (6/π)·asin(r^k/2) the autocorrelation of the ranks of a normal
// AR(1) series. Positive autocorrelation makes runs of high and low values
// that the plain test takes for trends; this widens S's spread to match.
// r is the caller's: an estimate from the detrended series, on the cautious
// side (Lag1Bound). With r ≤ 0 it is MannKendall.
func ModifiedMannKendall(x []float64, r float64) Trend {
	t := MannKendall(x)
	n := float64(t.N)
	if r <= 0 || t.N < 3 || t.VarS <= 0 {
		return t
	}
	sum := 0.0
	for k := 1.0; k <= n-3; k++ {
		rho := 6 / math.Pi * math.Asin(math.Pow(r, k)/2)
		sum += (n - k) * (n - k - 1) * (n - k - 2) * rho
	}
	t.VarFactor = math.Max(1, 1+2*sum/(n*(n-1)*(n-2)))
	t.VarS *= t.VarFactor
	switch {
	case t.S > 0:
		t.Z = (t.S - 1) / math.Sqrt(t.VarS)
	case t.S < 0:
		t.Z = (t.S + 1) / math.Sqrt(t.VarS)
	}
	t.P = math.Min(1, 2*distuv.UnitNormal.Survival(math.Abs(t.Z)))
	return t
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
