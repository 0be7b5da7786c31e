package result

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/sampler"
)

// vrep builds a repetition of n one-second steady intervals: interval i
// has rate(i) actions whose latencies are drawn around lat(i) ms (lognormal,
// σ 0.3), and the system source up.
func vrep(n int, rate func(i int) float64, lat func(i int) float64) *Repetition {
	rng := rand.New(rand.NewPCG(1, 2))
	rep := &Repetition{}
	for i := 0; i < n; i++ {
		var s metrics.ActionSnapshot
		c := int(rate(i))
		s.Count = uint64(c)
		for k := 0; k < c; k++ {
			s.Latency.Record(uint64(1000 * lat(i) * math.Exp(0.3*rng.NormFloat64())))
		}
		rep.Intervals = append(rep.Intervals, Interval{Index: i, StartS: float64(i), DurationS: 1, Phase: "steady",
			UsersMean: 10, Actions: []ActionInterval{FromSnapshot(&s)},
			Counters: []sampler.SourceValues{{Name: "system", Up: true, Values: map[string]float64{"cpus": 2}}}})
	}
	rep.Summaries = Summarize([]string{"a"}, 0, rep.Intervals)
	return rep
}

var vmeta = Meta{Model: "closed", IntervalS: 1, Actions: []string{"a"}}

func check(v *Validity, name string) Check {
	for _, c := range v.Checks {
		if c.Name == name {
			return c
		}
	}
	return Check{}
}

func TestValidSteadyRun(t *testing.T) {
	rep := vrep(40, func(int) float64 { return 2000 }, func(int) float64 { return 2 })
	v := CheckValidity(&vmeta, rep)
	if !v.Valid {
		t.Fatalf("a steady run is not valid: %+v", v.Checks)
	}
	for name, want := range map[string]string{"complete": Pass, "generator": Pass, "steady": Pass, "p99": Pass, "schedule": NA, "counters": Pass} {
		if c := check(v, name); c.Status != want {
			t.Errorf("%s: %s (%s), want %s", name, c.Status, c.Message, want)
		}
	}
	// p99 of lognormal(σ 0.3) around 2 ms is 2·e^(0.3·2.326) ≈ 4.02 ms; its
	// interval is narrow with 80,000 values.
	if p := float64(v.P99Ms); p < 3.9 || p > 4.15 || float64(v.P99HalfMs) > 0.1*p || v.Batches != 20 {
		t.Errorf("p99 %v ± %v from %d batches", v.P99Ms, v.P99HalfMs, v.Batches)
	}
}

