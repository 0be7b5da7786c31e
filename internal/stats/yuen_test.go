package stats

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// A trim far beyond the sample (a damaged result's 1e18) is fitted at
// once, not one step at a time.
func TestFitTrimHuge(t *testing.T) {
	for _, c := range []struct{ n, g, want int }{{0, 3, 0}, {1, 1, 0}, {2, 1, 0}, {3, 1, 0}, {4, 1, 1}, {5, 2, 1}, {7, 1, 1}, {7, 9, 2}, {5, 1 << 60, 1}} {
		if got := fitTrim(c.n, c.g); got != c.want {
			t.Errorf("fitTrim(%d, %d) = %d, want %d", c.n, c.g, got, c.want)
		}
	}
	done := make(chan struct{})
	go func() { Trimmed([]float64{1, 2, 3}, 1<<62); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Trimmed with a trim of 2^62 did not return")
	}
}

// poisson draws a Poisson(lambda) count (Knuth's method: small lambda).
func poisson(rng *rand.Rand, lambda float64) float64 {
	l, k, p := math.Exp(-lambda), 0, 1.0
	for {
		p *= rng.Float64()
		if p <= l {
			return float64(k)
		}
		k++
	}
}

// Small counts (client-bound intervals, lost messages, errors: Poisson
// with a mean of 0.5 to 1 per repetition), five repetitions a side,
// trim 1, both sides alike: trimming often leaves a side all zeros while
// it holds a 1. Such a side is not constant: the test must not take the
// difference for certain (p = 0, which no adjustment over a family can
// undo; 3 to 4 % of pairs before the fallback), and its false calls at
// α = 0.05 stay near 5 %.
func TestYuenSmallCountsAreNotCertain(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 2))
	for _, lambda := range []float64{0.5, 0.75, 1} {
		const n = 20000
		certain, calls, fell := 0, 0, 0
		for i := 0; i < n; i++ {
			x, y := make([]float64, 5), make([]float64, 5)
			for k := range x {
				x[k], y[k] = poisson(rng, lambda), poisson(rng, lambda)
			}
			r, _ := Yuen(x, y, 1, 1, 0.95)
			if r.P == 0 {
				certain++
			}
			if r.P < 0.05 {
				calls++
			}
			if r.Untrimmed {
				fell++
			}
			if (r.P < 0.05) != (r.Lo > 0 || r.Hi < 0) {
				t.Fatalf("%v vs %v: p %v but interval %v … %v", x, y, r.P, r.Lo, r.Hi)
			}
		}
		t.Logf("Poisson(%.2f), 5 vs 5, trim 1: p = 0 in %d of %d pairs, p < 0.05 in %.2f%%, trim dropped in %.1f%%",
			lambda, certain, n, 100*float64(calls)/n, 100*float64(fell)/n)
		// Both sides constant and different (0 0 0 0 0 against 1 1 1 1 1)
		// is the only certainty left: about 1 pair in 10,000.
		if certain > n/1000 {
			t.Errorf("Poisson(%.2f): p = 0 in %d of %d pairs of identical distributions", lambda, certain, n)
		}
		if calls > n*6/100 {
			t.Errorf("Poisson(%.2f): p < 0.05 in %d of %d pairs of identical distributions", lambda, calls, n)
		}
	}
	// The fallback is Welch's test on the plain means.
	x, y := []float64{0, 0, 0, 1, 0}, []float64{0, 1, 2, 0, 1}
	r, _ := Yuen(x, y, 1, 1, 0.95)
	w, _ := Yuen(x, y, 0, 0, 0.95)
	if !r.Untrimmed || r.P != w.P || math.Abs(r.D-0.6) > 1e-12 || r.Lo != w.Lo {
		t.Errorf("fallback %+v, Welch %+v", r, w)
	}
	// A truly constant side keeps its trim.
	if r, _ := Yuen([]float64{3, 3, 3, 3, 3}, []float64{1, 2, 3, 4, 5}, 1, 1, 0.95); r.Untrimmed || r.GX != 1 {
		t.Errorf("constant side: %+v", r)
	}
	if r, _ := YuenPaired([]float64{0, 0, 1, 0, 0}, 1, 0.95); !r.Untrimmed || r.P == 0 || math.Abs(r.D-0.2) > 1e-12 {
		t.Errorf("paired fallback: %+v", r)
	}
}
