package threshold

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/throng-io/throng/internal/compare"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
)

// ivSpec is one fake interval of one action.
type ivSpec struct {
	phase  string
	action int    // index in the run's actions
	count  int    // actions finished, latencies 1000..1000+count-1 µs
	errs   uint64 // of class status_5xx
	lost   uint64 // of class lost
	bad    uint64 // of class corrupt
	drop   uint64
	bound  bool
}

var twoActions = []string{"page", "search"}

// fakeRep builds a repetition; every interval lasts 1 s and carries
// counters giving 50 % processor time and 0.2 server cores.
func fakeRep(index int, specs ...ivSpec) result.Repetition {
	rep := result.Repetition{Index: index}
	for i, sp := range specs {
		acts := make([]result.ActionInterval, len(twoActions))
		var s metrics.ActionSnapshot
		for k := 0; k < sp.count; k++ {
			s.Latency.Record(uint64(1000 + k))
			s.Service.Record(uint64(500 + k))
		}
		s.Count, s.Dropped = uint64(sp.count), sp.drop
		acts[sp.action] = result.FromSnapshot(&s)
		acts[sp.action].Errors = map[string]uint64{}
		if sp.errs > 0 {
			acts[sp.action].Errors["status_5xx"] = sp.errs
		}
		if sp.lost > 0 {
			acts[sp.action].Errors["lost"] = sp.lost
		}
		if sp.bad > 0 {
			acts[sp.action].Errors["corrupt"] = sp.bad
		}
		rep.Intervals = append(rep.Intervals, result.Interval{
			Index: i, StartS: float64(i), DurationS: 1, Phase: sp.phase, UsersMean: 10,
			Client:  result.Client{Bound: sp.bound},
			Actions: acts,
			Counters: []sampler.SourceValues{
				{Name: "system", Up: true, Values: map[string]float64{"cpus": 2, "cpu_user_seconds_total": 0.6,
					"cpu_nice_seconds_total": 0, "cpu_system_seconds_total": 0.4, "cpu_irq_seconds_total": 0,
					"cpu_softirq_seconds_total": 0, "cpu_steal_seconds_total": 0}},
				{Name: "process nginx", Up: true, Values: map[string]float64{
					"process_cpu_user_seconds_total": 0.1, "process_cpu_system_seconds_total": 0.1}},
			},
		})
	}
	rep.ElapsedS = float64(len(specs))
	rep.Summaries = result.Summarize(twoActions, 0, rep.Intervals)
	return rep
}

func fakeRun(reps ...result.Repetition) *result.Run {
	run := &result.Run{Schema: result.Schema, Meta: result.Meta{Scenario: "demo", Actions: twoActions, Trim: 1}, Repetitions: reps}
	if len(reps) > 1 {
		run.Aggregate = compare.Aggregate(reps, 1, false)
	}
	return run
}

func eval(t *testing.T, run *result.Run, text string) []Outcome {
	t.Helper()
	th, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	return th.Evaluate(run)
}

