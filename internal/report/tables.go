package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/throng-io/throng/internal/result"
)

// tables writes a run's summary tables: the phases, the actions, the
// errors with a sample message, the server's counters and the
// repetitions.
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
		htmlTable(b, "Repetitions", repetitionGrid(v.run))
		of = ", repetition 1"
	}
	htmlTable(b, "By phase"+of, phaseGrid(v.run, v.rep))
	s := result.Find(v.rep.Summaries, "steady")
	if s == nil || s.Total.Count == 0 {
		s = result.Find(v.rep.Summaries, result.All)
	}
	if s != nil {
		g := [][]string{{"action", "count", "per s", "errors", "mean", "p50", "p95", "p99", "max"}}
		for _, a := range append(s.Actions, s.Total) {
			l := a.Latency
			g = append(g, []string{a.Name, num(float64(a.Count)), num(a.RatePerS), errCell(&a), ms(l.MeanMs, a.Timed()),
				ms(l.P50Ms, a.Timed()), ms(l.P95Ms, a.Timed()), ms(l.P99Ms, a.Timed()), ms(l.MaxMs, a.Timed())})
		}
		htmlTable(b, "By action ("+s.Phase+of+")", g)
		var errs []string
		for _, a := range s.Actions {
			for _, c := range result.SortedKeys(toFloat(a.ErrorsByClass)) {
				msg := a.Messages[c]
				if msg != "" {
					msg = ": " + msg
				}
				errs = append(errs, fmt.Sprintf("%s: %s %s errors%s", a.Name, num(float64(a.ErrorsByClass[c])), c, msg))
			}
		}
		if len(errs) > 0 {
			b.WriteString("<ul class=\"errs\">\n")
			for _, e := range errs {
				fmt.Fprintf(b, "<li>%s</li>\n", esc(e))
			}
			b.WriteString("</ul>\n")
		}
	}
	if g, from, gaps := serverGrid(v.rep); len(g) > 1 {
		htmlTable(b, "Counters (mean / peak"+of+")", g)
		fmt.Fprintf(b, "<p class=\"note\">Read from: %s.</p>\n", esc(strings.Join(from, "; ")))
		for _, gap := range gaps {
			fmt.Fprintf(b, "<p class=\"note\">%s</p>\n", esc(gap))
		}
	}
	b.WriteString("</section>\n")
}

func toFloat(m map[string]uint64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = float64(v)
	}
	return out
}

