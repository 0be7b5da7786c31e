package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
)

// iv describes one fake interval: its phase, actions finished, a base
// latency in µs (values spread over base..base+99), context switches/s,
// and whether it was client-bound.
type iv struct {
	phase    string
	count    int
	latUS    uint64
	switches float64
	bound    bool
	dur      float64 // seconds; 1 when 0
}

// steady returns n steady intervals whose counts and latencies wiggle
// deterministically around the given bases.
func steady(n, count int, latUS uint64, switches float64) []iv {
	out := make([]iv, n)
	for i := range out {
		out[i] = iv{phase: "steady", count: count + (i*37)%11 - 5, latUS: latUS + uint64((i*53)%7), switches: switches + float64((i*29)%13)}
	}
	return out
}

func fakeMeta(label string) result.Meta {
	return result.Meta{Scenario: "demo", Label: label, SourceSHA256: "abc", Model: "closed", Users: 10, Speedup: 1,
		Engine: "epoll", Threads: 1, Host: result.Host{Hostname: "vm", Cores: 2}, IntervalS: 1, Actions: []string{"page"},
		Phases: []result.PhaseMeta{{Name: "steady", StartS: 0, EndS: 10}}, Runs: 1}
}

// fakeRun builds a run whose summaries come from result.Summarize, as a
// real run's do.
func fakeRun(meta result.Meta, reps ...[]iv) *result.Run {
	run := &result.Run{Schema: result.Schema, Meta: meta}
	run.Meta.Runs = len(reps)
	for r, ivs := range reps {
		rep := result.Repetition{Index: r}
		start := 0.0
		for i, spec := range ivs {
			d := spec.dur
			if d == 0 {
				d = 1
			}
			var s metrics.ActionSnapshot
			for k := 0; k < spec.count; k++ {
				s.Latency.Record(spec.latUS + uint64(k%100))
				s.Service.Record(spec.latUS/2 + uint64(k%100))
			}
			s.Count = uint64(spec.count)
			in := result.Interval{Index: i, StartS: start, DurationS: d, Phase: spec.phase, ActiveUsers: 10, UsersMean: 10, UsersMax: 10,
				Client:  result.Client{CPUCores: 0.5, Bound: spec.bound, BoundWhy: "event loop 0 busy 91%"},
				Actions: []result.ActionInterval{result.FromSnapshot(&s)},
				Counters: []sampler.SourceValues{{Name: "system", Up: true, Values: map[string]float64{
					"cpus": 2, "context_switches_total": spec.switches}}},
			}
			start += d
			rep.Intervals = append(rep.Intervals, in)
		}
		rep.ElapsedS = start
		rep.Summaries = result.Summarize(meta.Actions, len(meta.Events), rep.Intervals)
		run.Repetitions = append(run.Repetitions, rep)
	}
	if len(reps) > 1 {
		run.Aggregate = Aggregate(run.Repetitions, 1, false)
	}
	return run
}

func rowByID(t *testing.T, c *Comparison, id string) Row {
	t.Helper()
	for _, r := range c.Rows {
		if r.ID == id {
			return r
		}
	}
	t.Fatalf("no row %s", id)
	return Row{}
}