func TestEvaluateOneRepetition(t *testing.T) {
	run := fakeRun(fakeRep(0,
		ivSpec{phase: "ramp-up", count: 100, errs: 5},
		ivSpec{phase: "steady", count: 1000, errs: 1, lost: 2},
		ivSpec{phase: "steady", count: 1000, action: 1, bound: true, drop: 3},
	))
	for _, tt := range []struct {
		text  string
		phase string
		value float64
		pass  bool
		msg   string
	}{
		{"rate >= 1000/s", "steady", 1000, true, "rate in the steady phase is 1000/s, within >= 1000/s"},
		{"rate > 1000/s", "steady", 1000, false, "rate in the steady phase is 1000/s: not > 1000/s"},
		{"page.rate > 400/s", "steady", 500, true, "rate of page in the steady phase is 500/s"},
		{"error_rate < 0.1%", "steady", 3.0 / 2000, false, "error_rate in the steady phase is 0.15%: not < 0.1%"},
		{"ramp-up: error_rate < 1%", "ramp-up", 0.05, false, "error_rate in the ramp-up phase is 5%: not < 1%"},
		{"errors == 3", "steady", 3, true, ""},
		{"loss == 0", "all", 2, false, "loss in the all phase is 2: not == 0"},
		{"steady: loss == 0", "steady", 2, false, "loss in the steady phase is 2: not == 0"},
		{"search.loss == 0", "all", 0, true, ""},
		{"dropped == 0", "steady", 3, false, ""},
		{"client_bound == false", "steady", 1, false, "client_bound in the steady phase is true: not == false"},
		{"ramp-up: client_bound == false", "ramp-up", 0, true, ""},
		// Latencies 1000..1999 µs in each steady interval, merged: the
		// median 1499 µs is reported as its bucket's highest value,
		// [1496, 1504) → 1503 µs.
		{"p50 < 1.6ms", "steady", 1.503, true, "p50 in the steady phase is 1.503 ms, within < 1.6 ms"},
		{"max <= 1999us", "steady", 1.999, true, ""},
		{"service_max < 1.5ms", "steady", 1.499, true, ""},
		{"all: page.mean < 2ms", "all", (100*1049.5 + 1000*1499.5) / 1100 / 1000, true, ""},
		// 50 % processor time; 0.2 server cores for 1000 actions/s = 0.2 ms.
		{"server_cpu < 80%", "steady", 0.5, true, "server_cpu in the steady phase is 50%, within < 80%"},
		{"server_cpu_ms_per_action < 0.1", "steady", 0.2, false, "server_cpu_ms_per_action in the steady phase is 0.2 ms: not < 0.1 ms"},
	} {
		t.Run(tt.text, func(t *testing.T) {
			outs := eval(t, run, tt.text)
			if len(outs) != 1 {
				t.Fatalf("%d outcomes", len(outs))
			}
			o := outs[0]
			if o.Phase != tt.phase || o.Pass != tt.pass || math.Abs(o.Value-tt.value) > 1e-9*math.Max(1, tt.value) {
				t.Errorf("phase %s value %v pass %v, want %s %v %v: %s", o.Phase, o.Value, o.Pass, tt.phase, tt.value, tt.pass, o.Message)
			}
			if !strings.Contains(o.Message, tt.msg) {
				t.Errorf("message %q lacks %q", o.Message, tt.msg)
			}
			if o.Repetitions != nil && len(o.Repetitions) != 1 {
				t.Errorf("repetitions %v", o.Repetitions)
			}
		})
	}
}

func TestEvaluatePhases(t *testing.T) {
	withSteady := fakeRun(fakeRep(0, ivSpec{phase: "ramp-up", count: 10}, ivSpec{phase: "steady", count: 20}, ivSpec{phase: "ramp-down", count: 30}))
	noSteady := fakeRun(fakeRep(0, ivSpec{phase: "ramp-up", count: 10}, ivSpec{phase: "ramp-down", count: 30}))
	phases := func(outs []Outcome) string {
		var p []string
		for _, o := range outs {
			p = append(p, o.Phase)
		}
		return strings.Join(p, ",")
	}
	for _, tt := range []struct {
		run        *result.Run
		text, want string
	}{
		{withSteady, "rate > 0/s", "steady"},
		{noSteady, "rate > 0/s", "all"},
		{withSteady, "*: rate > 0/s", "ramp-up,steady,ramp-down"},
		{withSteady, "steady, ramp-up: rate > 0/s", "steady,ramp-up"},
		{withSteady, "all: rate > 0/s", "all"},
	} {
		if got := phases(eval(t, tt.run, tt.text)); got != tt.want {
			t.Errorf("%s: phases %s, want %s", tt.text, got, tt.want)
		}
	}
	if o := eval(t, withSteady, "all: rate > 0/s")[0]; o.Value != 20 || !o.Pass {
		t.Errorf("all: %+v", o)
	}
}

