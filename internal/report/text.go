// Package report renders results. It reads result.Run and nothing else.
// This file renders the terminal summary: a header, a table in the style of
// the studies of docs/studies.md (rows are measures, columns are phases, or
// repetitions), the per-action table, and the taints in words.
package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/textfmt"
)

// Text writes the summary of a run.
func Text(w io.Writer, run *result.Run) error {
	tw := &errWriter{w: w}
	header(tw, run)
	switch {
	case len(run.Repetitions) == 0:
		tw.printf("\nNo repetition was recorded.\n")
	case len(run.Repetitions) == 1:
		rep := &run.Repetitions[0]
		phaseText(tw, run, rep)
		serverText(tw, run, rep)
		actionText(tw, rep)
		dataSet(tw, run)
		taints(tw, rep)
		validity(tw, run, rep)
	default:
		repetitionText(tw, run)
		dataSet(tw, run)
		repetitionTaints(tw, run)
		repetitionValidity(tw, run)
	}
	mailSection(tw, run)
	pubsubSection(tw, run)
	thresholds(tw, run)
	outputs(tw, run)
	if run.Partial {
		tw.printf("\nPARTIAL RESULT: %s\n", run.Reason)
	}
	return tw.err
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

func header(w *errWriter, run *result.Run) {
	m := run.Meta
	title := m.Scenario
	if m.Label != "" {
		title += " [" + m.Label + "]"
	}
	w.printf("%s · %s\n", title, m.Target)
	model := m.Model
	switch {
	case m.RatePerS > 0:
		model += fmt.Sprintf(", %s arrivals/s", num(m.RatePerS))
	case m.CountBound():
		model += ", " + m.CountText()
	}
	users := fmt.Sprintf("%d users", m.Users)
	if len(m.Groups) > 0 {
		var gs []string
		for _, g := range m.Groups {
			kind := g.Model
			if len(g.Actions) == 0 {
				kind = "passive"
			}
			gs = append(gs, fmt.Sprintf("%s %s (%s)", num(float64(g.Users)), g.Name, kind))
		}
		users, model = strings.Join(gs, " + "), "groups"
	}
	w.printf("%s · %s · seed %d · speedup %gx · segment %s · engine %s", users, model, m.Seed, m.Speedup, m.Segment, m.Engine)
	if m.Threads > 0 {
		w.printf(" (%d thread%s)", m.Threads, plural(m.Threads))
	}
	w.printf("\n%s, %d cores · throng %s · %s\n", m.Host.Hostname, m.Host.Cores, m.Versions.Build(), m.StartedAt.Format("2006-01-02 15:04:05 MST"))
	if m.EmbeddedTarget() {
		w.printf("The target ran inside the throng process: the client CPU figures include the server's, and no server cost is given.\n")
	}
	if d := m.Settings["negotiated_dialect"]; d != "" { // files over SMB: what the server chose
		yes := func(key, what string) string {
			if m.Settings[key] == "true" {
				return what
			}
			return "not " + what
		}
		w.printf("Negotiated with the server: SMB %s, %s, %s.\n", d, yes("signed", "signed"), yes("encrypted", "encrypted"))
	}
	if p := m.Settings["protocol"]; p != "" { // web: what the users spoke
		switch {
		case m.Settings["redirects"] != "": // users that behave like users
			w.printf("Protocol: %s; cookies %s, up to %s redirects followed.\n", p, onOff(m.Settings["cookies"]), m.Settings["redirects"])
		case m.Settings["streams"] != "": // a static storm over HTTP/2
			w.printf("Protocol: %s, %s users to a connection; a static storm (no cookies, redirects not followed).\n", p, m.Settings["streams"])
		default:
			w.printf("Protocol: %s.\n", p)
		}
	}
	if note := m.Settings["note"]; note != "" { // a driver's caveat (mail: profiles are not comparable)
		w.printf("Note: %s.\n", note)
	}
}

// write prints a table (model.go) on the report's writer.
func (e *errWriter) write(t *textfmt.Table) {
	if e.err == nil {
		e.err = t.Write(e.w)
	}
}

// phaseText prints the phase table and the whole run's totals.
func phaseText(w *errWriter, run *result.Run, rep *result.Repetition) {
	w.printf("\n")
	w.write(phaseTable(run, rep))
	if len(rep.Summaries) > 0 {
		all := &rep.Summaries[len(rep.Summaries)-1]
		w.printf("\nElapsed %s; %s actions, %s per second over the whole run.\n",
			secs(rep.ElapsedS), num(float64(all.Total.Count)), num(all.Total.RatePerS))
	}
}

// serverText prints the counter table, where its rows were read, the
// processes matched, why there is no server cost, and the sources' gaps.
func serverText(w *errWriter, run *result.Run, rep *result.Repetition) {
	t, from, notes := serverTable(run, rep)
	if t == nil {
		return
	}
	w.printf("\n")
	w.write(t)
	w.printf("Read from: %s.\n", strings.Join(from, "; "))
	for _, n := range notes {
		w.printf("%s\n", n)
	}
}

// actionText prints the per-action table and the errors by class.
func actionText(w *errWriter, rep *result.Repetition) {
	phase, t, errs := actionTable(rep)
	if t == nil {
		return
	}
	w.printf("\nPer action (%s):\n", phase)
	w.write(t)
	for _, e := range errs {
		w.printf("  %s\n", e)
	}
}

// repetitionText prints the repetition table and how they were ranked.
func repetitionText(w *errWriter, run *result.Run) {
	w.printf("\n")
	w.write(repetitionTable(run))
	if n := rankNote(run); n != "" {
		w.printf("\n%s\n", n)
	}
}

// sourceLabel says in words where a row was read.
func sourceLabel(src string) string {
	switch src {
	case "system":
		return "this machine (/proc; it also runs throng)"
	case "generator":
		return "throng itself"
	}
	return src
}

// shownPhases are the summaries a table shows: every phase and "all", or
// "all" alone when there is only one phase.
func shownPhases(rep *result.Repetition) []result.Summary {
	sums := rep.Summaries
	if len(sums) == 2 && sums[0].Intervals == sums[1].Intervals {
		return sums[1:]
	}
	return sums
}

// eventRow is a phase-table row of one of the driver's events: how many
// there were, and how many were lost or failed.
type eventRow struct {
	name string
	cell func(s *result.Summary) string
}

// eventRows lists the rows of the driver's events (Meta.Events) that
// happened in any of the phases shown: they are not in the totals.
func eventRows(run *result.Run, sums []result.Summary) []eventRow {
	var out []eventRow
	first := len(run.Meta.Actions) - len(run.Meta.Events)
	for k, name := range run.Meta.Events {
		i := first + k
		seen := false
		for _, s := range sums {
			seen = seen || (i < len(s.Actions) && s.Actions[i].Count > 0)
		}
		if !seen {
			continue
		}
		label := name + " (events)"
		switch {
		case strings.HasPrefix(name, scenario.JourneyPrefix):
			label = name + " (journeys)"
		case strings.HasPrefix(name, "check:"):
			label = name + " (checks)"
		}
		out = append(out, eventRow{label, func(s *result.Summary) string {
			if i >= len(s.Actions) {
				return "–"
			}
			a := &s.Actions[i]
			cell := num(float64(a.Count))
			if lost := a.ErrorsByClass["lost"]; lost > 0 {
				cell += fmt.Sprintf(", %s lost", num(float64(lost)))
			}
			if other := a.Errors - a.ErrorsByClass["lost"]; other > 0 {
				cell += fmt.Sprintf(", %s errors", num(float64(other)))
			}
			return cell
		}})
	}
	return out
}

// dataSet says what the driver wrote before each repetition, and for a
// data set kept from an earlier run what it checked and repaired, naming
// the repaired files.
func dataSet(w *errWriter, run *result.Run) {
	noun := map[string]string{"files": "files", "mail": "messages"}[run.Meta.Driver]
	if noun == "" {
		noun = "items"
	}
	var lines []string
	for i := range run.Repetitions {
		p := run.Repetitions[i].Preparation
		if p == nil {
			continue
		}
		who := ""
		if len(run.Repetitions) > 1 {
			who = fmt.Sprintf("run %d: ", i+1)
		}
		how := fmt.Sprintf("%s in %s, %s/s; %s", textfmt.Bytes(float64(p.Bytes)), secs(p.ElapsedS), textfmt.Bytes(p.MBps*1e6), p.Method)
		if p.Checked == 0 {
			lines = append(lines, fmt.Sprintf("%s%s %s written (%s)", who, num(float64(p.Items)), noun, how))
			continue
		}
		l := fmt.Sprintf("%skept from an earlier run: %s %s checked by listing, ", who, num(float64(p.Checked)), noun)
		switch {
		case p.Repaired == 0:
			l += "none repaired"
		default:
			l += fmt.Sprintf("%s repaired, written again (%s)", num(float64(p.Repaired)), how)
			named := strings.Join(p.RepairedFiles, "; ")
			if int64(len(p.RepairedFiles)) < p.Repaired {
				named = fmt.Sprintf("the first %d: %s; and %s more", len(p.RepairedFiles), named, num(float64(p.Repaired-int64(len(p.RepairedFiles)))))
			}
			l += ": " + named
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return
	}
	w.printf("\nData set before the run:\n")
	for _, l := range lines {
		w.printf("  %s.\n", l)
	}
}

// validity prints a repetition's verdict and its checks.
func validity(w *errWriter, run *result.Run, rep *result.Repetition) {
	v := result.ValidityOf(&run.Meta, rep)
	if v.Valid {
		w.printf("\nVerdict: valid — the figures of the %s phase can be trusted:\n", v.Phase)
	} else {
		w.printf("\nVerdict: NOT VALID — the figures of the %s phase cannot be trusted as they are:\n", v.Phase)
	}
	t := &textfmt.Table{Left: func(int, string) bool { return true }}
	for _, c := range v.Checks {
		t.Add("  "+c.Status, c.Name, c.Message)
	}
	w.write(t)
}

// repetitionValidity prints each repetition's verdict, with the checks
// that did not pass.
func repetitionValidity(w *errWriter, run *result.Run) {
	valid, bad := result.RunValid(run)
	if valid {
		w.printf("\nVerdict: valid — every run's figures can be trusted (%s phase).\n", result.ValidityOf(&run.Meta, &run.Repetitions[0]).Phase)
		return
	}
	w.printf("\nVerdict: NOT VALID — %d of %d runs cannot be trusted as they are:\n", len(bad), len(run.Repetitions))
	// Each distinct reason once, with the runs it concerns.
	var order []string
	runs := map[string][]string{}
	for _, i := range bad {
		v := result.ValidityOf(&run.Meta, &run.Repetitions[i-1])
		for _, c := range v.Checks {
			if c.Status == result.Fail || c.Status == result.Unknown {
				why := c.Name + " " + c.Status + ": " + c.Message
				if _, ok := runs[why]; !ok {
					order = append(order, why)
				}
				runs[why] = append(runs[why], strconv.Itoa(i))
			}
		}
	}
	for _, why := range order {
		label := "run"
		if len(runs[why]) > 1 {
			label = "runs"
		}
		w.printf("  - %s %s: %s\n", label, strings.Join(runs[why], ", "), why)
	}
}

// thresholds prints the outcomes kept in the result.
func thresholds(w *errWriter, run *result.Run) {
	if len(run.Thresholds) == 0 {
		return
	}
	w.printf("\nThresholds:\n")
	defaults := false
	for _, o := range run.Thresholds {
		mark := "pass"
		if !o.Pass {
			mark = "FAIL"
		}
		w.printf("  %s  %s — %s\n", mark, o.Shown(), o.Message)
		defaults = defaults || o.Default
	}
	if defaults {
		w.printf("  (default): the %s family judges every run by it; a threshold of yours on the same metric replaces it.\n", run.Meta.Driver)
	}
}

// outputs prints what became of the run's live outputs (--prometheus,
// --output): each one's intervals, and why one was dropped.
func outputs(w *errWriter, run *result.Run) {
	if len(run.Outputs) == 0 {
		return
	}
	w.printf("\nOutputs:\n")
	for _, o := range run.Outputs {
		if o.Dropped {
			w.printf("  DROPPED  %s: %s; %d intervals sent, %d lost (the run went on without it)\n", o.Name, o.Reason, o.Delivered, o.Lost)
			continue
		}
		w.printf("  ok       %s: %d intervals sent\n", o.Name, o.Delivered)
	}
}

func errCell(a *result.ActionSummary) string {
	if a.Errors == 0 {
		return "0"
	}
	return fmt.Sprintf("%s (%s)", num(float64(a.Errors)), pct(a.ErrorRate))
}

func taints(w *errWriter, rep *result.Repetition) {
	if len(rep.Taints) == 0 {
		return
	}
	w.printf("\nWarnings:\n")
	for _, t := range rep.Taints {
		w.printf("  - %s\n", t.Message)
	}
}

// repetitionTaints prints each distinct warning once, with the runs it
// concerns.
func repetitionTaints(w *errWriter, run *result.Run) {
	var order []string
	runs := map[string][]string{}
	for i := range run.Repetitions {
		for _, t := range run.Repetitions[i].Taints {
			if _, ok := runs[t.Message]; !ok {
				order = append(order, t.Message)
			}
			runs[t.Message] = append(runs[t.Message], strconv.Itoa(i+1))
		}
	}
	if len(order) == 0 {
		return
	}
	w.printf("\nWarnings:\n")
	for _, m := range order {
		label := "run"
		if len(runs[m]) > 1 {
			label = "runs"
		}
		w.printf("  - %s %s: %s\n", label, strings.Join(runs[m], ", "), m)
	}
}

func measureOf(s *result.Summary, key string) float64 {
	switch key {
	case "elapsed_s":
		return s.DurationS
	case "rate_per_s":
		return s.Total.RatePerS
	case "error_rate":
		return s.Total.ErrorRate
	case "latency_mean_ms":
		return s.Total.Latency.MeanMs
	case "latency_p50_ms":
		return s.Total.Latency.P50Ms
	case "latency_p95_ms":
		return s.Total.Latency.P95Ms
	case "latency_p99_ms":
		return s.Total.Latency.P99Ms
	case "client_cpu_cores":
		return s.ClientCPUMean
	}
	return math.NaN()
}

func format(key string, v float64) string {
	if math.IsNaN(v) {
		return "–"
	}
	switch {
	case key == "elapsed_s":
		return secs(v)
	case key == "error_rate":
		return pct(v)
	case strings.HasSuffix(key, "_ms"):
		return ms(v, 1)
	case key == "client_cpu_cores":
		return fmt.Sprintf("%.2f", v)
	}
	return num(v)
}

var (
	num       = textfmt.Num
	sig       = textfmt.Sig
	secs      = textfmt.Secs
	pct       = textfmt.Pct
	bytesRate = textfmt.BytesRate
)

// ms formats milliseconds; "–" when nothing was measured.
func ms(v float64, n uint64) string {
	if n == 0 || math.IsNaN(v) {
		return "–"
	}
	return textfmt.Ms(v)
}

func anySkipped(sums []result.Summary) bool {
	for _, s := range sums {
		if s.Total.Skipped > 0 {
			return true
		}
	}
	return false
}

func anyDropped(sums []result.Summary) bool {
	for _, s := range sums {
		if s.Total.Dropped > 0 {
			return true
		}
	}
	return false
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func onOff(b string) string {
	if b == "true" {
		return "on"
	}
	return "off"
}
