package threshold

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/compare"
	"github.com/throng-io/throng/internal/result"
)

// Outcome is one threshold judged on one phase of a run.
type Outcome struct {
	Threshold Threshold
	Phase     string  // the phase judged
	Value     float64 // the measured figure in Threshold.Unit; NaN when missing
	Pass      bool
	// Message says it in one sentence: the figure, the limit, and for runs
	// with repetitions how the figure was formed; for a failure what is
	// over the limit or what is missing.
	Message string
	// Repetitions holds every repetition's figure when the run has more
	// than one (NaN where missing); Value is their trimmed mean (levels)
	// or the worst (counts, client_bound).
	Repetitions []float64
}

// EvaluateAll judges every threshold on a run, in order.
func EvaluateAll(run *result.Run, ts []Threshold) []Outcome {
	var out []Outcome
	for _, t := range ts {
		out = append(out, t.Evaluate(run)...)
	}
	return out
}

// Failures counts the outcomes that did not pass.
func Failures(outs []Outcome) int {
	n := 0
	for _, o := range outs {
		if !o.Pass {
			n++
		}
	}
	return n
}

// Evaluate judges the threshold on a run: one Outcome per phase it names
// (the default phase: steady, or all when the run has no steady phase;
// "*": every phase recorded, in order). It never fails: missing data is a
// failed Outcome whose Message says what is missing.
func (t Threshold) Evaluate(run *result.Run) []Outcome {
	var out []Outcome
	for _, ph := range t.phasesOf(run) {
		out = append(out, t.evaluatePhase(run, ph))
	}
	return out
}

func (t Threshold) phasesOf(run *result.Run) []string {
	switch {
	case t.Metric == "valid":
		if len(run.Repetitions) > 0 {
			return []string{result.MeasuredPhase(&run.Repetitions[0])}
		}
		return []string{"steady"}
	case len(t.Phases) == 0 && wholeRun[t.Metric]:
		return []string{result.All}
	case len(t.Phases) == 0:
		if recorded(run, "steady") {
			return []string{"steady"}
		}
		return []string{result.All}
	case t.Phases[0] == "*":
		var out []string
		for _, rep := range run.Repetitions {
			for _, s := range rep.Summaries {
				if s.Phase != result.All && s.Intervals > 0 && !slices.Contains(out, s.Phase) {
					out = append(out, s.Phase)
				}
			}
		}
		if len(out) == 0 {
			return []string{result.All}
		}
		return out
	}
	return t.Phases
}

// wholeRun are the metrics judged on the whole run when no phase is
// named: a message lost or a file corrupted in the ramp-up is as wrong as
// one in the steady state, and "loss == 0" must mean none at all.
var wholeRun = map[string]bool{"loss": true, "corrupt": true, "misdelivered": true, "duplicated": true}

func recorded(run *result.Run, phase string) bool {
	for _, rep := range run.Repetitions {
		if s := result.Find(rep.Summaries, phase); s != nil && s.Intervals > 0 {
			return true
		}
	}
	return false
}

