package oracle

import (
	"fmt"
	"math"
)

// ErlangC returns the probability that an arrival waits in an M/M/c queue
// with c workers of service rate mu each and arrivals at lambda < c·mu.
func ErlangC(c int, lambda, mu float64) float64 {
	a := lambda / mu // offered load in erlangs
	rho := a / float64(c)
	if rho >= 1 {
		return 1
	}
	// Erlang B by its stable recursion, then C from B.
	b := 1.0
	for k := 1; k <= c; k++ {
		b = a * b / (float64(k) + a*b)
	}
	return b / (1 - rho*(1-b))
}

// MMcMeanResponse is the mean response time of M/M/c: the Erlang C wait
// plus the service.
func MMcMeanResponse(c int, lambda, service float64) float64 {
	mu := 1 / service
	return ErlangC(c, lambda, mu)/(float64(c)*mu-lambda) + service
}

// MD1MeanResponse is the mean response time of M/D/1 by the
// Pollaczek–Khinchine formula: S + ρS/(2(1−ρ)).
func MD1MeanResponse(lambda, service float64) float64 {
	rho := lambda * service
	return service + rho*service/(2*(1-rho))
}

// MDcMeanResponse is the exact mean response time of M/D/c (Poisson
// arrivals at lambda, c workers each holding a request exactly service
// seconds, first come first served). The number of requests present at
// times k·S is a Markov chain — everyone in service at k·S leaves by
// (k+1)·S, no one who starts later does — N' = max(N−c, 0) + A with A
// Poisson of mean λS; its stationary law is the time-average one, whose
// mean over λ is the mean response time (Little's law).
func MDcMeanResponse(c int, lambda, service float64) (float64, error) {
	a := lambda * service
	if !(a > 0) || a >= float64(c) {
		return 0, fmt.Errorf("oracle: M/D/c needs 0 < λS < c (got λS = %g, c = %d)", a, c)
	}
	// Truncate where the Poisson tail and the queue's geometric tail are
	// negligible; the state space grows as the load nears c.
	k := int(40+10*a) + int(60/(1-a/float64(c)))
	pois := make([]float64, k+1)
	pois[0] = math.Exp(-a)
	for j := 1; j <= k; j++ {
		pois[j] = pois[j-1] * a / float64(j)
	}
	p := make([]float64, k+1)
	p[0] = 1
	q := make([]float64, k+1)
	for iter := 0; iter < 1_000_000; iter++ {
		clear(q)
		for n, pn := range p {
			if pn == 0 {
				continue
			}
			base := max(n-c, 0)
			for j := 0; base+j <= k; j++ {
				q[base+j] += pn * pois[j]
			}
		}
		total, diff := 0.0, 0.0
		for _, v := range q {
			total += v
		}
		for n := range q {
			q[n] /= total
			diff += math.Abs(q[n] - p[n])
		}
		p, q = q, p
		if diff < 1e-13 {
			mean := 0.0
			for n, pn := range p {
				mean += float64(n) * pn
			}
			return mean / lambda, nil
		}
	}
	return 0, fmt.Errorf("oracle: the M/D/c chain did not converge at λS = %g, c = %d", a, c)
}
