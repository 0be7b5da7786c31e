package report

// This file renders a capacity search (a capacity.Record, the result of
// `throng capacity`) as text: the live line of each step, and the whole
// record — the question, the answer in one sentence, a table of every
// step, the search's decisions, the scalability fit, the knee, the costs
// and the notes.

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/textfmt"
	"github.com/throng-io/throng/internal/threshold"
)

// CapacityLine is the live line of a capacity search's n-th step (from
// 1) once it is done: its kind, load and length, each SLO's figure with
// its 95 % half-width, the throughput, errors, the server's and the
// generator's CPU, and its verdict (with why when invalid).
//
//	step 4/16 · bracket · 400 users · 10 s: p95 310 ms ± 3.1 ms, errors 0 · 1,000/s · 0 errors · server CPU 61 % · generator 12 % · failed
func CapacityLine(c *capacity.RecordConfig, n int, s *capacity.RecordStep) string {
	var figs []string
	for _, f := range s.SLOs {
		figs = append(figs, figureText(f.SLO, f.Value, f.HalfWidth))
	}
	parts := []string{
		fmt.Sprintf("step %d/%d", n, c.Budget.Steps),
		string(s.Request.Kind),
		fmt.Sprintf("%s · %s: %s", capacity.LoadText(s.Request.Load, c.Unit), durText(s.Request.DurationS), strings.Join(figs, ", ")),
		textfmt.Num(float64(s.Throughput)) + "/s",
		textfmt.Num(float64(s.Errors)) + " errors",
	}
	if v := s.Counters.ServerCPU; !math.IsNaN(float64(v)) {
		cpu := "server CPU " + share(v)
		if k := s.Counters; k.ServerCeilingBy != "" && k.ServerCeilingBy != "machine" {
			// "server CPU 84 % of one thread"
			cpu += " of " + capacity.Ceiling{Cores: float64(k.ServerCeiling), By: k.ServerCeilingBy}.Text()
		}
		if t := s.Counters.ServerThrottled; s.Counters.ServerCeilingBy == "quota" && !math.IsNaN(float64(t)) {
			cpu += ", throttled " + share(t)
		}
		parts = append(parts, cpu)
	}
	if v := s.Counters.GeneratorCPU; !math.IsNaN(float64(v)) {
		parts = append(parts, "generator "+share(v))
	}
	verdict := s.Verdict
	if len(s.Invalid) > 0 {
		verdict += ": " + s.Invalid[0].Why
	}
	return strings.Join(append(parts, verdict), " · ")
}

// CapacityText writes a capacity search's record.
func CapacityText(w io.Writer, rec *capacity.Record) error {
	tw := &errWriter{w: w}
	c := &rec.Config
	head := []string{"capacity search"}
	for _, s := range []string{rec.Scenario, rec.Target} {
		if s != "" {
			head = append(head, s)
		}
	}
	if !rec.StartedAt.IsZero() {
		head = append(head, rec.StartedAt.Format("2006-01-02 15:04:05 MST"))
	}
	tw.printf("%s\n", strings.Join(head, " · "))
	if len(rec.Agents) > 0 {
		tw.printf("every step over %d agent%s: %s\n", len(rec.Agents), plural(len(rec.Agents)), strings.Join(rec.Agents, ", "))
	}
	tw.printf("the most %s meeting %s; between %s and %s, ±%g %%\n", dimensionWord(c), strings.Join(c.SLOs, ", "),
		textfmt.Num(c.Min), capacity.LoadText(c.Max, c.Unit), math.Round(1000*c.Precision)/10)
	budget := fmt.Sprintf("budget %d steps", c.Budget.Steps)
	if c.Budget.TimeS > 0 {
		budget += " or " + durText(c.Budget.TimeS)
	}
	warm := "no warm-up"
	if c.WarmUpS > 0 {
		warm = "warm-up " + durText(c.WarmUpS)
	}
	tw.printf("%s; steps of %s (up to %s); %s\n", budget, durText(c.StepDurationS), durText(c.MaxLengthS), warm)
	status, _ := rec.Status.MarshalText()
	tw.printf("status %s · %d step%s in %s\n\n", status, len(rec.Steps), plural(len(rec.Steps)), durText(rec.ElapsedS))
	tw.printf("%s\n", rec.Statement)
	if len(rec.Steps) > 0 {
		tw.printf("\n")
		capacitySteps(tw, rec)
		tw.printf("\nThe search's decisions:\n")
		if p := rec.Population; p != nil {
			tw.printf("%3s  %-8s %s (checked before %d step%s%s)\n", "–", "prepare", p.Why, p.Checks, plural(p.Checks),
				map[bool]string{true: fmt.Sprintf("; %d found it gone or changed", p.Failed), false: ""}[p.Failed > 0])
		}
		for i, s := range rec.Steps {
			tw.printf("%3d  %-8s %s\n", i+1, s.Request.Kind, s.Request.Why)
		}
	}
	capacityFits(tw, rec)
	if len(rec.Notes) > 0 {
		tw.printf("\nNotes:\n")
		for _, n := range rec.Notes {
			tw.printf("  - %s\n", n)
		}
	}
	return tw.err
}

