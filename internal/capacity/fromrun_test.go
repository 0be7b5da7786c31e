package capacity

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/threshold"
)

// run makes a one-action run of 1-second steady intervals, the i-th with
// n actions of latency lat(i) ms each.
func fakeRun(intervals, n int, lat func(i int) float64, bound int) *result.Run {
	var ivs []result.Interval
	for i := range intervals {
		var a result.ActionInterval
		for range n {
			a.Latency.Record(uint64(lat(i) * 1000))
			a.Service.Record(uint64(lat(i) * 1000))
		}
		a.Count = uint64(n)
		iv := result.Interval{Index: i, StartS: float64(i), DurationS: 1, Phase: "steady", ActiveUsers: 10, UsersMean: 10,
			Actions: []result.ActionInterval{a}, Client: result.Client{CPUCores: 0.5, Capacity: 2}}
		if i < bound {
			iv.Client.Bound, iv.Client.BoundWhy = true, "generator CPU 90% of 2 cores"
		}
		ivs = append(ivs, iv)
	}
	names := []string{"get"}
	return &result.Run{Meta: result.Meta{Actions: names}, Repetitions: []result.Repetition{{
		Intervals: ivs, Summaries: result.Summarize(names, 0, ivs)}}}
}

func TestFromRun(t *testing.T) {
	cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p99 < 50ms"), mustSLO(t, "errors == 0")}, Dimension: Rate, Min: 1, Max: 10}
	req := Request{Kind: Bisect, Load: 100, Duration: 10 * time.Second}
	// Steady: alternating 20 and 22 ms, 200 actions a second.
	st := FromRun(cfg, req, fakeRun(10, 200, func(i int) float64 { return 20 + 2*float64(i%2) }, 0), 12*time.Second)
	if !st.Valid() {
		t.Fatalf("a steady step is invalid: %v", st.Invalid)
	}
	if f := st.SLOs[0]; f.Value < 21.9 || f.Value > 22.1 || !(f.HalfWidth > 0) || f.HalfWidth > 2 {
		t.Errorf("p99 figure %+v, want 22 ms with a small positive half-width", f)
	}
	if f := st.SLOs[1]; f.Value != 0 || f.HalfWidth != 0 {
		t.Errorf("errors figure %+v, want an exact 0", f)
	}
	if st.Throughput != 200 || st.Offered != 100 || st.Elapsed != 12*time.Second || st.Counters.GeneratorCPU != 0.25 {
		t.Errorf("throughput %g offered %g elapsed %s generator %g", st.Throughput, st.Offered, st.Elapsed, st.Counters.GeneratorCPU)
	}
	// Client-bound intervals make the step invalid.
	st = FromRun(cfg, req, fakeRun(10, 200, func(int) float64 { return 20 }, 2), time.Second)
	if !st.has(GeneratorBound) {
		t.Errorf("2 client-bound intervals: invalid %v, want generator-bound", st.Invalid)
	}
	// Too few actions for a p99: 10 × 50 = 500 < 1,000.
	st = FromRun(cfg, req, fakeRun(10, 50, func(int) float64 { return 20 }, 0), time.Second)
	if !st.has(FewSamples) {
		t.Errorf("500 actions for a p99: invalid %v, want few samples", st.Invalid)
	}
	// A latency that climbs through the step: unsteady, rising.
	st = FromRun(cfg, req, fakeRun(10, 200, func(i int) float64 { return 20 + 10*float64(i) }, 0), time.Second)
	if !st.has(Unsteady) || !st.Invalid[0].Rising {
		t.Errorf("a climbing p99: invalid %v, want unsteady and rising", st.Invalid)
	}
	// Nothing recorded: partial, figures missing.
	st = FromRun(cfg, req, &result.Run{}, time.Second)
	if !st.has(Partial) || len(st.SLOs) != 2 {
		t.Errorf("an empty run: %+v", st)
	}
}

