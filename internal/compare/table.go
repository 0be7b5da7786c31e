package compare

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/throng-io/throng/internal/result"
)

// Schema names the JSON form of a Comparison; it changes when a reader of
// an older version could misread a newer one.
const Schema = "throng.compare/1"

// Input is one run to compare and the file it was read from.
type Input struct {
	Path string
	Run  *result.Run
}

// Comparison is runs side by side: rows are measures, columns are runs
// (configurations); every run after the first is set against the first.
// It is plain data: Render writes it as text, Markdown, CSV or JSON.
type Comparison struct {
	Schema   string   `json:"schema"`
	Phase    string   `json:"phase"` // the phase compared ("all" after a fallback)
	Method   string   `json:"method"`
	Runs     []Column `json:"runs"`
	Rows     []Row    `json:"rows"`
	Warnings []string `json:"warnings"`
}

// Column describes one compared run.
type Column struct {
	Label       string `json:"label"` // Meta.Label, else "scenario (file)"
	File        string `json:"file"`
	Scenario    string `json:"scenario"`
	Setup       string `json:"setup"` // users, model, engine, machine, in words
	Phase       string `json:"phase"` // the phase whose figures are shown; "" when the run lacks it
	Repetitions int    `json:"repetitions"`
	Kept        []int  `json:"kept,omitempty"` // repetitions in the trimmed mean
	Intervals   int    `json:"intervals"`      // intervals usable as samples, over all repetitions
	Partial     bool   `json:"partial"`
}

// Row is one measure across the runs.
type Row struct {
	ID     string       `json:"id"`
	Label  string       `json:"label"`
	Group  string       `json:"group"`            // "client" or "server"
	Unit   string       `json:"unit,omitempty"`   // of Values: "1/s", "ratio", "count", "ms", "cores"; server rows say it in Label
	Better string       `json:"better,omitempty"` // "higher", "lower", or "" when neither is better
	Values []result.Num `json:"values"`           // one per run; null when missing
	Change []result.Num `json:"change_pct"`       // per run, % against the first; null for the first and when undefined
	Tests  []Test       `json:"tests"`            // per run against the first; the first's is empty
}

// measure is one row's definition: get reads it from a summary (of a
// phase, or of a single interval) and says whether it exists there.
type measure struct {
	id, label, unit, better string
	get                     func(s *result.Summary) (float64, bool)
}

func rate(f func(a *result.ActionSummary) float64) func(*result.Summary) (float64, bool) {
	return func(s *result.Summary) (float64, bool) { return f(&s.Total), s.DurationS > 0 }
}

func perAction(f func(a *result.ActionSummary) float64) func(*result.Summary) (float64, bool) {
	return func(s *result.Summary) (float64, bool) { return f(&s.Total), s.Total.Count > 0 }
}

// clientMeasures are the client-side rows; open adds the rows of open-model
// runs (dropped arrivals, service time).
func clientMeasures(open bool) []measure {
	lat := "latency"
	if open {
		lat = "latency (from schedule)"
	}
	ms := []measure{
		{"rate_per_s", "actions/s", "1/s", "higher", rate(func(a *result.ActionSummary) float64 { return a.RatePerS })},
		{"ok_per_s", "ok/s", "1/s", "higher", rate(func(a *result.ActionSummary) float64 { return a.OKPerS })},
		{"error_rate", "error rate", "ratio", "lower", perAction(func(a *result.ActionSummary) float64 { return a.ErrorRate })},
	}
	if open {
		ms = append(ms, measure{"dropped", "dropped arrivals", "count", "lower",
			func(s *result.Summary) (float64, bool) { return float64(s.Total.Dropped), s.Intervals > 0 }})
	}
	ms = append(ms,
		measure{"latency_mean_ms", lat + " mean", "ms", "lower", perAction(func(a *result.ActionSummary) float64 { return a.Latency.MeanMs })},
		measure{"latency_p50_ms", lat + " p50", "ms", "lower", perAction(func(a *result.ActionSummary) float64 { return a.Latency.P50Ms })},
		measure{"latency_p95_ms", lat + " p95", "ms", "lower", perAction(func(a *result.ActionSummary) float64 { return a.Latency.P95Ms })},
		measure{"latency_p99_ms", lat + " p99", "ms", "lower", perAction(func(a *result.ActionSummary) float64 { return a.Latency.P99Ms })},
	)
	if open {
		ms = append(ms, measure{"service_p99_ms", "service time p99", "ms", "lower",
			perAction(func(a *result.ActionSummary) float64 { return a.Service.P99Ms })})
	}
	return append(ms,
		measure{"client_cpu_cores", "client CPU (cores)", "cores", "",
			func(s *result.Summary) (float64, bool) { return s.ClientCPUMean, s.Intervals > 0 }},
		measure{"client_bound_intervals", "client-bound intervals", "count", "lower",
			func(s *result.Summary) (float64, bool) { return float64(s.BoundIntervals), s.Intervals > 0 }},
	)
}

