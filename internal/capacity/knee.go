package capacity

import (
	"math"
	"slices"
)

// Knee is where throughput stops growing with the load.
type Knee struct {
	// Load is where the two asymptotes of the throughput meet: the line
	// of proportional growth seen at the lightest load (throughput per
	// unit of load there) and the highest throughput measured. For a
	// closed system that is Little's law's N* = X_max·(R₀+Z); for open
	// arrivals, the highest rate carried. Throughput is X_max.
	Load, Throughput float64
	// Vertex is Kneedle's knee (Satopää et al., 2011): the measured load
	// where the normalized curve lies furthest above its chord.
	Vertex float64
}

// Kneedle returns the index of the knee of a concave, increasing curve
// given by points in ascending x: the point of the normalized curve
// (x and y scaled to 0..1) furthest above the diagonal. ok is false with
// fewer than 3 points or when no point lies above the diagonal (no knee).
func Kneedle(x, y []float64) (int, bool) {
	n := len(x)
	if n < 3 || len(y) != n {
		return 0, false
	}
	ymin, ymax := slices.Min(y), slices.Max(y)
	if x[n-1] <= x[0] || ymax <= ymin {
		return 0, false
	}
	best, bestD := 0, 0.0
	for i := range n {
		d := (y[i]-ymin)/(ymax-ymin) - (x[i]-x[0])/(x[n-1]-x[0])
		if d > bestD {
			best, bestD = i, d
		}
	}
	return best, bestD > 0
}

// FindKnee finds the knee of throughput y against load x (any order;
// repeated loads are averaged): where the line through the origin with
// the throughput per unit of load of the lightest load meets the level of
// the highest throughput. ok is false with fewer than 3 loads, or when the
// throughput per unit of load never fell by a fifth below the lightest
// load's: no knee in the range measured.
func FindKnee(x, y []float64) (Knee, bool) {
	xs, ys := averaged(x, y)
	n := len(xs)
	k := Knee{Load: math.NaN(), Throughput: math.NaN(), Vertex: math.NaN()}
	if n < 3 || !(xs[0] > 0) || !(ys[0] > 0) {
		return k, false
	}
	if i, ok := Kneedle(xs, ys); ok {
		k.Vertex = xs[i]
	}
	slope := ys[0] / xs[0]
	top, sat := 0.0, false
	for i := range xs {
		top = math.Max(top, ys[i])
		sat = sat || ys[i]/xs[i] < 0.8*slope
	}
	if !sat {
		return k, false
	}
	k.Load, k.Throughput = top/slope, top
	return k, true
}

// averaged sorts points by x and averages the y of equal x.
func averaged(x, y []float64) ([]float64, []float64) {
	idx := make([]int, 0, len(x))
	for i := range x {
		if !math.IsNaN(x[i]) && !math.IsNaN(y[i]) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		switch {
		case x[i] < x[j]:
			return -1
		case x[i] > x[j]:
			return 1
		}
		return 0
	})
	var xs, ys []float64
	cnt := 0
	for _, i := range idx {
		if len(xs) > 0 && sameLoad(xs[len(xs)-1], x[i]) {
			cnt++
			ys[len(ys)-1] += (y[i] - ys[len(ys)-1]) / float64(cnt)
			continue
		}
		xs, ys, cnt = append(xs, x[i]), append(ys, y[i]), 1
	}
	return xs, ys
}

// curve fits the knee and the scalability law to the valid steps.
func (a *analysis) curve() (*Knee, *USL) {
	var loads, conc, thr []float64
	for i := range a.steps {
		s := &a.steps[i]
		if s.Kind == WarmUp || !s.Valid() || !(s.Throughput > 0) {
			continue
		}
		loads = append(loads, s.Load)
		thr = append(thr, s.Throughput)
		n := s.Load
		if a.cfg.Dimension.Name == Rate.Name {
			n = s.Concurrency // the USL's N is a concurrency
		}
		conc = append(conc, n)
	}
	var knee *Knee
	if k, ok := FindKnee(loads, thr); ok {
		knee = &k
	}
	var usl *USL
	cx, cy := averaged(conc, thr)
	if u, err := FitUSL(cx, cy); err == nil {
		usl = &u
	}
	return knee, usl
}