// acts is one action's interval: n actions of latency lat ms each.
func acts(n int, lat float64) result.ActionInterval {
	var a result.ActionInterval
	for range n {
		a.Latency.Record(uint64(lat * 1000))
		a.Service.Record(uint64(lat * 1000))
	}
	a.Count = uint64(n)
	return a
}

// mkRun makes a run of the given actions (the last events of them the
// driver's events) from 1-second intervals, numbered in order.
func mkRun(model string, names []string, events int, ivs []result.Interval) *result.Run {
	for i := range ivs {
		ivs[i].Index, ivs[i].StartS, ivs[i].DurationS = i, float64(i), 1
		ivs[i].ActiveUsers, ivs[i].UsersMean = 10, 10
		if ivs[i].Client.Capacity == 0 {
			ivs[i].Client.CPUCores, ivs[i].Client.Capacity = 0.5, 2
		}
	}
	return &result.Run{Meta: result.Meta{Actions: names, Events: names[len(names)-events:], Model: model, IntervalS: 1},
		Repetitions: []result.Repetition{{Intervals: ivs, Summaries: result.Summarize(names, events, ivs)}}}
}

// A percentile judged on one action needs that action's samples: 10 s of
// 200 gets and 5 puts a second is 2,050 actions, but only 50 puts, too
// few for put.p99 (1,000); and an event (deliver) is counted apart from
// the users' actions.
func TestFromRunFewSamplesOfTheSLOsPopulation(t *testing.T) {
	var ivs []result.Interval
	for range 10 {
		ivs = append(ivs, result.Interval{Phase: "steady", Actions: []result.ActionInterval{acts(200, 10), acts(5, 10), acts(5, 100)}})
	}
	run := mkRun("closed", []string{"get", "put", "deliver"}, 1, ivs)
	req := Request{Kind: Bisect, Load: 10, Duration: 10 * time.Second}
	for _, c := range []struct {
		slo  string
		want bool
	}{{"p99 < 50ms", false}, {"get.p99 < 50ms", false}, {"put.p99 < 50ms", true}, {"deliver.p99 < 500ms", true}, {"put.p50 < 50ms", false}} {
		cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, c.slo)}, Dimension: Users, Min: 1, Max: 100}
		st := FromRun(cfg, req, run, time.Second)
		if st.has(FewSamples) != c.want {
			t.Errorf("%s: few samples %v (invalid %v), want %v", c.slo, st.has(FewSamples), st.Invalid, c.want)
		}
	}
}

// A figure that drifts within a step matters only when the drift could
// change the verdict: a p99 creeping from 20 to 29 ms under a limit of
// 200 ms is a valid step (a repeat would tell nothing new); the same
// creep under a limit of 32 ms could cross it (invalid, rising); a figure
// falling from above the limit towards it could pass (invalid, not
// rising); one falling far below it passes anyway.
func TestFromRunDriftMattersOnlyNearTheLimit(t *testing.T) {
	req := Request{Kind: Bisect, Load: 10, Duration: 10 * time.Second}
	for _, c := range []struct {
		slo     string
		lat     func(i int) float64
		invalid bool
		rising  bool
	}{
		{"p99 < 200ms", func(i int) float64 { return 20 + float64(i) }, false, false},
		{"p99 < 32ms", func(i int) float64 { return 20 + float64(i) }, true, true},
		{"p99 < 200ms", func(i int) float64 { return 300 + 10*float64(i) }, true, true}, // overload
		{"p99 < 200ms", func(i int) float64 { return 250 - 5*float64(i) }, true, false},
		{"p99 < 200ms", func(i int) float64 { return 100 - 5*float64(i) }, false, false},
		{"mean < 200ms", func(i int) float64 { return 20 + float64(i) }, false, false},
	} {
		cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, c.slo)}, Dimension: Rate, Min: 1, Max: 100}
		st := FromRun(cfg, req, fakeRun(10, 200, c.lat, 0), time.Second)
		if st.has(Unsteady) != c.invalid || (c.invalid && st.Invalid[0].Rising != c.rising) {
			t.Errorf("%s, from %g to %g ms: invalid %v, want unsteady %v rising %v", c.slo, c.lat(0), c.lat(9), st.Invalid, c.invalid, c.rising)
		}
	}
}

