package report

import (
	"math"
	"sort"
	"strings"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
)

// series is one named line of one run, before it gets its color.
type series struct {
	name string
	pts  []point
}

// overTime is one time-series chart: its axes and its series per run.
type overTime struct {
	title, yLabel, note string
	yUnit               string // in tooltips, when not yLabel
	yFmt                func(float64) string
	autoLog             bool // a log y axis when the data spans over two decades
	marks               bool // client-bound intervals in red
	always              bool // shown, with "no data", when it has nothing to draw
	counters            bool // from counter sources: named as not charted when none gave it
	of                  func(v *view) []series
}

// perInterval is one value per interval, at the interval's middle; NaN is a
// gap.
func perInterval(rep *result.Repetition, f func(iv *result.Interval) float64) []point {
	pts := make([]point, len(rep.Intervals))
	for i := range rep.Intervals {
		iv := &rep.Intervals[i]
		pts[i] = point{iv.StartS + iv.DurationS/2, f(iv)}
	}
	return pts
}

// counter reads a sum of series (see sampler.SourceValues.Sum) from the
// interval's source that pick selects, scaled by k; NaN when the source is
// absent, down or lacks a series.
func counter(pick func(iv *result.Interval) *sampler.SourceValues, k float64, names ...string) func(iv *result.Interval) float64 {
	return func(iv *result.Interval) float64 {
		sv := pick(iv)
		if sv == nil || !sv.Up {
			return math.NaN()
		}
		t := 0.0
		for _, n := range names {
			x, ok := sv.Sum(n)
			if !ok {
				return math.NaN()
			}
			t += x
		}
		return t * k
	}
}

// machine is the server's machine as the server rows read it: the first
// node_exporter source, else this machine ("system").
func machine(iv *result.Interval) *sampler.SourceValues {
	if sv := source(iv, "node "); sv != nil {
		return sv
	}
	return source(iv, "system")
}

// source is the interval's first source whose name starts with prefix.
func source(iv *result.Interval, prefix string) *sampler.SourceValues {
	for i := range iv.Counters {
		if strings.HasPrefix(iv.Counters[i].Name, prefix) {
			return &iv.Counters[i]
		}
	}
	return nil
}

// cpuShare is CPU time in the given series as a percentage of all the CPUs
// of the machine: cpus from the machine source itself, or (for a process)
// from this machine, else the host's cores.
func cpuShare(pick func(iv *result.Interval) *sampler.SourceValues, cores int, names ...string) func(iv *result.Interval) float64 {
	sum := counter(pick, 100, names...)
	return func(iv *result.Interval) float64 {
		cpus := float64(cores)
		for _, sv := range []*sampler.SourceValues{pick(iv), source(iv, "system")} {
			if sv != nil && sv.Values["cpus"] > 0 {
				cpus = sv.Values["cpus"]
				break
			}
		}
		return sum(iv) / max(cpus, 1)
	}
}

// processName is the server process's name in charts: the name it was
// selected by ("nginx" of "process nginx" or "process nginx 1234"), else
// "server" (selected by PID or pid file alone: a PID names no server and
// changes from run to run).
func processName(rep *result.Repetition) string {
	for i := range rep.Intervals {
		if sv := source(&rep.Intervals[i], "process "); sv != nil {
			f := strings.Fields(strings.TrimPrefix(sv.Name, "process "))
			if len(f) > 0 && f[0] != "pidfile" && strings.Trim(f[0], "0123456789") != "" {
				return f[0]
			}
			return "server"
		}
	}
	return ""
}

func proc(iv *result.Interval) *sampler.SourceValues { return source(iv, "process ") }