func mustCompare(t *testing.T, phase string, runs ...*result.Run) *Comparison {
	t.Helper()
	var in []Input
	for i, r := range runs {
		in = append(in, Input{Path: "dir/run" + string(rune('1'+i)) + ".json", Run: r})
	}
	c, err := Compare(in, phase)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// B finishes about twice as many actions with twice the latency and more
// context switches, in 12 intervals each: every verdict follows the
// measure's direction.
func TestVerdictsFollowDirections(t *testing.T) {
	a := fakeRun(fakeMeta("A"), steady(12, 1000, 2000, 8000))
	b := fakeRun(fakeMeta("B"), steady(12, 2000, 4000, 9000))
	same := fakeRun(fakeMeta("same"), steady(12, 1000, 2000, 8000))
	c := mustCompare(t, "", a, b, same)
	for _, tt := range []struct {
		id      string
		b, same Verdict
	}{
		{"rate_per_s", Better, Noise},
		{"latency_p95_ms", Worse, Noise},
		{"latency_mean_ms", Worse, Noise},
		{"context_switches", Higher, Noise},
		{"client_cpu_cores", Noise, Noise},
	} {
		r := rowByID(t, c, tt.id)
		if r.Tests[1].Verdict != tt.b || r.Tests[2].Verdict != tt.same {
			t.Errorf("%s: verdicts %q, %q; want %q, %q (tests %+v)", tt.id, r.Tests[1].Verdict, r.Tests[2].Verdict, tt.b, tt.same, r.Tests)
		}
		if r.Tests[0].Verdict != Baseline || !math.IsNaN(float64(r.Change[0])) {
			t.Errorf("%s: the first run is the baseline: %+v %v", tt.id, r.Tests[0], r.Change[0])
		}
	}
	rate := rowByID(t, c, "rate_per_s")
	if rate.Tests[1].Samples != "intervals" || rate.Tests[1].N != [2]int{12, 12} || rate.Tests[1].P >= 0.001 {
		t.Errorf("rate test %+v", rate.Tests[1])
	}
	// The shown value is the phase's: 12 intervals of ~1000 actions each.
	if want := float64(a.Repetitions[0].Summaries[0].Total.RatePerS); float64(rate.Values[0]) != want {
		t.Errorf("A's rate %v, want the steady summary's %v", rate.Values[0], want)
	}
	if got := float64(rate.Change[1]); math.Abs(got-100) > 2 {
		t.Errorf("change %v%%, want about +100%%", got)
	}
	// Latency per interval comes from each interval's own histogram: p95 of
	// base..base+99 µs is about base+95.
	p95 := rowByID(t, c, "latency_p95_ms")
	if v := float64(p95.Values[0]); v < 2.09 || v > 2.11 {
		t.Errorf("A's p95 %v ms", v)
	}
}

func TestTooFewSamplesAndMissingData(t *testing.T) {
	a := fakeRun(fakeMeta("A"), steady(3, 1000, 2000, 8000))
	b := fakeRun(fakeMeta("B"), steady(3, 5000, 9000, 9000))
	b.Repetitions[0].Summaries[0].Server = nil // B has no server rows
	c := mustCompare(t, "", a, b)
	rate := rowByID(t, c, "rate_per_s")
	if rate.Tests[1].Verdict != TooFew || rate.Tests[1].N != [2]int{3, 3} {
		t.Errorf("3 vs 3 intervals: %+v", rate.Tests[1])
	}
	cs := rowByID(t, c, "context_switches")
	if cs.Tests[1].Verdict != NoData || !math.IsNaN(float64(cs.Values[1])) || !math.IsNaN(float64(cs.Change[1])) {
		t.Errorf("missing server row: %+v", cs)
	}
	// Short intervals (cut at a phase's end) are no samples.
	short := fakeRun(fakeMeta("S"), append(steady(4, 1000, 2000, 8000), iv{phase: "steady", count: 10, latUS: 5000, dur: 0.2}))
	c = mustCompare(t, "", short, short)
	if c.Runs[0].Intervals != 4 || rowByID(t, c, "rate_per_s").Tests[1].N != [2]int{4, 4} {
		t.Errorf("short interval sampled: %+v %+v", c.Runs[0], rowByID(t, c, "rate_per_s").Tests[1])
	}
}

// With 3 or more repetitions on both sides the test uses one value per
// repetition, and the shown value is the mean over the kept repetitions.
func TestRepetitions(t *testing.T) {
	var ra, rb [][]iv
	for r := range 5 {
		ra = append(ra, steady(4, 1000+10*r, 2000, 8000))
		rb = append(rb, steady(4, 1500+10*r, 2000, 8000))
	}
	a, b := fakeRun(fakeMeta("A"), ra...), fakeRun(fakeMeta("B"), rb...)
	c := mustCompare(t, "", a, b)
	rate := rowByID(t, c, "rate_per_s")
	if rate.Tests[1].Samples != "repetitions" || rate.Tests[1].N != [2]int{5, 5} || rate.Tests[1].Verdict != Better || !rate.Tests[1].Exact {
		t.Errorf("repetition test %+v", rate.Tests[1])
	}
	// The trimmed mean is the aggregate's.
	var want float64
	for _, m := range a.Aggregate.Phases[0].Measures {
		if m.Name == "rate_per_s" {
			want = float64(m.TrimmedMean)
		}
	}
	if got := float64(rate.Values[0]); math.Abs(got-want) > 1e-9 || len(c.Runs[0].Kept) != 3 {
		t.Errorf("value %v, aggregate trimmed mean %v; kept %v", got, want, c.Runs[0].Kept)
	}
	// Without an aggregate (a journal), the kept repetitions are computed.
	a.Aggregate = nil
	a.Meta.Trim = 1
	if got := float64(rowByID(t, mustCompare(t, "", a, b), "rate_per_s").Values[0]); math.Abs(got-want) > 1e-9 {
		t.Errorf("without aggregate: %v, want %v", got, want)
	}
	// One side with 2 repetitions: back to intervals, pooled.
	two := fakeRun(fakeMeta("T"), ra[:2]...)
	if tr := rowByID(t, mustCompare(t, "", two, b), "rate_per_s").Tests[1]; tr.Samples != "intervals" || tr.N != [2]int{8, 20} {
		t.Errorf("2 vs 5 repetitions: %+v", tr)
	}
}

func TestPhases(t *testing.T) {
	ramp := []iv{{phase: "ramp-up", count: 100, latUS: 1000}, {phase: "ramp-up", count: 100, latUS: 1000}}
	a := fakeRun(fakeMeta("A"), append(ramp, steady(5, 1000, 2000, 8000)...))
	b := fakeRun(fakeMeta("B"), steady(5, 1000, 2000, 8000))
	allOnly := fakeRun(fakeMeta("C"), []iv{{phase: "all-at-once", count: 10, latUS: 10}})

	c := mustCompare(t, "", a, b)
	if c.Phase != "steady" || len(c.Warnings) != 0 {
		t.Errorf("phase %s warnings %v", c.Phase, c.Warnings)
	}
	c = mustCompare(t, "", a, allOnly)
	if c.Phase != "all" || !hasWarning(c, "C has no steady phase: comparing the whole runs (phase all)") {
		t.Errorf("fallback: phase %s warnings %v", c.Phase, c.Warnings)
	}
	if c.Runs[0].Intervals != 7 {
		t.Errorf("phase all samples every interval: %d", c.Runs[0].Intervals)
	}
	c = mustCompare(t, "ramp_up", a, b)
	if c.Phase != "ramp-up" || c.Runs[1].Phase != "" || !math.IsNaN(float64(rowByID(t, c, "rate_per_s").Values[1])) ||
		!hasWarning(c, "B has no ramp-up phase: its column is empty") {
		t.Errorf("explicit phase: %+v %v", c.Runs, c.Warnings)
	}
	if _, err := Compare([]Input{{Run: a}, {Run: b}}, "stedy"); err == nil || !strings.Contains(err.Error(), `unknown phase "stedy"`) {
		t.Errorf("unknown phase: %v", err)
	}
	if _, err := Compare([]Input{{Run: a}}, ""); err == nil {
		t.Error("one run compared")
	}
}

func hasWarning(c *Comparison, part string) bool {
	for _, w := range c.Warnings {
		if strings.Contains(w, part) {
			return true
		}
	}
	return false
}

func TestWarnings(t *testing.T) {
	base := fakeMeta("A")
	mod := func(f func(m *result.Meta)) *result.Run {
		m := fakeMeta("B")
		f(&m)
		return fakeRun(m, steady(5, 1000, 2000, 8000))
	}
	a := fakeRun(base, steady(5, 1000, 2000, 8000))
	for _, tt := range []struct {
		name string
		b    *result.Run
		want string
	}{
		{"scenario", mod(func(m *result.Meta) { m.Scenario = "other" }), "A and B ran different scenarios (demo, other): results of different user profiles are not comparable."},
		{"source", mod(func(m *result.Meta) { m.SourceSHA256 = "def" }), "different versions of the scenario file demo (its text differs): results of different user profiles are not comparable."},
		{"users", mod(func(m *result.Meta) { m.Users = 20 }), "A and B ran different loads (users 10 vs 20)"},
		{"iterations", mod(func(m *result.Meta) { m.Iterations = 500 }), "iterations none (bounded by time) vs 500 iterations per user"},
		{"rate", mod(func(m *result.Meta) { m.RatePerS = 300 }), "arrival rate 0/s vs 300/s"},
		{"speedup", mod(func(m *result.Meta) { m.Speedup = 8 }), "different speedups (1x vs 8x)"},
		{"variables", mod(func(m *result.Meta) {
			m.Overrides = map[string]string{"--set size": "8KB", "--set inbox": "20", "--users": "10"}
		}),
			"A and B were given different scenario variables (none vs inbox=20 size=8KB)"},
		{"model", mod(func(m *result.Meta) { m.Model = "open" }), "different models (closed vs open)"},
		{"host", mod(func(m *result.Meta) { m.Host = result.Host{Hostname: "big", Cores: 64} }), "different machines (vm, 2 cores vs big, 64 cores)"},
		{"engine", mod(func(m *result.Meta) { m.Engine, m.Threads = "io_uring", 4 }), "different engines (epoll (1 thread) vs io_uring (4 threads))"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := mustCompare(t, "", a, tt.b)
			if !hasWarning(c, tt.want) || len(c.Warnings) != 1 {
				t.Errorf("warnings %q, want one with %q", c.Warnings, tt.want)
			}
		})
	}
	if c := mustCompare(t, "", a, a); len(c.Warnings) != 0 {
		t.Errorf("same setup: %q", c.Warnings)
	}
}

