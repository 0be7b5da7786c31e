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
// an older version could misread a newer one (/2: rows per phase, a
// confidence interval and a family-wise verdict per run instead of a
// Mann-Whitney test; /3: the intervals are at ci_level, adjusted to agree
// with the verdicts, no longer at 95 %).
const Schema = "throng.compare/3"

// Input is one run to compare and the file it was read from.
type Input struct {
	Path string
	Run  *result.Run
}

// Comparison is runs side by side: rows are measures of a phase, columns
// are runs (configurations); every run after the first is set against the
// first. It is plain data: Render writes it as text, Markdown, CSV or JSON.
type Comparison struct {
	Schema string   `json:"schema"`
	Phases []string `json:"phases"` // the phases compared, in order
	Method string   `json:"method"`
	Family string   `json:"family"` // fdr or fwer: how the error is controlled over the comparison
	Alpha  float64  `json:"alpha"`  // the error rate of the verdicts
	// CILevel is the confidence level of every difference's interval:
	// not 95 % but the level at which the intervals agree with the
	// verdicts (an interval excludes 0 exactly when its row is called
	// different), from the family and the rows called (see ciLevel).
	CILevel float64 `json:"ci_level"`
	// Tested is the number of differences in the family (rows × runs
	// after the first with two or more repetitions on both sides).
	Tested   int          `json:"tested"`
	Runs     []Column     `json:"runs"`
	Rows     []Row        `json:"rows"`
	Config   []ConfigDiff `json:"config"`   // what differs between the runs' configurations, key by key
	Warnings []string     `json:"warnings"` // each once
	// runState marks the warnings about one run's own state (client-bound,
	// partial, not valid), which a page showing the runs says with each.
	runState map[string]bool
}

// Between returns the warnings about comparing the runs (different loads,
// profiles, machines; too few repetitions), without those about one run's
// own state.
func (c *Comparison) Between() []string {
	var out []string
	for _, w := range c.Warnings {
		if !c.runState[w] {
			out = append(out, w)
		}
	}
	return out
}

// Column describes one compared run.
type Column struct {
	Label       string `json:"label"` // Meta.Label, else "scenario (file)"
	File        string `json:"file"`
	Scenario    string `json:"scenario"`
	Setup       string `json:"setup"` // users, model, engine, machine, in words
	Repetitions int    `json:"repetitions"`
	Used        int    `json:"used"` // repetitions that finished: the values' sample
	Trim        int    `json:"trim"` // dropped at each end of each row's values
	Partial     bool   `json:"partial"`
	// Valid counts the repetitions whose validity verdict is valid.
	Valid      int                       `json:"valid"`
	Thresholds []result.ThresholdOutcome `json:"thresholds,omitempty"`
}

// Row is one measure of one phase across the runs.
type Row struct {
	Phase  string `json:"phase"`
	ID     string `json:"id"`
	Label  string `json:"label"`
	Group  string `json:"group"`            // client, action, delivery, server
	Unit   string `json:"unit,omitempty"`   // of the values: 1/s, ratio, count, ms, cores, MB/s; server rows say it in Label
	Better string `json:"better,omitempty"` // higher, lower, or "" when neither is better
	Values []Cell `json:"values"`           // one per run
	Diffs  []Diff `json:"diffs"`            // per run against the first; the first's is empty
}

// Cell is one run's figure: the trimmed mean over its repetitions (each
// trimmed by the run's trim), their standard deviation, and how many there
// were.
type Cell struct {
	Value  result.Num `json:"value"`  // null when missing
	Spread result.Num `json:"spread"` // standard deviation of the repetitions' values; null with one
	N      int        `json:"n"`
}