// overTimeCharts defines the time series.
func overTimeCharts() []overTime {
	rate := func(f func(a *result.ActionInterval) float64) func(iv *result.Interval) float64 {
		return func(iv *result.Interval) float64 {
			t := 0.0
			acts := iv.Finished()
			for i := range acts {
				t += f(&acts[i])
			}
			return t / iv.DurationS
		}
	}
	// usersRate is rate over the users' actions, the driver's events left out.
	usersRate := func(v *view, f func(a *result.ActionInterval) float64) func(iv *result.Interval) float64 {
		return func(iv *result.Interval) float64 {
			t := 0.0
			acts := iv.Finished()
			for i := range acts[:usersActions(v, iv)] {
				t += f(&acts[i])
			}
			return t / iv.DurationS
		}
	}
	return []overTime{
		{title: "Throughput", always: true, yLabel: "actions/s", of: func(v *view) []series {
			var out []series
			if len(v.run.Meta.Actions) > 1 {
				for i, name := range v.run.Meta.Actions {
					out = append(out, series{name, perInterval(v.rep, func(iv *result.Interval) float64 {
						acts := iv.Finished()
						if i >= len(acts) {
							return math.NaN()
						}
						return float64(acts[i].Count) / iv.DurationS
					})})
				}
			}
			return append(out, series{"all actions", perInterval(v.rep, usersRate(v, func(a *result.ActionInterval) float64 { return float64(a.Count) }))})
		}},
		{title: "Latency per interval (all actions)", always: true, yLabel: "latency", yUnit: "ms", yFmt: msTick, autoLog: true, of: latencySeries,
			note: "Percentiles of each interval's merged histogram of the users' actions (the driver's events, like deliveries, are left out)."},
		{title: "Errors by class", yLabel: "errors/s", of: func(v *view) []series {
			var out []series
			classes := map[string]bool{}
			for _, iv := range v.rep.Intervals {
				for _, a := range iv.Finished() {
					for c := range a.Errors {
						classes[c] = true
					}
				}
			}
			for _, c := range sortedKeys(classes) {
				out = append(out, series{c, perInterval(v.rep, rate(func(a *result.ActionInterval) float64 { return float64(a.Errors[c]) }))})
			}
			dropped := perInterval(v.rep, rate(func(a *result.ActionInterval) float64 { return float64(a.Dropped) }))
			if anyPositive(dropped) {
				out = append(out, series{"dropped arrivals", dropped})
			}
			return out
		}},
		{title: "Active users", always: true, yLabel: "users (mean)", of: func(v *view) []series {
			return []series{{"users", perInterval(v.rep, func(iv *result.Interval) float64 { return iv.UsersMean })}}
		}},
		{title: "Server CPU", counters: true, yLabel: "% of all CPUs", yUnit: "%", yFmt: func(x float64) string { return trim(x) + "%" }, of: func(v *view) []series {
			cores, p := v.run.Meta.Host.Cores, processName(v.rep)
			return []series{
				{"machine user", perInterval(v.rep, cpuShare(machine, cores, "cpu_user_seconds_total", "cpu_nice_seconds_total"))},
				{"machine kernel", perInterval(v.rep, cpuShare(machine, cores, "cpu_system_seconds_total", "cpu_irq_seconds_total", "cpu_softirq_seconds_total"))},
				{p + " user", perInterval(v.rep, cpuShare(proc, cores, "process_cpu_user_seconds_total"))},
				{p + " kernel", perInterval(v.rep, cpuShare(proc, cores, "process_cpu_system_seconds_total"))},
			}
		}, note: "Kernel is system + irq + softirq time. The machine is the first node_exporter source, else this one (which also runs throng)."},
		{title: "Context switches", counters: true, yLabel: "switches/s", of: func(v *view) []series {
			return []series{
				{"machine", perInterval(v.rep, counter(machine, 1, "context_switches_total"))},
				{processName(v.rep), perInterval(v.rep, counter(proc, 1, "process_voluntary_switches_total", "process_involuntary_switches_total"))},
			}
		}},
		{title: "Machine memory", counters: true, yLabel: "bytes", yUnit: "B", yFmt: bytesTick, of: func(v *view) []series {
			return []series{{"machine used", perInterval(v.rep, counter(machine, 1, "memory_used_bytes"))}}
		}},
		// The server's RSS on its own axis: megabytes drawn on the
		// machine's gigabyte axis lie flat at 0.
		{title: "Server memory", counters: true, yLabel: "RSS bytes", yUnit: "B", yFmt: bytesTick, of: func(v *view) []series {
			return []series{{processName(v.rep) + " RSS", perInterval(v.rep, counter(proc, 1, "process_rss_bytes"))}}
		}, note: "Resident set of the server process and its children."},
		{title: "Disk transfers", counters: true, yLabel: "transfers/s", of: func(v *view) []series {
			return []series{
				{"reads", perInterval(v.rep, counter(machine, 1, "disk_reads_total"))},
				{"writes", perInterval(v.rep, counter(machine, 1, "disk_writes_total"))},
			}
		}},
		{title: "Network", counters: true, yLabel: "Kbit/s", note: "Every interface, loopback included.", of: func(v *view) []series {
			return []series{
				{"in", perInterval(v.rep, counter(machine, 8.0/1000, "net_receive_bytes_total"))},
				{"out", perInterval(v.rep, counter(machine, 8.0/1000, "net_transmit_bytes_total"))},
			}
		}},
		{title: "Load generator CPU", always: true, yLabel: "cores", marks: true, of: func(v *view) []series {
			return []series{
				{"throng", perInterval(v.rep, func(iv *result.Interval) float64 { return iv.Client.CPUCores })},
				{"capacity", perInterval(v.rep, func(iv *result.Interval) float64 { return iv.Client.Capacity })},
			}
		}, note: "Red: client-bound intervals, where the figures measure the generator rather than the server."},
	}
}

