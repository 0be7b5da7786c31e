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
