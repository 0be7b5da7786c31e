package oracle

import (
	"math"
	"testing"
)

func near(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > rel*math.Abs(want) {
		t.Errorf("%s = %.6g, want %.6g (±%.2g%%)", what, got, want, 100*rel)
	} else {
		t.Logf("%s = %.6g (want %.6g)", what, got, want)
	}
}

// within checks that the mean of independent draws is within 4 standard
// errors of want.
func within(t *testing.T, what string, draws []float64, want float64) {
	t.Helper()
	m, v := 0.0, 0.0
	for _, x := range draws {
		m += x
	}
	m /= float64(len(draws))
	for _, x := range draws {
		v += (x - m) * (x - m)
	}
	se := math.Sqrt(v / float64(len(draws)-1) / float64(len(draws)))
	if math.Abs(m-want) > 4*se {
		t.Errorf("%s = %.6g ± %.2g (standard error), want %.6g", what, m, se, want)
	} else {
		t.Logf("%s = %.6g ± %.2g, want %.6g", what, m, se, want)
	}
}

func TestMVAByHand(t *testing.T) {
	// One worker, S = 1, Z = 1. One user: R = S, X = 1/(S+Z).
	// Two users: the birth-death chain has p ∝ 1, 2, 2: p0 = 0.2, so
	// X = 0.8 and R = N/X − Z = 1.5, as MVA's R(2) = S·(1 + Q(1)) = 1.5.
	pts, err := MVA(Station{Workers: 1, Service: 1, Exponential: true}, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "R(1)", pts[0].Mean, 1, 1e-12)
	near(t, "X(1)", pts[0].Throughput, 0.5, 1e-12)
	near(t, "R(2)", pts[1].Mean, 1.5, 1e-12)
	near(t, "X(2)", pts[1].Throughput, 0.8, 1e-12)
	pf, err := ProductForm(Station{Workers: 1, Service: 1, Exponential: true}, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "product form R(2)", pf.Mean, 1.5, 1e-12)
}

func TestMVAAgainstProductForm(t *testing.T) {
	for _, c := range []struct {
		w     int
		s, z  float64
		users int
	}{{1, 0.02, 0.08, 400}, {4, 0.02, 0.08, 400}, {8, 0.005, 0.5, 400}} {
		st := Station{Workers: c.w, Service: c.s, Exponential: true}
		pts, err := MVA(st, c.users, c.z)
		if err != nil {
			t.Fatal(err)
		}
		for _, pt := range pts {
			pf, err := ProductForm(st, pt.Users, c.z)
			if err != nil {
				t.Fatal(err)
			}
			x, r := pf.Throughput, pf.Mean
			if math.Abs(pt.Throughput-x) > 1e-9*x || math.Abs(pt.Mean-r) > 1e-9*r {
				t.Fatalf("W=%d N=%d: MVA X=%g R=%g, product form X=%g R=%g", c.w, pt.Users, pt.Throughput, pt.Mean, x, r)
			}
		}
		// The bounds of Little's law, and the knee between them.
		if last := pts[len(pts)-1]; float64(c.users) > 2*Knee(st, c.z) &&
			(last.Throughput > st.Capacity() || last.Throughput < 0.97*st.Capacity()) {
			t.Errorf("W=%d: X(%d) = %g, want just under W/S = %g", c.w, last.Users, last.Throughput, st.Capacity())
		}
	}
	// ProductForm stays exact where MVA's recursion would not: far past
	// the knee every user waits its turn, R = N·S/W − Z.
	pf, err := ProductForm(Station{Workers: 16, Service: 0.01, Exponential: true}, 5000, 1)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "R(5000), W=16", pf.Mean, 5000*0.01/16-1, 1e-9)
}

func TestClosedSimulationAgainstMVA(t *testing.T) {
	// Exponential service: MVA is exact, the simulation must agree within
	// its sampling error (about 1 % for 400,000 requests).
	st := Station{Workers: 4, Service: 0.02, Exponential: true}
	pts, err := MVA(st, 40, 0.08)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{5, 18, 20, 24, 40} {
		for _, thinkExp := range []bool{true, false} {
			sim, err := SimulateClosed(st, n, 0.08, thinkExp, 400_000, uint64(n))
			if err != nil {
				t.Fatal(err)
			}
			near(t, "simulated R", sim.Mean, pts[n-1].Mean, 0.02)
			near(t, "simulated X", sim.Throughput, pts[n-1].Throughput, 0.01)
		}
	}
}

func TestClosedSimulationBounds(t *testing.T) {
	// Exact service: the throughput never passes either bound of Little's
	// law, and is at the workers' bound well past the knee.
	st := Station{Workers: 4, Service: 0.02}
	knee := Knee(st, 0.08)
	if knee != 20 {
		t.Fatalf("knee = %g, want (4/0.02)·(0.02+0.08) = 20", knee)
	}
	for _, n := range []int{2, 10, 20, 30, 60} {
		sim, err := SimulateClosed(st, n, 0.08, true, 200_000, 7)
		if err != nil {
			t.Fatal(err)
		}
		bound := min(float64(n)/(st.Service+0.08), st.Capacity())
		if sim.Throughput > bound*1.005 {
			t.Errorf("N=%d: X = %g above the bound %g", n, sim.Throughput, bound)
		}
		if n == 60 {
			near(t, "X(60)", sim.Throughput, st.Capacity(), 0.005)
			// Past the knee every user waits its turn: R = N/X − Z.
			near(t, "R(60)", sim.Mean, 60/st.Capacity()-0.08, 0.01)
		}
	}
}

