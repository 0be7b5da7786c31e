package capacity

import (
	"errors"
	"math"
)

// USL is Gunther's Universal Scalability Law fitted to throughput against
// concurrency: C(N) = λN / (1 + α(N−1) + βN(N−1)), where λ is the
// throughput of one, α the contention (a serial share: queueing for a
// shared resource) and β the coherency delay (crosstalk: each pair of
// workers paying to agree). With β > 0 the throughput peaks at
// N* = √((1−α)/β) and falls past it.
type USL struct {
	Lambda, Alpha, Beta float64
	// Peak is N*, +Inf when β is 0 (throughput levels off at λ/α, never
	// falls); PeakThroughput is C(N*) (λ/α when Peak is infinite).
	Peak, PeakThroughput float64
	// RMSE is the root mean square of the residuals, in throughput units;
	// Points is how many (N, throughput) pairs were fitted.
	RMSE   float64
	Points int
}

// Throughput returns C(n).
func (u USL) Throughput(n float64) float64 {
	return u.Lambda * n / (1 + u.Alpha*(n-1) + u.Beta*n*(n-1))
}

// ErrFewPoints says a fit needs more distinct loads than it got.
var ErrFewPoints = errors.New("capacity: too few distinct loads to fit")

// FitUSL fits the law to pairs of concurrency n and throughput x by
// nonlinear least squares (Levenberg–Marquardt, with λ > 0, 0 ≤ α < 1,
// β ≥ 0), started from the linear least-squares fit of n/x, which is a
// quadratic in n. It needs 4 distinct concurrencies.
func FitUSL(n, x []float64) (USL, error) {
	var ns, xs []float64
	distinct := map[float64]bool{}
	for i := range n {
		if n[i] > 0 && x[i] > 0 && !math.IsInf(n[i], 0) && !math.IsInf(x[i], 0) {
			ns, xs = append(ns, n[i]), append(xs, x[i])
			distinct[n[i]] = true
		}
	}
	if len(distinct) < 4 {
		return USL{}, ErrFewPoints
	}
	p := uslStart(ns, xs)
	sse := func(p [3]float64) float64 {
		s := 0.0
		for i := range ns {
			r := xs[i] - uslAt(p, ns[i])
			s += r * r
		}
		return s
	}
	cur := sse(p)
	mu := 1e-3
	for iter := 0; iter < 500 && mu < 1e12; iter++ {
		var jtj [3][3]float64
		var jtr [3]float64
		for i := range ns {
			j := uslGrad(p, ns[i])
			r := xs[i] - uslAt(p, ns[i])
			for a := range 3 {
				jtr[a] += j[a] * r
				for b := range 3 {
					jtj[a][b] += j[a] * j[b]
				}
			}
		}
		m := jtj
		for a := range 3 {
			m[a][a] += mu * math.Max(jtj[a][a], 1e-300)
		}
		d, ok := solve3(m, jtr)
		if !ok {
			mu *= 10
			continue
		}
		q := uslClamp([3]float64{p[0] + d[0], p[1] + d[1], p[2] + d[2]})
		if s := sse(q); s < cur {
			done := cur-s <= 1e-12*cur
			p, cur, mu = q, s, mu/3
			if done {
				break
			}
		} else {
			mu *= 4
		}
	}
	u := USL{Lambda: p[0], Alpha: p[1], Beta: p[2], Points: len(ns), RMSE: math.Sqrt(cur / float64(len(ns)))}
	if u.Beta > 0 {
		u.Peak = math.Sqrt((1 - u.Alpha) / u.Beta)
		u.PeakThroughput = u.Throughput(u.Peak)
	} else {
		u.Peak, u.PeakThroughput = math.Inf(1), math.Inf(1)
		if u.Alpha > 0 {
			u.PeakThroughput = u.Lambda / u.Alpha
		}
	}
	return u, nil
}

func uslAt(p [3]float64, n float64) float64 {
	return p[0] * n / (1 + p[1]*(n-1) + p[2]*n*(n-1))
}

// uslGrad is the gradient of C(n) in λ, α, β.
func uslGrad(p [3]float64, n float64) [3]float64 {
	d := 1 + p[1]*(n-1) + p[2]*n*(n-1)
	return [3]float64{n / d, -p[0] * n * (n - 1) / (d * d), -p[0] * n * n * (n - 1) / (d * d)}
}

func uslClamp(p [3]float64) [3]float64 {
	p[0] = math.Max(p[0], 1e-300)
	p[1] = math.Min(math.Max(p[1], 0), 1-1e-9)
	p[2] = math.Max(p[2], 0)
	return p
}

// uslStart solves n/x = a + b(n−1) + c·n(n−1) by linear least squares:
// λ = 1/a, α = b/a, β = c/a.
func uslStart(ns, xs []float64) [3]float64 {
	var m [3][3]float64
	var v [3]float64
	for i := range ns {
		f := [3]float64{1, ns[i] - 1, ns[i] * (ns[i] - 1)}
		y := ns[i] / xs[i]
		for a := range 3 {
			v[a] += f[a] * y
			for b := range 3 {
				m[a][b] += f[a] * f[b]
			}
		}
	}
	c, ok := solve3(m, v)
	if !ok || !(c[0] > 0) {
		// Fall back to the best throughput per unit seen, no contention.
		best := 0.0
		for i := range ns {
			best = math.Max(best, xs[i]/ns[i])
		}
		return [3]float64{best, 0, 0}
	}
	return uslClamp([3]float64{1 / c[0], c[1] / c[0], c[2] / c[0]})
}

// solve3 solves m·x = v by Gaussian elimination with partial pivoting;
// false when m is singular.
func solve3(m [3][3]float64, v [3]float64) ([3]float64, bool) {
	for col := range 3 {
		piv := col
		for r := col + 1; r < 3; r++ {
			if math.Abs(m[r][col]) > math.Abs(m[piv][col]) {
				piv = r
			}
		}
		if m[piv][col] == 0 || math.IsNaN(m[piv][col]) {
			return v, false
		}
		m[col], m[piv] = m[piv], m[col]
		v[col], v[piv] = v[piv], v[col]
		for r := col + 1; r < 3; r++ {
			f := m[r][col] / m[col][col]
			for c := col; c < 3; c++ {
				m[r][c] -= f * m[col][c]
			}
			v[r] -= f * v[col]
		}
	}
	var x [3]float64
	for r := 2; r >= 0; r-- {
		s := v[r]
		for c := r + 1; c < 3; c++ {
			s -= m[r][c] * x[c]
		}
		x[r] = s / m[r][r]
	}
	return x, true
}