// Missing data fails with a message saying what is missing.
func TestEvaluateMissingData(t *testing.T) {
	run := fakeRun(fakeRep(0, ivSpec{phase: "steady", count: 100}, ivSpec{phase: "steady", action: 1, count: 0}))
	run.Repetitions[0].Summaries[0].Server = nil // no counters
	for _, tt := range []struct{ text, want string }{
		{"ramp-up: p95 < 1s", "p95 in the ramp-up phase: no data: this run has no ramp-up phase (it recorded steady, all)"},
		{"checkout.p95 < 1s", `this run has no action named "checkout" (its actions: page, search)`},
		{"search.p95 < 1s", "p95 of search in the steady phase: no data: no action finished in this phase"},
		{"search.error_rate < 1%", "no data: no action finished in this phase"},
		{"server_cpu < 80%", "server_cpu in the steady phase: no data: no server CPU was measured in this phase (no counters, or their source did not answer)"},
		{"server_cpu_ms_per_action < 1", "no data: no server CPU per action was measured"},
	} {
		o := eval(t, run, tt.text)[0]
		if o.Pass || !math.IsNaN(o.Value) || !strings.Contains(o.Message, tt.want) {
			t.Errorf("%s: pass %v value %v message %q, want %q", tt.text, o.Pass, o.Value, o.Message, tt.want)
		}
	}
	// A run without repetitions at all.
	if o := eval(t, fakeRun(), "p95 < 1s")[0]; o.Pass || !strings.Contains(o.Message, "no data: this run has no all phase (it recorded no interval)") {
		t.Errorf("empty run: %+v", o)
	}
}

// Levels are judged on the trimmed mean of the kept repetitions, counts
// and client_bound on the worst repetition.
func TestEvaluateRepetitions(t *testing.T) {
	var reps []result.Repetition
	for i, n := range []int{100, 200, 300, 400, 500} {
		sp := ivSpec{phase: "steady", count: n}
		if i == 4 {
			sp.lost, sp.bound = 1, true // in the fastest repetition, which the trim drops
		}
		reps = append(reps, fakeRep(i, sp))
	}
	run := fakeRun(reps...)
	if fmt.Sprint(run.Aggregate.Kept) != "[1 2 3]" {
		t.Fatalf("kept %v", run.Aggregate.Kept)
	}
	o := eval(t, run, "rate >= 300/s")[0]
	if o.Value != 300 || !o.Pass || len(o.Repetitions) != 5 || o.Repetitions[4] != 500 ||
		!strings.Contains(o.Message, "(trimmed mean of repetitions 2, 3, 4; each: 100/s, 200/s, 300/s, 400/s, 500/s)") {
		t.Errorf("rate: %+v", o)
	}
	for _, text := range []string{"loss == 0", "client_bound == false"} {
		o := eval(t, run, text)[0]
		if o.Pass || o.Value != 1 || !strings.Contains(o.Message, "(worst of 5 repetitions: repetition 5;") {
			t.Errorf("%s: %+v", text, o)
		}
	}
	// A journal has no aggregate: the kept repetitions come from the trim.
	run.Aggregate = nil
	if o := eval(t, run, "rate >= 300/s")[0]; o.Value != 300 {
		t.Errorf("without aggregate: %v", o.Value)
	}
	// A partial run says so.
	run.Partial, run.Reason = true, "interrupted by SIGINT."
	if o := eval(t, run, "rate >= 300/s")[0]; !strings.HasSuffix(o.Message, " — a partial run: interrupted by SIGINT") {
		t.Errorf("partial: %q", o.Message)
	}
}

func TestEvaluateAllAndFailures(t *testing.T) {
	run := fakeRun(fakeRep(0, ivSpec{phase: "steady", count: 100}))
	var ts []Threshold
	for _, text := range []string{"rate > 50/s", "*: rate > 500/s", "p99 < 1ms"} {
		th, _ := Parse(text)
		ts = append(ts, th)
	}
	outs := EvaluateAll(run, ts)
	if len(outs) != 3 || Failures(outs) != 2 || !outs[0].Pass || outs[1].Pass || outs[2].Pass {
		t.Errorf("outcomes %+v", outs)
	}
}

