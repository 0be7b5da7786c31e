package compare

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/stats"
	"github.com/throng-io/throng/internal/textfmt"
)

// Formats are the output formats of Render.
var Formats = []string{"text", "markdown", "csv", "json"}

// Render writes the comparison in one of Formats:
//
//   - text: the runs, the configuration differences, one table per phase
//     and group of rows (values ± spread, change, its confidence interval
//     at the comparison's level, verdict), the method, the thresholds'
//     outcomes and the warnings;
//   - markdown: the same as GitHub tables;
//   - csv: one header line, then one line per row with raw numbers (empty
//     when missing); warnings are not in it (the caller prints them);
//   - json: the Comparison itself (schema "throng.compare/3").
func Render(w io.Writer, c *Comparison, format string) error {
	switch format {
	case "text":
		return renderTable(w, c, false)
	case "markdown":
		return renderTable(w, c, true)
	case "csv":
		return renderCSV(w, c)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(c)
	}
	return fmt.Errorf("unknown format %q: want one of %s", format, strings.Join(Formats, ", "))
}

func header(c *Comparison, first string) []string {
	head := []string{first}
	for _, col := range c.Runs {
		head = append(head, col.Label)
	}
	ci := levelText(c.CILevel) + " CI"
	for _, col := range c.Runs[1:] {
		if len(c.Runs) == 2 {
			head = append(head, "change", ci, "verdict")
		} else {
			head = append(head, col.Label+" change", col.Label+" "+ci, col.Label+" verdict")
		}
	}
	return head
}

// levelText is a confidence level in percent, to two decimals at most:
// 0.95 is "95%", 0.998148 is "99.81%".
func levelText(level float64) string {
	s := strconv.FormatFloat(100*level, 'f', 2, 64)
	s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	return s + "%"
}

// cells returns a row's cells: label, values, then change, interval and
// verdict of each run after the first.
func cells(r *Row) []string {
	out := []string{r.Label}
	for _, v := range r.Values {
		out = append(out, valueCell(r.Unit, v))
	}
	base := float64(r.Values[0].Value)
	for i := 1; i < len(r.Values); i++ {
		d := r.Diffs[i]
		out = append(out, formatChange(float64(d.Change)), ciCell(r.Unit, base, d), verdictCell(d))
	}
	return out
}

func valueCell(unit string, c Cell) string {
	v := float64(c.Value)
	s := formatValue(unit, v)
	sp := float64(c.Spread)
	switch {
	case math.IsNaN(v) || math.IsNaN(sp):
	case v != 0:
		s += " ±" + strconv.FormatFloat(100*sp/math.Abs(v), 'f', 1, 64) + "%"
	default:
		s += " ±" + formatValue(unit, sp)
	}
	return s
}

// ciCell is the interval of the difference, relative to the first run's
// value when it is not 0, else in the row's unit.
func ciCell(unit string, base float64, d Diff) string {
	lo, hi := float64(d.Lo), float64(d.Hi)
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return "–"
	}
	if base != 0 && !math.IsNaN(base) {
		return formatChange(100*lo/math.Abs(base)) + " … " + formatChange(100*hi/math.Abs(base))
	}
	return formatValue(unit, lo) + " … " + formatValue(unit, hi)
}

func verdictCell(d Diff) string {
	if d.RunsNeeded >= stats.MaxRuns {
		return d.Verdict.Text() + fmt.Sprintf(" (more than %s runs a side for this size)", num(stats.MaxRuns))
	}
	switch d.Verdict {
	case Same:
		if d.RunsNeeded > 0 {
			return fmt.Sprintf("%s (≈%s runs a side for this size)", d.Verdict.Text(), num(float64(d.RunsNeeded)))
		}
	case CannotJudge:
		runs := "1 run a side"
		if d.N[0] != d.N[1] {
			runs = fmt.Sprintf("%d runs vs %d", d.N[0], d.N[1])
		}
		if d.RunsNeeded > 0 {
			return fmt.Sprintf("%s: %s (≈%s runs a side at least)", d.Verdict.Text(), runs, num(float64(d.RunsNeeded)))
		}
		return d.Verdict.Text() + ": " + runs
	case Better, Worse, Higher, Lower:
		return fmt.Sprintf("%s (p=%s)", d.Verdict.Text(), pText(float64(d.PAdj)))
	}
	return d.Verdict.Text()
}

