package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ar1 draws n values of a stationary AR(1) process of coefficient phi and
// marginal variance 1.
func ar1(rng *rand.Rand, n int, phi float64) []float64 {
	y := make([]float64, n)
	y[0] = rng.NormFloat64()
	for i := 1; i < n; i++ {
		y[i] = phi*y[i-1] + math.Sqrt(1-phi*phi)*rng.NormFloat64()
	}
	return y
}

// Batch means of an AR(1) process: one value per batch is the process
// itself (r^j); batches of 4 at r = 0.7 are still correlated 0.414
// (Σ r^|4+l−i| / Σ r^|l−i| over i, l < 4, computed in Python).
func TestBatchRho(t *testing.T) {
	for j := 0; j < 4; j++ {
		near(t, "b=1", BatchRho(0.6, 1, j), math.Pow(0.6, float64(j)), 1e-12)
	}
	near(t, "b=4", BatchRho(0.7, 4, 1), 0.4140938871473353, 1e-12)
	if BatchRho(0, 5, 1) != 0 || BatchRho(0, 5, 0) != 1 {
		t.Error("r = 0")
	}
	if b := BatchLength(0.7, 0.3, 100); BatchRho(0.7, b, 1) > 0.3 || BatchRho(0.7, b-1, 1) <= 0.3 {
		t.Errorf("batch length %d", b)
	}
	if BatchLength(0.95, 0.01, 12) != 12 || BatchLength(0, 0.3, 50) != 1 {
		t.Error("batch length bounds")
	}
}

// The inflation of the batch-means variance, against the formula (Python)
// and against simulation: 40 values of an AR(1) process at 0.7 in 5
// batches of 8; the variance of their mean over the mean of s²/5.
func TestBatchInflation(t *testing.T) {
	near(t, "formula", BatchInflation(0.7, 8, 5), 1.5194628057114343, 1e-9)
	if BatchInflation(0, 8, 5) != 1 {
		t.Error("independent values need no inflation")
	}
	rng := rand.New(rand.NewPCG(4, 5))
	const n = 20000
	var sumM, sumM2, sumS float64
	for i := 0; i < n; i++ {
		y := ar1(rng, 40, 0.7)
		var bm []float64
		for _, b := range Batches(40, 5) {
			s := 0.0
			for _, v := range y[b[0]:b[1]] {
				s += v
			}
			bm = append(bm, s/float64(b[1]-b[0]))
		}
		m, ss := 0.0, 0.0
		for _, v := range bm {
			m += v
		}
		m /= 5
		for _, v := range bm {
			ss += (v - m) * (v - m)
		}
		sumM += m
		sumM2 += m * m
		sumS += ss / 4 / 5
	}
	varMean := sumM2/n - (sumM/n)*(sumM/n)
	got := varMean / (sumS / n)
	if math.Abs(got/BatchInflation(0.7, 8, 5)-1) > 0.06 {
		t.Errorf("simulated inflation %.3f, formula %.3f", got, BatchInflation(0.7, 8, 5))
	}
}

// A short AR(1) series shows much less autocorrelation than it has; the
// bound does not: of 2,000 series of 20 values at φ = 0.7, the plain
// lag-1 reaches 0.7 in few, the bound in most. Independent values keep a
// small bound.
func TestLag1Bound(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 7))
	raw, bound := 0, 0
	for i := 0; i < 2000; i++ {
		y := ar1(rng, 20, 0.7)
		if Lag1(y) >= 0.7 {
			raw++
		}
		if Lag1Bound(y) >= 0.7 {
			bound++
		}
	}
	t.Logf("20 values at φ 0.7: lag-1 ≥ 0.7 in %d of 2000, the bound in %d", raw, bound)
	if raw > 400 || bound < 1300 {
		t.Errorf("lag-1 ≥ 0.7 in %d, bound in %d of 2000", raw, bound)
	}
	mean := 0.0
	for i := 0; i < 500; i++ {
		mean += Lag1Bound(ar1(rng, 100, 0)) / 500
	}
	if mean > 0.2 {
		t.Errorf("independent values: mean bound %.2f", mean)
	}
	if Lag1Bound([]float64{1, 2}) != 0 {
		t.Error("two values")
	}
}

// The modified test keeps its level on autocorrelated series without a
// trend: of 4,000 AR(1) series of 30 values at φ = 0.7, about 5 % have
// p < 0.05 when the test knows r = 0.7, while the plain test calls a
// trend in far more.
func TestModifiedMannKendallLevel(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	plain, modified := 0, 0
	const n = 4000
	for i := 0; i < n; i++ {
		y := ar1(rng, 30, 0.7)
		if MannKendall(y).P < 0.05 {
			plain++
		}
		if ModifiedMannKendall(y, 0.7).P < 0.05 {
			modified++
		}
	}
	t.Logf("p < 0.05 on AR(1) φ 0.7 without trend: plain %.1f%%, modified %.1f%%", 100*float64(plain)/n, 100*float64(modified)/n)
	if float64(modified) > 0.07*n || float64(modified) < 0.02*n || float64(plain) < 0.2*n {
		t.Errorf("plain %d, modified %d of %d", plain, modified, n)
	}
	// r = 0 is the plain test; a trend stays visible.
	y := []float64{10, 12, 11, 14, 13, 15, 17, 16, 18, 21, 19, 20}
	if a, b := MannKendall(y), ModifiedMannKendall(y, 0); a.P != b.P || b.VarFactor != 1 {
		t.Errorf("r = 0: %+v vs %+v", a, b)
	}
	if m := ModifiedMannKendall(y, 0.3); m.VarFactor <= 1 || m.P <= MannKendall(y).P || m.P > 0.05 || m.Slope != 1 {
		t.Errorf("r = 0.3: %+v", m)
	}
}
