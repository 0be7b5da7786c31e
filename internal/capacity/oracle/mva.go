package oracle

import (
	"fmt"
	"math"
)

// MVAPoint is the exact mean behaviour of a closed network of users at one
// population.
type MVAPoint struct {
	Users      int
	Throughput float64 // requests per second
	Mean       float64 // mean response time at the station (wait + service)
}

// MVA solves the closed network of users thinking think seconds on
// average (any distribution: a delay station is insensitive to it) and a
// station of W workers with exponential service of mean S, for 1..users
// users, by exact mean value analysis for a multi-server station: with
// Q(n) the mean number at the station and p(j|n) the probability of j
// there (needed only for j < W, when some workers idle),
//
//	R(n)   = S/W · (1 + Q(n−1) + Σ_{j<W−1} (W−1−j)·p(j|n−1))
//	X(n)   = n / (Z + R(n)),  Q(n) = X(n)·R(n)
//	p(j|n) = X(n)·S/j · p(j−1|n−1)                      (0 < j < W)
//	p(0|n) = 1 − (X(n)·S + Σ_{0<j<W} (W−j)·p(j|n)) / W
//
// It is exact for exponential service; for a station that holds each
// request exactly S it is an approximation, and SimulateClosed is the
// oracle. The recursion loses precision as the population grows (its
// p(0|n) is a difference near 1, and errors compound from one population
// to the next): it agrees with ProductForm to 1e-11 for W ≤ 4 up to 400
// users, and for W = 8 below the knee, but is 0.8 % off for W = 8 at 3×
// the knee. ProductForm is stable for any population.
func MVA(st Station, users int, think float64) ([]MVAPoint, error) {
	if err := st.validate(); err != nil {
		return nil, err
	}
	if users < 1 || think < 0 || math.IsInf(think, 0) {
		return nil, fmt.Errorf("oracle: need users >= 1 and think >= 0 (got %d, %g)", users, think)
	}
	w, s := st.Workers, st.Service
	p := make([]float64, w) // p(j|n−1), j < W
	p[0] = 1
	next := make([]float64, w)
	q := 0.0
	out := make([]MVAPoint, 0, users)
	for n := 1; n <= users; n++ {
		idle := 0.0
		for j := 0; j < w-1; j++ {
			idle += float64(w-1-j) * p[j]
		}
		resp := s / float64(w) * (1 + q + idle)
		x := float64(n) / (think + resp)
		q = x * resp
		sum := x * s
		for j := 1; j < w; j++ {
			next[j] = x * s / float64(j) * p[j-1]
			sum += float64(w-j) * next[j]
		}
		next[0] = max(0, 1-sum/float64(w))
		p, next = next, p
		out = append(out, MVAPoint{Users: n, Throughput: x, Mean: resp})
	}
	return out, nil
}

// ProductForm solves the same network as MVA exactly, from its
// stationary law: the number k of requests at the station is a birth-death
// chain, up at (N−k)/Z, down at min(k, W)/S, so
// p(k) ∝ N!/(N−k)! · (S/Z)^k / Π_{j≤k} min(j, W). It is computed in
// logarithms, so large populations neither overflow nor lose precision;
// think must be positive.
func ProductForm(st Station, users int, think float64) (MVAPoint, error) {
	if err := st.validate(); err != nil {
		return MVAPoint{}, err
	}
	if users < 1 || !(think > 0) || math.IsInf(think, 0) {
		return MVAPoint{}, fmt.Errorf("oracle: need users >= 1 and think > 0 (got %d, %g)", users, think)
	}
	logp := make([]float64, users+1)
	top := 0.0
	for k := 1; k <= users; k++ {
		logp[k] = logp[k-1] + math.Log(float64(users-k+1)*st.Service/think/float64(min(k, st.Workers)))
		top = max(top, logp[k])
	}
	sum, busy := 0.0, 0.0
	for k, l := range logp {
		p := math.Exp(l - top)
		sum += p
		busy += float64(min(k, st.Workers)) * p
	}
	x := busy / sum / st.Service
	return MVAPoint{Users: users, Throughput: x, Mean: float64(users)/x - think}, nil
}

// Knee is the population at which the two bounds of a closed network's
// throughput meet (Little's law): N* = (W/S)·(S+Z). Below it the users are
// the limit (throughput N/(S+Z)), above it the workers (W/S).
func Knee(st Station, think float64) float64 { return st.Capacity() * (st.Service + think) }

// MaxUsers returns the most users for which the exact mean response
// time (ProductForm, which is MVA's answer) is at or below limit, and 0
// when even one user exceeds it. The mean response time grows with the
// users, so the first population over the limit ends the search; it comes
// before the one at which the asymptote alone, N·S/W − Z, passes it.
func MaxUsers(st Station, think, limit float64) (int, error) {
	upper := int(math.Ceil((limit+think)*st.Capacity())) + st.Workers + 1
	best := 0
	for n := 1; n <= upper; n++ {
		pt, err := ProductForm(st, n, think)
		if err != nil {
			return 0, err
		}
		if pt.Mean > limit {
			break
		}
		best = n
	}
	return best, nil
}
