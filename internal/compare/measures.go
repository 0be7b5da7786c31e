package compare

import (
	"math"
	"strings"

	"github.com/throng-io/throng/internal/result"
)

// measure is one row's definition: get reads it from a summary (of a
// phase of one repetition, or of a batch of its intervals) and says
// whether it exists there; better is the good direction ("higher",
// "lower", or "" when neither is better).
type measure struct {
	id, label, group, unit, better string
	get                            func(s *result.Summary) (float64, bool)
}

// adjusts correct a row's value with its run's metadata: the pub/sub
// driver reports the publish rate asked without the speedup.
var adjusts = map[string]func(v float64, m *result.Meta) float64{
	"publish_asked_per_s": withSpeedup,
	"publish_achieved":    func(v float64, m *result.Meta) float64 { return v / speedup(m) },
}

// valueIn reads a measure from a summary of a run, adjusted.
func (m measure) valueIn(s *result.Summary, meta *result.Meta) (float64, bool) {
	x, ok := m.get(s)
	if !ok || math.IsNaN(x) {
		return 0, false
	}
	if f := adjusts[m.id]; f != nil {
		x = f(x, meta)
	}
	return x, true
}

// Groups of rows, in the order they are shown.
var groups = []struct{ name, title string }{
	{"client", "client"},
	{"action", "per action"},
	{"delivery", "delivery and loss"},
	{"server", "server (mean over the phase)"},
}

func totalRate(f func(a *result.ActionSummary) float64) func(*result.Summary) (float64, bool) {
	return func(s *result.Summary) (float64, bool) { return f(&s.Total), s.DurationS > 0 }
}

func totalTimed(f func(a *result.ActionSummary) float64) func(*result.Summary) (float64, bool) {
	return func(s *result.Summary) (float64, bool) { return f(&s.Total), s.Total.Timed() > 0 }
}

// action finds an action's summary by name.
func action(s *result.Summary, name string) *result.ActionSummary {
	for i := range s.Actions {
		if s.Actions[i].Name == name {
			return &s.Actions[i]
		}
	}
	return nil
}

// settings are what a comparison knows of the runs to choose its rows.
type settings struct {
	open     bool     // a run has an open model: dropped arrivals, service time
	verified bool     // files with verify: the bytes received are checked (read-backs too)
	actions  []string // the users' actions of any run, in order
	events   []string // the driver's events of any run
	publish  bool     // a pub/sub run: publish achieved vs asked
}

// clientMeasures are the rows of the users' actions together.
func clientMeasures(st settings) []measure {
	lat := "latency"
	if st.open {
		lat = "latency (from schedule)"
	}
	ms := []measure{
		{"rate_per_s", "actions/s", "client", "1/s", "higher", totalRate(func(a *result.ActionSummary) float64 { return a.RatePerS })},
		{"ok_per_s", "ok/s", "client", "1/s", "higher", totalRate(func(a *result.ActionSummary) float64 { return a.OKPerS })},
		{"error_rate", "error rate", "client", "ratio", "lower", func(s *result.Summary) (float64, bool) { return s.Total.ErrorRate, s.Total.Count > 0 }},
	}
	if st.open {
		ms = append(ms, measure{"dropped", "dropped arrivals", "client", "count", "lower",
			func(s *result.Summary) (float64, bool) { return float64(s.Total.Dropped), s.Intervals > 0 }})
	}
	for _, q := range quantiles {
		ms = append(ms, measure{"latency_" + q.id + "_ms", lat + " " + q.name, "client", "ms", "lower",
			totalTimed(func(a *result.ActionSummary) float64 { return q.of(a.Latency) })})
	}
	if st.open {
		ms = append(ms, measure{"service_p99_ms", "service time p99", "client", "ms", "lower",
			totalTimed(func(a *result.ActionSummary) float64 { return a.Service.P99Ms })})
	}
	if st.verified {
		ms = append(ms,
			measure{"verified_mb_per_s", "verified MB/s (every byte read checked)", "client", "MB/s", "higher",
				totalRate(func(a *result.ActionSummary) float64 { return a.BytesInPerS / 1e6 })},
			// Every action's, the events' included: an upload's read-back
			// (files' verify) is where a server that stored other bytes
			// shows; the threshold metric corrupt counts the same.
			measure{"corrupt", "corrupt (reads and read-backs)", "client", "count", "lower",
				func(s *result.Summary) (float64, bool) {
					n := 0.0
					for i := range s.Actions {
						n += float64(s.Actions[i].ErrorsByClass["corrupt"])
					}
					return n, s.Intervals > 0
				}})
	} else {
		ms = append(ms, measure{"received_mb_per_s", "received MB/s", "client", "MB/s", "",
			totalRate(func(a *result.ActionSummary) float64 { return a.BytesInPerS / 1e6 })})
	}
	if st.publish {
		ms = append(ms,
			measure{"publish_per_s", "publish achieved/s", "client", "1/s", "higher", counterMean("pubsub", "pubsub_published_total")},
			measure{"publish_asked_per_s", "publish asked/s", "client", "1/s", "", counterMean("pubsub", "pubsub_publish_asked_per_second")},
			measure{"publish_achieved", "publish achieved / asked", "client", "ratio", "higher", publishAchieved},
		)
	}
	return append(ms,
		measure{"client_cpu_cores", "client CPU (cores)", "client", "cores", "",
			func(s *result.Summary) (float64, bool) { return s.ClientCPUMean, s.Intervals > 0 }},
		measure{"client_bound_intervals", "client-bound intervals", "client", "count", "lower",
			func(s *result.Summary) (float64, bool) { return float64(s.BoundIntervals), s.Intervals > 0 }},
	)
}

