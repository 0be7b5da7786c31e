package capacity

import "math"

// t975 is the 0.975 quantile of Student's t with df degrees of freedom,
// for two-sided 95 % intervals (df 1..30; past 30 the normal's 1.96 is
// within 4 %).
func t975(df int) float64 {
	table := [...]float64{math.NaN(), 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	switch {
	case df < 1:
		return math.NaN()
	case df < len(table):
		return table[df]
	case df < 60:
		return 2.02
	}
	return 1.96
}

// SectionHalfWidth is the half-width of a 95 % confidence interval of a
// figure measured over a whole step, from the same figure measured on k
// consecutive sections of it (sectioning, Asmussen and Glynn): the spread
// of the sections, t_{k−1} · sd / √k. It serves for a mean and for a
// percentile alike; sections long against the system's memory make it
// honest, short ones make it too narrow. NaN with fewer than 3 sections.
func SectionHalfWidth(sections []float64) float64 {
	var xs []float64
	for _, x := range sections {
		if !math.IsNaN(x) {
			xs = append(xs, x)
		}
	}
	k := len(xs)
	if k < 3 {
		return math.NaN()
	}
	_, v := meanVar(xs)
	return t975(k-1) * math.Sqrt(v/float64(k))
}

func meanVar(xs []float64) (mean, variance float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	if len(xs) > 1 {
		variance /= float64(len(xs) - 1)
	}
	return mean, variance
}

// Trend is the slope of sections over their order and whether it is
// significant at 95 % (a t-test of a least-squares slope): a figure that
// drifted within a step. The change over the step is Slope·(k−1).
func Trend(sections []float64) (slope float64, significant bool) {
	var xs, ys []float64
	for i, y := range sections {
		if !math.IsNaN(y) {
			xs, ys = append(xs, float64(i)), append(ys, y)
		}
	}
	n := len(xs)
	if n < 4 {
		return 0, false
	}
	mx, _ := meanVar(xs)
	my, _ := meanVar(ys)
	var sxx, sxy float64
	for i := range xs {
		sxx += (xs[i] - mx) * (xs[i] - mx)
		sxy += (xs[i] - mx) * (ys[i] - my)
	}
	slope = sxy / sxx
	var sse float64
	for i := range xs {
		r := ys[i] - my - slope*(xs[i]-mx)
		sse += r * r
	}
	se := math.Sqrt(sse / float64(n-2) / sxx)
	if se == 0 {
		return slope, slope != 0
	}
	return slope, math.Abs(slope/se) > t975(n-2)
}

// combine merges one figure measured in several steps at the same load:
// the inverse-variance weighted mean, its 95 % half-width, widened by the
// spread between the steps when they disagree more than their own
// intervals allow (the Birge ratio). Exact figures (half-width 0) combine
// to the worst of them, as thresholds judge counts. Unknown noise (NaN)
// stays unknown.
func combine(figs []Figure, worse func(a, b float64) bool) Figure {
	switch len(figs) {
	case 0:
		return Figure{Value: math.NaN(), HalfWidth: math.NaN()}
	case 1:
		return figs[0]
	}
	exact, unknown := true, false
	for _, f := range figs {
		if math.IsNaN(f.Value) {
			return Figure{Value: math.NaN(), HalfWidth: 0}
		}
		exact = exact && f.HalfWidth == 0
		unknown = unknown || math.IsNaN(f.HalfWidth)
	}
	if exact {
		w := figs[0].Value
		for _, f := range figs[1:] {
			if worse(f.Value, w) {
				w = f.Value
			}
		}
		return Figure{Value: w}
	}
	if unknown {
		m, _ := meanVar(values(figs))
		return Figure{Value: m, HalfWidth: math.NaN()}
	}
	var sw, swx float64
	for _, f := range figs {
		se := math.Max(f.HalfWidth/1.96, 1e-12*math.Abs(f.Value)+1e-300)
		w := 1 / (se * se)
		sw += w
		swx += w * f.Value
	}
	m := swx / sw
	var chi2 float64
	for _, f := range figs {
		se := math.Max(f.HalfWidth/1.96, 1e-12*math.Abs(f.Value)+1e-300)
		chi2 += (f.Value - m) * (f.Value - m) / (se * se)
	}
	se := 1 / math.Sqrt(sw)
	if r := chi2 / float64(len(figs)-1); r > 1 {
		se *= math.Sqrt(r)
	}
	return Figure{Value: m, HalfWidth: 1.96 * se}
}

func values(figs []Figure) []float64 {
	out := make([]float64, len(figs))
	for i, f := range figs {
		out[i] = f.Value
	}
	return out
}
