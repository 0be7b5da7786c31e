package report

// This file writes the HTML report: one self-contained page (inline CSS,
// inline SVG charts, a short script for tooltips and for showing script
// errors in the page) that opens offline and reads well without script.
// Every string from a result is escaped.

import (
	"errors"
	"fmt"
	"html"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/throng-io/throng/internal/compare"
	"github.com/throng-io/throng/internal/result"
)

// view is one run on the page: the repetition its charts show, its name in
// legends and its color when runs are overlaid.
type view struct {
	run   *result.Run
	rep   *result.Repetition // the first repetition; nil when none was recorded
	name  string
	color string
}

var esc = html.EscapeString

// HTML writes one self-contained HTML5 page about runs: a header per run,
// time series with the phases shaded, the latency distribution of each
// action, and the summary tables. Several runs are overlaid on the same
// charts (one color each, aligned on the time since their start) and their
// tables set side by side. The page needs no network to be viewed.
func HTML(w io.Writer, runs []*result.Run) error {
	if len(runs) == 0 {
		return errors.New("no run to report")
	}
	views := makeViews(runs)
	b := &strings.Builder{}
	title := views[0].run.Meta.Scenario
	if l := views[0].run.Meta.Label; l != "" {
		title += " [" + l + "]"
	}
	if len(views) > 1 {
		var names []string
		for _, v := range views {
			names = append(names, v.name)
		}
		title = strings.Join(names, " vs ")
	}
	fmt.Fprintf(b, pageHead, esc("throng · "+title), pageStyle+uplotCSS, pageScript)
	fmt.Fprintf(b, "<h1>%s</h1>\n<div class=\"cols\">\n", esc(title))
	for _, v := range views {
		runCard(b, v, len(views) > 1)
	}
	b.WriteString("</div>\n")
	var cmp *compare.Comparison
	var cmpErr error
	var between []string
	if len(views) > 1 {
		inputs := make([]compare.Input, len(runs))
		for i, r := range runs {
			inputs[i] = compare.Input{Path: r.Meta.File, Run: r}
		}
		if cmp, cmpErr = compare.Compare(inputs, compare.Options{}); cmpErr == nil {
			between = cmp.Between()
		}
	}
	warningsHTML(b, views, between)
	if len(views) > 1 {
		compareHTML(b, cmp, cmpErr)
	}
	b.WriteString("<h2>Over time</h2>\n")
	if len(views) > 1 {
		b.WriteString("<p class=\"hint\">Runs are aligned on the time since their start; the shaded phases are those of the first run.</p>\n")
	}
	if anyRepeated(views) {
		b.WriteString("<p class=\"hint\">The charts show each run's first repetition; the tables below compare them all.</p>\n")
	}
	if !anyErrors(views) {
		b.WriteString("<p class=\"hint\">No errors and no dropped arrivals in any interval.</p>\n")
	}
	charts, omitted := timeCharts(views)
	if len(omitted) > 0 && len(charts) > 0 {
		fmt.Fprintf(b, "<p class=\"hint\">Not charted, no counter source gave them: %s.</p>\n", esc(strings.Join(omitted, ", ")))
	}
	b.WriteString("<div class=\"grid\">\n")
	for _, c := range charts {
		figure(b, c)
	}
	b.WriteString("</div>\n<h2>Latency distribution</h2>\n<div class=\"grid\">\n")
	for _, c := range distCharts(views) {
		figure(b, c)
	}
	b.WriteString("</div>\n<h2>Summary</h2>\n<div class=\"cols\">\n")
	for _, v := range views {
		tables(b, v, len(views) > 1)
	}
	b.WriteString("</div>\n<footer>Made by throng report. Latencies are percentiles of merged histograms, never averages of percentiles.\n" +
		"Charts drawn with uPlot " + uplotVersion + " (MIT license), inlined: drag across a chart to zoom, double-click to reset, click a legend entry to hide or show its series.</footer>\n")
	fmt.Fprintf(b, "<script>%s</script>\n<script>%s</script>\n</body>\n</html>\n", uplotJS, chartScript)
	_, err := io.WriteString(w, b.String())
	return err
}

func anyRepeated(views []*view) bool {
	for _, v := range views {
		if len(v.run.Repetitions) > 1 {
			return true
		}
	}
	return false
}