func (t Threshold) evaluatePhase(run *result.Run, phase string) Outcome {
	o := Outcome{Threshold: t, Phase: phase, Value: math.NaN()}
	m, _ := findMetric(t.Metric)
	subject := t.Metric
	if t.Action != "" {
		subject += " of " + t.Action
	}
	subject += " in the " + phase + " phase"
	fail := func(format string, args ...any) Outcome {
		o.Message = subject + ": " + fmt.Sprintf(format, args...)
		return o
	}
	if t.Action != "" && !slices.Contains(run.Meta.Actions, t.Action) {
		return fail("this run has no action named %q (its actions: %s)", t.Action, strings.Join(run.Meta.Actions, ", "))
	}
	if !recorded(run, phase) {
		return fail("no data: this run has no %s phase (it recorded %s)", phase, strings.Join(phasesRecorded(run), ", "))
	}
	if ev, ok := trackedBy[t.Metric]; ok && !slices.Contains(run.Meta.Events, ev) {
		return fail("no data: the %s driver does not track %s messages (mail does, as its %q events)", run.Meta.Driver, t.Metric, ev)
	}
	var why string
	for i, rep := range run.Repetitions {
		v := math.NaN()
		if t.Metric == "valid" {
			o.Repetitions = append(o.Repetitions, map[bool]float64{true: 1, false: 0}[result.ValidityOf(&run.Meta, &run.Repetitions[i]).Valid])
			continue
		}
		if s := result.Find(rep.Summaries, phase); s != nil && s.Intervals > 0 {
			var ok bool
			if v, ok, why = t.figure(s); !ok {
				v = math.NaN()
			}
		}
		o.Repetitions = append(o.Repetitions, v)
	}
	how := ""
	if len(run.Repetitions) > 1 {
		if m.level {
			kept := keptRepetitions(run)
			var vals []float64
			for _, k := range kept {
				if !math.IsNaN(o.Repetitions[k]) {
					vals = append(vals, o.Repetitions[k])
				}
			}
			o.Value = compare.TrimmedMean(vals, 0)
			how = fmt.Sprintf(" (trimmed mean of repetitions %s; each: %s)", oneBased(kept), t.list(o.Repetitions))
		} else {
			worst := -1
			for i, v := range o.Repetitions {
				// valid is worst when false; the others when highest.
				if !math.IsNaN(v) && (worst < 0 || (t.Metric == "valid") != (v > o.Repetitions[worst]) && v != o.Repetitions[worst]) {
					worst = i
				}
			}
			if worst >= 0 {
				o.Value = o.Repetitions[worst]
			}
			how = fmt.Sprintf(" (worst of %d repetitions: repetition %d; each: %s)", len(o.Repetitions), worst+1, t.list(o.Repetitions))
		}
	} else if len(o.Repetitions) == 1 {
		o.Value = o.Repetitions[0]
	}
	if run.Partial {
		how += " — a partial run: " + strings.TrimSuffix(run.Reason, ".")
	}
	if math.IsNaN(o.Value) {
		return fail("no data: %s%s", cmp.Or(why, "the figure is missing"), how)
	}
	if t.Metric == "valid" && o.Value == 0 {
		how += ": " + invalidWhy(run)
	}
	o.Pass = compareOp(o.Value, t.Op, t.Value)
	if o.Pass {
		o.Message = fmt.Sprintf("%s is %s, within %s %s%s", subject, t.format(o.Value), t.Op, t.format(t.Value), how)
	} else {
		o.Message = fmt.Sprintf("%s is %s: not %s %s%s", subject, t.format(o.Value), t.Op, t.format(t.Value), how)
	}
	return o
}

// figure reads the threshold's metric from a phase summary; when it does
// not exist there, it says why.
func (t Threshold) figure(s *result.Summary) (float64, bool, string) {
	a := t.Population(s)
	if a == nil {
		return 0, false, "the action has no figures in this phase"
	}
	noAction := "no action finished in this phase"
	lat := func(l result.Latency, q string) (float64, bool, string) {
		v := map[string]float64{"mean": l.MeanMs, "p50": l.P50Ms, "p90": l.P90Ms, "p95": l.P95Ms,
			"p99": l.P99Ms, "p99.9": l.P999Ms, "max": l.MaxMs}[q]
		return v, a.Count > 0, noAction
	}
	row := func(id, what string, scale float64) (float64, bool, string) {
		r := s.FindRow(id)
		if r == nil || math.IsNaN(float64(r.Mean)) {
			return 0, false, "no " + what + " was measured in this phase (no counters, or their source did not answer)"
		}
		return float64(r.Mean) * scale, true, ""
	}
	switch name := t.Metric; {
	case strings.HasPrefix(name, "service_"):
		return lat(a.Service, strings.TrimPrefix(name, "service_"))
	case slices.Contains(quantiles, name):
		return lat(a.Latency, name)
	case name == "rate":
		return a.RatePerS, s.DurationS > 0, "the phase has no duration"
	case name == "ok_rate":
		return a.OKPerS, s.DurationS > 0, "the phase has no duration"
	case name == "error_rate":
		return a.ErrorRate, a.Count > 0, noAction
	case name == "errors":
		return float64(a.Errors), true, ""
	case name == "dropped":
		return float64(a.Dropped), true, ""
	case name == "loss":
		return t.classCount(s, a, "lost"), true, ""
	case name == "corrupt":
		return t.classCount(s, a, "corrupt"), true, ""
	case name == "misdelivered":
		return t.classCount(s, a, "misdelivered"), true, ""
	case name == "duplicated":
		// The driver's events come last: a user's action may share the name.
		for i := len(s.Actions) - 1; i >= 0; i-- {
			if s.Actions[i].Name == trackedBy["duplicated"] {
				return float64(s.Actions[i].Count), true, ""
			}
		}
		return 0, true, ""
	case name == "server_cpu":
		return row("cpu_pct", "server CPU", 0.01)
	case name == "server_cpu_ms_per_action":
		return row("cpu_ms_per_action", "server CPU per action", 1)
	case name == "client_bound":
		return map[bool]float64{true: 1, false: 0}[s.BoundIntervals > 0], true, ""
	}
	return 0, false, "unknown metric " + t.Metric
}

