package report

// This file draws a capacity search (a capacity.Record) as one HTML page:
// the answer, throughput and latency percentiles against the load with
// the SLO limits, the bracket (the 95 % interval) and the knee shaded, and
// the table of steps as text. It uses the charts of the run report.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/threshold"
)

// CapacityHTML writes a capacity search's record as a self-contained page.
func CapacityHTML(w io.Writer, rec *capacity.Record) error {
	if rec == nil {
		return errors.New("no capacity search to report")
	}
	b := &strings.Builder{}
	title := "capacity · " + rec.Scenario
	fmt.Fprintf(b, pageHead, esc("throng · "+title), pageStyle, pageScript)
	fmt.Fprintf(b, "<h1>%s</h1>\n<p><b>%s</b></p>\n", esc(title), esc(rec.Statement))
	b.WriteString("<div class=\"grid\">\n")
	for _, c := range capacityCharts(rec) {
		figure(b, c)
	}
	b.WriteString("</div>\n<h2>The search</h2>\n<pre>")
	var text strings.Builder
	if err := CapacityText(&text, rec); err != nil {
		return err
	}
	b.WriteString(esc(text.String()))
	b.WriteString("</pre>\n<footer>Made by throng report. Each point is one valid step; invalid steps are left out of the charts.</footer>\n</body>\n</html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// capacityCharts are throughput and latency against the load, each point
// a valid step (warm-up and invalid steps left out), with the bracket and
// the knee shaded and each SLO's limit drawn where its unit is the
// chart's.
func capacityCharts(rec *capacity.Record) []*chart {
	c := &rec.Config
	var steps []capacity.RecordStep
	for _, s := range rec.Steps {
		if s.Request.Kind != capacity.WarmUp && len(s.Invalid) == 0 {
			steps = append(steps, s)
		}
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].Request.Load < steps[j].Request.Load })
	xLabel := dimensionWord(c)
	if c.Unit == "per_s" {
		xLabel = "arrivals per second"
	}
	loadFmt := func(x float64) string { return capacity.LoadText(x, c.Unit) }
	var bands []band
	lo, hi := float64(rec.Max.CI95[0]), float64(rec.Max.CI95[1])
	if !math.IsNaN(lo) && !math.IsNaN(hi) && !math.IsInf(hi, 0) && hi > lo {
		bands = append(bands, band{lo, hi, "95 % CI"})
	}
	if rec.Knee != nil && !math.IsNaN(float64(rec.Knee.Load)) {
		k := float64(rec.Knee.Load)
		bands = append(bands, band{k, k * 1.004, "knee"})
	}
	tput := &chart{title: "Throughput against the load", xLabel: xLabel, yLabel: "actions/s", xFmt: loadFmt, xTicks: linearTicksOnly,
		phases: bands, note: "Each point is a valid step; the shaded band is the capacity's 95 % interval, the thin one the knee."}
	var pts []point
	for _, s := range steps {
		pts = append(pts, point{s.Request.Load, float64(s.Throughput)})
	}
	tput.lines = append(tput.lines, line{name: "throughput", color: palette[0], width: 2, pts: pts})
	if u := rec.USL; u != nil && len(steps) > 1 && c.Unit != "per_s" {
		var fit []point
		x0, x1 := steps[0].Request.Load, steps[len(steps)-1].Request.Load
		for i := 0; i <= 40; i++ {
			n := x0 + (x1-x0)*float64(i)/40
			l, a, bt := float64(u.Lambda), float64(u.Alpha), float64(u.Beta)
			fit = append(fit, point{n, l * n / (1 + a*(n-1) + bt*n*(n-1))})
		}
		tput.lines = append(tput.lines, line{name: "USL fit", color: palette[1], dash: dashes[1], width: 1.5, pts: fit})
	}
	lat := &chart{title: "Latency against the load", xLabel: xLabel, yLabel: "latency", yUnit: "ms", yFmt: msTick, xFmt: loadFmt,
		xTicks: linearTicksOnly, phases: bands, note: "Percentiles of each valid step's measured phase; dashed: the SLOs' limits."}
	for k, p := range []struct {
		name string
		get  func(s *capacity.RecordStep) float64
	}{
		{"p50", func(s *capacity.RecordStep) float64 { return s.Latency.P50Ms }},
		{"p95", func(s *capacity.RecordStep) float64 { return s.Latency.P95Ms }},
		{"p99", func(s *capacity.RecordStep) float64 { return s.Latency.P99Ms }},
		{"mean", func(s *capacity.RecordStep) float64 { return s.Latency.MeanMs }},
	} {
		var pts []point
		for i := range steps {
			pts = append(pts, point{steps[i].Request.Load, p.get(&steps[i])})
		}
		lat.lines = append(lat.lines, line{name: p.name, color: palette[k], width: 2, pts: pts})
	}
	if len(steps) > 0 {
		x0, x1 := steps[0].Request.Load, steps[len(steps)-1].Request.Load
		for _, text := range c.SLOs {
			t, err := threshold.Parse(text)
			if err != nil || t.Unit != threshold.Millis {
				continue
			}
			lat.lines = append(lat.lines, line{name: "SLO " + t.Text, color: "#d62728", dash: dashes[1], width: 1.5,
				pts: []point{{x0, t.Value}, {x1, t.Value}}})
		}
	}
	if len(steps) == 0 {
		return nil
	}
	return []*chart{tput, lat}
}

// linearTicksOnly are the ticks of a linear axis (the load).
func linearTicksOnly(lo, hi float64) []float64 {
	t, _ := linearTicks(lo, hi)
	var out []float64
	for _, x := range t {
		if x >= lo && x <= hi {
			out = append(out, x)
		}
	}
	return out
}