// makeViews names the runs (label, else scenario and file, made unique)
// and gives each its color.
func makeViews(runs []*result.Run) []*view {
	views := make([]*view, len(runs))
	seen := map[string]int{}
	for i, r := range runs {
		m := &r.Meta
		name := m.Label
		if name == "" {
			name = m.Scenario
			if m.File != "" && len(runs) > 1 {
				name += " (" + filepath.Base(m.File) + ")"
			}
		}
		if seen[name]++; seen[name] > 1 || (len(runs) > 1 && name == "") {
			name += " #" + strconv.Itoa(i+1)
		}
		v := &view{run: r, name: name, color: palette[i%len(palette)]}
		if len(r.Repetitions) > 0 {
			v.rep = &r.Repetitions[0]
		}
		views[i] = v
	}
	return views
}

// runCard writes a run's card: what ran, where and how, and its warnings.
func runCard(b *strings.Builder, v *view, many bool) {
	m := &v.run.Meta
	b.WriteString("<section class=\"card\">\n")
	if many {
		fmt.Fprintf(b, "<h2><i class=\"dot\" style=\"background:%s\"></i>%s</h2>\n", v.color, esc(v.name))
	}
	if v.run.Partial {
		fmt.Fprintf(b, "<p class=\"partial\">PARTIAL: this run did not finish as planned: %s</p>\n", esc(v.run.Reason))
	}
	b.WriteString("<dl>\n")
	item := func(k, val string) {
		if val != "" {
			fmt.Fprintf(b, "<dt>%s</dt><dd>%s</dd>\n", esc(k), esc(val))
		}
	}
	item("scenario", join(" — ", m.Scenario, m.Description))
	item("label", m.Label)
	item("target", m.Target)
	scale := fmt.Sprintf("%d users", m.Users)
	switch {
	case m.RatePerS > 0:
		scale += ", " + num(m.RatePerS) + " arrivals/s"
	case m.CountBound():
		scale += ", " + m.CountText()
	}
	item("model", m.Model+", "+scale)
	var phases []string
	for _, p := range m.Phases {
		end := "end"
		if p.EndS >= 0 {
			end = trim(p.EndS) + " s"
		}
		phases = append(phases, fmt.Sprintf("%s %s–%s", p.Name, trim(p.StartS), end))
	}
	item("phases", strings.Join(phases, " · "))
	item("speedup · seed · segment", fmt.Sprintf("%gx · %d · %s", m.Speedup, m.Seed, m.Segment))
	threads := ""
	if m.Threads > 0 {
		threads = fmt.Sprintf("%d thread%s", m.Threads, plural(m.Threads))
	}
	interval := ""
	if m.IntervalS > 0 {
		interval = labelled("interval", trim(m.IntervalS)+" s")
	}
	item("engine", join(" · ", join(", ", m.Engine, threads), labelled("driver", m.Driver), interval))
	if len(v.run.Repetitions) > 1 {
		item("repetitions", fmt.Sprintf("%d (trim %d)", len(v.run.Repetitions), m.Trim))
	}
	h := m.Host
	mem := ""
	if h.MemoryBytes > 0 {
		mem = fmt.Sprintf("%.1f GB memory", float64(h.MemoryBytes)/1e9)
	}
	item("host", join(" · ", h.Hostname, join("/", h.OS, h.Arch), fmt.Sprintf("%d cores", h.Cores), mem, labelled("kernel", h.Kernel), h.CPUModel))
	item("versions", join(" · ", labelled("throng", m.Versions.Build()), m.Versions.Go))
	started := m.StartedAt.Format("2006-01-02 15:04:05 MST")
	if v.rep != nil {
		started += " · elapsed " + secs(v.rep.ElapsedS)
	}
	item("started", started)
	var ov []string
	for _, k := range sortedStrings(m.Overrides) {
		ov = append(ov, k+"="+m.Overrides[k])
	}
	item("overrides", strings.Join(ov, " "))
	item("command", strings.Join(m.Command, " "))
	b.WriteString("</dl>\n")
	verdictHTML(b, v.run)
	b.WriteString("</section>\n")
}