func pText(p float64) string {
	if p < 0.001 {
		return "<0.001"
	}
	return strconv.FormatFloat(p, 'g', 2, 64)
}

func renderTable(w io.Writer, c *Comparison, md bool) error {
	ew := &errWriter{w: w}
	var labels []string
	for _, col := range c.Runs {
		labels = append(labels, col.Label)
	}
	title := fmt.Sprintf("Comparing %d configurations: %s (%s)", len(c.Runs), strings.Join(labels, ", "), strings.Join(c.Phases, ", ")+" phase")
	if len(c.Phases) > 1 {
		title += "s"
	}
	line := func(s string) {
		if md {
			ew.printf("- %s\n", mdEscape(s))
		} else {
			ew.printf("  %s\n", s)
		}
	}
	section := func(s string) {
		if md {
			ew.printf("\n**%s**\n\n", mdEscape(s))
		} else {
			ew.printf("\n%s:\n", s)
		}
	}
	if md {
		ew.printf("### %s\n\n", mdEscape(title))
	} else {
		ew.printf("%s\n", title)
	}
	for _, col := range c.Runs {
		about := []string{col.Scenario, col.File, col.Setup, repText(col), validText(col)}
		if col.Partial {
			about = append(about, "PARTIAL")
		}
		if md {
			ew.printf("- **%s**: %s\n", mdEscape(col.Label), mdEscape(strings.Join(about, " · ")))
		} else {
			ew.printf("  %s: %s\n", col.Label, strings.Join(about, " · "))
		}
	}
	if len(c.Config) > 0 {
		section("Configuration differences")
		for _, d := range c.Config {
			line(configText(d))
		}
	}
	for _, t := range c.Tables() {
		ew.printf("\n")
		if ew.err == nil {
			if md {
				ew.err = t.Markdown(ew.w)
			} else {
				ew.err = t.Write(ew.w)
			}
		}
	}
	note := c.Notes()[0]
	if md {
		ew.printf("\n<sub>%s</sub>\n", mdEscape(note))
	} else {
		ew.printf("\n%s\n", note)
	}
	if th := thresholdLines(c); len(th) > 0 {
		section("Thresholds")
		for _, l := range th {
			line(l)
		}
	}
	if len(c.Warnings) > 0 {
		section("Warnings")
		for _, warn := range c.Warnings {
			if md {
				line(warn)
			} else {
				ew.printf("  - %s\n", warn)
			}
		}
	}
	return ew.err
}

// HTML writes the comparison as an HTML fragment for a page (the HTML
// report): the tables of Tables, each captioned by its phase and group,
// then the notes. The page shows the warnings (Between) with its own.
// Every string is escaped.
func HTML(w io.Writer, c *Comparison) error {
	ew := &errWriter{w: w}
	for _, t := range c.Tables() {
		caption := t.Rows[0][0]
		t.Rows[0][0] = ""
		if ew.err == nil {
			ew.err = t.HTML(ew.w, caption)
		}
		t.Rows[0][0] = caption
	}
	for _, n := range c.Notes() {
		ew.printf("<p class=\"note\">%s</p>\n", html.EscapeString(n))
	}
	return ew.err
}

// Tables are the comparison's tables as shown: one per phase and group of
// rows that has any (its first cell names both), each row a measure with
// every run's value ± spread, then each later run's change, interval and
// verdict. Text, Markdown and the HTML report render these same tables.
func (c *Comparison) Tables() []*textfmt.Table {
	var out []*textfmt.Table
	for _, ph := range c.Phases {
		for _, g := range groups {
			t := &textfmt.Table{Left: verdictColumn}
			t.Add(header(c, ph+" · "+g.title)...)
			for i := range c.Rows {
				if r := &c.Rows[i]; r.Phase == ph && r.Group == g.name {
					t.Add(cells(r)...)
				}
			}
			if len(t.Rows) > 1 {
				out = append(out, t)
			}
		}
	}
	return out
}