// quantiles are the latency rows.
var quantiles = []struct {
	id, name string
	of       func(l result.Latency) float64
}{
	{"mean", "mean", func(l result.Latency) float64 { return l.MeanMs }},
	{"p50", "p50", func(l result.Latency) float64 { return l.P50Ms }},
	{"p95", "p95", func(l result.Latency) float64 { return l.P95Ms }},
	{"p99", "p99", func(l result.Latency) float64 { return l.P99Ms }},
	{"p99.9", "p99.9", func(l result.Latency) float64 { return l.P999Ms }},
}

// actionMeasures are each user action's rows (when there are two or
// more: one action's rows are the totals).
func actionMeasures(st settings) []measure {
	if len(st.actions) < 2 {
		return nil
	}
	var ms []measure
	for _, name := range st.actions {
		ms = append(ms,
			measure{"action." + name + ".rate_per_s", name + " actions/s", "action", "1/s", "higher", func(s *result.Summary) (float64, bool) {
				a := action(s, name)
				return rateOf(a), a != nil && s.DurationS > 0
			}},
			measure{"action." + name + ".error_rate", name + " error rate", "action", "ratio", "lower", func(s *result.Summary) (float64, bool) {
				a := action(s, name)
				return errRateOf(a), a != nil && a.Count > 0
			}},
		)
		for _, q := range quantiles[1:] { // p50, p95, p99, p99.9
			if q.id == "p95" || q.id == "p99.9" {
				continue
			}
			ms = append(ms, measure{"action." + name + "." + q.id + "_ms", name + " " + q.name, "action", "ms", "lower", func(s *result.Summary) (float64, bool) {
				a := action(s, name)
				if a == nil || a.Timed() == 0 {
					return 0, false
				}
				return q.of(a.Latency), true
			}})
		}
	}
	return ms
}

func rateOf(a *result.ActionSummary) float64 {
	if a == nil {
		return 0
	}
	return a.RatePerS
}

func errRateOf(a *result.ActionSummary) float64 {
	if a == nil {
		return 0
	}
	return a.ErrorRate
}

// eventMeasures are the driver's events' rows (mail's and pub/sub's
// deliveries, pub/sub's connections, duplicates, reorderings, mail's
// misdeliveries): how many, how many lost, and how long they took.
func eventMeasures(st settings) []measure {
	var ms []measure
	for _, name := range st.events {
		present := func(s *result.Summary) (*result.ActionSummary, bool) {
			a := action(s, name)
			return a, a != nil
		}
		ms = append(ms,
			measure{"event." + name + ".count", name + " (events)", "delivery", "count", "", func(s *result.Summary) (float64, bool) {
				a, ok := present(s)
				if !ok {
					return 0, false
				}
				return float64(a.Count), true
			}},
		)
		switch name {
		case "duplicate", "out_of_order", "misdeliver":
			// Their count is the figure, and fewer is better.
			ms[len(ms)-1].better = "lower"
			continue
		}
		ms = append(ms,
			measure{"event." + name + ".lost", name + " lost", "delivery", "count", "lower", func(s *result.Summary) (float64, bool) {
				a, ok := present(s)
				if !ok {
					return 0, false
				}
				return float64(a.ErrorsByClass["lost"]), true
			}},
			measure{"event." + name + ".loss_rate", name + " loss rate", "delivery", "ratio", "lower", func(s *result.Summary) (float64, bool) {
				a, ok := present(s)
				if !ok || a.Count == 0 {
					return 0, false
				}
				return float64(a.ErrorsByClass["lost"]) / float64(a.Count), true
			}},
			measure{"event." + name + ".errors", name + " errors (not lost)", "delivery", "count", "lower", func(s *result.Summary) (float64, bool) {
				a, ok := present(s)
				if !ok {
					return 0, false
				}
				return float64(a.Errors - min(a.Errors, a.ErrorsByClass["lost"])), true
			}},
		)
		for _, q := range []int{1, 3} { // p50, p99
			q := quantiles[q]
			ms = append(ms, measure{"event." + name + "." + q.id + "_ms", name + " " + q.name, "delivery", "ms", "lower", func(s *result.Summary) (float64, bool) {
				a, ok := present(s)
				if !ok || a.Timed() == 0 {
					return 0, false
				}
				return q.of(a.Latency), true
			}})
		}
	}
	return ms
}