// verdictHTML writes the run's validity verdict (each repetition's
// checks) and its thresholds' outcomes, as kept in the result.
func verdictHTML(b *strings.Builder, run *result.Run) {
	if len(run.Repetitions) == 0 {
		return
	}
	valid, bad := result.RunValid(run)
	class, head := "valid", "Valid: the figures can be trusted"
	if !valid {
		class, head = "invalid", "NOT VALID: the figures cannot be trusted as they are"
		if len(run.Repetitions) > 1 {
			head += fmt.Sprintf(" (runs %s)", strings.Trim(strings.Join(strings.Fields(fmt.Sprint(bad)), ", "), "[]"))
		}
	}
	fmt.Fprintf(b, "<div class=\"verdict %s\"><b>%s</b>\n<table class=\"checks\">\n", class, esc(head))
	// One repetition: every check. Several: the checks that did not pass,
	// each once with the repetitions it concerns; the others counted.
	many, passed := len(run.Repetitions) > 1, 0
	type row struct{ status, name, message string }
	var order []row
	reps := map[row][]string{}
	for i := range run.Repetitions {
		vv := result.ValidityOf(&run.Meta, &run.Repetitions[i])
		for _, c := range vv.Checks {
			if many && c.Status != result.Fail && c.Status != result.Unknown {
				passed++
				continue
			}
			r := row{c.Status, c.Name, c.Message}
			if _, ok := reps[r]; !ok {
				order = append(order, r)
			}
			reps[r] = append(reps[r], strconv.Itoa(i+1))
		}
	}
	for _, r := range order {
		who := ""
		if many {
			who = "run " + reps[r][0] + " · "
			if len(reps[r]) > 1 {
				who = "runs " + strings.Join(reps[r], ", ") + " · "
			}
		}
		fmt.Fprintf(b, "<tr class=\"%s\"><td>%s</td><td>%s%s</td><td>%s</td></tr>\n",
			strings.ReplaceAll(r.status, "/", ""), esc(r.status), esc(who), esc(r.name), esc(r.message))
	}
	b.WriteString("</table>")
	if many {
		fmt.Fprintf(b, "<p class=\"note\">%d other checks of the %d repetitions passed or did not apply.</p>", passed, len(run.Repetitions))
	}
	b.WriteString("</div>\n")
	if len(run.Thresholds) == 0 {
		return
	}
	b.WriteString("<div class=\"verdict\"><b>Thresholds</b>\n<table class=\"checks\">\n")
	for _, o := range run.Thresholds {
		st := "pass"
		if !o.Pass {
			st = "fail"
		}
		fmt.Fprintf(b, "<tr class=\"%s\"><td>%s</td><td>%s</td><td>%s</td></tr>\n", st, st, esc(o.Shown()), esc(o.Message))
	}
	b.WriteString("</table></div>\n")
}

// join joins the parts that are not empty.
func join(sep string, parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, sep)
}

// labelled is "word value", or "" without a value.
func labelled(word, value string) string {
	if value == "" {
		return ""
	}
	return word + " " + value
}