// htmlTable writes rows (the first one is the head) as a table whose first
// column names the rows.
func htmlTable(b *strings.Builder, caption string, rows [][]string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(b, "<table>\n<caption>%s</caption>\n<thead><tr>", esc(caption))
	for _, c := range rows[0] {
		fmt.Fprintf(b, "<th>%s</th>", esc(c))
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, r := range rows[1:] {
		b.WriteString("<tr>")
		for i, c := range r {
			if i == 0 {
				fmt.Fprintf(b, "<th scope=\"row\">%s</th>", esc(c))
			} else {
				fmt.Fprintf(b, "<td>%s</td>", esc(c))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
}

// phaseGrid is the terminal report's phase table: rows are measures,
// columns are phases then "all".
func phaseGrid(run *result.Run, rep *result.Repetition) [][]string {
	sums := shownPhases(rep)
	head := []string{""}
	for _, s := range sums {
		head = append(head, s.Phase)
	}
	g := [][]string{head}
	row := func(name string, f func(s *result.Summary) string) {
		cells := []string{name}
		for i := range sums {
			cells = append(cells, f(&sums[i]))
		}
		g = append(g, cells)
	}
	open := run.Meta.Model == "open"
	row("duration", func(s *result.Summary) string { return secs(s.DurationS) })
	row("users (mean / max)", func(s *result.Summary) string { return fmt.Sprintf("%s / %d", num(s.UsersMean), s.UsersMax) })
	row("actions", func(s *result.Summary) string { return num(float64(s.Total.Count)) })
	row("actions/s", func(s *result.Summary) string { return num(s.Total.RatePerS) })
	row("errors", func(s *result.Summary) string { return errCell(&s.Total) })
	if anyDropped(sums) {
		row("dropped arrivals", func(s *result.Summary) string { return num(float64(s.Total.Dropped)) })
	}
	for _, e := range eventRows(run, sums) {
		row(e.name, e.cell)
	}
	lat := "latency"
	if open {
		lat = "latency (from schedule)"
	}
	for _, q := range []struct {
		name string
		f    func(l *result.Latency) float64
	}{{"mean", func(l *result.Latency) float64 { return l.MeanMs }}, {"p50", func(l *result.Latency) float64 { return l.P50Ms }},
		{"p90", func(l *result.Latency) float64 { return l.P90Ms }}, {"p95", func(l *result.Latency) float64 { return l.P95Ms }},
		{"p99", func(l *result.Latency) float64 { return l.P99Ms }}, {"p99.9", func(l *result.Latency) float64 { return l.P999Ms }},
		{"max", func(l *result.Latency) float64 { return l.MaxMs }}} {
		row(lat+" "+q.name, func(s *result.Summary) string { return ms(q.f(&s.Total.Latency), s.Total.Timed()) })
	}
	if open || !run.Meta.CountBound() {
		row("service time p50", func(s *result.Summary) string { return ms(s.Total.Service.P50Ms, s.Total.Timed()) })
		row("service time p99", func(s *result.Summary) string { return ms(s.Total.Service.P99Ms, s.Total.Timed()) })
	}
	row("received", func(s *result.Summary) string { return bytesRate(s.Total.BytesInPerS) })
	row("sent", func(s *result.Summary) string { return bytesRate(s.Total.BytesOutPerS) })
	row("client CPU (cores, mean / max)", func(s *result.Summary) string {
		return fmt.Sprintf("%.2f / %.2f", s.ClientCPUMean, s.ClientCPUMax)
	})
	row("load machine busy", func(s *result.Summary) string { return pct(s.MachineBusy) })
	row("client-bound intervals", func(s *result.Summary) string { return fmt.Sprintf("%d of %d", s.BoundIntervals, s.Intervals) })
	return g
}

// serverGrid is the terminal report's counter table (mean / peak by
// phase), with where the rows were read and the sources' gaps.
func serverGrid(rep *result.Repetition) (g [][]string, from, gaps []string) {
	sums := shownPhases(rep)
	var ids []string
	labels, sources := map[string]string{}, map[string]string{}
	for _, s := range sums {
		for _, r := range s.Server {
			if _, ok := labels[r.ID]; !ok {
				ids = append(ids, r.ID)
				labels[r.ID] = r.Label
			}
			sources[r.ID] = r.Source
		}
	}
	head := []string{""}
	for _, s := range sums {
		head = append(head, s.Phase)
	}
	g = [][]string{head}
	seen := map[string]bool{}
	for _, id := range ids {
		cells := []string{labels[id]}
		for i := range sums {
			r := sums[i].FindRow(id)
			switch {
			case r == nil:
				cells = append(cells, "–")
			case math.IsNaN(float64(r.Peak)):
				cells = append(cells, sig(float64(r.Mean)))
			default:
				cells = append(cells, sig(float64(r.Mean))+" / "+sig(float64(r.Peak)))
			}
		}
		g = append(g, cells)
		if src := sources[id]; !seen[src] {
			seen[src] = true
			from = append(from, sourceLabel(src))
		}
	}
	if all := result.Find(rep.Summaries, result.All); all != nil {
		for _, c := range all.Counters {
			if c.Down > 0 {
				why := ""
				if len(c.Errors) > 0 {
					why = ": " + strings.Join(c.Errors, "; ")
				}
				gaps = append(gaps, fmt.Sprintf("Gap: %s did not answer in %d of %d intervals%s.", c.Source, c.Down, c.Up+c.Down, why))
			}
		}
	}
	return g, from, gaps
}

// repetitionGrid compares the repetitions of a run, with the aggregate.
func repetitionGrid(run *result.Run) [][]string {
	phase := "steady"
	if run.Meta.CountBound() {
		phase = result.All
	}
	head := []string{phase}
	for i := range run.Repetitions {
		head = append(head, fmt.Sprintf("run %d", i+1))
	}
	var ap *result.AggregatePhase
	if agg := run.Aggregate; agg != nil {
		head = append(head, fmt.Sprintf("mean of %d", len(agg.Kept)), "median", "min", "max")
		for i := range agg.Phases {
			if agg.Phases[i].Phase == phase {
				ap = &agg.Phases[i]
			}
		}
	}
	g := [][]string{head}
	for _, m := range [][2]string{{"elapsed", "elapsed_s"}, {"actions/s", "rate_per_s"}, {"error rate", "error_rate"},
		{"latency mean", "latency_mean_ms"}, {"latency p50", "latency_p50_ms"}, {"latency p95", "latency_p95_ms"},
		{"latency p99", "latency_p99_ms"}, {"client CPU (cores)", "client_cpu_cores"}} {
		cells := []string{m[0]}
		for i := range run.Repetitions {
			v := math.NaN()
			if s := result.Find(run.Repetitions[i].Summaries, phase); s != nil {
				v = measureOf(s, m[1])
			}
			cells = append(cells, format(m[1], v))
		}
		if ap != nil {
			for _, me := range ap.Measures {
				if me.Name == m[1] {
					for _, x := range []result.Num{me.TrimmedMean, me.Median, me.Min, me.Max} {
						cells = append(cells, format(m[1], float64(x)))
					}
				}
			}
		}
		g = append(g, cells)
	}
	return g
}
