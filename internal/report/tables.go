package report

import (
	"fmt"
	"strings"

	"github.com/throng-io/throng/internal/textfmt"
)

// tables writes a run's summary tables on the HTML page: the same tables
// as the terminal summary (model.go) — the repetitions, the phases, the
// actions with their errors, the server's counters.
func tables(b *strings.Builder, v *view, many bool) {
	b.WriteString("<section class=\"card\">\n")
	if many {
		fmt.Fprintf(b, "<h3><i class=\"dot\" style=\"background:%s\"></i>%s</h3>\n", v.color, esc(v.name))
	}
	if v.rep == nil {
		b.WriteString("<p>No repetition was recorded.</p>\n</section>\n")
		return
	}
	of := "" // which repetition the tables below describe
	if len(v.run.Repetitions) > 1 {
		htmlTable(b, "Repetitions", repetitionTable(v.run))
		if n := rankNote(v.run); n != "" {
			fmt.Fprintf(b, "<p class=\"note\">%s</p>\n", esc(n))
		}
		of = ", repetition 1"
	}
	htmlTable(b, "By phase"+of, phaseTable(v.run, v.rep))
	if phase, t, errs := actionTable(v.rep); t != nil {
		htmlTable(b, "By action ("+phase+of+")", t)
		if len(errs) > 0 {
			b.WriteString("<ul class=\"errs\">\n")
			for _, e := range errs {
				fmt.Fprintf(b, "<li>%s</li>\n", esc(e))
			}
			b.WriteString("</ul>\n")
		}
	}
	if t, from, notes := serverTable(v.run, v.rep); t != nil {
		htmlTable(b, "Server counters"+of, t)
		fmt.Fprintf(b, "<p class=\"note\">Read from: %s.</p>\n", esc(strings.Join(from, "; ")))
		for _, n := range notes {
			fmt.Fprintf(b, "<p class=\"note\">%s</p>\n", esc(n))
		}
	}
	b.WriteString("</section>\n")
}

// htmlTable writes a table of model.go with its caption.
func htmlTable(b *strings.Builder, caption string, t *textfmt.Table) {
	t.HTML(b, caption) // a strings.Builder does not fail
}