func TestValidityFailures(t *testing.T) {
	steadyRate := func(int) float64 { return 2000 }
	steadyLat := func(int) float64 { return 2 }
	for _, tt := range []struct {
		name, check, status, msg string
		rep                      func() *Repetition
		meta                     Meta
	}{
		{"throughput falls 30%", "steady", Fail, "throughput fell",
			func() *Repetition {
				return vrep(40, func(i int) float64 { return 2000 * (1 - 0.3*float64(i)/39) }, steadyLat)
			}, vmeta},
		{"latency rises 50%", "steady", Fail, "latency p50 rose",
			func() *Repetition {
				return vrep(40, steadyRate, func(i int) float64 { return 2 * (1 + 0.5*float64(i)/39) })
			}, vmeta},
		{"too short", "steady", Unknown, "too short to tell",
			func() *Repetition { return vrep(4, steadyRate, steadyLat) }, vmeta},
		// 20 intervals of 40 actions: 800 timed, not 5 batches of 200.
		{"too few actions for a p99", "p99", Unknown, "timed 800 actions, fewer than 5 batches of 200",
			func() *Repetition { return vrep(20, func(int) float64 { return 40 }, steadyLat) }, vmeta},
		{"p99 all over the place", "p99", Fail, "wider than ±10%; a longer phase",
			func() *Repetition {
				return vrep(40, steadyRate, func(i int) float64 { return []float64{1, 6, 2, 9, 1.5, 4}[i%6] })
			}, vmeta},
		{"client-bound", "generator", Fail, "bottleneck in 1 of 40",
			func() *Repetition {
				r := vrep(40, steadyRate, steadyLat)
				r.Intervals[7].Client.Bound, r.Intervals[7].Client.BoundWhy = true, "event loop 0 busy 97%"
				return r
			}, vmeta},
		{"counter gap", "counters", Fail, "system did not answer in 1 of 40",
			func() *Repetition {
				r := vrep(40, steadyRate, steadyLat)
				r.Intervals[3].Counters[0] = sampler.SourceValues{Name: "system", Err: "boom"}
				r.Summaries = Summarize([]string{"a"}, 0, r.Intervals)
				return r
			}, vmeta},
		{"cut short", "complete", Fail, "cut short: stopped",
			func() *Repetition {
				r := vrep(40, steadyRate, steadyLat)
				r.Partial, r.Reason = true, "stopped."
				return r
			}, vmeta},
		{"open model lagging", "schedule", Fail, "against 0.5 ms between arrivals",
			func() *Repetition {
				r := vrep(40, steadyRate, steadyLat)
				r.Intervals[5].Client.LagP99Ms = 3
				return r
			}, Meta{Model: "open", IntervalS: 1, Actions: []string{"a"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := CheckValidity(&tt.meta, tt.rep())
			c := check(v, tt.check)
			if v.Valid || c.Status != tt.status || !strings.Contains(c.Message, tt.msg) {
				t.Errorf("valid %v; %s: %s %q, want %s with %q", v.Valid, tt.check, c.Status, c.Message, tt.status, tt.msg)
			}
		})
	}
	// A small lag on an open model passes.
	r := vrep(40, steadyRate, steadyLat)
	r.Intervals[5].Client.LagP99Ms = 0.2
	if c := check(CheckValidity(&Meta{Model: "open", IntervalS: 1, Actions: []string{"a"}}, r), "schedule"); c.Status != Pass {
		t.Errorf("small lag: %+v", c)
	}
}

// A drift smaller than SteadyChange is steady even when a long phase makes
// it significant.
func TestSmallDriftIsSteady(t *testing.T) {
	rep := vrep(40, func(i int) float64 { return 2000 * (1 - 0.02*float64(i)/39) }, func(int) float64 { return 2 })
	if c := check(CheckValidity(&vmeta, rep), "steady"); c.Status != Pass {
		t.Errorf("2%% drift: %+v", c)
	}
}

// Autocorrelated batches are merged: a slow sine wave over the phase makes
// neighbouring one-interval batches alike.
func TestBatchesLengthenWhenCorrelated(t *testing.T) {
	rep := vrep(40, func(i int) float64 { return 2000 * (1 + 0.1*math.Sin(float64(i)/4)) }, func(int) float64 { return 2 })
	if v := CheckValidity(&vmeta, rep); v.Batches >= 20 {
		t.Errorf("%d batches for a correlated series", v.Batches)
	}
}

// arPhase draws a steady phase of n one-second intervals whose level
// wanders as a stationary AR(1) process on the log scale (coefficient phi,
// marginal sd msd), as a machine's state does: interval i serves
// rate·e^(−a_i) actions whose latencies are lognormal around 2 ms·e^(a_i)
// (shape 0.3). trend adds a steady rise of latency (and fall of
// throughput) of that share from the first interval to the last. The
// long-run p99 of such a phase is 2 ms·e^(2.3263·√(0.3² + msd²)).
func arPhase(rng *rand.Rand, n int, phi, msd, rate, trend float64) *Repetition {
	rep := &Repetition{}
	innov := msd * math.Sqrt(1-phi*phi)
	a := msd * rng.NormFloat64()
	for i := 0; i < n; i++ {
		if i > 0 {
			a = phi*a + innov*rng.NormFloat64()
		}
		lvl := a + math.Log(1+trend*float64(i)/float64(max(1, n-1)))
		var s metrics.ActionSnapshot
		c := int(rate * math.Exp(-lvl))
		s.Count = uint64(c)
		for k := 0; k < c; k++ {
			s.Latency.Record(uint64(2000 * math.Exp(lvl+0.3*rng.NormFloat64())))
		}
		rep.Intervals = append(rep.Intervals, Interval{Index: i, StartS: float64(i), DurationS: 1, Phase: "steady",
			UsersMean: 10, Actions: []ActionInterval{FromSnapshot(&s)},
			Counters: []sampler.SourceValues{{Name: "system", Up: true, Values: map[string]float64{"cpus": 2}}}})
	}
	rep.Summaries = Summarize([]string{"a"}, 0, rep.Intervals)
	return rep
}

// phases runs f on count phases of each length, in parallel, each drawn
// from its own generator.
func phases(lengths []int, count int, seed uint64, f func(rng *rand.Rand, n, i int)) {
	var wg sync.WaitGroup
	work := make(chan [2]int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for job := range work {
				f(rand.New(rand.NewPCG(seed+uint64(job[0]), uint64(job[1]))), job[0], job[1])
			}
		}()
	}
	for _, n := range lengths {
		for i := 0; i < count; i++ {
			work <- [2]int{n, i}
		}
	}
	close(work)
	wg.Wait()
}

