package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// This file draws charts as inline SVG: a plot area with gridlines, axes
// with ticks and units, phases shaded as named background bands, marked
// intervals (client-bound) as red bands, and the lines. Legends are HTML,
// written beside the chart (see html.go).

// Chart geometry, in SVG user units; the SVG scales to its container.
const (
	chartW, chartH                 = 640, 260
	padL, padR, padT, padB float64 = 66, 30, 22, 40
	maxPoints                      = 800 // per line, after LTTB
)

// palette: distinct, readable on white; red is kept for the client-bound
// bands.
var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"}

// dashes tell series of one run apart when colors tell runs apart.
var dashes = []string{"", "7 4", "2 3", "10 3 2 3", "4 2"}

// line is one series of a chart.
type line struct {
	name, color, dash string
	width             float64
	pts               []point
}

// band is a shaded stretch of the x axis: a phase, or a marked interval.
type band struct {
	x0, x1 float64
	label  string
}

// chart is one chart: its lines, the bands behind them and how its axes
// read. Empty fields take defaults (time on x, a linear y from 0).
type chart struct {
	title, note    string // above and below the chart, in HTML
	xLabel, yLabel string // axis titles, with units
	yUnit          string // of the values in tooltips, when not yLabel
	xFmt, yFmt     func(float64) string
	xTicks         func(lo, hi float64) []float64
	xMax           float64 // fixed x range end (0: the data's)
	logY           bool
	lines          []line
	phases         []band
	marks          []band // red: client-bound intervals
	markLabel      string // what the red bands mean, for the legend
}

// scale maps data values onto pixels, linearly or by logarithm.
type scale struct {
	lo, hi, p0, p1 float64
	log            bool
}

func (s scale) px(v float64) float64 {
	lo, hi := s.lo, s.hi
	if s.log {
		v, lo, hi = math.Log10(max(v, s.lo)), math.Log10(lo), math.Log10(hi)
	}
	if hi == lo {
		return s.p0
	}
	return s.p0 + (v-lo)/(hi-lo)*(s.p1-s.p0)
}

// bounds returns the range of the data: x over every point, y over the
// finite ones (the smallest positive y for a log axis).
func (c *chart) bounds() (x0, x1, y0, y1 float64) {
	x0, x1, y0, y1 = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, l := range c.lines {
		for _, p := range l.pts {
			x0, x1 = min(x0, p.X), max(x1, p.X)
			if math.IsNaN(p.Y) || math.IsInf(p.Y, 0) || (c.logY && p.Y <= 0) {
				continue
			}
			y0, y1 = min(y0, p.Y), max(y1, p.Y)
		}
	}
	for _, bs := range [][]band{c.phases, c.marks} {
		for _, b := range bs {
			x0, x1 = min(x0, b.x0), max(x1, b.x1)
		}
	}
	if math.IsInf(x0, 0) {
		x0, x1 = 0, 1
	}
	if c.xMax > 0 {
		x0, x1 = 0, c.xMax
	}
	if math.IsInf(y0, 0) {
		y0, y1 = 0, 0
	}
	return
}

// niceStep is a round step (1, 2, 2.5 or 5 times a power of ten) that cuts
// span into about n parts.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// linearTicks: from lo (0 when the data is not negative) to a round value
// above hi.
func linearTicks(lo, hi float64) (ticks []float64, top float64) {
	lo = min(lo, 0)
	if hi <= lo {
		hi = lo + 1
	}
	step := niceStep(hi-lo, 5)
	lo = math.Floor(lo/step) * step
	top = math.Ceil(hi*1.0001/step) * step
	for i := 0; lo+float64(i)*step <= top+step/1e6; i++ {
		ticks = append(ticks, lo+float64(i)*step)
	}
	return ticks, top
}

// logTicks: decades around the data; 2 and 5 between when the data spans
// two decades or less.
func logTicks(lo, hi float64) (ticks []float64, bottom, top float64) {
	if lo <= 0 || hi <= 0 {
		lo, hi = 1, 10
	}
	bottom = math.Pow(10, math.Floor(math.Log10(lo)))
	if lo < 1.25*bottom {
		bottom /= 10 // a line along the axis is hard to see
	}
	top = math.Pow(10, math.Ceil(math.Log10(hi)))
	if top <= bottom {
		top = bottom * 10
	}
	decades := math.Round(math.Log10(top / bottom))
	for d := bottom; d <= top*1.0001; d *= 10 {
		ticks = append(ticks, d)
		if decades <= 2 && d < top/1.0001 {
			ticks = append(ticks, 2*d, 5*d)
		}
	}
	return ticks, bottom, top
}

