package compare

import (
	"math"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/stats"
	"math/rand/v2"
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
	return result.Meta{Scenario: "demo", Label: label, SourceSHA256: "abc", Source: "web:\n  keepalive: true\n", Model: "closed", Users: 10, Speedup: 1,
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

func mustCompare(t *testing.T, phases []string, runs ...*result.Run) *Comparison {
	t.Helper()
	var in []Input
	for i, r := range runs {
		in = append(in, Input{Path: "dir/run" + string(rune('1'+i)) + ".json", Run: r})
	}
	c, err := Compare(in, Options{Phases: phases})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func rowIn(t *testing.T, c *Comparison, phase, id string) Row {
	t.Helper()
	for _, r := range c.Rows {
		if r.ID == id && r.Phase == phase {
			return r
		}
	}
	t.Fatalf("no row %s in phase %s", id, phase)
	return Row{}
}

// reps returns n repetitions of steady intervals whose level moves a
// little from one repetition to the next (so repetitions have a spread).
func reps(n, count int, latUS uint64, switches float64) [][]iv {
	var out [][]iv
	for r := 0; r < n; r++ {
		w := []int{0, 3, -2, 1, -1, 2, -3}[r%7]
		out = append(out, steady(8, count+w*count/100, latUS+uint64(w*int(latUS)/100), switches+float64(w)*switches/100))
	}
	return out
}

// The value of a row is the trimmed mean of the repetitions' values; the
// difference and its interval come from Yuen's test on them.
func TestValuesAndInterval(t *testing.T) {
	a := fakeRun(fakeMeta("A"), reps(5, 1000, 2000, 8000)...)
	b := fakeRun(fakeMeta("B"), reps(5, 1500, 2000, 8000)...)
	c := mustCompare(t, nil, a, b)
	r := rowIn(t, c, "steady", "rate_per_s")
	var xa, xb []float64
	for i := range a.Repetitions {
		xa = append(xa, result.Find(a.Repetitions[i].Summaries, "steady").Total.RatePerS)
		xb = append(xb, result.Find(b.Repetitions[i].Summaries, "steady").Total.RatePerS)
	}
	ta, _ := stats.Trimmed(xa, 1)
	// The interval is Yuen's at the comparison's level: with one row
	// called of the m tested, Benjamini–Yekutieli's 1 − rα/m.
	y, _ := stats.Yuen(xa, xb, 1, 1, c.CILevel)
	if called := len(called(c)); c.CILevel != 1-float64(called)*Alpha/float64(c.Tested) || called == 0 {
		t.Errorf("level %v with %d of %d called", c.CILevel, called, c.Tested)
	}
	if float64(r.Values[0].Value) != ta || r.Values[0].N != 5 || math.Abs(float64(r.Values[0].Spread)-sd(xa)) > 1e-9 {
		t.Errorf("value %+v, want trimmed mean %v", r.Values[0], ta)
	}
	d := r.Diffs[1]
	if float64(d.D) != y.D || math.Abs(float64(d.Lo)-y.Lo) > 1e-9 || math.Abs(float64(d.Hi)-y.Hi) > 1e-9 || float64(d.P) != y.P || d.Verdict != Better {
		t.Errorf("diff %+v, want %+v", d, y)
	}
	if c.Runs[0].Used != 5 || c.Runs[0].Trim != 1 || c.Tested == 0 {
		t.Errorf("column %+v tested %d", c.Runs[0], c.Tested)
	}
}

// A measure equal in every repetition on both sides is no difference,
// never a verdict; with one repetition a side, nothing is judged, and the
// runs it would take are estimated from the intervals.
func TestEqualAndSingleRuns(t *testing.T) {
	a := fakeRun(fakeMeta("A"), reps(5, 1000, 2000, 8000)...)
	b := fakeRun(fakeMeta("B"), reps(5, 1000, 2000, 8000)...)
	for _, run := range []*result.Run{a, b} {
		for i := range run.Repetitions {
			for j := range run.Repetitions[i].Summaries {
				s := &run.Repetitions[i].Summaries[j]
				s.Server = append(s.Server, result.Row{ID: "server_virtual_mb", Label: "server virtual MB", Mean: 1988})
			}
		}
	}
	c := mustCompare(t, nil, a, b)
	vm := rowIn(t, c, "steady", "server_virtual_mb")
	if vm.Diffs[1].Verdict != Same || float64(vm.Diffs[1].P) != 1 || float64(vm.Diffs[1].D) != 0 {
		t.Errorf("1,988 vs 1,988: %+v", vm.Diffs[1])
	}
	for _, r := range c.Rows {
		if v := r.Diffs[1].Verdict; v != Same {
			t.Errorf("%s: %s for identical runs", r.ID, v)
		}
	}
	one := fakeRun(fakeMeta("A1"), steady(20, 1000, 2000, 8000))
	two := fakeRun(fakeMeta("B1"), steady(20, 1100, 2000, 8000))
	c = mustCompare(t, nil, one, two)
	r := rowIn(t, c, "steady", "rate_per_s")
	if d := r.Diffs[1]; d.Verdict != CannotJudge || !math.IsNaN(float64(d.P)) || float64(d.Change) < 9 || d.RunsNeeded < 2 {
		t.Errorf("1 vs 1 run: %+v", d)
	}
	if !hasWarning(c, "A1 and B1 have 1 finished repetition each: no difference with them can be judged") {
		t.Errorf("warnings %q", c.Warnings)
	}
	if !strings.Contains(verdictCell(r.Diffs[1]), "cannot judge: 1 run a side (≈") {
		t.Errorf("cell %q", verdictCell(r.Diffs[1]))
	}
}

// Every measure's good direction, written out independently of the
// definitions: a new measure without a line here fails.
func TestDirections(t *testing.T) {
	want := map[string]string{
		"rate_per_s": "higher", "ok_per_s": "higher", "error_rate": "lower", "dropped": "lower",
		"latency_mean_ms": "lower", "latency_p50_ms": "lower", "latency_p95_ms": "lower", "latency_p99_ms": "lower", "latency_p99.9_ms": "lower",
		"service_p99_ms": "lower", "verified_mb_per_s": "higher", "corrupt": "lower", "received_mb_per_s": "",
		"publish_per_s": "higher", "publish_asked_per_s": "", "publish_achieved": "higher",
		"client_cpu_cores": "", "client_bound_intervals": "lower",
		"action.a.rate_per_s": "higher", "action.a.error_rate": "lower", "action.a.p50_ms": "lower", "action.a.p99_ms": "lower",
		"event.deliver.count": "", "event.deliver.lost": "lower", "event.deliver.loss_rate": "lower", "event.deliver.errors": "lower",
		"event.deliver.p50_ms": "lower", "event.deliver.p99_ms": "lower", "event.duplicate.count": "lower",
		// Server rows: what the server pays per unit of work is a cost;
		// utilization, traffic, faults and memory grow with the work done.
		"cpu_ms_per_action": "lower", "cores_per_1000_users": "lower", "users_per_core": "higher",
		"net_bytes_per_action": "lower", "disk_transfers_per_action": "lower", "server_cores": "",
		"cpu_pct": "", "kernel_pct": "", "iowait_pct": "", "context_switches": "", "interrupts": "", "run_queue": "",
		"net_in_kbit": "", "net_out_kbit": "", "disk_transfers": "", "disk_mb": "", "page_faults": "", "major_faults": "",
		"pages": "", "memory_used_mb": "", "server_cpu_pct": "", "server_kernel_pct": "", "server_switches": "",
		"server_page_faults": "", "server_virtual_mb": "", "server_rss_mb": "", "server_processes": "",
	}
	st := settings{open: true, verified: true, publish: true, actions: []string{"a", "b"}, events: []string{"deliver", "duplicate"}}
	all := append(append(append(clientMeasures(st), actionMeasures(st)...), eventMeasures(st)...), clientMeasures(settings{})...)
	// Every server row a result can hold, from result's own list: a new
	// row (a new cost) without a direction here, or without one in
	// serverBetter, fails instead of defaulting to neither.
	for _, id := range result.ServerRowIDs() {
		if _, ok := serverDirection(id); !ok {
			t.Errorf("server row %s has no direction in compare", id)
		}
		all = append(all, serverMeasure(id, id))
	}
	for _, m := range all {
		if strings.HasPrefix(m.id, "action.b.") {
			continue
		}
		w, ok := want[m.id]
		if base, client := strings.CutPrefix(m.id, "client_"); client && m.group == "server" {
			// The client machine's rows measure the load generator's
			// machine: neither direction, whatever the server's row.
			_, ok = want[base]
			w = ""
		}
		if !ok {
			t.Errorf("measure %s has no direction in this test", m.id)
			continue
		}
		if m.better != w {
			t.Errorf("%s: better %q, want %q", m.id, m.better, w)
		}
	}
	if len(result.ServerRowIDs()) < 40 {
		t.Errorf("server rows %v", result.ServerRowIDs())
	}
}

// End to end, the verdict follows the measure's direction and the sign of
// the shown difference: B faster (more actions/s, lower latency) is better
// on both; B slower is worse on both.
func TestVerdictDirectionEndToEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	fast, slow := realistic, realistic
	fast.lat, fast.rate = 1.6, 2500
	base := simRun(rng, realistic, "A", 5, 1)
	for _, tt := range []struct {
		m     model
		label string
		want  Verdict
	}{{fast, "fast", Better}, {slow, "same", Same}} {
		tt.m.runSD = 0.01
		c := mustCompare(t, nil, base, simRun(rng, tt.m, tt.label, 5, 1))
		for _, id := range []string{"rate_per_s", "latency_p50_ms", "latency_p99_ms", "action.page.p99_ms"} {
			if v := rowIn(t, c, "steady", id).Diffs[1].Verdict; v != tt.want {
				t.Errorf("%s %s: %s, want %s", tt.label, id, v, tt.want)
			}
		}
		c = mustCompare(t, nil, simRun(rng, tt.m, tt.label, 5, 1), base)
		want := map[Verdict]Verdict{Better: Worse, Same: Same}[tt.want]
		for _, id := range []string{"rate_per_s", "latency_p99_ms"} {
			if v := rowIn(t, c, "steady", id).Diffs[1].Verdict; v != want {
				t.Errorf("reversed %s %s: %s, want %s", tt.label, id, v, want)
			}
		}
	}
}

// The bug of issue 20: "p99 200 ms → 2.62 s, +1212.8 %, better". B's
// intervals are mostly faster than A's, but a few carry a long tail, so
// B's p99 over the phase is far higher: the verdict must say worse, as the
// values do (it came from a rank test on the intervals, which saw B's
// typical interval lower).
func TestTailDirection(t *testing.T) {
	var ra, rb [][]iv
	for r := 0; r < 5; r++ {
		var a, b []iv
		for i := 0; i < 10; i++ {
			a = append(a, iv{phase: "steady", count: 1000, latUS: 200000 + uint64(r*1000)})
			lat := uint64(100000 + r*1000)
			if i%5 == 0 {
				lat = 2600000 + uint64(r*10000) // a tail in two intervals of ten
			}
			b = append(b, iv{phase: "steady", count: 1000, latUS: lat})
		}
		ra, rb = append(ra, a), append(rb, b)
	}
	c := mustCompare(t, nil, fakeRun(fakeMeta("online"), ra...), fakeRun(fakeMeta("cached"), rb...))
	p99 := rowIn(t, c, "steady", "latency_p99_ms")
	if float64(p99.Values[1].Value) < 10*float64(p99.Values[0].Value) || p99.Diffs[1].Verdict != Worse {
		t.Errorf("p99 %v → %v: %s", p99.Values[0].Value, p99.Values[1].Value, p99.Diffs[1].Verdict)
	}
	if p50 := rowIn(t, c, "steady", "latency_p50_ms"); p50.Diffs[1].Verdict != Better {
		t.Errorf("p50 %v → %v: %s", p50.Values[0].Value, p50.Values[1].Value, p50.Diffs[1].Verdict)
	}
}

// Delivery and loss rows: 0 vs 286 lost is a difference, not "identical".
func TestLossRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	clean, lossy := realistic, realistic
	clean.lost, lossy.lost = 1e-9, 0.05
	c := mustCompare(t, nil, simRun(rng, clean, "cached", 5, 1), simRun(rng, lossy, "online", 5, 1))
	lost := rowIn(t, c, "steady", "event.deliver.lost")
	if float64(lost.Values[0].Value) != 0 || float64(lost.Values[1].Value) < 100 || lost.Diffs[1].Verdict != Worse {
		t.Errorf("lost %+v %+v", lost.Values, lost.Diffs[1])
	}
	if r := rowIn(t, c, "steady", "event.deliver.loss_rate"); r.Diffs[1].Verdict != Worse || r.Group != "delivery" {
		t.Errorf("loss rate %+v", r)
	}
}
func TestPhases(t *testing.T) {
	ramp := []iv{{phase: "ramp-up", count: 100, latUS: 1000}, {phase: "ramp-up", count: 100, latUS: 1000}}
	a := fakeRun(fakeMeta("A"), append(ramp, steady(5, 1000, 2000, 8000)...))
	b := fakeRun(fakeMeta("B"), steady(5, 1000, 2000, 8000))
	allOnly := fakeRun(fakeMeta("C"), []iv{{phase: "all-at-once", count: 10, latUS: 10}})

	c := mustCompare(t, nil, a, b)
	if c.Phases[0] != "steady" || hasWarning(c, "phase") {
		t.Errorf("phase %s warnings %v", c.Phases, c.Warnings)
	}
	c = mustCompare(t, nil, a, allOnly)
	if c.Phases[0] != "all" || !hasWarning(c, "C has no steady phase: comparing the whole runs (phase all)") {
		t.Errorf("fallback: phase %s warnings %v", c.Phases, c.Warnings)
	}
	c = mustCompare(t, []string{"ramp_up"}, a, b)
	if c.Phases[0] != "ramp-up" || !math.IsNaN(float64(rowByID(t, c, "rate_per_s").Values[1].Value)) ||
		rowByID(t, c, "rate_per_s").Diffs[1].Verdict != NoData || !hasWarning(c, "B has no ramp-up phase: its column is empty") {
		t.Errorf("explicit phase: %+v %v", c.Runs, c.Warnings)
	}
	if _, err := Compare([]Input{{Run: a}, {Run: b}}, Options{Phases: []string{"stedy"}}); err == nil || !strings.Contains(err.Error(), `unknown phase "stedy"`) {
		t.Errorf("unknown phase: %v", err)
	}
	if _, err := Compare([]Input{{Run: a}}, Options{}); err == nil {
		t.Error("one run compared")
	}
	// Two phases: each row once per phase, one family; a warning once.
	bound := append(append([]iv{}, ramp...), steady(5, 1000, 2000, 8000)...)
	bound[0].bound, bound[3].bound = true, true
	c = mustCompare(t, []string{"ramp-up", "steady"}, fakeRun(fakeMeta("A"), bound), a)
	if rowIn(t, c, "ramp-up", "rate_per_s").Phase != "ramp-up" || rowIn(t, c, "steady", "rate_per_s").Phase != "steady" {
		t.Error("rows per phase")
	}
	n := 0
	for _, w := range c.Warnings {
		if strings.Contains(w, "client-bound") {
			n++
			if !strings.Contains(w, "1 of 2 intervals of the ramp-up phase and 1 of 5 intervals of the steady phase") {
				t.Errorf("bound warning %q", w)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d client-bound warnings: %q", n, c.Warnings)
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
		{"scenario", mod(func(m *result.Meta) { m.Scenario, m.Source = "other", "" }), "A and B ran different scenarios (demo, other): results of different user profiles are not comparable."},
		{"profile", mod(func(m *result.Meta) {
			m.Scenario, m.SourceSHA256, m.Source = "other", "def", "web:\n  keepalive: true\nactions:\n  - name: search\n"
		}), "A and B ran different user profiles (actions[0].name differ): results of different user profiles are not comparable."},
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
			c := mustCompare(t, nil, a, tt.b)
			if !hasWarning(c, tt.want) || len(c.Warnings) != 2 { // and one repetition on each side
				t.Errorf("warnings %q, want one with %q", c.Warnings, tt.want)
			}
		})
	}
	if c := mustCompare(t, nil, a, a); len(c.Warnings) != 1 {
		t.Errorf("same setup: %q", c.Warnings)
	}
	// Runs of one repetition are named in one sentence, not one each.
	c := mustCompare(t, nil, a, a, a, fakeRun(fakeMeta("D"), reps(3, 1000, 2000, 8000)...))
	n := 0
	for _, w := range c.Warnings {
		if strings.Contains(w, "finished repetition") {
			n++
			if !strings.HasPrefix(w, "A (run1.json), A (run2.json) and A (run3.json) have 1 finished repetition each: no difference with them can be judged (run them with") {
				t.Errorf("grouped warning %q", w)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d warnings about single repetitions: %q", n, c.Warnings)
	}
	// Another name, another server setting, comments: the same profile,
	// no warning (the setting is a configuration difference).
	other := mod(func(m *result.Meta) {
		m.Scenario, m.SourceSHA256, m.Source = "smb3", "def", "# a comment\nname: smb3\nweb:\n  keepalive: false\n"
	})
	if c := mustCompare(t, nil, a, other); len(c.Warnings) != 1 || len(c.Config) != 1 || c.Config[0].Key != "web.keepalive" {
		t.Errorf("another configuration of the same profile: %q %+v", c.Warnings, c.Config)
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
	c := mustCompare(t, nil, bound, partial)
	for _, want := range []string{
		"B: 2 of 6 intervals of the steady phase were client-bound (event loop 0 busy 91%): there its figures measure the load generator, not the server.",
		"B: 1 of 1 repetitions not valid — generator fail (the load generator was the bottleneck in 2 of 6 intervals",
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
	c, err := Compare([]Input{{Path: "x/a.json", Run: a}, {Path: "y/a.json", Run: b}, {Path: "b.json", Run: b}}, Options{})
	// Labelled runs with the same label get their file names.
	if err == nil {
		lab := fakeRun(fakeMeta("nginx"), steady(5, 1000, 2000, 8000))
		l, _ := Compare([]Input{{Path: "x/1.json", Run: lab}, {Path: "x/2.json", Run: lab}}, Options{})
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
	if r := rowByID(t, c, "server_rss_mb"); r.Diffs[1].Verdict != NoData || float64(r.Values[1].Value) != 12 {
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

// Configuration differences, key by key: scenario keys (nested, in
// lists), overrides, the target (an embedded server's port is none), the
// driver's settings, negotiated ones included.
func TestConfigDiffs(t *testing.T) {
	ma, mb := fakeMeta("smb2"), fakeMeta("smb3")
	ma.Source = "name: x\nfiles:\n  dialect: 2.0.2\n  signing: auto\nactions:\n  - name: copy\n    op: copy_down\n"
	mb.Source = "name: y\nfiles:\n  dialect: 3.1.1\n  signing: auto\nactions:\n  - name: copy\n    op: copy_up\n"
	// Thresholds judge a run, they do not configure it: neither the
	// scenario's list nor --threshold is a difference.
	ma.Source += "thresholds:\n  - p99 < 5ms\n"
	mb.Source += "thresholds:\n  - p99 < 50ms\n  - all: corrupt == 0\n"
	ma.Overrides, mb.Overrides = map[string]string{"--users": "10", "--threshold": "p95 < 1s"}, map[string]string{"--users": "10", "--set files": "500"}
	ma.Target, mb.Target = "embedded web server at http://127.0.0.1:1", "embedded web server at http://127.0.0.1:2"
	ma.Settings = map[string]string{"negotiated_dialect": "2.0.2", "signed": "false", "encrypted": "false", "note": "a"}
	mb.Settings = map[string]string{"negotiated_dialect": "3.1.1", "signed": "false", "encrypted": "true", "note": "b"}
	ra, rb := fakeRun(ma, steady(5, 1000, 2000, 8000)), fakeRun(mb, steady(5, 1000, 2000, 8000))
	ra.Thresholds = []result.ThresholdOutcome{{Threshold: "p99 < 5ms", Phase: "steady", Pass: true, Message: "p99 is 1.1 ms"}}
	rb.Thresholds = []result.ThresholdOutcome{{Threshold: "p99 < 50ms", Phase: "steady", Pass: false, Message: "p99 is 51 ms"}}
	c := mustCompare(t, nil, ra, rb)
	var got []string
	for _, d := range c.Config {
		got = append(got, configText(d))
	}
	// Both runs' thresholds' outcomes are still shown.
	if out := render(t, c, "text"); !strings.Contains(out, "Thresholds:\n  smb2: 1 of 1 passed\n  smb3: 0 of 1 passed — FAIL steady: p99 < 50ms (p99 is 51 ms)\n") {
		t.Errorf("thresholds not shown:\n%s", out)
	}
	want := []string{"actions[0].op: copy_down → copy_up", "files.dialect: 2.0.2 → 3.1.1", "--set files: (unset) → 500",
		"settings.encrypted: false → true", "settings.negotiated_dialect: 2.0.2 → 3.1.1"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The driver's own rows: pub/sub's publish rate achieved against the rate
// asked (reported without the speedup, so scaled by it), and files'
// verified bytes when every byte read is checked.
func TestDriverRows(t *testing.T) {
	pub := func(label string, published, asked float64) *result.Run {
		m := fakeMeta(label)
		m.Driver, m.Speedup = "pubsub", 2
		run := fakeRun(m, reps(3, 1000, 2000, 8000)...)
		for i := range run.Repetitions {
			for j := range run.Repetitions[i].Summaries {
				s := &run.Repetitions[i].Summaries[j]
				s.Counters = append(s.Counters, result.CounterSummary{Source: "pubsub", Up: 8, Mean: map[string]float64{
					"pubsub_published_total": published * (1 + 0.01*float64(i)), "pubsub_publish_asked_per_second": asked}})
			}
		}
		return run
	}
	c := mustCompare(t, nil, pub("A", 100, 50), pub("B", 80, 50))
	asked, achieved := rowIn(t, c, "steady", "publish_asked_per_s"), rowIn(t, c, "steady", "publish_achieved")
	if float64(asked.Values[0].Value) != 100 || math.Abs(float64(achieved.Values[0].Value)-1.01) > 1e-9 ||
		achieved.Diffs[1].Verdict != Worse || rowIn(t, c, "steady", "publish_per_s").Diffs[1].Verdict != Worse {
		t.Errorf("asked %+v achieved %+v", asked.Values, achieved)
	}
	m := fakeMeta("F")
	m.Driver, m.Settings = "files", map[string]string{"verify": "true"}
	c = mustCompare(t, nil, fakeRun(m, reps(3, 1000, 2000, 8000)...), fakeRun(m, reps(3, 1000, 2000, 8000)...))
	rowIn(t, c, "steady", "verified_mb_per_s")
	rowIn(t, c, "steady", "corrupt")
	// Corrupt counts the read-backs' too (the event verify, not in the
	// totals): 2 per repetition in B.
	withReadBacks := func(run *result.Run, corrupt uint64) *result.Run {
		for i := range run.Repetitions {
			for j := range run.Repetitions[i].Summaries {
				s := &run.Repetitions[i].Summaries[j]
				s.Actions = append(s.Actions, result.ActionSummary{Name: "verify", Count: 10, Errors: corrupt,
					ErrorsByClass: map[string]uint64{"corrupt": corrupt}})
			}
		}
		return run
	}
	c = mustCompare(t, nil, withReadBacks(fakeRun(m, reps(3, 1000, 2000, 8000)...), 0), withReadBacks(fakeRun(m, reps(3, 1000, 2000, 8000)...), 2))
	if r := rowIn(t, c, "steady", "corrupt"); float64(r.Values[0].Value) != 0 || float64(r.Values[1].Value) != 2 {
		t.Errorf("corrupt %+v", r.Values)
	}
	for _, r := range c.Rows {
		if r.ID == "received_mb_per_s" {
			t.Error("verified runs keep the plain received row")
		}
	}
}

// Runs of one interleaved throng run are paired by round: a drift of the
// machine shared by both runs of a round cancels, and a 10 % difference
// hidden under a 20 % drift is found; the same runs unpaired (another
// interleave id) cannot see it.
func TestPairedByRound(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	m := realistic
	m.runSD, m.rowSD, m.ivSD = 0.005, 0.005, 0.01
	m.drift = drifts(rng, 5, 0.2)
	m.interleave = "ab"
	slow := m
	slow.lat *= 1.10
	a, b := simRun(rng, m, "A", 5, 1), simRun(rng, slow, "B", 5, 1)
	c := mustCompare(t, nil, a, b)
	d := rowIn(t, c, "steady", "latency_p50_ms").Diffs[1]
	if !d.Paired || d.Verdict != Worse || float64(d.Change) < 7 || float64(d.Change) > 13 {
		t.Errorf("paired: %+v", d)
	}
	// D is the mean of the round-by-round differences.
	var sum float64
	for i := range a.Repetitions {
		sum += result.Find(b.Repetitions[i].Summaries, "steady").Total.Latency.P50Ms - result.Find(a.Repetitions[i].Summaries, "steady").Total.Latency.P50Ms
	}
	if math.Abs(float64(d.D)-sum/5) > 1e-9 {
		t.Errorf("D %v, mean of differences %v", d.D, sum/5)
	}
	b.Meta.Interleave = "another"
	if d := rowIn(t, mustCompare(t, nil, a, b), "steady", "latency_p50_ms").Diffs[1]; d.Paired || d.Verdict != Same {
		t.Errorf("unpaired: %+v", d)
	}
}