func TestOpenSimulationAgainstFormulas(t *testing.T) {
	const n = 1_000_000
	// M/D/1: Pollaczek–Khinchine.
	st1 := Station{Workers: 1, Service: 0.02}
	for _, rho := range []float64{0.5, 0.8} {
		r, err := SimulateOpen(st1, rho/0.02, true, n, 1)
		if err != nil {
			t.Fatal(err)
		}
		near(t, "M/D/1 mean", r.Mean, MD1MeanResponse(rho/0.02, 0.02), 0.02)
	}
	// M/M/c: Erlang C, for the mean and for the tail of the wait,
	// P(W > t) = C·exp(−(cμ−λ)t). One draw of a million arrivals gives the
	// p99 of the wait only to about ±3 %: compare the mean of 8 draws with
	// the formula, within 4 standard errors of that mean.
	st := Station{Workers: 4, Service: 0.02, Exponential: true}
	lambda := 160.0
	c := ErlangC(4, lambda, 50)
	var means, p99s []float64
	for seed := range uint64(8) {
		r, err := SimulateOpen(st, lambda, true, n/2, seed)
		if err != nil {
			t.Fatal(err)
		}
		means = append(means, r.Mean)
		p99s = append(p99s, r.WaitQuantile(0.99))
	}
	within(t, "M/M/4 mean", means, MMcMeanResponse(4, lambda, 0.02))
	within(t, "M/M/4 wait p99", p99s, math.Log(c/0.01)/(200-lambda))
	// M/D/c: the embedded chain, against the simulation, and against
	// Pollaczek–Khinchine for c = 1.
	for _, lam := range []float64{100, 160, 185} {
		want, err := MDcMeanResponse(4, lam, 0.02)
		if err != nil {
			t.Fatal(err)
		}
		r, err := SimulateOpen(Station{Workers: 4, Service: 0.02}, lam, true, n, 3)
		if err != nil {
			t.Fatal(err)
		}
		// Near saturation the sample mean converges slowly: ±3 %.
		near(t, "M/D/4 mean", r.Mean, want, 0.03)
	}
	md1, err := MDcMeanResponse(1, 40, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "M/D/1 chain", md1, MD1MeanResponse(40, 0.02), 1e-6)
}

func TestMaxOpenRate(t *testing.T) {
	st := Station{Workers: 4, Service: 0.02}
	// Evenly spaced arrivals (D/D/c) never wait below W/S and queue
	// without end above it: the answer is W/S for any limit above S.
	got, err := MaxOpenRate(st, 0.99, 0.04, false, 20_000, 1, 1e-4)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "D/D/4 max rate", got, st.Capacity(), 0.01)
	// Poisson arrivals: the answer meets the limit, and 1 % more does not.
	rate, err := MaxOpenRate(st, 0.99, 0.06, true, 400_000, 1, 1e-4)
	if err != nil {
		t.Fatal(err)
	}
	at, _ := SimulateOpen(st, rate, true, 400_000, 1)
	above, _ := SimulateOpen(st, rate*1.01, true, 400_000, 1)
	if at.Quantile(0.99) > 0.06 || above.Quantile(0.99) <= 0.06 {
		t.Errorf("max rate %g: p99 %g there, %g at 1%% more; limit 0.06", rate, at.Quantile(0.99), above.Quantile(0.99))
	}
	t.Logf("M/D/4 (S=20ms): highest Poisson rate with p99 <= 60ms: %.2f/s (%.1f%% of W/S)", rate, 100*rate/st.Capacity())
	// The mean: against the exact chain at the answer.
	mrate, err := MaxOpenRate(st, 0, 0.03, true, 1_000_000, 1, 1e-4)
	if err != nil {
		t.Fatal(err)
	}
	exact, _ := MDcMeanResponse(4, mrate, 0.02)
	near(t, "M/D/4 mean at the max rate for mean <= 30ms", exact, 0.03, 0.02)
}

func TestMaxUsers(t *testing.T) {
	st := Station{Workers: 4, Service: 0.02, Exponential: true}
	n, err := MaxUsers(st, 0.08, 0.03)
	if err != nil {
		t.Fatal(err)
	}
	pts, _ := MVA(st, n+1, 0.08)
	if pts[n-1].Mean > 0.03 || pts[n].Mean <= 0.03 {
		t.Errorf("MaxUsers = %d: R(%d) = %g, R(%d) = %g, limit 0.03", n, n, pts[n-1].Mean, n+1, pts[n].Mean)
	}
	t.Logf("W=4 S=20ms Z=80ms: most users with mean R <= 30ms: %d (knee %g)", n, Knee(st, 0.08))
}

func TestBadInput(t *testing.T) {
	if _, err := SimulateOpen(Station{Workers: 0, Service: 1}, 1, true, 100, 1); err == nil {
		t.Error("no workers: want an error")
	}
	if _, err := MVA(Station{Workers: 1, Service: -1}, 3, 1); err == nil {
		t.Error("negative service: want an error")
	}
	if _, err := MDcMeanResponse(2, 100, 0.02); err == nil {
		t.Error("λS >= c: want an error")
	}
}
