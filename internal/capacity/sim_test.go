package capacity

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/capacity/oracle"
	"github.com/throng-io/throng/internal/threshold"
)

// simSystem is a system under test made of a known curve: the true SLO
// figure and throughput at each load (from the oracles), measured with
// noise, with now and then an invalid step, and a load generator that
// saturates at genLimit. Its steps are what a runner would report, with a
// 95 % half-width from 6 sections, as FromRun forms it.
type simSystem struct {
	figure     func(load float64) float64 // the true SLO figure (steady state)
	throughput func(load float64) float64
	overload   float64 // from this load on the figure keeps rising (an open queue past saturation)
	noise      float64 // relative sd of one step's figure at the reference length
	ref        time.Duration
	genLimit   float64 // the generator is the bottleneck from here on
	flaky      float64 // chance that a step is invalid for a passing reason
	cpuPerUnit float64 // server CPU share per unit of throughput (0: not measured)
	rng        *rand.Rand
}

const sections = 6

func (s *simSystem) run(r Request) Step {
	st := Step{Request: r, Elapsed: r.Duration + 2*time.Second, Counters: NaNCounters()}
	scale := math.Sqrt(float64(s.ref) / float64(r.Duration))
	f := s.figure(r.Load)
	var secs []float64
	for range sections {
		secs = append(secs, f*(1+s.noise*scale*math.Sqrt(sections)*s.rng.NormFloat64()))
	}
	m, _ := meanVar(secs)
	st.SLOs = []Figure{{Value: m, HalfWidth: SectionHalfWidth(secs)}}
	st.Throughput = s.throughput(r.Load) * (1 + 0.01*s.rng.NormFloat64())
	st.Counters.GeneratorCPU = 0.5 * r.Load / s.genLimit
	if s.cpuPerUnit > 0 {
		st.Counters.ServerCPU = math.Min(1, s.cpuPerUnit*st.Throughput)
		st.Counters.ServerCores = 2 * st.Counters.ServerCPU
	}
	switch {
	case r.Load >= s.genLimit:
		st.Invalid = append(st.Invalid, Invalid{Kind: GeneratorBound, Why: "generator CPU over 85 %"})
	case r.Load >= s.overload && s.rng.Float64() < 0.7:
		st.Invalid = append(st.Invalid, Invalid{Kind: Unsteady, Rising: true, Why: "p99 rose through the step"})
	case s.rng.Float64() < s.flaky:
		kinds := []InvalidKind{GeneratorBound, Unsteady, FewSamples}
		st.Invalid = append(st.Invalid, Invalid{Kind: kinds[s.rng.IntN(3)], Why: "a passing disturbance"})
	}
	return st
}

// search runs a search against a system to its end.
func search(t *testing.T, cfg Config, run func(Request) Step) (Answer, []Step) {
	t.Helper()
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
	var steps []Step
	for range 200 {
		d := Decide(cfg, steps)
		if d.Done {
			return *d.Answer, steps
		}
		if again := Decide(cfg, steps); again != d {
			t.Fatalf("Decide is not a function of its input: %+v then %+v", d, again)
		}
		steps = append(steps, run(d.Next))
	}
	t.Fatal("the search did not end in 200 steps")
	return Answer{}, nil
}