// An SLO on another phase than the steady one gets its half-width from
// that phase: here the ramp-up alternates 10 and 90 ms (its mean is 50 ±
// about 30 ms over sections) while the steady phase holds 20 ms exactly.
func TestFromRunHalfWidthOfTheSLOsPhase(t *testing.T) {
	var ivs []result.Interval
	for i := range 10 {
		ivs = append(ivs, result.Interval{Phase: "ramp-up", Actions: []result.ActionInterval{acts(100, 10+80*float64(i%2))}})
	}
	for range 10 {
		ivs = append(ivs, result.Interval{Phase: "steady", Actions: []result.ActionInterval{acts(100, 20)}})
	}
	run := mkRun("closed", []string{"get"}, 0, ivs)
	req := Request{Kind: Bisect, Load: 10, Duration: 10 * time.Second}
	for _, c := range []struct {
		slo             string
		value, hlo, hhi float64
	}{
		{"mean < 100ms", 20, 0, 0.01},
		{"ramp-up: mean < 100ms", 50, 10, 60},
		{"all: mean < 100ms", 35, 5, 40},
		{"*: mean < 100ms", 50, 10, 60}, // the worst phase, with its own noise
	} {
		cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, c.slo)}, Dimension: Users, Min: 1, Max: 100}
		st := FromRun(cfg, req, run, time.Second)
		f := st.SLOs[0]
		if math.Abs(f.Value-c.value) > 0.5 || !(f.HalfWidth >= c.hlo && f.HalfWidth <= c.hhi) {
			t.Errorf("%s: figure %g ± %g, want %g with a half-width in [%g, %g]", c.slo, f.Value, f.HalfWidth, c.value, c.hlo, c.hhi)
		}
	}
}

// A step in which no action finished has no figure: it is invalid
// (missing), never a clear failure of the SLO.
func TestFromRunNothingFinished(t *testing.T) {
	var ivs []result.Interval
	for range 10 {
		ivs = append(ivs, result.Interval{Phase: "steady", Actions: []result.ActionInterval{{}}})
	}
	run := mkRun("closed", []string{"get"}, 0, ivs)
	cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p95 < 1s")}, Dimension: Users, Min: 1, Max: 100}
	st := FromRun(cfg, Request{Kind: Bracket, Load: 50, Duration: 10 * time.Second}, run, time.Second)
	if st.Valid() || !st.has(Missing) {
		t.Fatalf("no action finished: invalid %v, want missing", st.Invalid)
	}
	// The search runs such a load again, and never takes it for a failure.
	steps := []Step{st}
	steps[0].Kind = Bracket
	d := Decide(Config{SLOs: cfg.SLOs, Dimension: Users, Min: 50, Max: 100, NoWarmUp: true}, steps)
	if d.Done || d.Next.Kind != Repeat || d.Next.Load != 50 {
		t.Fatalf("after a step with nothing finished: %+v, want it repeated", d)
	}
}