// capacitySteps is the table of every step: load, length, throughput,
// latency percentiles, errors (and drops and losses when there are any),
// the server's and the generator's CPU, each SLO's figure, the verdict.
func capacitySteps(w *errWriter, rec *capacity.Record) {
	c := &rec.Config
	var dropped, lost bool
	for _, s := range rec.Steps {
		dropped = dropped || s.Dropped > 0
		lost = lost || s.ErrorsByClass["lost"] > 0
	}
	t := &textfmt.Table{}
	t.Left = func(_ int, h string) bool { return h == "step" || h == "verdict" }
	head := []string{"#", "step", loadHeader(c), "length", "actions/s", "p50", "p95", "p99", "errors"}
	if dropped {
		head = append(head, "dropped")
	}
	if lost {
		head = append(head, "lost")
	}
	head = append(head, "server CPU", "generator CPU")
	head = append(head, c.SLOs...)
	t.Add(append(head, "verdict")...)
	for i, s := range rec.Steps {
		lat := func(ms float64) string {
			if s.Count == 0 {
				return "–"
			}
			return textfmt.Ms(ms)
		}
		mark := ""
		switch i {
		case rec.Below:
			mark = " ←low"
		case rec.Above:
			mark = " ←high"
		}
		row := []string{fmt.Sprint(i + 1), string(s.Request.Kind), textfmt.Num(s.Request.Load), durText(s.Request.DurationS),
			textfmt.Num(float64(s.Throughput)), lat(s.Latency.P50Ms), lat(s.Latency.P95Ms), lat(s.Latency.P99Ms), textfmt.Num(float64(s.Errors))}
		if dropped {
			row = append(row, textfmt.Num(float64(s.Dropped)))
		}
		if lost {
			row = append(row, textfmt.Num(float64(s.ErrorsByClass["lost"])))
		}
		row = append(row, share(s.Counters.ServerCPU), share(s.Counters.GeneratorCPU))
		for _, f := range s.SLOs {
			row = append(row, figureText(f.SLO, f.Value, f.HalfWidth))
		}
		verdict := s.Verdict
		if len(s.Invalid) > 0 {
			var kinds []string
			for _, iv := range s.Invalid {
				kinds = append(kinds, string(iv.Kind))
			}
			verdict += " (" + strings.Join(kinds, ", ") + ")"
		}
		t.Add(append(row, verdict+mark)...)
	}
	if w.err == nil {
		w.err = t.Write(w.w)
	}
}

