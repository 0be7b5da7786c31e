package stats

import (
	"math"
	"testing"
)

// The expected values below were computed with scipy 1.17.1 and
// pymannkendall 1.4.3 (Python 3.11):
//
//	import numpy as np, scipy.stats as st, pymannkendall as mk
//	x = [101.0, 98.5, 103.2, 99.1, 100.4]; y = [104.9, 107.3, 103.8, 110.2, 105.1]
//	for trim in (0, 0.2):
//	    r = st.ttest_ind(x, y, equal_var=False, trim=trim); ci = r.confidence_interval(0.95)
//	    print(r.statistic, r.pvalue, r.df, ci.low, ci.high)
//	x2 = [3.1, 2.9, 3.0, 3.3, 2.8, 3.05, 9.0]; y2 = [3.4, 3.6, 3.2, 3.9, 3.5, 3.45]
//	r = st.ttest_ind(x2, y2, equal_var=False, trim=0.2)          # same prints
//	st.trim_mean(x2, 0.2); np.var(st.mstats.winsorize(np.array(x2), limits=(0.2, 0.2)), ddof=1)
//	mk.original_test([10,12,11,14,13,15,17,16,18,21,19,20])     # s, var_s, z, p, slope
//	mk.original_test([5,5,6,5,7,5,6,6,5,7])
//	st.t.ppf(0.975, 4); st.t.ppf(0.975, 9)
//
// scipy's ttest_ind tests x − y; Yuen reports y − x, so T and the interval
// change sign.

func near(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.Abs(got-want) > rel*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.12g, want %.12g", what, got, want)
	}
}

func TestYuenAgainstScipy(t *testing.T) {
	x := []float64{101.0, 98.5, 103.2, 99.1, 100.4}
	y := []float64{104.9, 107.3, 103.8, 110.2, 105.1}
	for _, tt := range []struct {
		g                   int
		tval, p, df, lo, hi float64
	}{
		{0, -4.149528261208169, 0.003943166910623044, 7.281388561320424, -9.110742958307288, -2.5292570416927274},
		{1, -4.280758445772861, 0.01505421353659484, 3.7135084979158597, -9.345311966705985, -1.8546880332940034},
	} {
		r, ok := Yuen(x, y, tt.g, tt.g, 0.95)
		if !ok {
			t.Fatal("not ok")
		}
		near(t, "T", r.T, -tt.tval, 1e-9)
		near(t, "P", r.P, tt.p, 1e-7)
		near(t, "DF", r.DF, tt.df, 1e-9)
		near(t, "Lo", r.Lo, -tt.hi, 1e-7)
		near(t, "Hi", r.Hi, -tt.lo, 1e-7)
	}
	x2 := []float64{3.1, 2.9, 3.0, 3.3, 2.8, 3.05, 9.0}
	y2 := []float64{3.4, 3.6, 3.2, 3.9, 3.5, 3.45}
	r, _ := Yuen(x2, y2, 1, 1, 0.95)
	near(t, "T", r.T, 3.8158130548953393, 1e-9)
	near(t, "P", r.P, 0.0075419732793199235, 1e-7)
	near(t, "DF", r.DF, 6.510973843228634, 1e-9)
	near(t, "Lo", r.Lo, 0.15478725647751324, 1e-7)
	near(t, "Hi", r.Hi, 0.6802127435224876, 1e-7)
	m, g := Trimmed(x2, 1)
	near(t, "trimmed mean", m, 3.0699999999999994, 1e-12)
	near(t, "winsorized variance", WinsorizedVar(x2, g), 0.028214285714285702, 1e-12)
}

func TestYuenEdges(t *testing.T) {
	// Equal constants: no difference, certainly.
	r, ok := Yuen([]float64{1988, 1988, 1988}, []float64{1988, 1988}, 1, 1, 0.95)
	if !ok || r.P != 1 || r.D != 0 || r.Lo != 0 || r.Hi != 0 {
		t.Errorf("equal constants: %+v", r)
	}
	// Different constants: a certain difference.
	r, _ = Yuen([]float64{0, 0, 0}, []float64{286, 286, 286}, 0, 0, 0.95)
	if r.P != 0 || r.D != 286 || r.Lo != 286 {
		t.Errorf("different constants: %+v", r)
	}
	if _, ok := Yuen([]float64{1}, []float64{1, 2}, 0, 0, 0.95); ok {
		t.Error("one value compared")
	}
	// A trim that would leave fewer than two values is lowered.
	if m, g := Trimmed([]float64{1, 2, 9}, 1); g != 0 || m != 4 {
		t.Errorf("trim of 3 values: %v, g %d", m, g)
	}
	if m, g := Trimmed([]float64{5, 1, 2, 9}, 1); g != 1 || m != 3.5 {
		t.Errorf("trim of 4 values: %v, g %d", m, g)
	}
}

// Holm's adjustment, worked by hand: p = (0.01, 0.04, 0.03, 0.005), m = 4.
// Sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 → the
// running maximum 0.02, 0.03, 0.06, 0.06.
func TestHolm(t *testing.T) {
	got := Holm([]float64{0.01, 0.04, 0.03, 0.005, math.NaN()})
	want := []float64{0.03, 0.06, 0.06, 0.02, math.NaN()}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) < 1e-12 || math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Errorf("adj[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	// Capped at 1; one test is its own adjustment.
	if g := Holm([]float64{0.9, 0.8}); g[0] != 1 || g[1] != 1 {
		t.Errorf("cap: %v", g)
	}
	if g := Holm([]float64{0.03}); g[0] != 0.03 {
		t.Errorf("one test: %v", g)
	}
}