func sortedStrings(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// figure writes a chart with its title, its legend and its note.
func figure(b *strings.Builder, c *chart) {
	fmt.Fprintf(b, "<figure data-chart>\n<figcaption><h3>%s</h3><div class=\"legend\">", esc(c.title))
	seen := map[string]bool{}
	for _, l := range c.lines {
		if seen[l.name] {
			continue
		}
		seen[l.name] = true
		style := "solid"
		switch l.dash {
		case "":
		case "2 3":
			style = "dotted"
		default:
			style = "dashed"
		}
		fmt.Fprintf(b, `<span class="key"><i style="border-top:3px %s %s"></i>%s</span>`, style, l.color, esc(l.name))
	}
	if len(c.marks) > 0 {
		fmt.Fprintf(b, `<span class="key"><i class="markkey"></i>%s</span>`, esc(c.markLabel))
	}
	b.WriteString("</div></figcaption>\n")
	if c.empty() {
		b.WriteString(`<p class="nodata">no data: no interval has a value for this chart</p>`)
	} else {
		c.svg(b)
		c.json(b)
	}
	if c.note != "" {
		fmt.Fprintf(b, "\n<p class=\"note\">%s</p>", esc(c.note))
	}
	b.WriteString("\n</figure>\n")
}

// pageHead opens the page: title, style, and the script that shows any
// script error in the page itself (id "js-errors"), where a test or a
// reader sees it; the page needs no script to be read.
const pageHead = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="throng report">
<title>%s</title>
<style>%s</style>
<script>%s</script>
</head>
<body>
<pre id="js-errors" hidden></pre>
<div id="tip" hidden></div>
`

// pageScript reports script errors into #js-errors (where a test sees
// them) and shows the values under the mouse on a chart: a cursor line and
// a tooltip, read back from the lines' points and the chart's data-map
// (x0 x1 px0 px1 y0 y1 py0 py1 log). Text goes in with textContent only.
const pageScript = `
(function () {
  var pending = [];
  function show(msg) {
    var el = document.getElementById("js-errors");
    if (!el) { pending.push(msg); return; }
    el.hidden = false;
    el.textContent += msg + "\n";
  }
  window.addEventListener("error", function (e) {
    var t = e.target;
    show(t && t !== window ? "cannot load " + (t.src || t.href || t.tagName) : "error: " + e.message + " (" + e.filename + ":" + e.lineno + ")");
  }, true);
  window.addEventListener("unhandledrejection", function (e) { show("unhandled rejection: " + e.reason); });
  var ce = console.error;
  console.error = function () { show("console.error: " + Array.prototype.join.call(arguments, " ")); ce.apply(console, arguments); };
  document.addEventListener("DOMContentLoaded", function () { pending.forEach(show); pending = []; });

  function fmt(v, u) {
    var s = function (x) { return Math.abs(x) >= 100 ? Math.round(x).toLocaleString("en") : x.toPrecision(3); };
    if (u === "ms") return v >= 1000 ? s(v / 1000) + " s" : v < 1 ? s(v * 1000) + " µs" : s(v) + " ms";
    if (u === "B") return v >= 1e9 ? s(v / 1e9) + " GB" : v >= 1e6 ? s(v / 1e6) + " MB" : s(v / 1e3) + " kB";
    return s(v) + " " + u;
  }
  function clock(x) {
    var t = Math.round(x), m = Math.floor(t / 60) % 60, p = function (n) { return (n < 10 ? "0" : "") + n; };
    return x < 120 ? x.toFixed(1) + " s" : x < 3600 ? Math.floor(t / 60) + ":" + p(t % 60) : Math.floor(t / 3600) + ":" + p(m) + ":" + p(t % 60);
  }
  var shown = null;
  document.addEventListener("mousemove", function (e) {
    var tip = document.getElementById("tip"), svg = e.target.closest && e.target.closest("svg[data-map]");
    if (shown && shown !== svg) { shown.querySelector(".cur").style.visibility = "hidden"; tip.hidden = true; shown = null; }
    if (!svg || !tip) return;
    var m = svg.getAttribute("data-map").split(" ").map(Number), p = svg.createSVGPoint();
    p.x = e.clientX; p.y = e.clientY;
    p = p.matrixTransform(svg.getScreenCTM().inverse());
    if (p.x < m[2] || p.x > m[3]) return;
    var x = m[0] + (p.x - m[2]) / (m[3] - m[2]) * (m[1] - m[0]), u = svg.getAttribute("data-u");
    var rows = [[svg.getAttribute("data-xf") === "n" ? "p" + (100 * (1 - Math.pow(10, -x))).toPrecision(Math.max(2, Math.ceil(x) + 1)) : clock(x), ""]];
    svg.querySelectorAll("path.ln").forEach(function (ln) {
      var pts = ln._pts || (ln._pts = ln.getAttribute("d").slice(1).split(/[ M]/).map(function (q) { return q.split(",").map(Number); }));
      var best = null;
      pts.forEach(function (q) { if (!best || Math.abs(q[0] - p.x) < Math.abs(best[0] - p.x)) best = q; });
      if (!best || Math.abs(best[0] - p.x) > 8) return;
      var t = (best[1] - m[6]) / (m[7] - m[6]), L = Math.log10;
      var v = m[8] ? Math.pow(10, L(m[4]) + t * (L(m[5]) - L(m[4]))) : m[4] + t * (m[5] - m[4]);
      rows.push([ln.querySelector("title").textContent + ": " + fmt(v, u), ln.getAttribute("stroke")]);
    });
    var c = svg.querySelector(".cur");
    c.setAttribute("x1", p.x); c.setAttribute("x2", p.x); c.style.visibility = "visible";
    tip.textContent = "";
    rows.forEach(function (r) {
      var d = document.createElement("div");
      d.textContent = r[0];
      if (r[1]) d.style.borderLeft = "4px solid " + r[1];
      tip.appendChild(d);
    });
    tip.hidden = false; shown = svg;
    tip.style.left = (e.clientX > innerWidth - 320 ? e.pageX - tip.offsetWidth - 16 : e.pageX + 16) + "px";
    tip.style.top = (e.pageY + 14) + "px";
  });
})();
`

const pageStyle = `
:root { --ink: #1d2330; --muted: #5b6475; --line: #d9dee7; --bg: #f6f7f9; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1400px; padding: 20px 28px 40px; background: var(--bg); color: var(--ink);
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", "Liberation Sans", Arial, sans-serif; }
h1 { font-size: 24px; margin: 4px 0 14px; }
h2 { font-size: 19px; margin: 26px 0 10px; }
h3 { font-size: 15px; margin: 0; }
#js-errors { background: #fde8e8; color: #8a1111; padding: 8px; }
.cols { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
.cols > .card { flex: 1 1 560px; min-width: 0; overflow-x: auto; }
.card, figure { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; }
.card h2, .card h3 { margin: 0 0 8px; font-size: 16px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 3px 14px; margin: 0; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
.dot { display: inline-block; width: 12px; height: 12px; border-radius: 50%; margin-right: 8px; vertical-align: -1px; }
.partial { background: #d62728; color: #fff; font-weight: 600; padding: 6px 10px; border-radius: 4px; margin: 0 0 10px; }
.verdict { padding: 6px 12px; margin-top: 10px; border-left: 4px solid #888; }
.verdict.valid { background: #eaf7ea; border-color: #2a8a2a; }
.verdict.invalid { background: #fdeaea; border-color: #c02020; }
.checks td { padding: 1px 8px 1px 0; vertical-align: top; text-align: left; white-space: normal; border: 0; }
.checks td:first-child, .checks td:nth-child(2) { white-space: nowrap; }
.checks tr.fail td:first-child, .checks tr.unknown td:first-child { color: #c02020; font-weight: bold; }
.checks tr.pass td:first-child { color: #2a8a2a; }
.warn { background: #fff6e0; border-left: 4px solid #e0a000; padding: 6px 12px; margin-top: 10px; }
.warn ul { margin: 4px 0; padding-left: 18px; max-height: 9.5em; overflow-y: auto; }
.warn summary { cursor: pointer; font-weight: 600; }
.warn .who { color: var(--muted); }
.cmp { max-height: 640px; overflow: auto; background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 8px 16px; }
.cmp td.l, .cmp th.l { text-align: left; }
.cmpwarn { color: #7a5a00; font-size: 12.5px; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 16px; }
figure { margin: 0; }
figcaption { display: flex; flex-wrap: wrap; align-items: baseline; gap: 4px 16px; margin-bottom: 4px; }
.legend { display: flex; flex-wrap: wrap; gap: 2px 14px; font-size: 12.5px; color: var(--muted); }
.key i { display: inline-block; width: 22px; height: 0; margin-right: 5px; vertical-align: middle; }
.key .markkey { height: 10px; background: rgba(214, 39, 40, .25); border: 0; }
svg { display: block; width: 100%; height: auto; font-size: 11px; }
svg text { fill: #444; }
.ph0 { fill: #edf2fa; } .ph1 { fill: #f7f8fa; }
.phb { stroke: #9aa5b8; stroke-dasharray: 3 3; }
.phn { text-anchor: middle; fill: #4a5568; font-size: 11.5px; font-weight: 600; }
.mark { fill: #d62728; fill-opacity: .22; }
.gl, .glx { stroke: #dfe3ea; stroke-width: 1; }
.glx { stroke-dasharray: 2 3; }
.axis { fill: none; stroke: #8a93a3; }
.yt { text-anchor: end; } .xt { text-anchor: middle; }
.xl, .yl { text-anchor: middle; font-size: 12px; fill: var(--muted); }
.ln { fill: none; stroke-linejoin: round; stroke-linecap: round; }
.nodata { display: flex; align-items: center; justify-content: center; height: 200px; margin: 0;
  color: var(--muted); background: #f7f8fa; border: 1px dashed var(--line); }
.up { width: 100%; }
.note, .hint { color: var(--muted); font-size: 12.5px; margin: 4px 0 0; }
.hint { margin: 0 0 10px; }
table { border-collapse: collapse; margin: 6px 0 14px; font-size: 12.5px; font-variant-numeric: tabular-nums; }
caption { text-align: left; font-weight: 600; padding: 4px 0; }
th, td { padding: 3px 6px; border-bottom: 1px solid #eceff4; white-space: nowrap; }
thead th { text-align: right; color: var(--muted); font-weight: 600; border-bottom: 1px solid var(--line); }
thead th:first-child, tbody th { text-align: left; font-weight: normal; }
tbody th { white-space: normal; min-width: 9em; }
td { text-align: right; }
tbody tr:hover { background: #f3f6fb; }
.errs { margin: 0 0 12px; padding-left: 18px; color: #8a1111; }
#tip { position: absolute; pointer-events: none; background: #fff; border: 1px solid var(--line); border-radius: 4px;
  padding: 4px 8px; font-size: 12px; box-shadow: 0 2px 6px rgba(0,0,0,.15); white-space: nowrap; }
#tip div { padding-left: 5px; margin: 1px 0; }
.cur { stroke: #333; stroke-width: 1; visibility: hidden; pointer-events: none; }
footer { margin-top: 28px; color: var(--muted); font-size: 12px; }
`

// warningsHTML writes every warning of the page once, in one box after the
// runs' cards: each with the runs (and repetitions) it concerns, then the
// comparison's warnings about comparing them (between). The list
// scrolls past a few lines, so that however many runs and repetitions
// warn, the charts stay near the top of the page.
func warningsHTML(b *strings.Builder, views []*view, between []string) {
	var order []string
	reps := map[string]map[*view][]int{} // the repetitions (from 1) each message concerns, by run
	add := func(msg string, v *view, rep int) {
		if _, ok := reps[msg]; !ok {
			order = append(order, msg)
			reps[msg] = map[*view][]int{}
		}
		if !slices.Contains(reps[msg][v], rep) {
			reps[msg][v] = append(reps[msg][v], rep)
		}
	}
	for _, v := range views {
		m := &v.run.Meta
		if strings.HasPrefix(m.Target, "embedded ") || m.Target == "embedded" {
			for i := range v.run.Repetitions {
				add("The target ran inside the throng process: the client CPU figures include the server's.", v, i+1)
			}
		}
		for i := range v.run.Repetitions {
			for _, t := range v.run.Repetitions[i].Taints {
				add(t.Message, v, i+1)
			}
		}
	}
	if len(order)+len(between) == 0 {
		return
	}
	fmt.Fprintf(b, "<details class=\"warn\" open><summary>Warnings (%d)</summary><ul>\n", len(order)+len(between))
	for _, msg := range order {
		fmt.Fprintf(b, "<li>%s%s</li>\n", whoHTML(views, reps[msg]), esc(msg))
	}
	for _, msg := range between {
		fmt.Fprintf(b, "<li><span class=\"who\">comparison:</span> %s</li>\n", esc(msg))
	}
	b.WriteString("</ul></details>\n")
}

// whoHTML names the runs and repetitions a warning concerns: nothing when
// the page holds one run of one repetition, "every run" when it concerns
// them all, else each run by name with its repetitions when not all.
func whoHTML(views []*view, reps map[*view][]int) string {
	every := len(reps) == len(views)
	var parts []string
	for _, v := range views {
		rs, n := reps[v], len(v.run.Repetitions)
		if len(rs) == 0 {
			continue
		}
		every = every && len(rs) == n
		part := v.name
		if len(rs) < n {
			nums := make([]string, len(rs))
			for i, r := range rs {
				nums[i] = strconv.Itoa(r)
			}
			part = join(" ", part, "run"+map[bool]string{true: "s", false: ""}[len(rs) > 1]+" "+strings.Join(nums, ", "))
		}
		parts = append(parts, part)
	}
	switch {
	case len(views) == 1 && len(views[0].run.Repetitions) == 1:
		return ""
	case every:
		return "<span class=\"who\">every run:</span> "
	}
	return "<span class=\"who\">" + esc(strings.Join(parts, "; ")) + ":</span> "
}

// compareHTML writes the comparison of the page's runs (what throng
// compare prints: each row's change, interval and verdict against the
// first run), or why there is none.
func compareHTML(b *strings.Builder, c *compare.Comparison, err error) {
	b.WriteString("<h2>Comparison</h2>\n")
	if err != nil {
		fmt.Fprintf(b, "<p class=\"hint\">No comparison: %s.</p>\n", esc(err.Error()))
		return
	}
	b.WriteString("<p class=\"hint\">Each run against the first, as <code>throng compare</code> prints it: change, confidence interval and verdict per row.</p>\n<div class=\"cmp\">\n")
	compare.HTML(b, c) // a strings.Builder does not fail
	b.WriteString("</div>\n")
}
