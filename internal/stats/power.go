package stats

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// RunsNeeded estimates how many values per sample a two-sample t-test
// needs to call a true difference d significant at the two-sided level
// alpha with probability power, when each value has standard deviation
// sd: the smallest n ≥ 2 with n ≥ 2·(t_{1−α/2,ν} + t_{power,ν})²·sd²/d²,
// ν = 2n−2 (the normal approximation with t quantiles). 0 when d is 0 or
// not finite; 2 when sd is 0; at most MaxRuns.
func RunsNeeded(d, sd, alpha, power float64) int {
	if d == 0 || math.IsNaN(d) || math.IsInf(d, 0) || math.IsNaN(sd) {
		return 0
	}
	if sd == 0 {
		return 2
	}
	e := sd / math.Abs(d)
	// From the normal approximation (a lower bound: t quantiles are
	// wider), n ← ⌈2·k(n)²·e²⌉ climbs to the smallest n that holds.
	z := distuv.UnitNormal.Quantile(1-alpha/2) + distuv.UnitNormal.Quantile(power)
	n := max(2, int(math.Ceil(2*z*z*e*e)))
	for i := 0; i < 50 && n < MaxRuns; i++ {
		k := tQuantile(1-alpha/2, 2*n-2) + tQuantile(power, 2*n-2)
		next := max(2, int(math.Ceil(2*k*k*e*e)))
		if next <= n {
			return n
		}
		n = next
	}
	return min(n, MaxRuns)
}

// MaxRuns bounds RunsNeeded: a difference that needs more is, in practice,
// none.
const MaxRuns = 10000

// tQuantile is Student's t quantile at p with nu (whole) degrees of
// freedom, remembered: a comparison asks for the same few dozens of them
// for every row, and each costs an inverse incomplete beta function.
func tQuantile(p float64, nu int) float64 {
	key := tKey{p, nu}
	if q, ok := tQuantiles.Load(key); ok {
		return q.(float64)
	}
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(nu)}.Quantile(p)
	tQuantiles.Store(key, q)
	return q
}

type tKey struct {
	p  float64
	nu int
}

// tQuantiles holds the quantiles computed: a few per level and runs a
// side (at most 2·MaxRuns degrees of freedom per level).
var tQuantiles sync.Map
