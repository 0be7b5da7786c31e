package report

import "math"

// point is one (x, y) point of a chart's series. A NaN y is a gap: the
// line is broken there (a counter source that did not answer).
type point struct{ X, Y float64 }

// lttb downsamples a series to at most n points with Largest-Triangle-
// Three-Buckets (Steinarsson, 2013): it keeps the first and the last point
// and, from each of n-2 buckets in between, the point that makes the
// largest triangle with the point kept before and the mean of the next
// bucket, so spikes and dips survive where averaging would flatten them.
// Points must be in x order; a series of n points or fewer is returned as
// it is. Gaps (NaN y) are kept: each run of points between gaps is
// downsampled on its own, with a share of n in proportion to its length
// (at least 3 points each, so a series with gaps may keep a few more).
func lttb(pts []point, n int) []point {
	if n < 3 {
		n = 3
	}
	if len(pts) <= n {
		return pts
	}
	runs := splitGaps(pts)
	if len(runs) == 1 && len(runs[0]) == len(pts) {
		return lttbRun(pts, n)
	}
	// Each run keeps its share of n; the NaN points that mark the gaps
	// between runs stay.
	out := make([]point, 0, n+len(runs))
	for i, r := range runs {
		if i > 0 {
			out = append(out, point{r[0].X, math.NaN()})
		}
		share := int(math.Round(float64(n) * float64(len(r)) / float64(len(pts))))
		out = append(out, lttbRun(r, max(share, 3))...)
	}
	return out
}

// splitGaps cuts a series at its NaN points into runs of real points.
func splitGaps(pts []point) [][]point {
	var runs [][]point
	start := -1
	for i, p := range pts {
		gap := math.IsNaN(p.Y)
		switch {
		case gap && start >= 0:
			runs = append(runs, pts[start:i])
			start = -1
		case !gap && start < 0:
			start = i
		}
	}
	if start >= 0 {
		runs = append(runs, pts[start:])
	}
	return runs
}

// lttbRun is LTTB on a series without gaps.
func lttbRun(pts []point, n int) []point {
	if len(pts) <= n {
		return pts
	}
	out := make([]point, 0, n)
	out = append(out, pts[0])
	// The points between the first and the last fall into n-2 buckets of
	// (nearly) equal size.
	every := float64(len(pts)-2) / float64(n-2)
	a := 0 // index of the point kept last
	for b := 0; b < n-2; b++ {
		lo := int(float64(b)*every) + 1
		hi := int(float64(b+1)*every) + 1
		// The next bucket's mean (the last point for the last bucket).
		nlo, nhi := hi, min(int(float64(b+2)*every)+1, len(pts))
		if b == n-3 {
			nlo, nhi = len(pts)-1, len(pts)
		}
		var mx, my float64
		for _, p := range pts[nlo:nhi] {
			mx += p.X
			my += p.Y
		}
		cnt := float64(nhi - nlo)
		mx, my = mx/cnt, my/cnt
		best, bestArea := lo, -1.0
		pa := pts[a]
		for i := lo; i < hi; i++ {
			p := pts[i]
			area := math.Abs((pa.X-mx)*(p.Y-pa.Y) - (pa.X-p.X)*(my-pa.Y))
			if area > bestArea {
				best, bestArea = i, area
			}
		}
		out = append(out, pts[best])
		a = best
	}
	return append(out, pts[len(pts)-1])
}
