// Package oracle computes the true answers of the queueing models that
// throng's capacity search is tested against: a station of W workers, each
// holding a request for a service time (exactly S, or exponential with mean
// S), served first come first served, fed by open arrivals (Poisson or
// evenly spaced) or by N closed users who think between requests.
//
// Two kinds of oracle, each checked against the other in the tests:
// exact discrete-event simulations (SimulateOpen, SimulateClosed), which
// give any figure (a percentile too) of exactly the model the
// capacity-truth target implements; and formulas (mean value analysis,
// Erlang C, Pollaczek–Khinchine, the embedded chain of M/D/c), which give
// means exactly where the model allows.
//
// Times are in seconds, rates per second.
package oracle

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Station is the server: Workers each hold a request for Service seconds
// (exactly, or exponentially distributed with that mean when Exponential).
type Station struct {
	Workers     int
	Service     float64
	Exponential bool
}

// Capacity is the most requests per second the station completes: W/S.
func (s Station) Capacity() float64 { return float64(s.Workers) / s.Service }

func (s Station) validate() error {
	if s.Workers < 1 || !(s.Service > 0) || math.IsInf(s.Service, 0) {
		return fmt.Errorf("oracle: a station needs at least one worker and a positive service time (got %d, %g)", s.Workers, s.Service)
	}
	return nil
}

// OpenResult is what a simulation of open arrivals measured.
type OpenResult struct {
	Rate     float64   // arrivals per second
	Mean     float64   // mean response time (wait + service)
	MeanWait float64   // mean wait for a worker
	sorted   []float64 // response times, ascending
	waits    []float64 // waits, ascending
}

// Quantile returns the q-quantile of the response time (0 < q < 1), as
// the HDR histograms of throng read it: the smallest value with at least
// q of the sample at or below it.
func (r OpenResult) Quantile(q float64) float64 { return quantile(r.sorted, q) }

// WaitQuantile returns the q-quantile of the wait for a worker.
func (r OpenResult) WaitQuantile(q float64) float64 { return quantile(r.waits, q) }

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// openSample is one fixed draw of the randomness of n arrivals: unit
// interarrival gaps (exponential with mean 1, or exactly 1) and service
// times. Scaling the gaps by 1/rate gives the arrivals at any rate from the
// same draw (common random numbers), so a figure is monotone in the rate
// and a bisection on the rate is exact for the draw.
type openSample struct {
	gaps, service []float64
	warm          int // arrivals left out at the start (the queue starts empty)
}

func newOpenSample(st Station, poisson bool, n int, seed uint64) openSample {
	r := rand.New(rand.NewPCG(seed, seed^0x5851f42d4c957f2d))
	o := openSample{gaps: make([]float64, n), service: make([]float64, n), warm: n / 10}
	for i := range n {
		o.gaps[i] = 1
		if poisson {
			o.gaps[i] = r.ExpFloat64()
		}
		o.service[i] = st.Service
		if st.Exponential {
			o.service[i] = st.Service * r.ExpFloat64()
		}
	}
	return o
}

// run serves the sample's arrivals at a rate, first come first served:
// each arrival takes the worker that frees first (the Kiefer–Wolfowitz
// recursion, exact for FCFS with identical workers).
func (o openSample) run(workers int, rate float64) OpenResult {
	free := make(minHeap, workers)
	t := 0.0
	res := OpenResult{Rate: rate, sorted: make([]float64, 0, len(o.gaps)-o.warm), waits: make([]float64, 0, len(o.gaps)-o.warm)}
	var sum, wsum float64
	for i, g := range o.gaps {
		t += g / rate
		start := max(t, free[0])
		free[0] = start + o.service[i]
		heap.Fix(&free, 0)
		if i < o.warm {
			continue
		}
		r := start + o.service[i] - t
		res.sorted = append(res.sorted, r)
		res.waits = append(res.waits, start-t)
		sum += r
		wsum += start - t
	}
	n := float64(len(res.sorted))
	res.Mean, res.MeanWait = sum/n, wsum/n
	slices.Sort(res.sorted)
	slices.Sort(res.waits)
	return res
}

// SimulateOpen serves n arrivals at a rate (Poisson, or evenly spaced when
// poisson is false) and measures their response times, leaving out the
// first tenth while the queue fills from empty. The same seed gives the same
// draw at every rate.
func SimulateOpen(st Station, rate float64, poisson bool, n int, seed uint64) (OpenResult, error) {
	if err := st.validate(); err != nil {
		return OpenResult{}, err
	}
	if !(rate > 0) || n < 10 {
		return OpenResult{}, fmt.Errorf("oracle: need a positive rate and at least 10 arrivals (got %g, %d)", rate, n)
	}
	return newOpenSample(st, poisson, n, seed).run(st.Workers, rate), nil
}

// MaxOpenRate returns the highest arrival rate at which the q-quantile of
// the response time stays at or below limit (q = 0 asks for the mean), to
// within a relative tolerance tol, by bisection on one draw of n arrivals.
// Above the station's capacity no rate is steady, so the answer is below it.
func MaxOpenRate(st Station, q, limit float64, poisson bool, n int, seed uint64, tol float64) (float64, error) {
	if err := st.validate(); err != nil {
		return 0, err
	}
	if limit < st.Service && !st.Exponential {
		return 0, fmt.Errorf("oracle: no rate meets a limit of %gs below the service time %gs", limit, st.Service)
	}
	o := newOpenSample(st, poisson, n, seed)
	figure := func(rate float64) float64 {
		r := o.run(st.Workers, rate)
		if q == 0 {
			return r.Mean
		}
		return r.Quantile(q)
	}
	lo, hi := st.Capacity()*1e-6, st.Capacity()
	if figure(lo) > limit {
		return 0, fmt.Errorf("oracle: the limit %gs is not met even at a vanishing rate", limit)
	}
	for hi-lo > tol*lo {
		mid := (lo + hi) / 2
		if figure(mid) <= limit {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// minHeap holds the times at which workers become free.
type minHeap []float64

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
