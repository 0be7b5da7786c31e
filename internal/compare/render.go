package compare

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"github.com/throng-io/throng/internal/textfmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Formats are the output formats of Render.
var Formats = []string{"text", "markdown", "csv", "json"}

// Render writes the comparison in one of Formats:
//
//   - text: the terminal tables (client rows, then server rows), the
//     method of the verdicts and the warnings in words;
//   - markdown: the same as GitHub tables;
//   - csv: one header line, then one line per row with raw numbers (empty
//     when missing); warnings are not in it (the caller prints them);
//   - json: the Comparison itself (schema "throng.compare/1").
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

// cells returns a row's cells: label, values, then change and verdict of
// each run after the first.
func cells(c *Comparison, r *Row) []string {
	out := []string{r.Label}
	for _, v := range r.Values {
		out = append(out, formatValue(r.Unit, float64(v)))
	}
	for i := 1; i < len(r.Values); i++ {
		out = append(out, formatChange(float64(r.Change[i])), verdictCell(r.Tests[i]))
	}
	return out
}

func header(c *Comparison, first string) []string {
	head := []string{first}
	for _, col := range c.Runs {
		head = append(head, col.Label)
	}
	for _, col := range c.Runs[1:] {
		if len(c.Runs) == 2 {
			head = append(head, "change", "verdict")
		} else {
			head = append(head, col.Label+" change", col.Label+" verdict")
		}
	}
	return head
}

func renderTable(w io.Writer, c *Comparison, md bool) error {
	ew := &errWriter{w: w}
	title := fmt.Sprintf("Comparing %d runs, %s phase", len(c.Runs), c.Phase)
	if md {
		ew.printf("### %s\n\n", title)
	} else {
		ew.printf("%s\n", title)
	}
	for _, col := range c.Runs {
		about := []string{col.Scenario, col.File, col.Setup}
		if col.Repetitions > 1 {
			var kept []string
			for _, k := range col.Kept {
				kept = append(kept, strconv.Itoa(k+1))
			}
			about = append(about, fmt.Sprintf("%d repetitions, mean of %s", col.Repetitions, strings.Join(kept, ", ")))
		}
		about = append(about, fmt.Sprintf("%d intervals sampled", col.Intervals))
		if col.Partial {
			about = append(about, "PARTIAL")
		}
		if md {
			ew.printf("- **%s**: %s\n", mdEscape(col.Label), mdEscape(strings.Join(about, " · ")))
		} else {
			ew.printf("  %s: %s\n", col.Label, strings.Join(about, " · "))
		}
	}
	for _, group := range []struct{ name, title string }{{"client", "client"}, {"server", "server (mean over the phase)"}} {
		t := &textfmt.Table{Left: verdictColumn}
		t.Add(header(c, group.title)...)
		for i := range c.Rows {
			if c.Rows[i].Group == group.name {
				t.Add(cells(c, &c.Rows[i])...)
			}
		}
		if len(t.Rows) == 1 {
			continue
		}
		ew.printf("\n")
		if ew.err == nil {
			if md {
				ew.err = t.Markdown(ew.w)
			} else {
				ew.err = t.Write(ew.w)
			}
		}
	}
	note := "Verdicts: " + c.Method + ". Intervals of one run are not independent samples, and about one row in twenty passes such a test by chance: read a verdict on a short run as a hint."
	if md {
		ew.printf("\n<sub>%s</sub>\n", mdEscape(note))
	} else {
		ew.printf("\n%s\n", note)
	}
	if len(c.Warnings) > 0 {
		if md {
			ew.printf("\n**Warnings**\n\n")
		} else {
			ew.printf("\nWarnings:\n")
		}
		for _, warn := range c.Warnings {
			if md {
				ew.printf("- %s\n", mdEscape(warn))
			} else {
				ew.printf("  - %s\n", warn)
			}
		}
	}
	return ew.err
}

func renderCSV(w io.Writer, c *Comparison) error {
	cw := csv.NewWriter(w)
	head := []string{"id", "measure", "group", "unit", "better"}
	for _, col := range c.Runs {
		head = append(head, col.Label)
	}
	for _, col := range c.Runs[1:] {
		head = append(head, col.Label+" change %", col.Label+" verdict", col.Label+" p")
	}
	cw.Write(head)
	raw := func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return ""
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	for _, r := range c.Rows {
		line := []string{r.ID, r.Label, r.Group, r.Unit, r.Better}
		for _, v := range r.Values {
			line = append(line, raw(float64(v)))
		}
		for i := 1; i < len(r.Values); i++ {
			line = append(line, raw(float64(r.Change[i])), string(r.Tests[i].Verdict), raw(float64(r.Tests[i].P)))
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
		return num(v)
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

func verdictCell(t Test) string {
	switch {
	case t.Verdict == TooFew:
		return fmt.Sprintf("%s (%d vs %d %s)", t.Verdict.Text(), t.N[0], t.N[1], t.Samples)
	case math.IsNaN(float64(t.P)):
		return t.Verdict.Text()
	case t.P < 0.001:
		return t.Verdict.Text() + " (p<0.001)"
	}
	return fmt.Sprintf("%s (p=%s)", t.Verdict.Text(), strconv.FormatFloat(float64(t.P), 'g', 2, 64))
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
