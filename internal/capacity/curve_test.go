package capacity

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/throng-io/throng/internal/capacity/oracle"
)

func TestFitUSL(t *testing.T) {
	for _, c := range []struct{ lambda, alpha, beta float64 }{
		{100, 0.05, 0.0005}, // retrograde: peak at √(0.95/0.0005) ≈ 43.6
		{250, 0.2, 0},       // contention only: levels off at λ/α
		{50, 0.01, 0.002},
	} {
		want := USL{Lambda: c.lambda, Alpha: c.alpha, Beta: c.beta}
		r := rand.New(rand.NewPCG(1, 2))
		var n, x []float64
		for _, k := range []float64{1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128} {
			n = append(n, k)
			x = append(x, want.Throughput(k)*(1+0.01*r.NormFloat64()))
		}
		got, err := FitUSL(n, x)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.Lambda/c.lambda-1) > 0.03 || math.Abs(got.Alpha-c.alpha) > 0.01 || math.Abs(got.Beta-c.beta) > 0.0002 {
			t.Errorf("fit λ=%.4g α=%.4g β=%.3g, want %g %g %g", got.Lambda, got.Alpha, got.Beta, c.lambda, c.alpha, c.beta)
		}
		if c.beta > 0 {
			peak := math.Sqrt((1 - c.alpha) / c.beta)
			if math.Abs(got.Peak/peak-1) > 0.1 {
				t.Errorf("peak %.1f, want %.1f", got.Peak, peak)
			}
		} else if !math.IsInf(got.Peak, 1) && got.Peak < 4*128 {
			t.Errorf("no coherency delay: peak %g, want none within 4× the loads measured", got.Peak)
		}
		t.Logf("true λ=%g α=%g β=%g: fit λ=%.4g α=%.4g β=%.3g peak N=%.1f", c.lambda, c.alpha, c.beta, got.Lambda, got.Alpha, got.Beta, got.Peak)
	}
	if _, err := FitUSL([]float64{1, 2, 3}, []float64{1, 2, 3}); err != ErrFewPoints {
		t.Errorf("three loads: err %v, want ErrFewPoints", err)
	}
}

func TestKneedle(t *testing.T) {
	// y = 1 − exp(−x/a) on [0, X]: Kneedle's knee is where the normalized
	// slope is 1: x = a·ln(X / (a·(1 − exp(−X/a)))).
	const a, X = 10.0, 100.0
	var xs, ys []float64
	for i := 0; i <= 1000; i++ {
		x := X * float64(i) / 1000
		xs, ys = append(xs, x), append(ys, 1-math.Exp(-x/a))
	}
	i, ok := Kneedle(xs, ys)
	want := a * math.Log(X/(a*(1-math.Exp(-X/a))))
	if !ok || math.Abs(xs[i]-want) > 0.2 {
		t.Errorf("Kneedle at %g, want %.2f", xs[i], want)
	}
	// A straight line has no knee.
	if _, ok := Kneedle([]float64{1, 2, 3, 4}, []float64{2, 4, 6, 8}); ok {
		t.Error("a straight line: want no knee")
	}
}

func TestFindKnee(t *testing.T) {
	// A hard knee: throughput N/(S+Z) up to N* = 20, then W/S = 200.
	xs := []float64{2, 5, 9, 13, 27, 35, 50}
	var ys []float64
	for _, x := range xs {
		ys = append(ys, math.Min(x/0.1, 200))
	}
	k, ok := FindKnee(xs, ys)
	if !ok || math.Abs(k.Load-20) > 1e-9 || math.Abs(k.Throughput-200) > 1e-9 {
		t.Errorf("knee %+v, want 20 users at 200/s", k)
	}
	// Kneedle's vertex is a measured load next to it.
	if k.Vertex != 13 && k.Vertex != 27 {
		t.Errorf("Kneedle's vertex %g, want 13 or 27", k.Vertex)
	}
	// Rounded by queueing: exact MVA of 4 exponential workers (S = 20 ms,
	// Z = 80 ms) at loads a search visits; the knee is N* = 20.
	st := oracle.Station{Workers: 4, Service: 0.02, Exponential: true}
	xs, ys = nil, nil
	for _, n := range []int{4, 8, 16, 32, 24, 20, 22} {
		pt, err := oracle.ProductForm(st, n, 0.08)
		if err != nil {
			t.Fatal(err)
		}
		xs, ys = append(xs, float64(n)), append(ys, pt.Throughput)
	}
	k, ok = FindKnee(xs, ys)
	if !ok || math.Abs(k.Load/oracle.Knee(st, 0.08)-1) > 0.05 {
		t.Errorf("MVA curve: knee %+v, want %g within 5 %%", k, oracle.Knee(st, 0.08))
	}
	t.Logf("MVA curve: knee at %.2f users (N* = %g), Kneedle's vertex %g", k.Load, oracle.Knee(st, 0.08), k.Vertex)
	// Still growing: no knee.
	if _, ok := FindKnee([]float64{1, 2, 4, 8}, []float64{10, 20, 40, 79}); ok {
		t.Error("a straight line: want no knee")
	}
}

// The gradient the fit follows is the derivative of C(n): compare with
// central differences.
func TestUSLGradient(t *testing.T) {
	p := [3]float64{120, 0.07, 0.0009}
	for _, n := range []float64{1, 3, 17, 60} {
		g := uslGrad(p, n)
		for k := range 3 {
			h := 1e-6 * math.Max(math.Abs(p[k]), 1e-3)
			up, down := p, p
			up[k] += h
			down[k] -= h
			num := (uslAt(up, n) - uslAt(down, n)) / (2 * h)
			if math.Abs(g[k]-num) > 1e-5*math.Max(math.Abs(num), 1) {
				t.Errorf("n=%g: dC/dp%d = %g, central difference %g", n, k, g[k], num)
			}
		}
	}
}