func TestClientBoundAndPartialWarnings(t *testing.T) {
	ivs := steady(6, 1000, 2000, 8000)
	ivs[1].bound, ivs[4].bound = true, true
	bound := fakeRun(fakeMeta("B"), append(ivs, iv{phase: "ramp-down", count: 10, latUS: 10, bound: true}))
	m := fakeMeta("P")
	m.Phases = []result.PhaseMeta{{Name: "steady", StartS: 0, EndS: 10}, {Name: "ramp-down", StartS: 10, EndS: 12}}
	full := append(steady(10, 1000, 2000, 8000), iv{phase: "ramp-down", count: 10, latUS: 10}, iv{phase: "ramp-down", count: 10, latUS: 10})
	partial := fakeRun(m, full, steady(4, 1000, 2000, 8000))
	partial.Meta.Runs = 3
	partial.Partial, partial.Reason = true, "the run was cut short (killed or crashed)"
	partial.Repetitions[1].Partial = true
	c := mustCompare(t, "", bound, partial)
	for _, want := range []string{
		"B: 2 of 6 intervals of the steady phase were client-bound (event loop 0 busy 91%): there its figures measure the load generator, not the server.",
		"P is a partial run: the run was cut short (killed or crashed). Missing: repetition 3 of 3 never ran; " +
			"repetition 2: 6.0 s of the 10.0 s planned for the steady phase; repetition 2: the whole ramp-down phase. " +
			"Its figures cover only what was recorded.",
	} {
		if !hasWarning(c, want) {
			t.Errorf("no warning with %q in\n%s", want, strings.Join(c.Warnings, "\n"))
		}
	}
	if !c.Runs[1].Partial || c.Runs[0].Partial {
		t.Errorf("partial flags %+v", c.Runs)
	}
}