// A driver's events (the second action here, like mail's deliver) are not
// the users' actions: a threshold without an action leaves them out,
// except loss and corrupt, which count theirs.
func TestEventsLeftOutOfTotals(t *testing.T) {
	rep := fakeRep(0,
		ivSpec{phase: "steady", count: 1000, errs: 1, bad: 5},
		ivSpec{phase: "steady", count: 3000, action: 1, errs: 4, lost: 2, bad: 7},
	)
	rep.Summaries = result.Summarize(twoActions, 1, rep.Intervals)
	run := fakeRun(rep)
	run.Meta.Events = twoActions[1:]
	for _, tt := range []struct {
		text  string
		value float64
	}{
		{"rate > 0/s", 500},        // 1,000 page actions in 2 s
		{"errors == 0", 6},         // page's status_5xx and corrupt
		{"loss == 0", 2},           // the events' lost
		{"corrupt == 0", 12},       // both: a read and an upload's read-back
		{"page.corrupt == 0", 5},   // named: the action's own
		{"search.corrupt == 0", 7}, // the event's own
		{"search.errors == 0", 13}, // named: the event's own
	} {
		o := eval(t, run, tt.text)[0]
		if o.Value != tt.value {
			t.Errorf("%s: %v, want %v (%s)", tt.text, o.Value, tt.value, o.Message)
		}
	}
}

// valid reads each repetition's verdict: true only when every repetition
// is valid; the message names the failed checks.
func TestValidThreshold(t *testing.T) {
	good := &result.Validity{Valid: true, Phase: "steady"}
	bad := &result.Validity{Valid: false, Phase: "steady", Checks: []result.Check{
		{Name: "steady", Status: result.Fail, Message: "throughput fell 30%"}}}
	r1, r2, r3 := fakeRep(0, ivSpec{phase: "steady", count: 10}), fakeRep(1, ivSpec{phase: "steady", count: 10}), fakeRep(2, ivSpec{phase: "steady", count: 10})
	r1.Validity, r2.Validity, r3.Validity = good, bad, good
	o := eval(t, fakeRun(r1, r2, r3), "valid == true")
	if len(o) != 1 || o[0].Pass || o[0].Value != 0 || !strings.Contains(o[0].Message, "repetition 2") ||
		!strings.Contains(o[0].Message, "repetition 2: steady fail (throughput fell 30%)") {
		t.Errorf("one invalid repetition: %+v", o)
	}
	r2.Validity = good
	if o = eval(t, fakeRun(r1, r2, r3), "valid == true"); !o[0].Pass || o[0].Value != 1 || o[0].Phase != "steady" {
		t.Errorf("all valid: %+v", o)
	}
	if _, err := Parse("steady: valid == true"); err == nil || !strings.Contains(err.Error(), "valid takes no phase") {
		t.Errorf("valid with a phase: %v", err)
	}
	if _, err := Parse("valid < 1"); err == nil {
		t.Error("valid < 1 accepted")
	}
	// Kept in the result as they were judged.
	rec := Records(o)
	if len(rec) != 1 || !rec[0].Pass || rec[0].Threshold != "valid == true" || float64(rec[0].Value) != 1 || rec[0].Unit != Bool {
		t.Errorf("record %+v", rec)
	}
}

// The counts of data gone wrong are judged on the whole run when no phase
// is named: a loss in the ramp-up fails "loss == 0"; latency stays with
// the steady phase.
func TestDataFaultsJudgeTheWholeRun(t *testing.T) {
	run := fakeRun(fakeRep(0,
		ivSpec{phase: "ramp-up", count: 10, lost: 2, bad: 1},
		ivSpec{phase: "steady", count: 10},
		ivSpec{phase: "steady", count: 10},
	))
	for _, c := range []struct {
		text, phase string
		pass        bool
	}{
		{"loss == 0", result.All, false},
		{"corrupt == 0", result.All, false},
		{"steady: loss == 0", "steady", true},
		{"errors == 0", "steady", true},
		{"p95 < 1s", "steady", true},
	} {
		outs := eval(t, run, c.text)
		if len(outs) != 1 || outs[0].Phase != c.phase || outs[0].Pass != c.pass {
			t.Errorf("%q: %+v, want phase %s pass %v", c.text, outs, c.phase, c.pass)
		}
	}
}