// A stationary phase whose intervals are autocorrelated (AR(1), φ 0.7,
// marginal sd 5 % and 7 %) is steady: it may wander, and a short one
// wanders far from its start, but it has no trend. Over 1,500 simulated
// phases of 10 to 120 intervals, at most 5 % are called not steady (the
// plain Mann–Kendall test at 0.05 on each of two measures called 8 to 22 %
// of them, most at short lengths).
func TestSteadyFalseAlarmsAR1(t *testing.T) {
	lengths := []int{10, 20, 40, 60, 120}
	count := 150 // a rate of 5 % needs them, -short or not (about 3 s)
	for _, msd := range []float64{0.05, 0.07} {
		var mu sync.Mutex
		alarms := map[int]int{}
		total := 0
		phases(lengths, count, 100, func(rng *rand.Rand, n, _ int) {
			v := CheckValidity(&vmeta, arPhase(rng, n, 0.7, msd, 300, 0))
			c := check(v, "steady")
			mu.Lock()
			defer mu.Unlock()
			if c.Status == Unknown {
				t.Errorf("%d intervals: %s", n, c.Message)
			}
			if c.Status == Fail {
				alarms[n]++
				total++
			}
		})
		all := len(lengths) * count
		t.Logf("AR(1) φ 0.7, sd %.0f%%: not steady in %d of %d phases (%.1f%%); by length %v", 100*msd, total, all, 100*float64(total)/float64(all), alarms)
		if float64(total) > 0.05*float64(all) {
			t.Errorf("sd %.0f%%: %d of %d stationary phases called not steady", 100*msd, total, all)
		}
	}
}

// The same noise over a phase with a real trend: latency rising by 30 %
// from its start to its end (throughput falling with it) is called not
// steady in most phases of 40 intervals and more (and nearly always when
// the machine is quieter: sd 3 %, φ 0.5, a 15 % rise).
func TestSteadyFindsTrendsAR1(t *testing.T) {
	count := 100
	for _, tt := range []struct {
		n              int
		phi, msd, rise float64
		least          float64
	}{{40, 0.7, 0.05, 0.3, 0.6}, {60, 0.7, 0.05, 0.3, 0.8}, {120, 0.7, 0.05, 0.3, 0.95}, {40, 0.5, 0.03, 0.15, 0.85}, {60, 0.5, 0.03, 0.15, 0.95}} {
		var found atomic.Int64
		phases([]int{tt.n}, count, 200, func(rng *rand.Rand, n, _ int) {
			c := check(CheckValidity(&vmeta, arPhase(rng, n, tt.phi, tt.msd, 300, tt.rise)), "steady")
			if c.Status == Fail && strings.Contains(c.Message, "latency p50 rose") {
				found.Add(1)
			}
		})
		share := float64(found.Load()) / float64(count)
		t.Logf("%d intervals, φ %.1f sd %.0f%%, latency +%.0f%%: not steady in %.0f%% of %d phases", tt.n, tt.phi, 100*tt.msd, 100*tt.rise, 100*share, count)
		if share < tt.least {
			t.Errorf("%d intervals, +%.0f%%: trend found in %.0f%% of phases, want %.0f%%", tt.n, 100*tt.rise, 100*share, 100*tt.least)
		}
	}
}

// The p99's 95 % confidence interval holds the true long-run p99 of an
// AR(1) phase (φ 0.7, sd 5 % and 7 %) in at least 93 % of 1,200 phases of
// 20 to 120 intervals (batch means without allowing for the batches'
// correlation: 74 to 88 %).
func TestP99CoverageAR1(t *testing.T) {
	lengths := []int{20, 40, 60, 120}
	count := 150 // a rate of 5 % needs them, -short or not (about 3 s)
	all, covered := 0, 0
	for _, msd := range []float64{0.05, 0.07} {
		truth := 2 * math.Exp(2.3263478740408408*math.Sqrt(0.09+msd*msd))
		var mu sync.Mutex
		cover := map[int]int{}
		phases(lengths, count, 300, func(rng *rand.Rand, n, _ int) {
			v := CheckValidity(&vmeta, arPhase(rng, n, 0.7, msd, 300, 0))
			half := float64(v.P99HalfMs)
			mu.Lock()
			defer mu.Unlock()
			if math.IsNaN(half) {
				t.Errorf("%d intervals: no p99 interval: %+v", n, check(v, "p99"))
				return
			}
			if math.Abs(float64(v.P99Ms)-truth) <= half {
				cover[n]++
			}
		})
		for _, n := range lengths {
			t.Logf("sd %.0f%%, %3d intervals: the interval holds the true p99 in %.1f%% of %d phases", 100*msd, n, 100*float64(cover[n])/float64(count), count)
			covered += cover[n]
			all += count
		}
	}
	t.Logf("in all: %.1f%% of %d phases", 100*float64(covered)/float64(all), all)
	if float64(covered) < 0.93*float64(all) {
		t.Errorf("the p99's interval holds the true p99 in %d of %d phases", covered, all)
	}
}