func mustSLO(t testing.TB, text string) threshold.Threshold {
	t.Helper()
	th, err := threshold.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

// openSystem is W workers of mean service S under Poisson arrivals at a
// rate, judged on the p99 of the response time: S plus the p99 of the
// Erlang C wait, P(Wq > t) = C·exp(−(W/S − λ)t). Its truth is the rate at
// which that p99 is the limit.
func openSystem(w int, s float64) (figure func(float64) float64, truth func(limit float64) float64) {
	figure = func(rate float64) float64 {
		if rate >= float64(w)/s {
			return math.Inf(1)
		}
		c := oracle.ErlangC(w, rate, 1/s)
		wait := 0.0
		if c > 0.01 {
			wait = math.Log(c/0.01) / (float64(w)/s - rate)
		}
		return 1000 * (s + wait) // ms, the threshold's unit
	}
	truth = func(limit float64) float64 {
		lo, hi := 0.0, float64(w)/s
		for hi-lo > 1e-9*hi {
			m := (lo + hi) / 2
			if figure(m) <= limit {
				lo = m
			} else {
				hi = m
			}
		}
		return lo
	}
	return figure, truth
}

// checkAnswer checks what holds of every answer: no figure from an
// invalid step, an upper end that failed.
func checkAnswer(t *testing.T, ans Answer, steps []Step) {
	t.Helper()
	if ans.Below >= 0 && !steps[ans.Below].Valid() {
		t.Fatalf("the lower end of the bracket is the invalid step %d: %+v", ans.Below, steps[ans.Below])
	}
	if ans.Above >= 0 && !steps[ans.Above].Valid() && !steps[ans.Above].has(GeneratorBound) && !steps[ans.Above].has(Unsteady) {
		t.Fatalf("the upper end of the bracket is the invalid step %d: %+v", ans.Above, steps[ans.Above])
	}
	if !math.IsNaN(ans.Capacity) && (ans.Capacity < ans.Low || ans.Capacity > ans.High) {
		t.Fatalf("capacity %g outside its interval [%g, %g]", ans.Capacity, ans.Low, ans.High)
	}
}

type outcome struct {
	steps  int
	err    float64 // relative error of the capacity
	covers bool
	status Status
}

func summarize(t *testing.T, name string, outs []outcome) {
	t.Helper()
	var steps, errs []float64
	covered, found, good := 0, 0, 0
	byStatus := map[Status]int{}
	for _, o := range outs {
		byStatus[o.status]++
		if o.status == Found && math.Abs(o.err) <= 0.05 && o.steps <= 10 {
			good++
		}
		steps = append(steps, float64(o.steps))
		if o.status == Found {
			found++
			errs = append(errs, math.Abs(o.err))
		}
		if o.covers {
			covered++
		}
	}
	slices.Sort(steps)
	slices.Sort(errs)
	q := func(xs []float64, p float64) float64 {
		if len(xs) == 0 {
			return math.NaN()
		}
		return xs[min(len(xs)-1, int(p*float64(len(xs))))]
	}
	t.Logf("%s: %d seeds; found %d; steps median %g, p90 %g, p99 %g, max %g; |error| median %.2f %%, p90 %.2f %%, p99 %.2f %%, max %.2f %%; CI covered the truth in %d (%.1f %%)",
		name, len(outs), found, q(steps, .5), q(steps, .9), q(steps, .99), steps[len(steps)-1],
		100*q(errs, .5), 100*q(errs, .9), 100*q(errs, .99), 100*q(errs, 1), covered, 100*float64(covered)/float64(len(outs)))
	t.Logf("%s: ends %v; found within ±5 %% in ≤ 10 steps: %d", name, byStatus, good)
}

func TestSearchOpenRate(t *testing.T) {
	figure, truthOf := openSystem(4, 0.02)
	const limit = 60.0
	truth := truthOf(limit)
	var outs []outcome
	for seed := range uint64(400) {
		sys := &simSystem{figure: figure, throughput: func(r float64) float64 { return math.Min(r, 200) },
			overload: 200, noise: 0.02, ref: 20 * time.Second, genLimit: math.Inf(1), flaky: 0.05,
			rng: rand.New(rand.NewPCG(seed, 1))}
		cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p99 < 60ms")}, Dimension: Rate,
			Min: 25, Max: 2000, StepDuration: 20 * time.Second}
		ans, steps := search(t, cfg, sys.run)
		o := outcome{steps: len(steps), status: ans.Status, err: ans.Capacity/truth - 1,
			covers: ans.Low <= truth && truth <= ans.High}
		outs = append(outs, o)
		checkAnswer(t, ans, steps)
	}
	summarize(t, "open rate, p99 < 60 ms, M/M/4 S=20ms", outs)
	assertOutcomes(t, outs, 0.90, 0.95)
}

// closedSystem is N closed users thinking Z in front of W exponential
// workers of mean S, judged on the mean response time: exact by MVA (the
// product form). Its truth is the most users meeting the limit.
func closedSystem(t *testing.T, st oracle.Station, think float64) (figure, throughput func(float64) float64) {
	cache := map[int]oracle.MVAPoint{}
	at := func(n float64) oracle.MVAPoint {
		k := int(n)
		if pt, ok := cache[k]; ok {
			return pt
		}
		pt, err := oracle.ProductForm(st, k, think)
		if err != nil {
			t.Fatal(err)
		}
		cache[k] = pt
		return pt
	}
	return func(n float64) float64 { return 1000 * at(n).Mean }, func(n float64) float64 { return at(n).Throughput }
}