// latencySeries: p50, p95 and p99 of each interval, from the histogram of
// all its actions merged (percentiles are never averaged).
// usersActions is how many of an interval's actions are the users', the
// driver's events (Meta.Events, last) left out.
func usersActions(v *view, iv *result.Interval) int {
	return max(0, len(iv.Actions)-len(v.run.Meta.Events))
}

func latencySeries(v *view) []series { return latencyOf(v, -1) }

// latencyOf is latencySeries for the action of index a alone (-1: every
// user action merged).
func latencyOf(v *view, a int) []series {
	qs := []float64{0.50, 0.95, 0.99}
	out := []series{{name: "p50"}, {name: "p95"}, {name: "p99"}}
	var h metrics.Hist
	for i := range v.rep.Intervals {
		iv := &v.rep.Intervals[i]
		h.Reset()
		acts := iv.Finished()
		for k := range acts[:usersActions(v, iv)] {
			if a < 0 || k == a {
				h.Merge(&acts[k].Latency)
			}
		}
		for k, q := range qs {
			y := math.NaN()
			if h.N > 0 {
				y = float64(h.Quantile(q)) / 1000
			}
			out[k].pts = append(out[k].pts, point{iv.StartS + iv.DurationS/2, y})
		}
	}
	return out
}

// timeCharts builds the time series of every run: one color per run when
// there are several (the series of a run then differ by their dashes),
// else one color per series; series without any value are left out.
// A chart without any series is shown empty (the page says "no data")
// when it is one every run has (throughput, latency, users, the
// generator's CPU), else left out and named in omitted (a counter no
// source gave).
func timeCharts(views []*view) (out []*chart, omitted []string) {
	var phases []band
	for _, v := range views {
		if v.rep != nil {
			phases = phaseBands(v.rep)
			break
		}
	}
	for _, d := range withActionLatency(overTimeCharts(), views) {
		c := &chart{title: d.title, note: d.note, xLabel: "time since start", yLabel: d.yLabel, yUnit: d.yUnit, yFmt: d.yFmt, phases: phases}
		var shown []*view
		var per [][]series
		for _, v := range views {
			if v.rep == nil {
				continue
			}
			shown, per = append(shown, v), append(per, d.of(v))
			if d.marks {
				for _, iv := range v.rep.Intervals {
					if iv.Client.Bound {
						c.marks = append(c.marks, band{x0: iv.StartS, x1: iv.StartS + iv.DurationS})
					}
				}
			}
		}
		c.lines = colorLines(shown, per)
		if len(c.lines) == 0 && !(d.always && len(shown) > 0) {
			if d.counters {
				omitted = append(omitted, d.title)
			}
			continue
		}
		if strings.HasPrefix(d.title, "Latency") && anyOpen(views) {
			c.note += " Open-model latency counts from each arrival's scheduled start."
		}
		sort.Slice(c.marks, func(i, j int) bool { return c.marks[i].x0 < c.marks[j].x0 })
		c.markLabel = "client-bound interval"
		if d.autoLog {
			_, _, lo, hi := c.bounds()
			c.logY = lo > 0 && hi/lo > 100
		}
		out = append(out, c)
	}
	return out, omitted
}

