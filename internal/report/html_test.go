package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
)

func page(t *testing.T, runs ...*result.Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, runs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The charts of fakeRun (see text_test.go): every time series it has data
// for, then the latency distributions of all actions and of each one.
var fakeCharts = []string{"Throughput", "Latency per interval (all actions)", "Latency per interval: page", "Latency per interval: search",
	"Errors by class", "Active users", "Server CPU", "Context switches", "Server memory", "Disk transfers", "Network", "Load generator CPU",
	"Latency distribution: all actions (steady)", "Latency distribution: page (steady)", "Latency distribution: search (steady)"}

func TestHTMLStructure(t *testing.T) {
	p := page(t, fakeRun(1))
	if !strings.HasPrefix(p, "<!DOCTYPE html>") || !strings.HasSuffix(p, "</html>\n") {
		t.Errorf("not a whole HTML5 page: %.40q ... %q", p, p[max(0, len(p)-20):])
	}
	if n, f, d := strings.Count(p, "<svg"), strings.Count(p, "<figure data-chart>"), strings.Count(p, `<script type="application/json" class="cd">`); n != len(fakeCharts) || f != n || d != n {
		t.Errorf("%d <svg> and %d data in %d figures, want one per chart: %d", n, d, f, len(fakeCharts))
	}
	// fakeRun's machine source has no memory figure: that chart is named
	// as not charted, not drawn empty.
	if !strings.Contains(p, "Not charted, no counter source gave them: Machine memory.") {
		t.Error("the chart without a source is not named")
	}
	for _, title := range fakeCharts {
		if !strings.Contains(p, "<h3>"+esc(title)+"</h3>") {
			t.Errorf("no chart %q", title)
		}
	}
	// The phases are named on the bands of every time series.
	for _, ph := range []string{"ramp-up", "steady", "ramp-down"} {
		if n := strings.Count(p, `<text class="phn" x=`); n == 0 || !strings.Contains(p, ">"+ph+"</text>") {
			t.Errorf("phase %s not named on the charts", ph)
		}
	}
	for _, want := range []string{
		"demo [nginx 1.22]", "closed, 10 users", "io_uring, 2 threads", "box · 2 cores", // header
		`class="mark"`, "client-bound interval", // the client-bound interval
		"status_5xx", "search: 6 status_5xx errors: HTTP status 503", // errors: a series, and the table's line
		"<caption>By phase</caption>", "<caption>By action (steady)</caption>", "<caption>Server counters</caption>",
		"% processor time", "Gap: process nginx did not answer in 1 of 4 intervals", // server rows
		"nginx user", "nginx RSS", // the server process's series
		"Warnings", "1 of 2 intervals of the steady phase were client-bound",
	} {
		if !strings.Contains(p, want) && !strings.Contains(p, esc(want)) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(p, "PARTIAL") {
		t.Error("a finished run is marked partial")
	}
}

func TestHTMLRepetitions(t *testing.T) {
	p := page(t, fakeRun(5))
	for _, want := range []string{"<caption>Repetitions</caption>", "mean of 3", "<caption>By phase, repetition 1</caption>",
		"The charts show each run's first repetition", "every run:</span> 1 of 2 intervals"} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestHTMLPartial(t *testing.T) {
	run := fakeRun(1)
	run.Partial, run.Reason = true, "interrupted by SIGINT"
	if p := page(t, run); !strings.Contains(p, "PARTIAL: this run did not finish as planned: interrupted by SIGINT") {
		t.Error("no PARTIAL notice")
	}
}

// Two runs: one color each on the same charts, named by their labels, and
// their tables side by side.
func TestHTMLOverlay(t *testing.T) {
	a, b := fakeRun(1), fakeRun(1)
	b.Meta.Label = "nginx 1.24"
	p := page(t, a, b)
	if n := strings.Count(p, "<svg"); n != len(fakeCharts) {
		t.Errorf("%d charts, want %d (runs overlaid, not repeated)", n, len(fakeCharts))
	}
	// The comparison of the runs, and each warning once for both.
	for _, want := range []string{"<h2>Comparison</h2>", "<caption>steady · client</caption>", "change</th>", "CI</th>", "verdict</th>",
		"cannot judge: 1 run a side", "Warnings (2)", "comparison:</span> nginx 1.22 and nginx 1.24 have 1 finished repetition each", "every run:</span> 1 of 2 intervals of the steady phase were client-bound"} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(p, "1 of 2 intervals of the steady phase were client-bound"); n != 1 {
		t.Errorf("the warning shows %d times, want once for both runs", n)
	}
	for _, want := range []string{"nginx 1.22 vs nginx 1.24", "nginx 1.22 · p99", "nginx 1.24 · p99", "nginx 1.22 · machine user"} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, c := range palette[:2] {
		if n := strings.Count(p, `stroke="`+c+`"`); n < 20 {
			t.Errorf("%d lines in %s, want the run's lines on every chart", n, c)
		}
	}
	if n := strings.Count(p, "<caption>By phase</caption>"); n != 2 {
		t.Errorf("%d phase tables, want 2", n)
	}
	// Runs without labels are named by scenario and file, and told apart.
	a.Meta.Label, b.Meta.Label = "", ""
	a.Meta.File, b.Meta.File = "/x/demo.yaml", "/x/demo.yaml"
	if p := page(t, a, b); !strings.Contains(p, "demo (demo.yaml) · p50") || !strings.Contains(p, "demo (demo.yaml) #2 · p50") {
		t.Error("unlabelled runs are not named by scenario and file")
	}
}

// Odd runs still make a page: no repetition; intervals of no length, a
// histogram-less action and no counters; no run at all is an error.
func TestHTMLEdgeCases(t *testing.T) {
	empty := fakeRun(1)
	empty.Repetitions = nil
	if p := page(t, empty); !strings.Contains(p, "No repetition was recorded.") || strings.Contains(p, "<svg") {
		t.Error("a run without repetitions")
	}
	run := fakeRun(1)
	rep := &run.Repetitions[0]
	for i := range rep.Intervals {
		rep.Intervals[i].Counters = nil
		rep.Intervals[i].Actions[1] = result.ActionInterval{}
	}
	rep.Intervals[1].DurationS = 0
	rep.Summaries = result.Summarize(run.Meta.Actions, len(run.Meta.Events), rep.Intervals)
	p := withoutLibrary(page(t, run))
	for _, bad := range []string{"NaN", "Inf", "<h3>Server CPU</h3>", "<h3>Network</h3>"} {
		if strings.Contains(p, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
	if !strings.Contains(p, "Not charted, no counter source gave them: Server CPU, Context switches, Machine memory, Server memory, Disk transfers, Network.") {
		t.Error("the charts without a source are not named")
	}
	// A run whose intervals hold nothing draws its charts empty, saying
	// "no data", instead of blank axes.
	for i := range rep.Intervals {
		rep.Intervals[i].Actions = nil
		rep.Intervals[i].UsersMean, rep.Intervals[i].Client = math.NaN(), result.Client{CPUCores: math.NaN(), Capacity: math.NaN()}
	}
	rep.Summaries = result.Summarize(run.Meta.Actions, len(run.Meta.Events), rep.Intervals)
	p = withoutLibrary(page(t, run))
	var blank []string
	for _, m := range regexp.MustCompile(`<h3>([^<]*)</h3>.*?</figcaption>\n<p class="nodata">no data`).FindAllStringSubmatch(p, -1) {
		blank = append(blank, m[1])
	}
	t.Logf("no data: %q", blank)
	if len(blank) != 5 || !strings.Contains(p, "<h3>Throughput</h3>") || strings.Count(p, "<svg") != 1 {
		t.Errorf("charts saying no data: %q, want the latencies (all actions, page, search), users and generator CPU; throughput (0/s) drawn alone", blank)
	}
	if !strings.Contains(p, "Throughput") || strings.Contains(p, "Latency distribution: search") {
		t.Error("charts of an action without values")
	}
	if err := HTML(&bytes.Buffer{}, nil); err == nil {
		t.Error("no error without runs")
	}
}

// Text from results (scenario names, labels, actions, error messages) is
// escaped wherever it appears.
func TestHTMLEscapes(t *testing.T) {
	run := fakeRun(1)
	const evil = `<script>alert("x")</script>`
	run.Meta.Scenario = evil
	run.Meta.Label = `"><img src=x onerror=alert(1)>`
	run.Meta.Actions[1] = `</svg><script>alert(2)</script>`
	for i := range run.Repetitions[0].Intervals {
		for j := range run.Repetitions[0].Intervals[i].Counters {
			if c := &run.Repetitions[0].Intervals[i].Counters[j]; c.Name == "process nginx" {
				c.Name = "process <b>x</b>"
			}
		}
	}
	rep := &run.Repetitions[0]
	rep.Summaries = result.Summarize(run.Meta.Actions, len(run.Meta.Events), rep.Intervals)
	rep.Summaries[1].Actions[1].Messages["status_5xx"] = `<iframe src="https://evil.example/">`
	p := page(t, run)
	for _, bad := range []string{evil, "<img", "<iframe", "alert(2)</script>", "<b>x</b>"} {
		if strings.Contains(p, bad) {
			t.Errorf("page holds %q unescaped", bad)
		}
	}
	if n, data := strings.Count(p, "<script"), strings.Count(p, `<script type="application/json" class="cd">`); n-data != 3 {
		t.Errorf("%d <script> elements besides the charts' data, want only the page's own: 3", n-data)
	}
	for _, d := range regexp.MustCompile(`(?s)<script type="application/json" class="cd">(.*?)</script>`).FindAllStringSubmatch(p, -1) {
		if strings.ContainsAny(d[1], "<>") {
			t.Errorf("chart data holds < or >: %.200s", d[1])
		}
	}
	if !strings.Contains(p, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") || !strings.Contains(p, "&lt;iframe src=&#34;https://evil.example/&#34;&gt;") {
		t.Error("the escaped text is missing")
	}
}

// The page loads nothing: no external resource; the only http(s) URLs in it
// are the data's own text (the target, an error message).
func TestHTMLOffline(t *testing.T) {
	run := fakeRun(1)
	p := page(t, run, synthRun("big", 600, 1))
	for _, ref := range []string{"src=", "href=", "url(", "@import", "<link", "<img", "<iframe", "<object", "<embed", "xlink"} {
		if strings.Contains(strings.ToLower(p), ref) {
			t.Errorf("page refers to a resource: %q", ref)
		}
	}
	rest := strings.ReplaceAll(withoutLibrary(p), esc(run.Meta.Target), "")
	if loc := regexp.MustCompile(`(?i)https?:`).FindStringIndex(rest); loc != nil {
		t.Errorf("page holds a URL that is not data: %q", rest[max(0, loc[0]-60):min(len(rest), loc[1]+60)])
	}
}

// A run of two hours at one-second intervals makes a small page: every
// line is downsampled to maxPoints.
func TestHTMLLarge(t *testing.T) {
	run := synthRun("2h", 7200, 1)
	start := time.Now()
	p := page(t, run)
	took := time.Since(start)
	t.Logf("7,200 intervals: %d bytes in %v", len(p), took)
	if len(p) >= 1_500_000 {
		t.Errorf("page is %d bytes, want < 1.5 MB", len(p))
	}
	for _, d := range regexp.MustCompile(` d="([^"]*)"`).FindAllStringSubmatch(p, -1) {
		if n := strings.Count(d[1], ","); n > maxPoints+20 {
			t.Errorf("a line keeps %d points, want at most about %d", n, maxPoints)
		}
	}
	// The 2 s stall at 3,000 s survives downsampling: the p99 line goes up
	// to it, near the top of the latency chart (log axis, 10 µs to 10 s).
	fig := p[strings.Index(p, "<h3>Latency per interval"):]
	fig = fig[:strings.Index(fig, "</figure>")]
	top := math.Inf(1)
	for _, d := range regexp.MustCompile(` d="([^"]*)"`).FindAllStringSubmatch(fig, -1) {
		for _, xy := range strings.Fields(strings.ReplaceAll(d[1], "M", " ")) {
			if _, y, ok := strings.Cut(xy, ","); ok {
				v, _ := strconv.ParseFloat(y, 64)
				top = min(top, v)
			}
		}
	}
	if !strings.Contains(fig, ">10 s</text>") || top > padT+40 {
		t.Errorf("the stall is lost: the highest point of the latency lines is at y=%v", top)
	}
}

// The axes: round ticks, time and percentile labels, units.
func TestAxes(t *testing.T) {
	eq := func(a, b []float64) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-9*math.Max(1, math.Abs(b[i])) {
				return false
			}
		}
		return true
	}
	if ticks, top := linearTicks(0, 1870); !eq(ticks, []float64{0, 500, 1000, 1500, 2000}) || top != 2000 {
		t.Errorf("linear ticks %v to %v", ticks, top)
	}
	if ticks, _ := linearTicks(0, 0.7); !eq(ticks, []float64{0, 0.2, 0.4, 0.6, 0.8}) || trim(ticks[3]) != "0.6" {
		t.Errorf("linear ticks %v", ticks)
	}
	if ticks, lo, hi := logTicks(0.3, 2100); lo != 0.1 || hi != 10000 || !eq(ticks, []float64{0.1, 1, 10, 100, 1000, 10000}) {
		t.Errorf("log ticks %v from %v to %v", ticks, lo, hi)
	}
	if ticks, _, _ := logTicks(1.5, 40); !eq(ticks, []float64{1, 2, 5, 10, 20, 50, 100}) {
		t.Errorf("log ticks %v", ticks)
	}
	if ticks := timeTicks(0, 7200); !eq(ticks, []float64{0, 900, 1800, 2700, 3600, 4500, 5400, 6300, 7200}) {
		t.Errorf("time ticks %v", ticks)
	}
	for _, tt := range []struct{ got, want string }{
		{clock(60)(30), "30 s"}, {clock(600)(90), "1:30"}, {clock(7200)(3725), "1:02:05"},
		{ninesLabel(0), "0"}, {ninesLabel(1), "90"}, {ninesLabel(2), "99"}, {ninesLabel(4), "99.99"},
		{msTick(0.25), "250 µs"}, {msTick(1500), "1.5 s"}, {msTick(20), "20 ms"}, {si(2500), "2.5k"}, {si(1.2e6), "1.2M"},
		{bytesTick(1.5e9), "1.5 GB"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// synthRun is a run of n one-second intervals: 5 % ramp-up, steady, 5 %
// ramp-down; two actions; counters of the machine, an nginx process and
// the generator; errors now and then, a 2 s stall at 3,000 s and a few
// client-bound intervals. Its histograms share their counts, so a long run
// takes little memory.
func synthRun(label string, n int, k float64) *result.Run {
	run := fakeRun(1)
	run.Meta.Label, run.Meta.Model, run.Meta.RatePerS = label, "open", 2000
	run.Meta.Actions = []string{"page", "page-4k"}
	hists := make([][2]metrics.Hist, 9)
	for k := range hists {
		for a := range 2 {
			h := &hists[k][a]
			for v := uint64(1); v < 400; v++ {
				h.RecordN(uint64(60+20*a+k*10)+v*v/40, 2000/(v+5))
			}
			if k == 8 {
				h.RecordN(2_000_000, 200) // the stall
			}
		}
	}
	rep := result.Repetition{ElapsedS: float64(n)}
	for i := range n {
		ph := "steady"
		switch {
		case i < n/20:
			ph = "ramp-up"
		case i >= n-n/20:
			ph = "ramp-down"
		}
		x := float64(i)
		wave := k * (1 + 0.1*math.Sin(x/300))
		iv := result.Interval{Index: i, StartS: x, DurationS: 1, Phase: ph, UsersMean: 40 * wave, ActiveUsers: 40, UsersMax: 44}
		iv.Client = result.Client{CPUCores: 0.4 * wave, Capacity: 2, MachineBusy: 0.5, Bound: i%997 == 5}
		iv.Counters = []sampler.SourceValues{
			{Name: "system", Up: true, Values: map[string]float64{"cpus": 2, "cpu_user_seconds_total": 0.6 * wave, "cpu_nice_seconds_total": 0,
				"cpu_system_seconds_total": 0.3, "cpu_irq_seconds_total": 0, "cpu_softirq_seconds_total": 0.1 * wave,
				"context_switches_total": 20000 * wave, "memory_used_bytes": 8e8 + 1e5*x, "disk_reads_total{dev=vda}": 3,
				"disk_writes_total{dev=vda}": 20 * wave, "net_receive_bytes_total{if=lo}": 2e6 * wave, "net_transmit_bytes_total{if=lo}": 1.5e6 * wave}},
			{Name: "process nginx", Up: i%1000 != 7, Values: map[string]float64{"process_cpu_user_seconds_total": 0.2 * wave,
				"process_cpu_system_seconds_total": 0.25, "process_rss_bytes": 3e7, "process_voluntary_switches_total": 9000 * wave}},
			{Name: "generator", Up: true, Values: map[string]float64{"process_cpu_user_seconds_total": 0.3, "process_cpu_system_seconds_total": 0.1}},
		}
		variant := i / 90 % 8
		if i == 3000 {
			variant = 8
		}
		for a := range 2 {
			h := hists[variant][a]
			ai := result.ActionInterval{Count: uint64(float64(h.N) * k), BytesIn: 300 * h.N, Latency: h, Service: h}
			if i%211 == 3 {
				ai.Errors = map[string]uint64{driver.Timeout.String(): 4, driver.Status5xx.String(): 1}
			}
			iv.Actions = append(iv.Actions, ai)
		}
		rep.Intervals = append(rep.Intervals, iv)
	}
	rep.Summaries = result.Summarize(run.Meta.Actions, len(run.Meta.Events), rep.Intervals)
	rep.Taints = result.ComputeTaints(&rep)
	run.Repetitions = []result.Repetition{rep}
	return run
}

// TestHTMLChromium renders the page of two overlaid runs in headless
// Chromium: no script error may show in the page; uPlot draws every chart,
// each y axis fits its series, the legend shows the values under the
// mouse, a drag zooms and a click on a legend entry hides its series; and
// in the screenshot, the plot of every chart holds its lines' pixels.
func TestHTMLChromium(t *testing.T) {
	const bin = "/usr/bin/chromium"
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("chromium is not installed; .ci/run installs it")
		}
		t.Skip("chromium is not installed (apt-get install chromium)")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	const n = 1800 // half an hour of 1 s intervals (a longer run: TestHTMLLarge)
	if err := HTML(&b, []*result.Run{synthRun("A", n, 1), synthRun("B", n-50, 0.7)}); err != nil {
		t.Fatal(err)
	}
	write(t, path, b.Bytes())
	// (a) No script error: the page's own script writes any into #js-errors.
	// A probe, run once uPlot has drawn every chart, reports for each chart
	// how it was drawn, where (for the screenshot), its y axis against its
	// data, and what the legend shows with the mouse over the chart; then
	// it zooms the first chart by a drag and hides a series by a click on
	// its legend entry.
	probe := filepath.Join(dir, "probe.html")
	write(t, probe, append(b.Bytes(), []byte(probeScript)...))
	start := time.Now()
	dom := chromium(t, bin, dir, "--dump-dom", "--window-size=1400,900", "--hide-scrollbars", "--virtual-time-budget=10000", "file://"+probe)
	t.Logf("page of %d bytes rendered in %v", b.Len(), time.Since(start))
	errs := regexp.MustCompile(`(?s)<pre id="js-errors"[^>]*>(.*?)</pre>`).FindStringSubmatch(dom)
	if errs == nil {
		t.Fatalf("no #js-errors element in the rendered page (%d bytes)", len(dom))
	}
	if errs[1] != "" {
		t.Errorf("script errors in the page: %s", errs[1])
	}
	out := regexp.MustCompile(`(?s)<pre id="probe">(.*?)</pre>`).FindStringSubmatch(dom)
	if out == nil {
		t.Fatalf("the probe did not run: %.300s", dom[max(0, len(dom)-300):])
	}
	var pr probeResult
	if err := json.Unmarshal([]byte(html.UnescapeString(out[1])), &pr); err != nil {
		t.Fatalf("probe output: %v: %.300s", err, out[1])
	}
	charts := len(regexp.MustCompile(`<figure data-chart>`).FindAllString(b.String(), -1))
	if len(pr.Charts) != charts || charts < 15 {
		t.Fatalf("the probe saw %d charts, the page has %d (want every time series and distribution)", len(pr.Charts), charts)
	}
	for _, c := range pr.Charts {
		if c.Drawn != "uplot" {
			t.Errorf("chart %q was not drawn by uPlot (%q)", c.Title, c.Drawn)
		}
		// Every axis fits its series: no value above the axis, and the
		// highest one in the top half of it (a linear axis), or the top
		// decade (a log one).
		if c.DataMax > c.YMax*1.0001 || c.DataMin < c.YMin*0.9999 {
			t.Errorf("chart %q: values %g to %g outside its y axis %g to %g", c.Title, c.DataMin, c.DataMax, c.YMin, c.YMax)
		}
		if low := map[bool]float64{false: c.YMax / 2, true: c.YMax / 10}[c.Log]; c.DataMax < low {
			t.Errorf("chart %q: its highest value %g lies low on its axis (top %g)", c.Title, c.DataMax, c.YMax)
		}
		if strings.Count(c.Legend, ": ") < 2 || strings.Contains(c.Legend, ": –") {
			t.Errorf("chart %q: the legend shows no values under the cursor: %q", c.Title, c.Legend)
		}
	}
	if pr.Charts[1].Title != "Latency per interval (all actions)" || !strings.Contains(pr.Charts[1].Legend, "A · p99: ") || !strings.Contains(pr.Charts[1].Legend, " µs") {
		t.Errorf("the latency chart's legend under the cursor: %q", pr.Charts[1].Legend)
	}
	if !(pr.ZoomBefore[0] <= 0 && pr.ZoomBefore[1] >= n && pr.ZoomAfter[0] > 0.2*n && pr.ZoomAfter[1] < 0.65*n) {
		t.Errorf("a drag over the first chart does not zoom it: x %v, then %v", pr.ZoomBefore, pr.ZoomAfter)
	}
	if !pr.Toggled {
		t.Error("a click on a legend entry does not hide its series")
	}
	// The error capture works: a page with a broken script shows it.
	bad := filepath.Join(dir, "bad.html")
	write(t, bad, []byte(fmt.Sprintf(pageHead, "t", "", pageScript)+"<script>noSuchFunction()</script></body></html>"))
	if dom := chromium(t, bin, dir, "--dump-dom", "file://"+bad); !strings.Contains(dom, "noSuchFunction is not defined") {
		t.Errorf("a script error does not show in the page: %s", dom)
	}
	// (b) The screenshot shows every chart: in each chart's plot, colored
	// pixels of its lines (the background, phase bands, gridlines and
	// client-bound bands are grey or pale).
	shot := filepath.Join(dir, "shot.png")
	start = time.Now()
	chromium(t, bin, dir, "--screenshot="+shot, fmt.Sprintf("--window-size=1400,%d", pr.Height+20), "--hide-scrollbars", "file://"+path)
	t.Logf("screenshot of 1400×%d taken in %v", pr.Height+20, time.Since(start))
	if keep := os.Getenv("THRONG_SCREENSHOT"); keep != "" { // to look at it
		data, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		write(t, keep, data)
	}
	img := readPNG(t, shot)
	for _, c := range pr.Charts {
		n := inkIn(img, c.Rect)
		t.Logf("%-45s %6d colored pixels in %v", c.Title, n, c.Rect)
		if n < 300 {
			t.Errorf("chart %q: %d colored pixels in its plot %v, want its lines drawn (> 300)", c.Title, n, c.Rect)
		}
	}
	// A blank region has none: the count sees lines, not the page.
	if n := inkIn(img, [4]int{0, pr.Height - 15, 1400, 10}); n > 0 {
		t.Errorf("%d colored pixels in the page's bottom margin", n)
	}
}

// probeScript runs in Chromium after the page has drawn its charts, and
// writes what it finds into <pre id="probe"> as JSON (probeResult).
const probeScript = `<script>
window.addEventListener("load", function () {
  var out = {charts: [], height: document.documentElement.scrollHeight};
  var figs = Array.prototype.slice.call(document.querySelectorAll("figure[data-chart]"));
  // Where each chart is, before the legends fill with values and grow.
  figs.forEach(function (fig) {
    var u = fig._u, c = {title: fig.querySelector("h3").textContent, drawn: fig.getAttribute("data-drawn") || ""};
    out.charts.push(c);
    if (!u) return;
    var r = u.over.getBoundingClientRect();
    c.rect = [Math.round(r.left + scrollX), Math.round(r.top + scrollY), Math.round(r.width), Math.round(r.height)];
    c.ymin = u.scales.y.min; c.ymax = u.scales.y.max; c.log = u.scales.y.distr === 3;
    c.dmin = Infinity; c.dmax = -Infinity;
    for (var i = 1; i < u.data.length; i++) u.data[i].forEach(function (y) { if (y != null) { c.dmin = Math.min(c.dmin, y); c.dmax = Math.max(c.dmax, y); } });
  });
  var step = function (fns) { if (fns.length) setTimeout(function () { fns[0](); step(fns.slice(1)); }, 50); };
  var u0 = figs[0]._u, r0, y0;
  step([
    function () { // the mouse over each chart: the legend shows the values under it
      figs.forEach(function (fig, k) {
        var u = fig._u;
        if (!u) return;
        var r = u.over.getBoundingClientRect();
        u.over.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + r.width * 0.4, clientY: r.top + r.height / 2, bubbles: true}));
      });
    },
    function () {
      figs.forEach(function (fig, k) {
        out.charts[k].legend = Array.prototype.map.call(fig.querySelectorAll(".u-legend .u-series"), function (tr) {
          return tr.querySelector(".u-label").textContent + ": " + tr.querySelector(".u-value").textContent;
        }).join(" | ");
      });
      // A drag across the first chart, from 25 % to 60 % of its width.
      out.zoomBefore = [u0.scales.x.min, u0.scales.x.max];
      r0 = u0.over.getBoundingClientRect(); y0 = r0.top + r0.height / 2;
      u0.over.dispatchEvent(new MouseEvent("mousedown", {clientX: r0.left + r0.width * 0.25, clientY: y0, button: 0, bubbles: true}));
    },
    function () { u0.over.dispatchEvent(new MouseEvent("mousemove", {clientX: r0.left + r0.width * 0.6, clientY: y0, movementX: 10, bubbles: true})); },
    function () { document.dispatchEvent(new MouseEvent("mouseup", {clientX: r0.left + r0.width * 0.6, clientY: y0, button: 0, bubbles: true})); },
    function () {
      out.zoomAfter = [u0.scales.x.min, u0.scales.x.max];
      var entry = figs[0].querySelectorAll(".u-legend .u-series")[1];
      entry.firstChild.dispatchEvent(new MouseEvent("click", {bubbles: true}));
      out.toggled = !u0.series[1].show && entry.classList.contains("u-off");
      var pre = document.createElement("pre");
      pre.id = "probe";
      pre.textContent = JSON.stringify(out);
      document.body.appendChild(pre);
    }
  ]);
});
</script>`

// probeResult is what probeScript reports.
type probeResult struct {
	Height int `json:"height"`
	Charts []struct {
		Title   string
		Drawn   string
		Rect    [4]int // x, y, width, height in page pixels
		YMin    float64
		YMax    float64
		Log     bool
		DataMin float64 `json:"dmin"`
		DataMax float64 `json:"dmax"`
		Legend  string
	} `json:"charts"`
	ZoomBefore [2]float64 `json:"zoomBefore"`
	ZoomAfter  [2]float64 `json:"zoomAfter"`
	Toggled    bool       `json:"toggled"`
}

func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// inkIn counts the colored pixels (max - min channel over 60: the lines'
// palette, not the greys and pale tints around them) in a rectangle x, y,
// width, height.
func inkIn(img image.Image, r [4]int) int {
	n := 0
	for y := r[1]; y < r[1]+r[3]; y++ {
		for x := r[0]; x < r[0]+r[2]; x++ {
			if !(image.Point{x, y}.In(img.Bounds())) {
				continue
			}
			cr, cg, cb, _ := img.At(x, y).RGBA()
			hi, lo := max(cr, cg, cb)>>8, min(cr, cg, cb)>>8
			if hi-lo > 60 {
				n++
			}
		}
	}
	return n
}

// withoutLibrary is the page without the inlined uPlot (whose text holds
// words like NaN, and its project's address in its banner comment) and
// without the script that draws the charts with it.
func withoutLibrary(p string) string {
	if !strings.Contains(p, uplotJS) {
		panic("the page does not inline uPlot")
	}
	return strings.Replace(strings.Replace(p, uplotJS, "", 1), chartScript, "", 1)
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// chromium runs headless Chromium in dir with args, in its own process
// group, for at most 60 s, and returns its standard output. The whole group
// is killed at the end: no Chromium process outlives the test.
func chromium(t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	profile, err := os.MkdirTemp(dir, "profile")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile}, args...)...)
	var stderr bytes.Buffer
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, out, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	runErr := cmd.Wait()
	killGroup(t, pgid)
	if ctx.Err() != nil {
		t.Fatalf("chromium %v did not finish within 60 s; killed", args)
	}
	if runErr != nil {
		t.Fatalf("chromium %v: %v\n%s", args, runErr, stderr.String())
	}
	data, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// killGroup kills what is left of a process group (helpers outliving the
// browser; its ID cannot be reused while one of them lives) and waits until
// none is alive. Dead helpers may remain as zombies where nothing reaps
// orphans: they run no more.
func killGroup(t *testing.T, pgid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if err := syscall.Kill(-pgid, syscall.SIGKILL); errors.Is(err, syscall.ESRCH) {
			return
		}
		if live := liveMembers(pgid); live == 0 {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("%d chromium processes of group %d still alive after SIGKILL", live, pgid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// liveMembers counts the processes of a group that are not zombies, from
// /proc; where there is no /proc, it trusts the kill.
func liveMembers(pgid int) int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	n := 0
	for _, s := range stats {
		data, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so read after ')'.
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			n++
		}
	}
	return n
}

// The verdict and the thresholds' outcomes kept in the result are on the
// run's card.
func TestHTMLVerdictAndThresholds(t *testing.T) {
	run := fakeRun(1)
	run.Thresholds = []result.ThresholdOutcome{{Threshold: "p99 < 1ms", Phase: "steady", Message: "p99 in the steady phase is 1.487 ms: not < 1 ms"}}
	p := page(t, run)
	for _, want := range []string{`<div class="verdict invalid"><b>NOT VALID: the figures cannot be trusted as they are</b>`,
		`<tr class="fail"><td>fail</td><td>generator</td><td>the load generator was the bottleneck in 1 of 2 intervals`,
		`<tr class="fail"><td>fail</td><td>steady: p99 &lt; 1ms</td><td>p99 in the steady phase is 1.487 ms: not &lt; 1 ms</td></tr>`} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// A valid verdict stored in the result is shown as stored.
	run.Repetitions[0].Validity = &result.Validity{Valid: true, Phase: "steady", Checks: []result.Check{{Name: "p99", Status: result.Pass, Message: "p99 1 ms ± 0.01 ms"}}}
	if p := page(t, run); !strings.Contains(p, `<div class="verdict valid"><b>Valid: the figures can be trusted</b>`) || !strings.Contains(p, "p99 1 ms ± 0.01 ms") {
		t.Error("stored verdict not shown")
	}
}