// serverBetter gives the direction of the server rows that are costs;
// the others (utilization, switches, traffic) are neither good nor bad.
var serverBetter = map[string]string{
	"cpu_ms_per_action": "lower", "cores_per_1000_users": "lower", "users_per_core": "higher",
	"net_bytes_per_action": "lower", "disk_transfers_per_action": "lower",
}

func serverMeasure(id, label string) measure {
	return measure{id: id, label: label, better: serverBetter[id], get: func(s *result.Summary) (float64, bool) {
		r := s.FindRow(id)
		if r == nil || math.IsNaN(float64(r.Mean)) {
			return 0, false
		}
		return float64(r.Mean), true
	}}
}

// Phases are the phase names a comparison accepts.
var Phases = []string{"ramp-up", "steady", "ramp-down", result.All}

// NormalizePhase checks a phase name ("ramp_up" is read as "ramp-up");
// "" stays "" (the default).
func NormalizePhase(p string) (string, error) {
	p = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(p)), "_", "-")
	if p == "" || slices.Contains(Phases, p) {
		return p, nil
	}
	return "", fmt.Errorf("unknown phase %q: want one of %s", p, strings.Join(Phases, ", "))
}

// view is one run seen through the compared phase.
type view struct {
	col  Column
	run  *result.Run
	sums []*result.Summary // per repetition; nil where the phase is missing
	kept []int
	ivs  []result.Interval // usable as samples, over all repetitions
	sivs []result.Summary  // their summaries, made when first needed
}

// intervalSummaries summarizes each usable interval alone, with the same
// definitions as the phase's figures (percentiles from its own histogram).
func (v *view) intervalSummaries() []result.Summary {
	if v.sivs == nil {
		v.sivs = make([]result.Summary, 0, len(v.ivs))
		for i := range v.ivs {
			v.sivs = append(v.sivs, result.Summarize(v.run.Meta.Actions, len(v.run.Meta.Events), v.ivs[i:i+1])[0])
		}
	}
	return v.sivs
}

// Compare sets runs side by side on one phase. phase "" means steady, or
// "all" for every run when one of them has no steady phase (said in a
// warning); a phase given explicitly is kept, and a run lacking it shows
// no values. A run with repetitions shows the trimmed mean over the kept
// repetitions of its aggregate (computed with its trim when absent, as in a
// journal). Every run after the first is tested against the first, row by
// row, with MannWhitney: on the per-repetition values when both have 3 or
// more repetitions, else on the per-interval values of the phase.
// Errors are bad input: fewer than two runs, an unknown phase.
func Compare(inputs []Input, phase string) (*Comparison, error) {
	if len(inputs) < 2 {
		return nil, errors.New("compare needs at least two runs")
	}
	ph, err := NormalizePhase(phase)
	if err != nil {
		return nil, err
	}
	c := &Comparison{Schema: Schema, Method: method, Warnings: []string{}}
	if ph == "" {
		ph = "steady"
		for _, in := range inputs {
			if !hasPhase(in.Run, ph) {
				c.Warnings = append(c.Warnings, fmt.Sprintf(
					"%s has no steady phase: comparing the whole runs (phase all) of every run.", label(in)))
				ph = result.All
				break
			}
		}
	}
	c.Phase = ph
	views := make([]*view, len(inputs))
	open := false
	for i, in := range inputs {
		views[i] = newView(in, ph)
		open = open || in.Run.Meta.Model == "open"
	}
	dedupeLabels(views, inputs)
	for _, v := range views {
		c.Runs = append(c.Runs, v.col)
		if v.col.Phase == "" {
			c.Warnings = append(c.Warnings, fmt.Sprintf("%s has no %s phase: its column is empty.", v.col.Label, ph))
		}
	}
	for _, m := range clientMeasures(open) {
		c.Rows = append(c.Rows, compareRow(m, "client", views))
	}
	for _, m := range serverMeasures(views) {
		c.Rows = append(c.Rows, compareRow(m, "server", views))
	}
	c.Warnings = append(c.Warnings, runWarnings(views)...)
	return c, nil
}

func hasPhase(run *result.Run, ph string) bool {
	for i := range run.Repetitions {
		if s := result.Find(run.Repetitions[i].Summaries, ph); s != nil && s.Intervals > 0 {
			return true
		}
	}
	return false
}