// Diff is one run against the first on one row.
type Diff struct {
	Verdict Verdict    `json:"verdict"`
	Change  result.Num `json:"change_pct"` // 100·D/|first|; null when undefined
	D       result.Num `json:"diff"`       // this run's value minus the first's
	Lo      result.Num `json:"ci_low"`     // confidence interval of D at the comparison's CILevel
	Hi      result.Num `json:"ci_high"`
	P       result.Num `json:"p"`     // Yuen's two-sided p-value
	PAdj    result.Num `json:"p_adj"` // adjusted over the comparison (BH or Holm)
	// RunsNeeded estimates the repetitions per side that would call a
	// difference of this size at this spread (0: not estimated).
	RunsNeeded int `json:"runs_needed,omitempty"`
	// N are the repetitions with the measure: the first run's, this one's.
	N [2]int `json:"n"`
	// Paired: the runs' repetitions alternated (throng run A B); D and its
	// interval are the mean of the round-by-round differences.
	Paired bool `json:"paired,omitempty"`
	// sd is the standard deviation of one repetition's value for
	// RunsNeeded (of a difference's half when paired); 0 when unknown.
	sd float64
	// se and df are D's standard error and degrees of freedom, for its
	// interval at the comparison's level.
	se, df float64
}

// Verdict is a row's judgement of one run against the first.
type Verdict string

// Verdicts. Better and Worse are for measures with a known good
// direction, Higher and Lower for the others.
const (
	Baseline    Verdict = ""
	Better      Verdict = "better"
	Worse       Verdict = "worse"
	Higher      Verdict = "higher"
	Lower       Verdict = "lower"
	Same        Verdict = "no_difference" // the interval holds 0 at the family's level
	CannotJudge Verdict = "cannot_judge"  // fewer than two repetitions on a side
	NoData      Verdict = "no_data"       // a run lacks the measure
)