// Population is the actions a threshold's per-action figures are of in a
// phase: the users' actions together (Total) without an action, else the
// action named (a driver's event such as deliver included: the events
// come last, and a user's action of the same name is passed over); nil
// when the phase has no such action. Its Timed count is how many samples
// a percentile of the threshold is of.
func (t Threshold) Population(s *result.Summary) *result.ActionSummary {
	if t.Action == "" {
		return &s.Total
	}
	var a *result.ActionSummary
	for i := range s.Actions {
		if s.Actions[i].Name == t.Action {
			a = &s.Actions[i]
		}
	}
	return a
}

// trackedBy names the driver's event without which a metric does not
// exist in a run.
var trackedBy = map[string]string{"misdelivered": "misdeliver", "duplicated": "duplicate"}

// classCount counts the errors of a class: of the threshold's action, or
// without one of every action, the driver's events included (losses are
// found by deliveries, corruption by an upload's read-back as well).
func (t Threshold) classCount(s *result.Summary, a *result.ActionSummary, class string) float64 {
	if t.Action != "" {
		return float64(a.ErrorsByClass[class])
	}
	n := 0.0
	for i := range s.Actions {
		n += float64(s.Actions[i].ErrorsByClass[class])
	}
	return n
}

// Holds reports whether a figure in the threshold's unit meets it (false
// for NaN): the comparison Evaluate makes, for callers that form the
// figure themselves (the capacity search combines repeated steps).
func (t Threshold) Holds(v float64) bool { return !math.IsNaN(v) && compareOp(v, t.Op, t.Value) }

func compareOp(v float64, op string, limit float64) bool {
	switch op {
	case "<":
		return v < limit
	case "<=":
		return v <= limit
	case ">":
		return v > limit
	case ">=":
		return v >= limit
	case "==":
		return v == limit
	case "!=":
		return v != limit
	}
	return false
}

// keptRepetitions are the repetitions of the trimmed mean: the aggregate's,
// or computed with the run's trim (a journal has no aggregate).
func keptRepetitions(run *result.Run) []int {
	if run.Aggregate != nil {
		var kept []int
		for _, k := range run.Aggregate.Kept {
			if k >= 0 && k < len(run.Repetitions) {
				kept = append(kept, k)
			}
		}
		return kept
	}
	return compare.Aggregate(run.Repetitions, run.Meta.Trim, run.Meta.CountBound()).Kept
}

func phasesRecorded(run *result.Run) []string {
	var out []string
	for _, rep := range run.Repetitions {
		for _, s := range rep.Summaries {
			if s.Intervals > 0 && !slices.Contains(out, s.Phase) {
				out = append(out, s.Phase)
			}
		}
	}
	if len(out) == 0 {
		return []string{"no interval"}
	}
	return out
}

// format writes a figure in the threshold's unit, for messages.
func (t Threshold) format(v float64) string {
	switch t.Unit {
	case Millis:
		if v >= 1000 {
			return strconv.FormatFloat(v/1000, 'g', 4, 64) + " s"
		}
		return strconv.FormatFloat(v, 'g', 4, 64) + " ms"
	case Ratio:
		return strconv.FormatFloat(100*v, 'g', 4, 64) + "%"
	case PerSec:
		if v >= 100 {
			return strconv.FormatFloat(v, 'f', 0, 64) + "/s"
		}
		return strconv.FormatFloat(v, 'g', 3, 64) + "/s"
	case Bool:
		return strconv.FormatBool(v != 0)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func (t Threshold) list(vals []float64) string {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = "–"
		if !math.IsNaN(v) {
			s[i] = t.format(v)
		}
	}
	return strings.Join(s, ", ")
}

func oneBased(idx []int) string {
	s := make([]string, len(idx))
	for i, k := range idx {
		s[i] = strconv.Itoa(k + 1)
	}
	return strings.Join(s, ", ")
}