// capacityFits writes the scalability fit, the knee and the costs.
func capacityFits(w *errWriter, rec *capacity.Record) {
	c := &rec.Config
	if rec.USL == nil && rec.Knee == nil && rec.Costs == nil {
		return
	}
	w.printf("\n")
	if u := rec.USL; u != nil {
		n := c.Unit
		if c.Dimension == capacity.Rate.Name {
			n = "concurrency (actions in flight)"
		}
		w.printf("Universal Scalability Law, C(N) = λN / (1 + α(N−1) + βN(N−1)) with N the %s: λ = %s/s, α = %s, β = %s",
			n, textfmt.Sig(float64(u.Lambda)), textfmt.Sig(float64(u.Alpha)), textfmt.Sig(float64(u.Beta)))
		w.printf(" (%d points, RMSE %s/s)\n", u.Points, textfmt.Sig(float64(u.RMSE)))
		if math.IsNaN(float64(u.Peak)) {
			w.printf("  no peak (β = 0): throughput levels off at λ/α = %s/s\n", textfmt.Num(float64(u.PeakThroughput)))
		} else {
			w.printf("  predicted peak: %s %s at %s/s\n", textfmt.Num(float64(u.Peak)), strings.TrimPrefix(n, "concurrency "), textfmt.Num(float64(u.PeakThroughput)))
		}
	}
	if k := rec.Knee; k != nil {
		w.printf("Knee: %s at %s/s (proportional growth meets the highest throughput)", capacity.LoadText(float64(k.Load), c.Unit), textfmt.Num(float64(k.Throughput)))
		if !math.IsNaN(float64(k.Vertex)) {
			w.printf("; Kneedle's vertex %s", capacity.LoadText(float64(k.Vertex), c.Unit))
		}
		w.printf("\n")
	}
	if k := rec.Costs; k != nil {
		w.printf("Costs at %s: server CPU %s per action, %s cores per %s, %s per core\n", capacity.LoadText(float64(k.Load), k.Unit),
			textfmt.Ms(float64(k.CPUMsPerAction)), textfmt.Sig(float64(k.CoresPerUnit)), oneUnit(k.Unit),
			capacity.LoadText(float64(k.UnitsPerCore), k.Unit))
	}
}

// figureText writes an SLO's figure in its unit with its half-width:
// "310 ms ± 3.1 ms", "0.12 % ± 0.02 %", "0", "1,000/s ± 12/s".
func figureText(slo string, v, h result.Num) string {
	unit := ""
	if t, err := threshold.Parse(slo); err == nil {
		unit = t.Unit
	}
	f := func(x result.Num) string {
		x64 := float64(x)
		switch unit {
		case threshold.Millis:
			return textfmt.Ms(x64)
		case threshold.Ratio:
			if math.Abs(x64) < 0.01 {
				return strconv.FormatFloat(100*x64, 'f', 3, 64) + " %"
			}
			return textfmt.Sig(100*x64) + " %"
		case threshold.Count:
			return textfmt.Num(x64)
		case threshold.PerSec:
			return textfmt.Num(x64) + "/s"
		case threshold.Bool:
			return map[bool]string{true: "true", false: "false"}[x64 != 0]
		}
		return textfmt.Sig(x64)
	}
	switch {
	case math.IsNaN(float64(v)):
		return "–"
	case math.IsNaN(float64(h)):
		return f(v) + " ± ?"
	case h == 0:
		return f(v)
	}
	return f(v) + " ± " + f(h)
}

// share writes a share of a resource: "94 %", "–" when not measured.
func share(x result.Num) string {
	if math.IsNaN(float64(x)) {
		return "–"
	}
	return fmt.Sprintf("%.0f %%", 100*float64(x))
}

// durText writes seconds as a duration: "30s", "2.5s", "1m39s", "250ms".
func durText(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// dimensionWord names the load asked for in the question.
func dimensionWord(c *capacity.RecordConfig) string {
	switch c.Dimension {
	case capacity.Rate.Name:
		return "arrivals per second"
	case capacity.Speedup.Name:
		return "speedup"
	}
	return c.Unit
}

// loadHeader is the table's load column.
func loadHeader(c *capacity.RecordConfig) string {
	switch c.Unit {
	case capacity.Rate.Unit:
		return "rate /s"
	case capacity.Speedup.Unit:
		return "speedup"
	}
	return c.Unit
}

// oneUnit is one unit of load: "user", "1/s", "1×", "subscriber".
func oneUnit(unit string) string {
	switch unit {
	case capacity.Rate.Unit:
		return "1/s"
	case capacity.Speedup.Unit:
		return "1×"
	}
	return strings.TrimSuffix(unit, "s")
}