// timeTicks: round seconds, minutes or hours, at most about 8.
func timeTicks(lo, hi float64) []float64 {
	step := 1.0
	for _, s := range []float64{1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 21600, 43200, 86400} {
		step = s
		if (hi-lo)/s <= 8 {
			break
		}
	}
	var ticks []float64
	for v := math.Ceil(lo/step) * step; v <= hi+1e-9; v += step {
		ticks = append(ticks, v) // whole seconds: no rounding drift
	}
	return ticks
}

// clock formats seconds since the start: "45 s" for short runs, "m:ss" or
// "h:mm:ss" for longer ones (span says which).
func clock(span float64) func(float64) string {
	return func(v float64) string {
		s := int(math.Round(v))
		switch {
		case span < 120:
			return strconv.FormatFloat(v, 'f', -1, 64) + " s"
		case span < 3600*2:
			return fmt.Sprintf("%d:%02d", s/60, s%60)
		}
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
}

// svg writes the chart. Every string it writes from the data is escaped.
func (c *chart) svg(b *strings.Builder) {
	x0, x1, y0, y1 := c.bounds()
	var yt []float64
	ys := scale{p0: chartH - padB, p1: padT, log: c.logY}
	if c.logY {
		yt, ys.lo, ys.hi = logTicks(y0, y1)
	} else {
		yt, ys.hi = linearTicks(y0, y1)
		ys.lo = yt[0]
	}
	xs := scale{lo: x0, hi: x1, p0: padL, p1: chartW - padR}
	xf, yf := c.xFmt, c.yFmt
	if xf == nil {
		xf = clock(x1 - x0)
	}
	if yf == nil {
		yf = si
	}
	ticksX := c.xTicks
	if ticksX == nil {
		ticksX = timeTicks
	}
	// What the tooltip script needs to read values back (see pageScript).
	unit, xKind, logY := c.yUnit, "t", 0
	if unit == "" {
		unit = c.yLabel
	}
	if c.xTicks != nil {
		xKind = "n"
	}
	if c.logY {
		logY = 1
	}
	fmt.Fprintf(b, `<svg viewBox="0 0 %d %d" role="img" aria-label="%s" data-u="%s" data-xf="%s" data-map="%g %g %g %g %g %g %g %g %d">`,
		chartW, chartH, esc(c.title), esc(unit), xKind, xs.lo, xs.hi, xs.p0, xs.p1, ys.lo, ys.hi, ys.p0, ys.p1, logY)
	top, bottom := padT, float64(chartH)-padB
	// Phases: alternating shades, a dashed line where one starts, the name
	// at the top when it fits.
	for i, p := range c.phases {
		a, z := xs.px(p.x0), xs.px(p.x1)
		fmt.Fprintf(b, `<rect class="ph%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`, i%2, a, top, max(z-a, 0), bottom-top, esc(p.label))
		if i > 0 {
			fmt.Fprintf(b, `<line class="phb" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, a, top, a, bottom)
		}
		if float64(len(p.label))*6.2+6 < z-a {
			fmt.Fprintf(b, `<text class="phn" x="%.1f" y="%.1f">%s</text>`, (a+z)/2, top-7, esc(p.label))
		}
	}
	// Marked intervals, merged when closer than a pixel so a long run stays
	// small.
	var last *[2]float64
	var spans [][2]float64
	for _, m := range c.marks {
		a, z := xs.px(m.x0), max(xs.px(m.x1), xs.px(m.x0)+1)
		if last != nil && a-(*last)[1] < 1 {
			(*last)[1] = z
			continue
		}
		spans = append(spans, [2]float64{a, z})
		last = &spans[len(spans)-1]
	}
	for _, s := range spans {
		fmt.Fprintf(b, `<rect class="mark" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%s</title></rect>`, s[0], top, s[1]-s[0], bottom-top, esc(c.markLabel))
	}
	// Gridlines and tick labels.
	for _, v := range yt {
		y := ys.px(v)
		fmt.Fprintf(b, `<line class="gl" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, padL, y, chartW-padR, y)
		fmt.Fprintf(b, `<text class="yt" x="%.1f" y="%.1f">%s</text>`, padL-6, y+3.5, esc(yf(v)))
	}
	for _, v := range ticksX(x0, x1) {
		x := xs.px(v)
		fmt.Fprintf(b, `<line class="glx" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, top, x, bottom+4)
		fmt.Fprintf(b, `<text class="xt" x="%.1f" y="%.1f">%s</text>`, x, bottom+16, esc(xf(v)))
	}
	fmt.Fprintf(b, `<path class="axis" d="M%.1f %.1fV%.1fH%.1f"/>`, padL, top, bottom, float64(chartW)-padR)
	fmt.Fprintf(b, `<text class="xl" x="%.1f" y="%d">%s</text>`, (padL+chartW-padR)/2, chartH-5, esc(c.xLabel))
	fmt.Fprintf(b, `<text class="yl" transform="translate(13 %.1f) rotate(-90)">%s</text>`, (top+bottom)/2, esc(c.yLabel))
	fmt.Fprintf(b, `<line class="cur" x1="0" y1="%.1f" x2="0" y2="%.1f"/>`, top, bottom)
	// The lines, downsampled, each broken at its gaps.
	for _, l := range c.lines {
		pts := c.drawable(l)
		fmt.Fprintf(b, `<path class="ln" stroke="%s" stroke-width="%.1f"`, l.color, l.width)
		if l.dash != "" {
			fmt.Fprintf(b, ` stroke-dasharray="%s"`, l.dash)
		}
		b.WriteString(` d="`)
		pen := false
		for _, p := range pts {
			if math.IsNaN(p.Y) || math.IsInf(p.X, 0) {
				pen = false
				continue
			}
			if !pen {
				b.WriteByte('M')
			} else {
				b.WriteByte(' ')
			}
			pen = true
			y := ys.px(p.Y)
			b.WriteString(strconv.FormatFloat(math.Round(xs.px(p.X)*10)/10, 'f', -1, 64))
			b.WriteByte(',')
			b.WriteString(strconv.FormatFloat(math.Round(y*10)/10, 'f', -1, 64))
		}
		fmt.Fprintf(b, `"><title>%s</title></path>`, esc(l.name))
	}
	b.WriteString("</svg>")
}

// si formats an axis value briefly: 950, 1.5k, 20k, 1.2M.
func si(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e9:
		return trim(v/1e9) + "G"
	case a >= 1e6:
		return trim(v/1e6) + "M"
	case a >= 1e3:
		return trim(v/1e3) + "k"
	}
	return trim(v)
}

// trim formats a tick value with at most six significant digits and no
// trailing zeros.
func trim(v float64) string {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// msTick formats milliseconds on an axis: 250 µs, 1 ms, 1.5 s.
func msTick(v float64) string {
	switch {
	case v >= 1000:
		return trim(v/1000) + " s"
	case v >= 1 || v == 0:
		return trim(v) + " ms"
	}
	return trim(math.Round(v*1e4)/10) + " µs"
}

// bytesTick formats bytes on an axis: 512 MB, 1.5 GB.
func bytesTick(v float64) string {
	switch {
	case v >= 1e9:
		return trim(v/1e9) + " GB"
	case v >= 1e6:
		return trim(v/1e6) + " MB"
	case v >= 1e3:
		return trim(v/1e3) + " kB"
	}
	return trim(v) + " B"
}

// ninesTicks are the percentile axis's ticks: 0, 90, 99, 99.9, ...
func ninesTicks(lo, hi float64) []float64 {
	var t []float64
	for v := math.Ceil(lo); v <= hi+1e-9; v++ {
		t = append(t, v)
	}
	return t
}

// ninesLabel names a point of the nines axis: x nines is the percentile
// 100(1-10^-x).
func ninesLabel(x float64) string {
	if x == 0 {
		return "0"
	}
	return strconv.FormatFloat(100*(1-math.Pow(10, -x)), 'f', max(int(math.Round(x))-2, 0), 64)
}

// The charts of the page: what each one shows, from the intervals.