// FromRun takes the run's validity verdict: the generator lagging its
// schedule in an open model is the generator's limit; a stored verdict is
// believed (here it says the generator was the bottleneck although no
// interval is marked); a counter source missing makes an SLO on the
// server's CPU unmeasured.
func TestFromRunUsesTheValidityVerdict(t *testing.T) {
	steady := func(lag float64) []result.Interval {
		var ivs []result.Interval
		for range 10 {
			ivs = append(ivs, result.Interval{Phase: "steady", Actions: []result.ActionInterval{acts(200, 10)},
				Client: result.Client{CPUCores: 0.5, Capacity: 2, LagP99Ms: lag}})
		}
		return ivs
	}
	cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p95 < 1s")}, Dimension: Rate, Min: 1, Max: 1000}
	req := Request{Kind: Bisect, Load: 200, Duration: 10 * time.Second}
	// 200 arrivals/s are 5 ms apart: a lag of 1 ms is fine, of 20 ms not.
	if st := FromRun(cfg, req, mkRun("open", []string{"get"}, 0, steady(1)), time.Second); !st.Valid() {
		t.Errorf("lag 1 ms: invalid %v", st.Invalid)
	}
	if st := FromRun(cfg, req, mkRun("open", []string{"get"}, 0, steady(20)), time.Second); !st.has(GeneratorBound) {
		t.Errorf("lag 20 ms at 200/s: invalid %v, want generator-bound", st.Invalid)
	}
	run := mkRun("open", []string{"get"}, 0, steady(1))
	run.Repetitions[0].Validity = &result.Validity{Phase: "steady", Checks: []result.Check{
		{Name: "generator", Status: result.Fail, Message: "the load generator was the bottleneck in 3 of 10 intervals"}}}
	if st := FromRun(cfg, req, run, time.Second); !st.has(GeneratorBound) || !strings.Contains(st.Invalid[0].Why, "3 of 10") {
		t.Errorf("a stored verdict of generator-bound: invalid %v", st.Invalid)
	}
	// A counter source down in 2 intervals.
	ivs := steady(1)
	for i := range ivs {
		ivs[i].Counters = []sampler.SourceValues{{Name: "system", Up: i >= 2, Values: map[string]float64{"cpus": 2, "cpu_user_seconds_total": 1}}}
	}
	run = mkRun("open", []string{"get"}, 0, ivs)
	if st := FromRun(cfg, req, run, time.Second); !st.Valid() {
		t.Errorf("counters missing, SLO on latency: invalid %v, want valid", st.Invalid)
	}
	cfg.SLOs = append(cfg.SLOs, mustSLO(t, "server_cpu < 80%"))
	if st := FromRun(cfg, req, run, time.Second); !st.has(Missing) {
		t.Errorf("counters missing, SLO on the server's CPU: invalid %v, want missing", st.Invalid)
	}
}

// The server's CPU share is over the CPUs it may use: a server pinned to
// one CPU of two (taskset; process_cpus 1) busy 0.95 of a core is at 95 %
// and named as the first limit; the same server free to use both is at
// 48 %, and nothing is named. (The intervals hold each counter as a rate.)
func TestFromRunServerCPUOfThePinnedServer(t *testing.T) {
	mk := func(pinned bool) Step {
		var ivs []result.Interval
		for range 10 {
			proc := map[string]float64{"process_cpu_user_seconds_total": 0.75, "process_cpu_system_seconds_total": 0.2,
				"process_count": 2}
			if pinned {
				proc["process_cpus"] = 1
			}
			ivs = append(ivs, result.Interval{Phase: "steady", Actions: []result.ActionInterval{acts(200, 10)},
				Counters: []sampler.SourceValues{
					{Name: "system", Up: true, Values: map[string]float64{"cpus": 2, "cpu_user_seconds_total": 1.2}},
					{Name: "process 812", Up: true, Values: proc}}})
		}
		cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p95 < 1s")}, Dimension: Rate, Min: 1, Max: 1000}
		return FromRun(cfg, Request{Kind: Bisect, Load: 200, Duration: 10 * time.Second}, mkRun("open", []string{"get"}, 0, ivs), time.Second)
	}
	for _, c := range []struct {
		pinned bool
		share  float64
		limit  string
	}{{true, 0.95, "server CPU"}, {false, 0.475, "none measured"}} {
		st := mk(c.pinned)
		if got := st.Counters.ServerCores; math.Abs(got-0.95) > 1e-9 {
			t.Fatalf("pinned %v: server cores %g, want 0.95", c.pinned, got)
		}
		if got := st.Counters.ServerCPU; math.Abs(got-c.share) > 1e-9 {
			t.Errorf("pinned %v: server CPU %g, want %g", c.pinned, got, c.share)
		}
		cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p95 < 1s")}, Dimension: Rate, Min: 1, Max: 1000, NoWarmUp: true}
		a := analyze(cfg, []Step{st})
		if got := firstLimit(a, nil).Resource; got != c.limit {
			t.Errorf("pinned %v: first limit %q, want %q", c.pinned, got, c.limit)
		}
	}
}
