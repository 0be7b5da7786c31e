package compare

import (
	"math"
	"testing"
)

// The reference values are scipy.stats.mannwhitneyu(x, y) (scipy 1.16,
// defaults: two-sided, method "auto", continuity correction); the small
// ones are also worked out by hand in the comments.
func TestMannWhitneyAgainstScipy(t *testing.T) {
	interleaved := func() (a, b []float64) {
		for i := range 20 {
			a = append(a, float64(i%7)+0.5*float64(i%3))
		}
		for i := range 25 {
			b = append(b, float64(i%5)+1)
		}
		return
	}
	ia, ib := interleaved()
	var ramp []float64
	for v := 5; v < 95; v += 3 {
		ramp = append(ramp, float64(v)/3)
	}
	for _, tt := range []struct {
		name  string
		x, y  []float64
		u1, p float64
		exact bool
	}{
		// Complete separation, 3 vs 3: only 2 of the C(6,3) = 20
		// arrangements are as extreme: p = 2/20.
		{"separated 3 vs 3", []float64{1, 2, 3}, []float64{4, 5, 6}, 0, 0.1, true},
		// 5 vs 5: p = 2/C(10,5) = 2/252.
		{"separated 5 vs 5", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 0, 0.007936507936507936, true},
		// U1 = 3+4+2+4+4 = 17 of 20; U ≤ 3 has 1+1+2+3 = 7 of C(9,4) = 126
		// arrangements: p = 2·7/126.
		{"4 vs 5 overlapping", []float64{19, 22, 16, 29, 24}, []float64{20, 11, 17, 12}, 17, 0.1111111111111111, true},
		// Hollander & Wolfe's data (as in R's wilcox.test example), with
		// ties (1.29, 1.06): the normal approximation.
		{"9 vs 9 with ties", []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30},
			[]float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}, 58, 0.13291945818531892, false},
		{"10 vs 11 many ties", []float64{1, 2, 2, 3, 3, 3, 4, 5, 9, 10}, []float64{3, 4, 4, 5, 6, 6, 7, 8, 9, 11, 12}, 24.5, 0.03358730919724172, false},
		{"20 vs 25 heavy ties", ia, ib, 275, 0.5721607703444258, false},
		// One sample of 8, no ties: exact even though the other has 30.
		{"8 vs 30 exact", []float64{3.1, 4.7, 2.2, 5.9, 6.3, 1.8, 7.4, 0.9}, ramp, 24, 0.00020223504693693447, true},
		{"all equal", []float64{1, 1, 1}, []float64{1, 1, 1}, 4.5, 1, false},
		{"one differs among ties", []float64{5, 5, 5, 5, 5, 5, 5, 5, 5, 6}, []float64{5, 5, 5, 5, 5, 5, 5, 5, 5, 5}, 55, 0.36812025069351895, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := MannWhitney(tt.x, tt.y)
			if got.U1 != tt.u1 || got.U1+got.U2 != float64(len(tt.x)*len(tt.y)) {
				t.Errorf("U1 = %v, U2 = %v; want U1 = %v", got.U1, got.U2, tt.u1)
			}
			if math.Abs(got.P-tt.p) > 1e-9*tt.p {
				t.Errorf("p = %.17g, want %.17g", got.P, tt.p)
			}
			if got.Exact != tt.exact {
				t.Errorf("exact = %v, want %v", got.Exact, tt.exact)
			}
			// Swapping the samples swaps U and keeps p.
			sw := MannWhitney(tt.y, tt.x)
			if sw.U1 != got.U2 || math.Abs(sw.P-got.P) > 1e-12 {
				t.Errorf("swapped: U1 %v p %v, want U1 %v p %v", sw.U1, sw.P, got.U2, got.P)
			}
		})
	}
}

// The exact tail sums to 1 and is symmetric: P(U ≥ k) = P(U ≤ mn−k).
func TestExactDistribution(t *testing.T) {
	m, n := 4, 6
	total := binomial(m+n, m)
	prevTail := 1.0
	for k := 0; k <= m*n+1; k++ {
		tail := exactUpperTail(m, n, k)
		if tail > prevTail+1e-15 {
			t.Fatalf("P(U ≥ %d) = %v rises above P(U ≥ %d) = %v", k, tail, k-1, prevTail)
		}
		prevTail = tail
		if k >= 1 && k <= m*n {
			// P(U ≥ k) = 1 − P(U ≤ k−1) = 1 − P(U ≥ mn−k+1) by symmetry.
			if sym := 1 - exactUpperTail(m, n, m*n-k+1); math.Abs(tail-sym) > 1e-12 {
				t.Errorf("P(U ≥ %d) = %v, symmetry gives %v", k, tail, sym)
			}
		}
	}
	if exactUpperTail(m, n, m*n) != 1/total || exactUpperTail(m, n, m*n+1) != 0 || exactUpperTail(n, m, 0) != 1 {
		t.Errorf("tails at the ends: %v %v", exactUpperTail(m, n, m*n), exactUpperTail(m, n, m*n+1))
	}
}

// Verdict helpers: tiny samples can never be significant, NaNs are dropped,
// and the direction follows U.
func TestUTestVerdictHelpers(t *testing.T) {
	for _, tt := range []struct {
		name              string
		x, y              []float64
		tooFew, sig, yHig bool
	}{
		{"3 vs 3 never reaches 0.05", []float64{1, 2, 3}, []float64{7, 8, 9}, true, false, true},
		{"3 vs 4 neither (min p 2/35)", []float64{1, 2, 3}, []float64{7, 8, 9, 10}, true, false, true},
		{"4 vs 4 can (min p 2/70)", []float64{1, 2, 3, 4}, []float64{7, 8, 9, 10}, false, true, true},
		{"y lower", []float64{7, 8, 9, 10, 11}, []float64{1, 2, 3, 4, 5}, false, true, false},
		{"empty", nil, []float64{1, 2}, true, false, true},
		{"NaNs dropped", []float64{1, math.NaN(), 2, 3, 4}, []float64{7, 8, math.NaN(), 9, 10}, false, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := MannWhitney(tt.x, tt.y)
			if u.TooFew() != tt.tooFew || u.Significant() != tt.sig || (u.N1 > 0 && u.N2 > 0 && u.YHigher() != tt.yHig) {
				t.Errorf("%+v: tooFew %v significant %v yHigher %v", u, u.TooFew(), u.Significant(), u.YHigher())
			}
		})
	}
	if u := MannWhitney([]float64{1, math.NaN()}, []float64{2}); u.N1 != 1 || u.N2 != 1 {
		t.Errorf("NaN counted: %+v", u)
	}
}

func BenchmarkMannWhitneyExactLarge(b *testing.B) {
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	y := make([]float64, maxExact)
	for i := range y {
		y[i] = float64(i) + 0.5
	}
	for b.Loop() {
		MannWhitney(x, y)
	}
}