func TestMannKendallAgainstPymannkendall(t *testing.T) {
	r := MannKendall([]float64{10, 12, 11, 14, 13, 15, 17, 16, 18, 21, 19, 20})
	near(t, "S", r.S, 56, 0)
	near(t, "VarS", r.VarS, 212.66666666666666, 1e-12)
	near(t, "Z", r.Z, 3.771490147280579, 1e-12)
	near(t, "P", r.P, 0.00016227556647607777, 1e-9)
	near(t, "slope", r.Slope, 1.0, 0)
	// With ties.
	r = MannKendall([]float64{5, 5, 6, 5, 7, 5, 6, 6, 5, 7})
	near(t, "S", r.S, 13, 0)
	near(t, "VarS", r.VarS, 103.66666666666667, 1e-12)
	near(t, "Z", r.Z, 1.1785870880489722, 1e-12)
	near(t, "P", r.P, 0.2385626355931072, 1e-9)
	near(t, "slope", r.Slope, 0, 0)
	// A falling series has a negative S and slope; too short is P = 1.
	if r := MannKendall([]float64{9, 7, 5, 3, 1}); r.S != -10 || r.Slope != -2 {
		t.Errorf("falling: %+v", r)
	}
	if r := MannKendall([]float64{1, 2}); r.P != 1 {
		t.Errorf("two values: %+v", r)
	}
}

func TestBatchCI(t *testing.T) {
	// sd of (1..5) is √2.5; t_{4, 0.975} = 2.7764451051977934 (scipy).
	near(t, "half-width", BatchCI([]float64{1, 2, 3, 4, 5}, 0.95), 2.7764451051977934*math.Sqrt(2.5)/math.Sqrt(5), 1e-9)
	if !math.IsNaN(BatchCI([]float64{1}, 0.95)) {
		t.Error("one batch has an interval")
	}
	// Alternating values are negatively correlated; a ramp positively.
	if r := Lag1([]float64{1, -1, 1, -1, 1, -1}); r > -0.8 {
		t.Errorf("alternating lag1 %v", r)
	}
	if r := Lag1([]float64{1, 2, 3, 4, 5, 6, 7, 8}); r < 0.5 {
		t.Errorf("ramp lag1 %v", r)
	}
	b := Batches(11, 4)
	if len(b) != 4 || b[0] != [2]int{0, 3} || b[3] != [2]int{9, 11} {
		t.Errorf("batches %v", b)
	}
}

func TestRunsNeeded(t *testing.T) {
	// A difference of one standard deviation needs about 17 per side at
	// α = 0.05 and 80 % power (the textbook 16 from the normal
	// approximation, plus one for the t quantiles).
	if n := RunsNeeded(1, 1, 0.05, 0.8); n < 16 || n > 18 {
		t.Errorf("d = sd: %d", n)
	}
	// Halving the difference quadruples the runs.
	if a, b := RunsNeeded(1, 1, 0.05, 0.8), RunsNeeded(0.5, 1, 0.05, 0.8); b < 3*a || b > 5*a {
		t.Errorf("half the difference: %d vs %d", b, a)
	}
	if RunsNeeded(0, 1, 0.05, 0.8) != 0 || RunsNeeded(1, 0, 0.05, 0.8) != 2 {
		t.Error("edges")
	}
}

// scipy.stats.false_discovery_control([0.01, 0.04, 0.03, 0.005, 0.2, 0.0001], method="bh")
// = [0.02, 0.048, 0.045, 0.015, 0.2, 0.0006] (scipy 1.17.1).
func TestBH(t *testing.T) {
	got := BH([]float64{0.01, 0.04, 0.03, 0.005, 0.2, 0.0001, math.NaN()})
	want := []float64{0.02, 0.048, 0.045, 0.015, 0.2, 0.0006, math.NaN()}
	for i := range want {
		if !(math.Abs(got[i]-want[i]) < 1e-12 || math.IsNaN(got[i]) && math.IsNaN(want[i])) {
			t.Errorf("adj[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

// Paired differences: with g = 0, scipy.stats.ttest_1samp(d, 0) and its
// confidence_interval(0.95); with g = 1, the one-sample Yuen statistic
// computed with numpy (winsorize by hand, var(ddof=1),
// se = sqrt((n-1)·s²_w/(h(h-1))), t quantiles of scipy with h-1 df):
//
//	d = [1.2, -0.3, 0.8, 2.5, 0.4, 0.9, -0.1]
func TestYuenPaired(t *testing.T) {
	d := []float64{1.2, -0.3, 0.8, 2.5, 0.4, 0.9, -0.1}
	r, ok := YuenPaired(d, 0, 0.95)
	if !ok {
		t.Fatal("not ok")
	}
	near(t, "T", r.T, 2.185202317934355, 1e-9)
	near(t, "P", r.P, 0.07154635558463952, 1e-7)
	near(t, "DF", r.DF, 6, 0)
	near(t, "Lo", r.Lo, -0.09238971132190343, 1e-7)
	near(t, "Hi", r.Hi, 1.6352468541790466, 1e-7)
	r, _ = YuenPaired(d, 1, 0.95)
	near(t, "D", r.D, 0.64, 1e-12)
	near(t, "SE", r.SE, 0.30566087650952556, 1e-9)
	near(t, "T", r.T, 2.093823741227331, 1e-9)
	near(t, "P", r.P, 0.1043787611395125, 1e-7)
	near(t, "Lo", r.Lo, -0.20865064443533943, 1e-7)
	near(t, "Hi", r.Hi, 1.4886506444353396, 1e-7)
	if r, _ := YuenPaired([]float64{0, 0, 0}, 0, 0.95); r.P != 1 {
		t.Errorf("all zero: %+v", r)
	}
	if _, ok := YuenPaired([]float64{1}, 0, 0.95); ok {
		t.Error("one pair tested")
	}
}