// counterMean reads a series' mean over the phase from a counter source.
func counterMean(source, series string) func(s *result.Summary) (float64, bool) {
	return func(s *result.Summary) (float64, bool) {
		for _, c := range s.Counters {
			if c.Source == source {
				v, ok := c.Mean[series]
				return v, ok && c.Up > 0
			}
		}
		return 0, false
	}
}

// The driver reports the rate asked without the speedup.
func withSpeedup(v float64, m *result.Meta) float64 { return v * speedup(m) }

func speedup(m *result.Meta) float64 {
	if m.Speedup > 0 {
		return m.Speedup
	}
	return 1
}

func publishAchieved(s *result.Summary) (float64, bool) {
	got, ok1 := counterMean("pubsub", "pubsub_published_total")(s)
	asked, ok2 := counterMean("pubsub", "pubsub_publish_asked_per_second")(s)
	if !ok1 || !ok2 || asked <= 0 {
		return 0, false
	}
	return got / asked, true
}

// serverBetter gives the direction of every server row (result's
// ServerRowIDs; a test holds the two together): the costs per unit of
// work are better lower (users per core higher); the others (utilization,
// switches, traffic, faults, memory) are neither good nor bad by
// themselves: a server doing twice the work uses more of them.
var serverBetter = map[string]string{
	result.CPUMsPerAction: "lower", result.CoresPer1000Users: "lower", result.UsersPerCore: "higher",
	result.NetBytesPerAction: "lower", result.DiskTransfersPerAction: "lower", result.ServerCores: "",
	"cpu_pct": "", "kernel_pct": "", "iowait_pct": "", "context_switches": "", "interrupts": "", "run_queue": "",
	"net_in_kbit": "", "net_out_kbit": "", "disk_transfers": "", "disk_mb": "", "page_faults": "", "major_faults": "",
	"pages": "", "memory_used_mb": "",
	"server_cpu_pct": "", "server_kernel_pct": "", "server_switches": "", "server_page_faults": "",
	"server_virtual_mb": "", "server_rss_mb": "", "server_processes": "",
}

// serverDirection is a server row's good direction, and whether the row
// is known. The client machine's rows (client_…, when the server's
// machine is measured from afar) measure the load generator's machine:
// neither direction is better.
func serverDirection(id string) (string, bool) {
	if base, ok := strings.CutPrefix(id, "client_"); ok {
		_, known := serverBetter[base]
		return "", known
	}
	d, ok := serverBetter[id]
	return d, ok
}

func serverMeasure(id, label string) measure {
	better, _ := serverDirection(id) // a row of a newer throng: no direction
	return measure{id: id, label: label, group: "server", better: better, get: func(s *result.Summary) (float64, bool) {
		r := s.FindRow(id)
		if r == nil || math.IsNaN(float64(r.Mean)) {
			return 0, false
		}
		return float64(r.Mean), true
	}}
}

// settingsOf reads what decides the rows from the runs.
func settingsOf(views []*view) settings {
	var st settings
	add := func(list *[]string, name string) {
		for _, x := range *list {
			if x == name {
				return
			}
		}
		*list = append(*list, name)
	}
	for _, v := range views {
		m := &v.run.Meta
		st.open = st.open || m.Model == "open" || strings.Contains(groupModels(m), "open")
		st.verified = st.verified || m.Driver == "files" && m.Settings["verify"] == "true"
		n := len(m.Actions) - len(m.Events)
		for i, a := range m.Actions {
			if i < n {
				add(&st.actions, a)
			}
		}
		for _, e := range m.Events {
			add(&st.events, e)
		}
		for _, s := range v.sums {
			if s == nil {
				continue
			}
			for _, c := range s.Counters {
				if _, ok := c.Mean["pubsub_publish_asked_per_second"]; ok && c.Source == "pubsub" {
					st.publish = true
				}
			}
		}
	}
	return st
}

func groupModels(m *result.Meta) string {
	var s []string
	for _, g := range m.Groups {
		if len(g.Actions) > 0 {
			s = append(s, g.Model)
		}
	}
	return strings.Join(s, ",")
}
