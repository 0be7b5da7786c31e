package report

// This file builds the report's tables once, as data (textfmt.Table):
// the phases, the server's counters, the actions and the repetitions. The
// terminal summary (text.go) and the HTML page (tables.go) render these
// same tables, as do Markdown and CSV (textfmt), so a row added or lost
// here is added or lost in every format (goldens in testdata/tables).

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/textfmt"
)

// phaseTable: rows = measures, columns = phases then "all".
func phaseTable(run *result.Run, rep *result.Repetition) *textfmt.Table {
	sums := shownPhases(rep)
	t := &textfmt.Table{}
	head := []string{""}
	for _, s := range sums {
		head = append(head, s.Phase)
	}
	t.Add(head...)
	row := func(name string, f func(s *result.Summary) string) {
		cells := []string{name}
		for i := range sums {
			cells = append(cells, f(&sums[i]))
		}
		t.Add(cells...)
	}
	open := run.Meta.Model == "open"
	row("duration", func(s *result.Summary) string { return secs(s.DurationS) })
	row("users (mean / max)", func(s *result.Summary) string {
		return fmt.Sprintf("%s / %d", num(s.UsersMean), s.UsersMax)
	})
	row("actions", func(s *result.Summary) string { return num(float64(s.Total.Count)) })
	row("actions/s", func(s *result.Summary) string { return num(s.Total.RatePerS) })
	row("errors", func(s *result.Summary) string { return errCell(&s.Total) })
	if anyDropped(sums) {
		row("dropped arrivals", func(s *result.Summary) string { return num(float64(s.Total.Dropped)) })
	}
	if anySkipped(sums) {
		row("skipped (not attempted)", func(s *result.Summary) string { return num(float64(s.Total.Skipped)) })
	}
	for _, e := range eventRows(run, sums) {
		row(e.name, e.cell)
	}
	lat := "latency"
	if open {
		lat = "latency (from schedule)"
	}
	row(lat+" mean", func(s *result.Summary) string { return ms(s.Total.Latency.MeanMs, s.Total.Timed()) })
	row(lat+" p50", func(s *result.Summary) string { return ms(s.Total.Latency.P50Ms, s.Total.Timed()) })
	row(lat+" p90", func(s *result.Summary) string { return ms(s.Total.Latency.P90Ms, s.Total.Timed()) })
	row(lat+" p95", func(s *result.Summary) string { return ms(s.Total.Latency.P95Ms, s.Total.Timed()) })
	row(lat+" p99", func(s *result.Summary) string { return ms(s.Total.Latency.P99Ms, s.Total.Timed()) })
	row(lat+" p99.9", func(s *result.Summary) string { return ms(s.Total.Latency.P999Ms, s.Total.Timed()) })
	row(lat+" max", func(s *result.Summary) string { return ms(s.Total.Latency.MaxMs, s.Total.Timed()) })
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
	row("client-bound intervals", func(s *result.Summary) string {
		return fmt.Sprintf("%d of %d", s.BoundIntervals, s.Intervals)
	})
	return t
}

// serverTable: the counter rows (seed names) and the cost rows, by phase,
// "mean / peak"; nil without any. from says where the rows were read, in
// words; notes, the processes each server process source matched, why
// there is no server cost when there is none, then the sources that were
// down, with their reasons.
func serverTable(run *result.Run, rep *result.Repetition) (t *textfmt.Table, from, notes []string) {
	sums := shownPhases(rep)
	var ids []string
	labels := map[string]string{}
	sources := map[string]string{}
	for _, s := range sums {
		for _, r := range s.Server {
			if _, ok := labels[r.ID]; !ok {
				ids = append(ids, r.ID)
				labels[r.ID] = r.Label
			}
			sources[r.ID] = r.Source
		}
	}
	if len(ids) == 0 {
		return nil, nil, nil
	}
	t = &textfmt.Table{}
	head := []string{"counters (mean / peak)"}
	for _, s := range sums {
		head = append(head, s.Phase)
	}
	t.Add(head...)
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
		t.Add(cells...)
		if src := sources[id]; !seen[src] {
			seen[src] = true
			from = append(from, sourceLabel(src))
		}
	}
	all := result.Find(rep.Summaries, result.All)
	if all == nil {
		return t, from, nil
	}
	for i := range all.Counters {
		c := &all.Counters[i]
		if roots := c.Roots(); len(roots) > 0 {
			pids := make([]string, len(roots))
			for k, pid := range roots {
				pids[k] = strconv.Itoa(pid)
			}
			notes = append(notes, fmt.Sprintf("%s matched PID%s %s (with their children).", c.Source, plural(len(roots)), strings.Join(pids, ", ")))
		}
	}
	if all.FindRow("server_cores") == nil && !run.Meta.EmbeddedTarget() {
		notes = append(notes, "Server cost: not measured. Give --server-process NAME|PID or --node-exporter URL: this machine's counters include throng and whatever else runs here.")
	}
	for _, c := range all.Counters {
		if c.Down > 0 {
			why := ""
			if len(c.Errors) > 0 {
				why = ": " + strings.Join(c.Errors, "; ")
			}
			notes = append(notes, fmt.Sprintf("Gap: %s did not answer in %d of %d intervals%s.", c.Source, c.Down, c.Up+c.Down, why))
		}
	}
	return t, from, notes
}