func label(in Input) string {
	if in.Run.Meta.Label != "" {
		return in.Run.Meta.Label
	}
	return fmt.Sprintf("%s (%s)", in.Run.Meta.Scenario, filepath.Base(in.Path))
}

// dedupeLabels adds the file name to labels used twice, then a number
// to those still alike.
func dedupeLabels(views []*view, inputs []Input) {
	for pass := 0; pass < 2; pass++ {
		seen := map[string]int{}
		for _, v := range views {
			seen[v.col.Label]++
		}
		for i, v := range views {
			if seen[v.col.Label] < 2 {
				continue
			}
			suffix := " (" + filepath.Base(inputs[i].Path) + ")"
			if pass == 0 && !strings.HasSuffix(v.col.Label, suffix) {
				v.col.Label += suffix
			} else if pass == 1 {
				v.col.Label = fmt.Sprintf("%s #%d", v.col.Label, i+1)
			}
		}
	}
}

func newView(in Input, ph string) *view {
	run := in.Run
	v := &view{run: run, col: Column{Label: label(in), File: in.Path, Scenario: run.Meta.Scenario,
		Repetitions: len(run.Repetitions), Partial: run.Partial}}
	if hasPhase(run, ph) {
		v.col.Phase = ph
	}
	minDur := minSampleShare * run.Meta.IntervalS
	for r := range run.Repetitions {
		rep := &run.Repetitions[r]
		v.col.Partial = v.col.Partial || rep.Partial
		v.sums = append(v.sums, result.Find(rep.Summaries, ph))
		for i := range rep.Intervals {
			iv := rep.Intervals[i]
			if (ph == result.All || iv.Phase == ph) && iv.DurationS >= minDur && iv.DurationS > 0 {
				v.ivs = append(v.ivs, iv)
			}
		}
	}
	v.col.Intervals = len(v.ivs)
	switch {
	case run.Aggregate != nil:
		for _, k := range run.Aggregate.Kept {
			if k >= 0 && k < len(v.sums) {
				v.kept = append(v.kept, k)
			}
		}
	case len(run.Repetitions) > 1:
		v.kept = Aggregate(run.Repetitions, run.Meta.Trim, run.Meta.CountBound()).Kept
	default:
		v.kept = []int{0}
	}
	if len(run.Repetitions) > 1 {
		v.col.Kept = v.kept
	}
	v.col.Setup = setup(run)
	return v
}

func setup(run *result.Run) string {
	m := run.Meta
	model := m.Model
	switch {
	case m.RatePerS > 0:
		model += fmt.Sprintf(", %s arrivals/s", num(m.RatePerS))
	case m.CountBound():
		model += ", " + m.CountText()
	}
	if m.Speedup != 0 && m.Speedup != 1 {
		model += fmt.Sprintf(", speedup %gx", m.Speedup)
	}
	return fmt.Sprintf("%d users · %s · %s · %s, %d cores", m.Users, model, engine(m), m.Host.Hostname, m.Host.Cores)
}

// value is the run's figure: the phase's, or the mean over the kept
// repetitions.
func (v *view) value(m measure) float64 {
	var vals []float64
	for _, k := range v.kept {
		if k < len(v.sums) && v.sums[k] != nil {
			if x, ok := m.get(v.sums[k]); ok {
				vals = append(vals, x)
			}
		}
	}
	return mean(vals)
}

// serverMeasures are the server rows of any run, by id, in order of first
// appearance.
func serverMeasures(views []*view) []measure {
	var out []measure
	seen := map[string]bool{}
	for _, v := range views {
		for _, s := range v.sums {
			if s == nil {
				continue
			}
			for _, r := range s.Server {
				if !seen[r.ID] {
					seen[r.ID] = true
					out = append(out, serverMeasure(r.ID, r.Label))
				}
			}
		}
	}
	return out
}

func compareRow(m measure, group string, views []*view) Row {
	row := Row{ID: m.id, Label: m.label, Group: group, Unit: m.unit, Better: m.better}
	base := views[0].value(m)
	for i, v := range views {
		val := v.value(m)
		row.Values = append(row.Values, result.Num(val))
		if i == 0 {
			row.Change = append(row.Change, result.Num(math.NaN()))
			row.Tests = append(row.Tests, Test{P: result.Num(math.NaN())})
			continue
		}
		row.Change = append(row.Change, result.Num(change(base, val)))
		row.Tests = append(row.Tests, testRow(m, views[0], v, base, val))
	}
	return row
}

// change is the relative difference in percent; NaN when undefined.
func change(base, v float64) float64 {
	switch {
	case math.IsNaN(base) || math.IsNaN(v):
		return math.NaN()
	case base == 0 && v == 0:
		return 0
	case base == 0:
		return math.NaN()
	}
	return 100 * (v - base) / math.Abs(base)
}