// Notes are the comparison's sentences that go with its tables: the
// method, then each run's thresholds' outcomes.
func (c *Comparison) Notes() []string {
	out := []string{fmt.Sprintf("Verdicts: %s (%d differences tested; intervals at %s).", c.Method, c.Tested, levelText(c.CILevel))}
	return append(out, thresholdLines(c)...)
}

func repText(col Column) string {
	switch {
	case col.Used == 1:
		return "1 repetition"
	case col.Trim > 0 && col.Used > 2*col.Trim+1:
		return fmt.Sprintf("%d repetitions, trimmed mean of the middle %d of each row (trim %d)", col.Used, col.Used-2*col.Trim, col.Trim)
	}
	return fmt.Sprintf("%d repetitions, mean", col.Used)
}

func validText(col Column) string {
	if col.Valid == col.Repetitions {
		return "valid"
	}
	return fmt.Sprintf("NOT VALID (%d of %d repetitions valid)", col.Valid, col.Repetitions)
}

// thresholdLines says each run's thresholds' outcomes, failures in full.
func thresholdLines(c *Comparison) []string {
	var out []string
	for _, col := range c.Runs {
		if len(col.Thresholds) == 0 {
			continue
		}
		pass := 0
		var fails []string
		for _, o := range col.Thresholds {
			if o.Pass {
				pass++
			} else {
				fails = append(fails, fmt.Sprintf("FAIL %s (%s)", o.Shown(), o.Message))
			}
		}
		l := fmt.Sprintf("%s: %d of %d passed", col.Label, pass, len(col.Thresholds))
		if len(fails) > 0 {
			l += " — " + strings.Join(fails, "; ")
		}
		out = append(out, l)
	}
	return out
}

func renderCSV(w io.Writer, c *Comparison) error {
	cw := csv.NewWriter(w)
	head := []string{"phase", "id", "measure", "group", "unit", "better"}
	for _, col := range c.Runs {
		head = append(head, col.Label, col.Label+" sd", col.Label+" n")
	}
	for _, col := range c.Runs[1:] {
		for _, f := range []string{"change %", "diff", "ci low", "ci high", "p", "p adj", "verdict", "runs needed"} {
			head = append(head, col.Label+" "+f)
		}
	}
	cw.Write(head)
	raw := func(v result.Num) string {
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return ""
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	for _, r := range c.Rows {
		line := []string{r.Phase, r.ID, r.Label, r.Group, r.Unit, r.Better}
		for _, v := range r.Values {
			line = append(line, raw(v.Value), raw(v.Spread), strconv.Itoa(v.N))
		}
		for i := 1; i < len(r.Values); i++ {
			d := r.Diffs[i]
			runs := ""
			if d.RunsNeeded > 0 {
				runs = strconv.Itoa(d.RunsNeeded)
			}
			line = append(line, raw(d.Change), raw(d.D), raw(d.Lo), raw(d.Hi), raw(d.P), raw(d.PAdj), string(d.Verdict), runs)
		}
		cw.Write(line)
	}
	cw.Flush()
	return cw.Error()
}

func formatValue(unit string, v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	switch unit {
	case "ratio":
		return pct(v)
	case "ms":
		return ms(v)
	case "cores":
		return strconv.FormatFloat(v, 'f', 2, 64)
	case "1/s", "count":
		if math.Abs(v) < 10 && v != math.Trunc(v) {
			return sig(v)
		}
		return num(v)
	case "MB/s":
		return sig(v) + " MB/s"
	}
	return sig(v)
}

func formatChange(v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	if math.Abs(v) < 0.05 {
		return "0.0%"
	}
	s := strconv.FormatFloat(v, 'f', 1, 64) + "%"
	if v > 0 {
		s = "+" + s
	}
	return s
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// verdictColumn left-aligns the verdict columns.
func verdictColumn(_ int, header string) bool { return strings.HasSuffix(header, "verdict") }

var (
	num      = textfmt.Num
	sig      = textfmt.Sig
	ms       = textfmt.Ms
	pct      = textfmt.Pct
	mdEscape = textfmt.MarkdownEscape
)