func TestSearchClosedUsers(t *testing.T) {
	st := oracle.Station{Workers: 8, Service: 0.02, Exponential: true}
	const think = 0.5
	figure, thr := closedSystem(t, st, think)
	truth, err := oracle.MaxUsers(st, think, 0.030)
	if err != nil {
		t.Fatal(err)
	}
	var outs []outcome
	for seed := range uint64(400) {
		sys := &simSystem{figure: figure, throughput: thr, overload: math.Inf(1), noise: 0.01, ref: 20 * time.Second,
			genLimit: math.Inf(1), flaky: 0.05, cpuPerUnit: 0.002, rng: rand.New(rand.NewPCG(seed, 2))}
		cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "mean < 30ms")}, Dimension: Users,
			Min: 25, Max: 10000, StepDuration: 20 * time.Second}
		ans, steps := search(t, cfg, sys.run)
		checkAnswer(t, ans, steps)
		outs = append(outs, outcome{steps: len(steps), status: ans.Status, err: ans.Capacity/float64(truth) - 1,
			covers: ans.Low <= float64(truth) && float64(truth) <= ans.High})
		if seed == 0 {
			t.Logf("truth %d users (knee %.0f): %s", truth, oracle.Knee(st, think), ans.Statement)
		}
	}
	summarize(t, "closed users, mean < 30 ms, 8 workers S=20ms Z=0.5s", outs)
	assertOutcomes(t, outs, 0.90, 0.95)
}

// assertOutcomes checks a share of the searches found the capacity within
// ±5 % in at most 10 steps, and that the intervals covered the truth at
// least at the rate given.
func assertOutcomes(t *testing.T, outs []outcome, good, coverage float64) {
	t.Helper()
	n, covered := 0, 0
	for _, o := range outs {
		if o.status == Found && math.Abs(o.err) <= 0.05 && o.steps <= 10 {
			n++
		}
		if o.covers {
			covered++
		}
	}
	if float64(n) < good*float64(len(outs)) {
		t.Errorf("%d of %d searches found the capacity within ±5 %% in ≤ 10 steps, want %.0f %%", n, len(outs), 100*good)
	}
	if float64(covered) < coverage*float64(len(outs)) {
		t.Errorf("the 95 %% intervals covered the truth in %d of %d searches", covered, len(outs))
	}
}

// A noisy system: one step's p99 varies by 6 % (its 95 % interval is
// ±15 %, wider than the precision in load). The search lengthens steps,
// may not reach ±5 %, and must say so; its intervals must still cover.
func TestSearchNoisy(t *testing.T) {
	figure, truthOf := openSystem(4, 0.02)
	truth := truthOf(60)
	var outs []outcome
	for seed := range uint64(400) {
		sys := &simSystem{figure: figure, throughput: func(r float64) float64 { return math.Min(r, 200) },
			overload: 200, noise: 0.06, ref: 20 * time.Second, genLimit: math.Inf(1), flaky: 0.05,
			rng: rand.New(rand.NewPCG(seed, 3))}
		cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p99 < 60ms")}, Dimension: Rate,
			Min: 25, Max: 2000, StepDuration: 20 * time.Second}
		ans, steps := search(t, cfg, sys.run)
		checkAnswer(t, ans, steps)
		o := outcome{steps: len(steps), status: ans.Status, err: ans.Capacity/truth - 1,
			covers: ans.Low <= truth && truth <= ans.High}
		outs = append(outs, o)
		if o.status == Found && ans.Reach > 0.05 {
			t.Errorf("seed %d: found, but the interval reaches ±%.1f %%", seed, 100*ans.Reach)
		}
		if o.status != Found && (o.status != Imprecise && o.status != Budget) {
			t.Errorf("seed %d: ended %s: %s", seed, o.status, ans.Statement)
		}
	}
	summarize(t, "noisy open rate (6 % per step)", outs)
	assertOutcomes(t, outs, 0, 0.95)
}

// The generator saturates at 80/s, below the server's capacity (117/s):
// the search must say the generator was the limit and give only a lower
// bound, never a capacity.
func TestSearchGeneratorLimited(t *testing.T) {
	figure, _ := openSystem(4, 0.02)
	for seed := range uint64(100) {
		sys := &simSystem{figure: figure, throughput: func(r float64) float64 { return math.Min(r, 200) },
			overload: 200, noise: 0.02, ref: 20 * time.Second, genLimit: 80, flaky: 0.05,
			rng: rand.New(rand.NewPCG(seed, 4))}
		cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p99 < 60ms")}, Dimension: Rate,
			Min: 10, Max: 2000, StepDuration: 20 * time.Second}
		ans, steps := search(t, cfg, sys.run)
		checkAnswer(t, ans, steps)
		if ans.Status != GeneratorLimited || !math.IsNaN(ans.Capacity) || !math.IsInf(ans.High, 1) {
			t.Fatalf("seed %d: %s (capacity %g, high %g), want generator-limited and no capacity", seed, ans.Statement, ans.Capacity, ans.High)
		}
		if ans.Low >= 80 || ans.Low < 80*0.9 {
			t.Errorf("seed %d: lower bound %g, want just under the generator's limit 80", seed, ans.Low)
		}
		if ans.FirstLimit.Resource != "generator" {
			t.Errorf("seed %d: first limit %v, want the generator", seed, ans.FirstLimit)
		}
		if seed == 0 {
			t.Log(ans.Statement)
		}
	}
}

