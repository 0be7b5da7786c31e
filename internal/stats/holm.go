package stats

import (
	"math"
	"sort"
)

// Holm returns Holm's step-down adjusted p-values (Holm 1979) of a family
// of tests, in the order given: with the p-values sorted p₍₁₎ ≤ … ≤ p₍ₘ₎,
// adj₍ᵢ₎ = max over j ≤ i of min(1, (m−j+1)·p₍ⱼ₎). Rejecting every test whose
// adjusted p-value is below α keeps the chance of rejecting any true null
// hypothesis at most α, whatever the dependence between the tests. NaN
// p-values (no test) stay NaN and do not count in m.
func Holm(p []float64) []float64 {
	idx := make([]int, 0, len(p))
	for i, v := range p {
		if !math.IsNaN(v) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] < p[idx[b]] })
	out := make([]float64, len(p))
	for i := range out {
		out[i] = math.NaN()
	}
	m, run := len(idx), 0.0
	for j, i := range idx {
		run = math.Max(run, math.Min(1, float64(m-j)*p[i]))
		out[i] = run
	}
	return out
}

// BH returns Benjamini–Hochberg adjusted p-values (Benjamini and Hochberg
// 1995), in the order given: with the p-values sorted p₍₁₎ ≤ … ≤ p₍ₘ₎,
// adj₍ᵢ₎ = min over j ≥ i of min(1, m·p₍ⱼ₎/j). Rejecting every test whose
// adjusted p-value is below q keeps the expected share of wrong rejections
// among the rejections at most q (for independent or positively dependent
// tests); when every null hypothesis is true, that is the chance of any
// rejection at all. It matches scipy.stats.false_discovery_control(p,
// method="bh"). NaN p-values stay NaN and do not count in m.
func BH(p []float64) []float64 {
	idx := make([]int, 0, len(p))
	for i, v := range p {
		if !math.IsNaN(v) {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return p[idx[a]] < p[idx[b]] })
	out := make([]float64, len(p))
	for i := range out {
		out[i] = math.NaN()
	}
	m, run := len(idx), 1.0
	for j := m - 1; j >= 0; j-- {
		i := idx[j]
		run = math.Min(run, math.Min(1, float64(m)*p[i]/float64(j+1)))
		out[i] = run
	}
	return out
}