// withActionLatency adds, after the latency of all actions, each user
// action's latency percentiles over time, when a run has two actions or
// more.
func withActionLatency(defs []overTime, views []*view) []overTime {
	var names []string
	seen := map[string]bool{}
	many := false
	for _, v := range views {
		users := v.run.Meta.Actions[:max(0, len(v.run.Meta.Actions)-len(v.run.Meta.Events))]
		many = many || len(users) > 1
		for _, a := range users {
			if !seen[a] {
				seen[a] = true
				names = append(names, a)
			}
		}
	}
	if !many {
		return defs
	}
	var out []overTime
	for _, d := range defs {
		out = append(out, d)
		if d.title != "Latency per interval (all actions)" {
			continue
		}
		for _, name := range names {
			out = append(out, overTime{title: "Latency per interval: " + name, always: true, yLabel: "latency", yUnit: "ms", yFmt: msTick, autoLog: true,
				of: func(v *view) []series {
					for i, a := range v.run.Meta.Actions[:max(0, len(v.run.Meta.Actions)-len(v.run.Meta.Events))] {
						if a == name {
							return latencyOf(v, i)
						}
					}
					return nil
				}, note: "Percentiles of each interval's histogram of this action."})
		}
	}
	return out
}

// phaseBands are the phases as the intervals went: each run of intervals
// of one phase.
func phaseBands(rep *result.Repetition) []band {
	var out []band
	for _, iv := range rep.Intervals {
		end := iv.StartS + iv.DurationS
		if n := len(out); n > 0 && out[n-1].label == iv.Phase {
			out[n-1].x1 = end
			continue
		}
		out = append(out, band{x0: iv.StartS, x1: end, label: iv.Phase})
	}
	return out
}

// colorLines turns each run's series into lines: with one run, a color
// per series; with several, a color per run and a dash per series name.
func colorLines(views []*view, per [][]series) []line {
	idx := map[string]int{}
	for _, ss := range per {
		for _, s := range ss {
			if _, ok := idx[s.name]; !ok && anyFinite(s.pts) {
				idx[s.name] = len(idx)
			}
		}
	}
	var out []line
	for i, ss := range per {
		for _, s := range ss {
			k, ok := idx[s.name]
			if !ok || !anyFinite(s.pts) {
				continue
			}
			l := line{name: s.name, color: palette[k%len(palette)], width: 1.6, pts: s.pts}
			if len(views) > 1 {
				l.color, l.dash = views[i].color, dashes[k%len(dashes)]
				l.name = views[i].name
				if len(idx) > 1 {
					l.name += " · " + s.name
				}
			}
			out = append(out, l)
		}
	}
	return out
}

func anyFinite(pts []point) bool {
	for _, p := range pts {
		if !math.IsNaN(p.Y) && !math.IsInf(p.Y, 0) {
			return true
		}
	}
	return false
}