// A budget of 6 steps cannot bracket and bisect to ±5 %: the answer is
// the best bracket, which must still hold the truth, marked as such.
func TestSearchBudget(t *testing.T) {
	figure, truthOf := openSystem(4, 0.02)
	truth := truthOf(60)
	sys := &simSystem{figure: figure, throughput: func(r float64) float64 { return math.Min(r, 200) },
		overload: 200, noise: 0.02, ref: 20 * time.Second, genLimit: math.Inf(1),
		rng: rand.New(rand.NewPCG(5, 5))}
	cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p99 < 60ms")}, Dimension: Rate,
		Min: 25, Max: 2000, StepDuration: 20 * time.Second, MaxSteps: 6}
	ans, steps := search(t, cfg, sys.run)
	checkAnswer(t, ans, steps)
	if ans.Status != Budget || len(steps) != 6 || !(ans.Low <= truth && truth <= ans.High) || ans.Reach <= 0.05 {
		t.Fatalf("%d steps: %s [%g, %g], want budget spent after 6 with a bracket around %g", len(steps), ans.Statement, ans.Low, ans.High, truth)
	}
	t.Log(ans.Statement)
	// The time budget too: steps of 20 s (22 s with their ramps) in 90 s.
	cfg.MaxSteps, cfg.MaxTime = 0, 90*time.Second
	ans, steps = search(t, cfg, sys.run)
	if ans.Status != Budget || ans.Elapsed > cfg.MaxTime || len(steps) != 4 {
		t.Fatalf("%d steps in %s: %s, want the time budget spent after 4", len(steps), ans.Elapsed, ans.Statement)
	}
}

// The SLO fails at --min, and holds at --max.
func TestSearchEnds(t *testing.T) {
	figure, _ := openSystem(4, 0.02)
	sys := &simSystem{figure: figure, throughput: func(r float64) float64 { return math.Min(r, 200) },
		overload: 200, noise: 0.02, ref: 20 * time.Second, genLimit: math.Inf(1), rng: rand.New(rand.NewPCG(6, 6))}
	cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p99 < 60ms")}, Dimension: Rate,
		Min: 150, Max: 2000, StepDuration: 20 * time.Second}
	if ans, _ := search(t, cfg, sys.run); ans.Status != FailsAtMin || !math.IsNaN(ans.Capacity) {
		t.Errorf("min 150/s: %s, want fails at min", ans.Statement)
	}
	// At a --min where the SLO holds but within its noise, the search
	// cannot tell: it ends there, and does not say the SLO fails.
	_, truthOf := openSystem(4, 0.02)
	cfg.Min = 0.997 * truthOf(60)
	if ans, _ := search(t, cfg, sys.run); ans.Status != FailsAtMin || !strings.Contains(ans.Statement, "not clearly met at --min") {
		t.Errorf("min %.1f/s, just under the truth: %s, want not clearly met at min", cfg.Min, ans.Statement)
	}
	cfg.Min, cfg.Max = 10, 50
	if ans, _ := search(t, cfg, sys.run); ans.Status != AboveMax || ans.Low != 50 {
		t.Errorf("max 50/s: %s, want above max", ans.Statement)
	}
}

// An invalid step is never an end of the bracket, even when its figures
// look like the best answer: here every step above 100/s that is not
// invalid fails, and the invalid ones pass with flying colours.
func TestSearchInvalidNeverAnswer(t *testing.T) {
	run := func(r Request) Step {
		st := Step{Request: r, Counters: NaNCounters(), Throughput: r.Load}
		v := 10.0
		if r.Load > 100 {
			v = 100
			if r.Load < 160 {
				v = 1 // looks good, but the generator was the bottleneck
				st.Invalid = []Invalid{{Kind: GeneratorBound, Why: "generator CPU over 85 %"}}
			}
		}
		st.SLOs = []Figure{{Value: v, HalfWidth: 0.1}}
		return st
	}
	cfg := Config{SLOs: []threshold.Threshold{mustSLO(t, "p99 < 60ms")}, Dimension: Rate, Min: 25, Max: 2000, StepDuration: time.Second}
	ans, steps := search(t, cfg, run)
	checkAnswer(t, ans, steps)
	if ans.Low > 100 || ans.Capacity > 100 {
		t.Fatalf("%s: an answer above 100/s can only come from an invalid step", ans.Statement)
	}
	t.Log(ans.Statement)
}
