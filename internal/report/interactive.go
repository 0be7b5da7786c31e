package report

// This file makes the page's charts interactive: each chart's data goes
// into its figure as JSON, and the page's script draws it again with uPlot
// (inlined, see uplot/README.md), which zooms (drag across a chart,
// double-click to reset) and toggles series (click a legend entry). The
// SVG drawn by svg.go stays in the page for readers without script and
// for print; with script it is hidden once uPlot has drawn the chart.

import (
	_ "embed"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// uplotVersion is the vendored uPlot's version (uplot/README.md).
const uplotVersion = "1.6.32"

//go:embed uplot/uPlot.iife.min.js
var uplotJS string

//go:embed uplot/uPlot.min.css
var uplotCSS string

// chartData is a chart as the script reads it (short keys: a long run's
// page carries a few thousand points per chart).
type chartData struct {
	XLabel string       `json:"xl"`
	YLabel string       `json:"yl"`
	Unit   string       `json:"u"`
	XKind  string       `json:"xk"` // "t": seconds since start; "n": nines of a percentile
	Log    bool         `json:"log,omitempty"`
	XMax   float64      `json:"xmax,omitempty"`
	Lines  []lineData   `json:"lines"`
	Phases [][3]any     `json:"ph,omitempty"` // x0, x1, name
	Marks  [][2]float64 `json:"mk,omitempty"`
	Mark   string       `json:"mkl,omitempty"`
}

type lineData struct {
	Name  string     `json:"n"`
	Color string     `json:"c"`
	Dash  string     `json:"d,omitempty"`
	Width float64    `json:"w"`
	X     []float64  `json:"x"`
	Y     []*float64 `json:"y"` // null: a gap
}

// drawable is a line's points as drawn: gaps where a value is missing,
// infinite, or not positive on a log axis; downsampled to maxPoints.
func (c *chart) drawable(l line) []point {
	pts := make([]point, len(l.pts))
	for i, p := range l.pts {
		if math.IsInf(p.Y, 0) || (c.logY && p.Y <= 0) {
			p.Y = math.NaN() // a gap, which LTTB keeps
		}
		pts[i] = p
	}
	return lttb(pts, maxPoints)
}

// empty tells whether no line of the chart has a value to draw.
func (c *chart) empty() bool {
	for _, l := range c.lines {
		for _, p := range c.drawable(l) {
			if !math.IsNaN(p.Y) {
				return false
			}
		}
	}
	return true
}

// json writes the chart's data for the script, safe inside a <script>
// element (json.Marshal escapes <, > and &).
func (c *chart) json(b *strings.Builder) {
	unit := c.yUnit
	if unit == "" {
		unit = c.yLabel
	}
	d := chartData{XLabel: c.xLabel, YLabel: c.yLabel, Unit: unit, XKind: "t", Log: c.logY, XMax: c.xMax, Mark: c.markLabel}
	if c.xTicks != nil {
		d.XKind = "n"
	}
	for _, l := range c.lines {
		ld := lineData{Name: l.name, Color: l.color, Dash: l.dash, Width: l.width}
		for _, p := range c.drawable(l) {
			if math.IsInf(p.X, 0) || math.IsNaN(p.X) {
				continue
			}
			ld.X = append(ld.X, round(p.X))
			if math.IsNaN(p.Y) {
				ld.Y = append(ld.Y, nil)
			} else {
				y := round(p.Y)
				ld.Y = append(ld.Y, &y)
			}
		}
		d.Lines = append(d.Lines, ld)
	}
	for _, p := range c.phases {
		d.Phases = append(d.Phases, [3]any{p.x0, p.x1, p.label})
	}
	for _, m := range c.marks {
		d.Marks = append(d.Marks, [2]float64{m.x0, m.x1})
	}
	data, err := json.Marshal(d)
	if err != nil { // only plain numbers and strings: cannot happen
		panic(err)
	}
	b.WriteString(`<script type="application/json" class="cd">`)
	b.Write(data)
	b.WriteString(`</script>`)
}

// round keeps 6 significant digits: finer than a chart's pixels, and a
// third of the bytes of a float64's shortest form.
func round(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return r
}

// chartScript draws every figure's chart with uPlot, hides its SVG, and
// marks the figure data-drawn="uplot" (tests read it). Errors show in the
// page (pageScript's #js-errors). Text goes in with textContent only.
const chartScript = `
(function () {
  function fmt(v, u) {
    if (v == null || isNaN(v)) return "–";
    var s = function (x) { return Math.abs(x) >= 100 ? Math.round(x).toLocaleString("en") : +x.toPrecision(3) + ""; };
    if (u === "ms") return v >= 1000 ? s(v / 1000) + " s" : v < 1 ? s(v * 1000) + " µs" : s(v) + " ms";
    if (u === "B") return v >= 1e9 ? s(v / 1e9) + " GB" : v >= 1e6 ? s(v / 1e6) + " MB" : v >= 1e3 ? s(v / 1e3) + " kB" : s(v) + " B";
    if (u === "%") return s(v) + "%";
    return s(v) + " " + u;
  }
  function tick(v, u) {
    var t = function (x) { return +x.toPrecision(6) + ""; };
    if (u === "ms") return v >= 1000 ? t(v / 1000) + " s" : v >= 1 || v === 0 ? t(v) + " ms" : t(Math.round(v * 1e4) / 10) + " µs";
    if (u === "B") return v >= 1e9 ? t(v / 1e9) + " GB" : v >= 1e6 ? t(v / 1e6) + " MB" : v >= 1e3 ? t(v / 1e3) + " kB" : t(v) + " B";
    if (u === "%") return t(v) + "%";
    var a = Math.abs(v);
    return a >= 1e9 ? t(v / 1e9) + "G" : a >= 1e6 ? t(v / 1e6) + "M" : a >= 1e3 ? t(v / 1e3) + "k" : t(v);
  }
  function clock(span) {
    return function (x) {
      var t = Math.round(x), p = function (n) { return (n < 10 ? "0" : "") + n; };
      return span < 120 ? +x.toFixed(1) + " s" : span < 7200 ? Math.floor(t / 60) + ":" + p(t % 60) : Math.floor(t / 3600) + ":" + p(Math.floor(t / 60) % 60) + ":" + p(t % 60);
    };
  }
  function nines(x) { return x <= 0 ? "0" : (100 * (1 - Math.pow(10, -x))).toFixed(Math.max(Math.round(x) - 2, 0)); }
  function draw(fig) {
    var d = JSON.parse(fig.querySelector("script.cd").textContent);
    var tables = d.lines.map(function (l) { return [l.x, l.y]; });
    var data = uPlot.join(tables, d.lines.map(function () { return [1, 1]; }));
    var x0 = data[0][0], x1 = data[0][data[0].length - 1];
    (d.ph || []).forEach(function (p) { x0 = Math.min(x0, p[0]); x1 = Math.max(x1, p[1]); });
    var xf = d.xk === "n" ? nines : clock(x1 - x0);
    var series = [{ label: d.xk === "n" ? "percentile" : "time", value: function (u, v) { return v == null ? "–" : xf(v); } }];
    d.lines.forEach(function (l) {
      series.push({ label: l.n, stroke: l.c, width: l.w, dash: l.d ? l.d.split(" ").map(Number) : undefined,
        points: { show: l.x.length < 3 }, value: function (u, v) { return fmt(v, d.u); } });
    });
    var holder = document.createElement("div");
    holder.className = "up";
    var svg = fig.querySelector("svg");
    svg.parentNode.insertBefore(holder, svg);
    var width = function () { return Math.max(300, holder.clientWidth); };
    var bands = function (u) {
      var c = u.ctx, top = u.bbox.top, h = u.bbox.height, px = function (x) { return u.valToPos(x, "x", true); };
      c.save();
      c.beginPath(); c.rect(u.bbox.left, top, u.bbox.width, h); c.clip();
      (d.ph || []).forEach(function (p, i) {
        var a = px(p[0]), z = px(p[1]);
        c.fillStyle = i % 2 ? "#f7f8fa" : "#edf2fa";
        c.fillRect(a, top, z - a, h);
        c.fillStyle = "#4a5568"; c.font = "600 " + Math.round(11 * devicePixelRatio) + "px sans-serif"; c.textAlign = "center";
        if (c.measureText(p[2]).width + 6 < z - a) c.fillText(p[2], (Math.max(a, u.bbox.left) + Math.min(z, u.bbox.left + u.bbox.width)) / 2, top + 14 * devicePixelRatio);
      });
      c.fillStyle = "rgba(214, 39, 40, .22)";
      (d.mk || []).forEach(function (m) { var a = px(m[0]); c.fillRect(a, top, Math.max(px(m[1]) - a, devicePixelRatio), h); });
      c.restore();
    };
    var yRange = d.log ? undefined : function (u, lo, hi) {
      lo = Math.min(lo == null ? 0 : lo, 0); hi = hi == null || hi <= lo ? lo + 1 : hi;
      return [lo, hi * 1.15]; // room for the phases' names
    };
    var dx0 = data[0][0], dx1 = data[0][data[0].length - 1];
    var xRange = function (u, lo, hi) { // the whole run until zoomed
      if (d.xmax) return lo <= 0 && hi >= dx1 ? [0, d.xmax] : [lo, hi];
      return lo <= dx0 && hi >= dx1 ? [x0, x1] : [lo, hi];
    };
    var ySplitsLabel = function (v) {
      if (!d.log) return tick(v, d.u);
      var m = v / Math.pow(10, Math.floor(Math.log10(v) + 1e-9));
      return Math.abs(m - 1) < 1e-6 || (Math.abs(m - 5) < 1e-6 && logSpan < 3) || (Math.abs(m - 2) < 1e-6 && logSpan < 2) ? tick(v, d.u) : "";
    };
    var logSpan = 0;
    if (d.log) {
      var ylo = Infinity, yhi = -Infinity;
      d.lines.forEach(function (l) { l.y.forEach(function (y) { if (y != null && y > 0) { ylo = Math.min(ylo, y); yhi = Math.max(yhi, y); } }); });
      logSpan = ylo < yhi ? Math.log10(yhi / ylo) : 0;
    }
    var xSplits = d.xk !== "n" ? undefined : function (u, ai, lo, hi) {
      var s = [];
      for (var v = Math.ceil(lo); v <= hi + 1e-9; v++) s.push(v);
      if (s.length < 3) { s = []; for (var k = 0; k <= 4; k++) s.push(lo + (hi - lo) * k / 4); }
      return s;
    };
    var opts = {
      width: width(), height: 280, series: series,
      scales: { x: { time: false, range: xRange }, y: d.log ? { distr: 3 } : { range: yRange } },
      axes: [
        { label: d.xl, splits: xSplits, values: function (u, vs) { return vs.map(xf); }, stroke: "#444", grid: { stroke: "#e6e9ef" } },
        { label: d.yl, size: 70, values: function (u, vs) { return vs.map(ySplitsLabel); }, stroke: "#444", grid: { stroke: "#e6e9ef" },
          filter: d.log ? function (u, vs) { return vs.map(function (v) { return ySplitsLabel(v) ? v : null; }); } : undefined }
      ],
      cursor: { drag: { x: true, y: false } },
      hooks: { drawClear: [bands] }
    };
    var u = new uPlot(opts, data, holder);
    fig._u = u; // for tests
    svg.style.display = "none";
    var leg = fig.querySelector(".legend");
    if (leg) leg.style.display = "none";
    fig.setAttribute("data-drawn", "uplot");
    window.addEventListener("resize", function () { u.setSize({ width: width(), height: 280 }); });
  }
  document.addEventListener("DOMContentLoaded", function () {
    if (typeof uPlot === "undefined") return;
    document.querySelectorAll("figure[data-chart]").forEach(function (fig) {
      try { draw(fig); } catch (e) { console.error("chart " + (fig.querySelector("h3") || {}).textContent + ": " + e); }
    });
  });
})();
`
