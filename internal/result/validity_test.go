package result

import (
	"math"
	"math/rand/v2"
	"strings"
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
		{"too few actions for a p99", "p99", Unknown, "fewer than 200",
			func() *Repetition { return vrep(20, func(int) float64 { return 50 }, steadyLat) }, vmeta},
		{"p99 all over the place", "p99", Fail, "known only to",
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
