package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// BatchCI is the half-width of a confidence interval at level for a
// statistic of a series, from k batch values y (the statistic computed on
// each of k consecutive batches of the series, long enough to be nearly
// independent): t_{k−1, 1−(1−level)/2} · sd(y)/√k (the method of batch
// means; Law and Kelton, "Simulation Modeling and Analysis", §9.5.3). NaN
// for fewer than two batches.
func BatchCI(y []float64, level float64) float64 {
	k := len(y)
	if k < 2 {
		return math.NaN()
	}
	m := 0.0
	for _, v := range y {
		m += v
	}
	m /= float64(k)
	ss := 0.0
	for _, v := range y {
		ss += (v - m) * (v - m)
	}
	sd := math.Sqrt(ss / float64(k-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(k - 1)}
	return t.Quantile(1-(1-level)/2) * sd / math.Sqrt(float64(k))
}

// Lag1 is the lag-1 autocorrelation of y: Σ(y_i−ȳ)(y_{i+1}−ȳ) / Σ(y_i−ȳ)².
// 0 when y has fewer than 3 values or no spread.
func Lag1(y []float64) float64 {
	k := len(y)
	if k < 3 {
		return 0
	}
	m := 0.0
	for _, v := range y {
		m += v
	}
	m /= float64(k)
	num, den := 0.0, 0.0
	for i, v := range y {
		den += (v - m) * (v - m)
		if i+1 < k {
			num += (v - m) * (y[i+1] - m)
		}
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// Batches splits n consecutive items into k batches of nearly equal size
// (the first n mod k get one more) and returns each batch's [start, end).
func Batches(n, k int) [][2]int {
	if k <= 0 || n <= 0 {
		return nil
	}
	k = min(k, n)
	out := make([][2]int, 0, k)
	size, extra, at := n/k, n%k, 0
	for i := 0; i < k; i++ {
		s := size
		if i < extra {
			s++
		}
		out = append(out, [2]int{at, at + s})
		at += s
	}
	return out
}

// Lag1Bound is a cautious estimate of the lag-1 autocorrelation of a
// series y that may follow an AR(1) process: the sample lag-1 r, corrected
// for its bias (for an AR(1) process of coefficient φ and n values with
// their mean removed, E[r] ≈ φ − (1+4φ)/n: Marriott and Pope 1954), plus
// one standard error √((1−φ²)/n), clamped to [0, 0.95]. A short series
// underestimates its autocorrelation badly (a 20-value AR(1) series of
// φ = 0.7 shows about 0.5 on average, often 0.3); the bound errs on the
// side of more correlation, whose cost is a wider interval, never a false
// alarm. 0 for fewer than 3 values.
func Lag1Bound(y []float64) float64 {
	n := float64(len(y))
	if n < 3 {
		return 0
	}
	r := Lag1(y)
	if n > 4 {
		r = (r + 1/n) / (1 - 4/n)
	}
	r = math.Max(0, math.Min(0.95, r))
	return math.Min(0.95, r+math.Sqrt((1-r*r)/n))
}

// BatchRho is the correlation at lag j (in batches) of the means of
// consecutive batches of b values of an AR(1) process with lag-1
// autocorrelation r (ρ_k = r^k): Σ_{i,l<b} r^|jb+l−i| / Σ_{i,l<b} r^|l−i|.
func BatchRho(r float64, b, j int) float64 {
	if b <= 0 || r <= 0 {
		if j == 0 {
			return 1
		}
		return 0
	}
	cov := func(m int) float64 {
		s := 0.0
		for d := -(b - 1); d <= b-1; d++ { // l − i = d occurs b − |d| times
			s += float64(b-abs(d)) * math.Pow(r, float64(abs(m*b+d)))
		}
		return s
	}
	return cov(j) / cov(0)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// BatchInflation is the factor by which the batch-means variance of a
// mean, s²/k over k batches of b values, underestimates the true variance
// when the values follow an AR(1) process of lag-1 autocorrelation r, so
// that the batch means are themselves correlated (ρ_j = BatchRho(r, b, j)):
// Var(mean) = (σ²/k)·(1 + 2S) and E[s²] = σ²·(1 − 2S/(k−1)), with
// S = Σ_{j<k} (1 − j/k)·ρ_j. 1 when r is 0; at least 1.
func BatchInflation(r float64, b, k int) float64 {
	if k < 2 || r <= 0 {
		return 1
	}
	S := 0.0
	for j := 1; j < k; j++ {
		S += (1 - float64(j)/float64(k)) * BatchRho(r, b, j)
	}
	den := 1 - 2*S/float64(k-1)
	if den <= 0.05 {
		den = 0.05
	}
	return math.Max(1, (1+2*S)/den)
}

// BatchLength is the fewest values per batch for which the means of
// consecutive batches of an AR(1) process of lag-1 autocorrelation r are
// correlated at most maxRho (BatchRho at lag 1), and at most n.
func BatchLength(r, maxRho float64, n int) int {
	b := 1
	for b < n && BatchRho(r, b, 1) > maxRho {
		b++
	}
	return b
}
