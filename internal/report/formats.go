package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/textfmt"
)

// Formats are the formats of throng report's summary: the terminal's
// (Text), or the summary tables alone as Markdown or CSV (Tables).
var Formats = []string{"text", "markdown", "csv"}

// Tables writes the summary tables of a run — the repetitions (when
// several), then the phases, the actions and the server's counters of its
// first repetition: the tables Text and HTML show, from the same model —
// as Markdown (a heading and a GitHub table each) or CSV (each table's
// name on a line of its own, its rows, then an empty line).
func Tables(w io.Writer, run *result.Run, format string) error {
	type named struct {
		name string
		t    *textfmt.Table
	}
	var ts []named
	if n := len(run.Repetitions); n > 0 {
		rep := &run.Repetitions[0]
		of := ""
		if n > 1 {
			ts = append(ts, named{"Repetitions", repetitionTable(run)})
			of = ", repetition 1"
		}
		ts = append(ts, named{"By phase" + of, phaseTable(run, rep)})
		if phase, t, _ := actionTable(rep); t != nil {
			ts = append(ts, named{"By action (" + phase + of + ")", t})
		}
		if t, _, _ := serverTable(run, rep); t != nil {
			ts = append(ts, named{"Server counters" + of, t})
		}
	}
	title := run.Meta.Scenario
	if run.Meta.Label != "" {
		title += " [" + run.Meta.Label + "]"
	}
	switch format {
	case "markdown":
		if _, err := fmt.Fprintf(w, "## %s\n", textfmt.MarkdownEscape(title)); err != nil {
			return err
		}
		for _, n := range ts {
			if _, err := fmt.Fprintf(w, "\n**%s**\n\n", textfmt.MarkdownEscape(n.name)); err != nil {
				return err
			}
			if err := n.t.Markdown(w); err != nil {
				return err
			}
		}
	case "csv":
		for _, n := range ts {
			one := &textfmt.Table{Rows: [][]string{{n.name}}}
			if err := one.CSV(w); err != nil {
				return err
			}
			if err := n.t.CSV(w); err != nil {
				return err
			}
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
	case "text":
		return Text(w, run)
	default:
		return fmt.Errorf("unknown format %q: want one of %s", format, strings.Join(Formats, ", "))
	}
	return nil
}