func TestLabelsAndServerRows(t *testing.T) {
	m := fakeMeta("")
	a := fakeRun(m, steady(5, 1000, 2000, 8000))
	b := fakeRun(m, steady(5, 1000, 2000, 8000))
	// b has an extra server row after the shared ones.
	s := &b.Repetitions[0].Summaries[0]
	s.Server = append(s.Server, result.Row{ID: "server_rss_mb", Label: "server RSS MB", Mean: 12})
	c, err := Compare([]Input{{Path: "x/a.json", Run: a}, {Path: "y/a.json", Run: b}, {Path: "b.json", Run: b}}, "")
	// Labelled runs with the same label get their file names.
	if err == nil {
		lab := fakeRun(fakeMeta("nginx"), steady(5, 1000, 2000, 8000))
		l, _ := Compare([]Input{{Path: "x/1.json", Run: lab}, {Path: "x/2.json", Run: lab}}, "")
		if l.Runs[0].Label != "nginx (1.json)" || l.Runs[1].Label != "nginx (2.json)" {
			t.Errorf("same labels: %q, %q", l.Runs[0].Label, l.Runs[1].Label)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, col := range c.Runs {
		labels = append(labels, col.Label)
	}
	if strings.Join(labels, "|") != "demo (a.json) #1|demo (a.json) #2|demo (b.json)" {
		t.Errorf("labels %q", labels)
	}
	var server []string
	for _, r := range c.Rows {
		if r.Group == "server" {
			server = append(server, r.ID)
		}
	}
	if strings.Join(server, ",") != "context_switches,server_rss_mb" {
		t.Errorf("server rows %v", server)
	}
	if r := rowByID(t, c, "server_rss_mb"); r.Tests[1].Verdict != NoData || float64(r.Values[1]) != 12 {
		t.Errorf("row only in B: %+v", r)
	}
}

func TestChange(t *testing.T) {
	nan := math.NaN()
	for _, tt := range []struct{ base, v, want float64 }{
		{100, 150, 50}, {100, 50, -50}, {-10, -5, 50}, {0, 0, 0}, {0, 3, nan}, {nan, 3, nan}, {3, nan, nan},
	} {
		if got := change(tt.base, tt.v); got != tt.want && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
			t.Errorf("change(%v, %v) = %v, want %v", tt.base, tt.v, got, tt.want)
		}
	}
}