func anyPositive(pts []point) bool {
	for _, p := range pts {
		if p.Y > 0 {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// distCharts: per action (and for all actions when there are several), the
// latency percentile curve of each run over its steady phase (else the
// whole run); for the open model, the service time beside it.
func distCharts(views []*view) []*chart {
	var names []string
	seen := map[string]bool{}
	for _, v := range views {
		if len(v.run.Meta.Actions) > 1 && !seen[""] {
			seen[""] = true
			names = append([]string{""}, names...)
		}
		for _, a := range v.run.Meta.Actions {
			if !seen[a] {
				seen[a] = true
				names = append(names, a)
			}
		}
	}
	var out []*chart
	for _, name := range names {
		title := name
		if name == "" {
			title = "all actions"
		}
		c := &chart{title: "Latency distribution: " + title, xLabel: "percentile (%)", yLabel: "latency", logY: true,
			xFmt: ninesLabel, yFmt: msTick, xTicks: ninesTicks, yUnit: "ms",
			note: "Each step right is ten times rarer; each line ends at its maximum."}
		var per [][]series
		var shown []*view
		phase := ""
		for _, v := range views {
			if v.rep == nil {
				continue
			}
			var lat, svc metrics.Hist
			phase = distPhase(v.rep)
			for _, iv := range v.rep.Intervals {
				acts := iv.In(phase)
				for i, a := range v.run.Meta.Actions {
					if (name == "" || a == name) && i < len(acts) {
						lat.Merge(&acts[i].Latency)
						svc.Merge(&acts[i].Service)
					}
				}
			}
			ss := []series{{"latency", curve(&lat)}}
			if v.run.Meta.Model == "open" {
				ss = append(ss, series{"service time", curve(&svc)})
			}
			shown, per = append(shown, v), append(per, ss)
			c.xMax = max(c.xMax, math.Ceil(math.Log10(float64(max(lat.N, 1)))-1e-9))
		}
		c.xMax = min(max(c.xMax, 2), 6)
		if anyOpen(views) {
			c.note += " Open model: latency counts from the scheduled start, service time from the actual start."
		}
		c.title += " (" + phase + ")"
		if c.lines = colorLines(shown, per); len(c.lines) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// distPhase is the phase whose distribution is shown: steady when it has
// actions, else the whole repetition.
func distPhase(rep *result.Repetition) string {
	if s := result.Find(rep.Summaries, "steady"); s != nil && s.Total.Count > 0 {
		return "steady"
	}
	return result.All
}

// curve is a histogram's percentile curve on the nines scale (x nines is
// the percentile 100(1-10^-x)), in milliseconds, from the minimum to the
// maximum.
func curve(h *metrics.Hist) []point {
	if h.N == 0 {
		return nil
	}
	var idx []int
	var cum []uint64
	var seen uint64
	for _, b := range h.Buckets() {
		seen += b.Count
		idx, cum = append(idx, int(b.Index)), append(cum, seen)
	}
	msOf := func(us uint64) float64 { return max(float64(us), 1) / 1000 }
	end := math.Log10(float64(h.N))
	pts := []point{{0, msOf(h.Min)}}
	const steps = 300
	for k := 1; k < steps; k++ {
		x := end * float64(k) / steps
		rank := uint64(math.Ceil((1 - math.Pow(10, -x)) * float64(h.N)))
		j := sort.Search(len(cum), func(j int) bool { return cum[j] >= max(rank, 1) })
		lo, w := metrics.Bounds(idx[min(j, len(idx)-1)])
		pts = append(pts, point{x, msOf(max(min(lo+w-1, h.Max), h.Min))})
	}
	return append(pts, point{end, msOf(h.Max)})
}

func anyOpen(views []*view) bool {
	for _, v := range views {
		if v.run.Meta.Model == "open" {
			return true
		}
	}
	return false
}

// anyErrors tells whether any run had an error or a dropped arrival.
func anyErrors(views []*view) bool {
	for _, v := range views {
		for _, rep := range v.run.Repetitions {
			if s := result.Find(rep.Summaries, result.All); s != nil && (s.Total.Errors > 0 || s.Total.Dropped > 0) {
				return true
			}
		}
	}
	return false
}