// Text is the verdict as printed in tables.
func (v Verdict) Text() string {
	switch v {
	case Same:
		return "no difference detectable"
	case CannotJudge:
		return "cannot judge"
	case NoData:
		return "no data"
	}
	return string(v)
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

// NormalizePhases reads a comma-separated list of phases; "" is the default.
func NormalizePhases(list string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(list, ",") {
		ph, err := NormalizePhase(p)
		if err != nil {
			return nil, err
		}
		if ph != "" && !slices.Contains(out, ph) {
			out = append(out, ph)
		}
	}
	return out, nil
}

// view is one run seen through one phase.
type view struct {
	col  Column
	run  *result.Run
	reps []*result.Repetition // the repetitions used: the finished ones, else all
	sums []*result.Summary    // their summaries of the phase; nil where missing
}

func newView(in Input, ph string) *view {
	run := in.Run
	v := &view{run: run, col: Column{Label: label(in), File: in.Path, Scenario: run.Meta.Scenario,
		Repetitions: len(run.Repetitions), Partial: run.Partial, Trim: run.Meta.Trim, Thresholds: run.Thresholds}}
	if run.Aggregate != nil {
		v.col.Trim = run.Aggregate.Trim
	}
	for r := range run.Repetitions {
		rep := &run.Repetitions[r]
		v.col.Partial = v.col.Partial || rep.Partial
		if !rep.Partial {
			v.reps = append(v.reps, rep)
		}
		if result.ValidityOf(&run.Meta, rep).Valid {
			v.col.Valid++
		}
	}
	if len(v.reps) == 0 {
		for r := range run.Repetitions {
			v.reps = append(v.reps, &run.Repetitions[r])
		}
	}
	for _, rep := range v.reps {
		s := result.Find(rep.Summaries, ph)
		if s != nil && s.Intervals == 0 {
			s = nil
		}
		v.sums = append(v.sums, s)
	}
	v.col.Used = len(v.reps)
	v.col.Setup = setup(run)
	return v
}

// values are the row's figure in each repetition that has it, and those
// repetitions' indices (their rounds, when interleaved).
func (v *view) values(m measure) ([]float64, []int) {
	var out []float64
	var idx []int
	for i, s := range v.sums {
		if s == nil {
			continue
		}
		if x, ok := m.valueIn(s, &v.run.Meta); ok {
			out = append(out, x)
			idx = append(idx, v.reps[i].Index)
		}
	}
	return out, idx
}

// Options choose what Compare compares and how.
type Options struct {
	// Phases to compare (nil: steady, or all when a run has no steady
	// phase, said in a warning).
	Phases []string
	// Family is FDR (default when "") or FWER.
	Family string
}

// Compare sets runs side by side on the phases of opt. Each run's value of
// a row is the trimmed mean of its repetitions' values (the run's trim at
// each end); every run after the first gets the difference against the
// first with a confidence interval from Yuen's test on the
// repetitions, and a verdict from its p-value adjusted over the whole
// comparison (see Method); the intervals are at the level that agrees
// with the verdicts (CILevel). Errors are bad input: fewer than two runs, an
// unknown phase or family.
func Compare(inputs []Input, opt Options) (*Comparison, error) {
	phases := slices.Clone(opt.Phases)
	family := opt.Family
	if family == "" {
		family = FDR
	}
	if !slices.Contains(Families, family) {
		return nil, fmt.Errorf("unknown error control %q: want %s", family, strings.Join(Families, " or "))
	}
	if len(inputs) < 2 {
		return nil, errors.New("compare needs at least two runs")
	}
	for i, p := range phases {
		ph, err := NormalizePhase(p)
		if err != nil {
			return nil, err
		}
		phases[i] = ph
	}
	c := &Comparison{Schema: Schema, Method: methodText(family), Family: family, Alpha: Alpha, Warnings: []string{}, Config: []ConfigDiff{}}
	if len(phases) == 0 {
		phases = []string{"steady"}
		for _, in := range inputs {
			if !hasPhase(in.Run, "steady") {
				c.Warnings = append(c.Warnings, fmt.Sprintf(
					"%s has no steady phase: comparing the whole runs (phase all) of every run.", label(in)))
				phases = []string{result.All}
				break
			}
		}
	}
	c.Phases = phases
	var first []*view
	for pi, ph := range phases {
		views := make([]*view, len(inputs))
		for i, in := range inputs {
			views[i] = newView(in, ph)
		}
		dedupeLabels(views, inputs)
		if pi == 0 {
			first = views
			for _, v := range views {
				c.Runs = append(c.Runs, v.col)
			}
		}
		for _, v := range views {
			if !hasPhase(v.run, ph) {
				c.Warnings = append(c.Warnings, fmt.Sprintf("%s has no %s phase: its column is empty there.", v.col.Label, ph))
			}
		}
		st := settingsOf(views)
		var ms []measure
		ms = append(ms, clientMeasures(st)...)
		ms = append(ms, actionMeasures(st)...)
		ms = append(ms, eventMeasures(st)...)
		ms = append(ms, serverMeasures(views)...)
		for _, m := range ms {
			if r, ok := compareRow(ph, m, views); ok {
				c.Rows = append(c.Rows, r)
			}
		}
	}
	judge(c, first)
	c.Config = configDiffs(first)
	w, state := runWarnings(first, phases, c.Config)
	c.Warnings, c.runState = append(c.Warnings, w...), state
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

// compareRow fills a row's values and differences (verdicts come later,
// from the whole family); a row no run has is left out.
func compareRow(ph string, m measure, views []*view) (Row, bool) {
	row := Row{Phase: ph, ID: m.id, Label: m.label, Group: m.group, Unit: m.unit, Better: m.better}
	samples := make([][]float64, len(views))
	rounds := make([][]int, len(views))
	any := false
	for i, v := range views {
		x, idx := v.values(m)
		samples[i], rounds[i] = x, idx
		cell := Cell{Value: result.Num(math.NaN()), Spread: result.Num(math.NaN()), N: len(x)}
		if len(x) > 0 {
			any = true
			t, _ := trimmed(x, v.col.Trim)
			cell.Value = result.Num(t)
			if len(x) > 1 {
				cell.Spread = result.Num(sd(x))
			}
		}
		row.Values = append(row.Values, cell)
	}
	if !any {
		return row, false
	}
	for i := range views {
		if i == 0 {
			row.Diffs = append(row.Diffs, Diff{})
			continue
		}
		row.Diffs = append(row.Diffs, difference(views[0], views[i], samples[0], samples[i], rounds[0], rounds[i]))
	}
	return row, true
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

func sd(x []float64) float64 {
	m := mean(x)
	ss := 0.0
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss / float64(len(x)-1))
}
