package oracle

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
)

// ClosedResult is what a simulation of closed users measured.
type ClosedResult struct {
	Users      int
	Throughput float64 // requests completed per second
	Mean       float64 // mean response time (wait + service)
}

// SimulateClosed runs users that each think (exactly think seconds, or
// exponentially with that mean when thinkExp), send a request to the
// station and wait for its answer, over and over, until n requests are
// done; the first tenth is left out while the users spread. It is exact for
// any service and think distribution (mean value analysis is exact only for
// exponential service).
func SimulateClosed(st Station, users int, think float64, thinkExp bool, n int, seed uint64) (ClosedResult, error) {
	if err := st.validate(); err != nil {
		return ClosedResult{}, err
	}
	if users < 1 || think < 0 || math.IsInf(think, 0) || n < 10 {
		return ClosedResult{}, fmt.Errorf("oracle: need users >= 1, think >= 0 and n >= 10 (got %d, %g, %d)", users, think, n)
	}
	r := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	thinkOf := func() float64 {
		if thinkExp {
			return think * r.ExpFloat64()
		}
		return think
	}
	serviceOf := func() float64 {
		if st.Exponential {
			return st.Service * r.ExpFloat64()
		}
		return st.Service
	}
	// Arrivals at the station, earliest first: each user's next request.
	// Processing them in time order, each taking the worker that frees
	// first, is first come first served (see openSample.run).
	arrivals := make(minHeap, users)
	for i := range arrivals {
		// Start spread over one cycle, so fixed think times do not march
		// in lock step from a common start.
		arrivals[i] = r.Float64() * (think + st.Service)
	}
	heap.Init(&arrivals)
	free := make(minHeap, st.Workers)
	warm := n / 10
	var sum, t0, tEnd float64
	for i := range n {
		a := arrivals[0]
		start := max(a, free[0])
		done := start + serviceOf()
		free[0] = done
		heap.Fix(&free, 0)
		arrivals[0] = done + thinkOf()
		heap.Fix(&arrivals, 0)
		switch {
		case i == warm:
			t0 = a
			fallthrough
		case i > warm:
			sum += done - a
			tEnd = a
		}
	}
	k := float64(n - warm)
	res := ClosedResult{Users: users, Mean: sum / k}
	if tEnd > t0 {
		// Requests arriving in [t0, tEnd) over that span; in steady state
		// arrivals and completions go at the same rate.
		res.Throughput = (k - 1) / (tEnd - t0)
	}
	return res, nil
}