// actionTable: one row per action that ran, for the steady phase (else the
// whole run), and the errors by class with a sample message each; nil
// when it would say nothing the phase table does not (one action, no
// error).
func actionTable(rep *result.Repetition) (phase string, t *textfmt.Table, errs []string) {
	s := result.Find(rep.Summaries, "steady")
	if s == nil || s.Total.Count == 0 {
		s = result.Find(rep.Summaries, result.All)
	}
	if s == nil {
		return "", nil, nil
	}
	shown := 0
	for _, a := range s.Actions {
		if a.Count > 0 || a.Dropped > 0 {
			shown++
		}
	}
	if shown < 2 && s.Total.Errors == 0 {
		return "", nil, nil
	}
	t = &textfmt.Table{}
	t.Add("action", "count", "per s", "errors", "mean", "p50", "p95", "p99", "max")
	for _, a := range s.Actions {
		if a.Count == 0 && a.Dropped == 0 {
			continue
		}
		t.Add(a.Name, num(float64(a.Count)), num(a.RatePerS), errCell(&a),
			ms(a.Latency.MeanMs, a.Timed()), ms(a.Latency.P50Ms, a.Timed()), ms(a.Latency.P95Ms, a.Timed()),
			ms(a.Latency.P99Ms, a.Timed()), ms(a.Latency.MaxMs, a.Timed()))
	}
	for _, a := range s.Actions {
		classes := make([]string, 0, len(a.ErrorsByClass))
		for c := range a.ErrorsByClass {
			classes = append(classes, c)
		}
		sort.Strings(classes)
		for _, c := range classes {
			msg := a.Messages[c]
			if msg != "" {
				msg = ": " + msg
			}
			errs = append(errs, fmt.Sprintf("%s: %s %s errors%s", a.Name, num(float64(a.ErrorsByClass[c])), c, msg))
		}
	}
	return s.Phase, t, errs
}

// repetitionTable: rows = measures, columns = runs, then the aggregate.
func repetitionTable(run *result.Run) *textfmt.Table {
	agg := run.Aggregate
	phase := "steady"
	if run.Meta.CountBound() {
		phase = result.All
	}
	t := &textfmt.Table{}
	head := []string{phase}
	for i := range run.Repetitions {
		head = append(head, fmt.Sprintf("run %d", i+1))
	}
	if agg != nil {
		head = append(head, fmt.Sprintf("mean of %d", len(agg.Kept)), "median", "min", "max")
	}
	t.Add(head...)
	var ap *result.AggregatePhase
	if agg != nil {
		for i := range agg.Phases {
			if agg.Phases[i].Phase == phase {
				ap = &agg.Phases[i]
			}
		}
	}
	for _, m := range []struct{ name, key string }{
		{"elapsed", "elapsed_s"}, {"actions/s", "rate_per_s"}, {"error rate", "error_rate"},
		{"latency mean", "latency_mean_ms"}, {"latency p50", "latency_p50_ms"},
		{"latency p95", "latency_p95_ms"}, {"latency p99", "latency_p99_ms"},
		{"client CPU (cores)", "client_cpu_cores"},
	} {
		cells := []string{m.name}
		for i := range run.Repetitions {
			s := result.Find(run.Repetitions[i].Summaries, phase)
			v := math.NaN()
			if s != nil {
				v = measureOf(s, m.key)
			}
			cells = append(cells, format(m.key, v))
		}
		if ap != nil {
			for _, me := range ap.Measures {
				if me.Name == m.key {
					cells = append(cells, format(m.key, float64(me.TrimmedMean)), format(m.key, float64(me.Median)),
						format(m.key, float64(me.Min)), format(m.key, float64(me.Max)))
				}
			}
		}
		t.Add(cells...)
	}
	return t
}

// rankNote says how the repetitions were ranked and which the mean keeps;
// "" without an aggregate.
func rankNote(run *result.Run) string {
	agg := run.Aggregate
	if agg == nil {
		return ""
	}
	var kept []string
	for _, k := range agg.Kept {
		kept = append(kept, strconv.Itoa(k+1))
	}
	by := "steady-state actions/s"
	if agg.RankedBy == "elapsed_s" {
		by = "elapsed time"
	}
	return fmt.Sprintf("Runs ranked by %s; the mean drops the %d fastest and %d slowest, keeping runs %s.",
		by, agg.Trim, agg.Trim, strings.Join(kept, ", "))
}
