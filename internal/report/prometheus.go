package report

// This file serves a run's latest interval to Prometheus while the run
// goes on.

import (
	"bytes"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/throng-io/throng/internal/result"
)

// Exporter serves the latest recorded interval of a run in the Prometheus
// text exposition format, version 0.0.4. Every figure is of that interval
// alone: rates are its counts over its duration, latency quantiles come
// from its own histogram (never averaged across intervals), counters are
// the values the sampler read for it.
//
//	throng_intervals_total                        intervals recorded (counter)
//	throng_interval_seconds                       duration of the latest interval
//	throng_elapsed_seconds                        from the repetition's start to the interval's end
//	throng_run_info{scenario,label,model,engine}  1
//	throng_phase_info{phase}                      1
//	throng_active_users                           users active at the interval's end
//	throng_client_cpu_cores                       the generator's CPU, in cores
//	throng_client_bound                           1 when the generator was the bottleneck, else 0
//	throng_actions_per_second{action}             actions finished, successful or not
//	throng_errors_per_second{action,class}        failures by class; 0 for a class seen earlier
//	throng_dropped_per_second{action}             arrivals dropped (open model)
//	throng_latency_seconds{action,quantile}       quantile 0.5, 0.9, 0.95, 0.99, 0.999, from the scheduled start
//	throng_counter{source,series}                 every counter value read (rates per second, gauges)
//	throng_counter_source_up{source}              1 when the source answered for the interval
//
// Before the first Update it serves throng_intervals_total 0 alone.
// An Exporter is safe for concurrent use: Update renders the page and
// swaps it in under a mutex, and a scrape writes the page it found.
type Exporter struct {
	mu      sync.Mutex
	page    []byte
	updates uint64
	classes map[string][]string // error classes seen per action, in order
}

// NewExporter returns an exporter with nothing recorded yet.
func NewExporter() *Exporter {
	e := &Exporter{classes: map[string][]string{}}
	var b bytes.Buffer
	family(&b, "throng_intervals_total", "counter", "Intervals recorded since the exporter started.")
	sample(&b, "throng_intervals_total", nil, 0)
	e.page = b.Bytes()
	return e
}

// quantiles are the latency quantiles exported, with their label values.
var quantiles = []struct {
	q     float64
	label string
}{{0.5, "0.5"}, {0.9, "0.9"}, {0.95, "0.95"}, {0.99, "0.99"}, {0.999, "0.999"}}

// Update makes iv the interval served. meta gives the action names (by
// position, as in the result); a nil meta names them "#1", "#2"... It is
// meant to be called once per interval by the run's collector goroutine;
// it keeps nothing of iv (the caller may reuse it after Update returns).
func (e *Exporter) Update(meta *result.Meta, iv *result.Interval) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.updates++
	// What finished in the interval, whatever the phase it counts in.
	acts := iv.Finished()
	names := make([]string, len(acts))
	for i := range names {
		names[i] = "#" + strconv.Itoa(i+1)
		if meta != nil && i < len(meta.Actions) {
			names[i] = meta.Actions[i]
		}
		for class, n := range acts[i].Errors {
			if n > 0 && !slices.Contains(e.classes[names[i]], class) {
				e.classes[names[i]] = append(e.classes[names[i]], class)
				slices.Sort(e.classes[names[i]])
			}
		}
	}
	var b bytes.Buffer
	perSecond := func(n uint64) float64 {
		if iv.DurationS <= 0 {
			return math.NaN()
		}
		return float64(n) / iv.DurationS
	}
	family(&b, "throng_intervals_total", "counter", "Intervals recorded since the exporter started.")
	sample(&b, "throng_intervals_total", nil, float64(e.updates))
	family(&b, "throng_interval_seconds", "gauge", "Duration of the latest recorded interval.")
	sample(&b, "throng_interval_seconds", nil, iv.DurationS)
	family(&b, "throng_elapsed_seconds", "gauge", "Seconds from the repetition's start to the end of the latest interval.")
	sample(&b, "throng_elapsed_seconds", nil, iv.StartS+iv.DurationS)
	if meta != nil {
		family(&b, "throng_run_info", "gauge", "The run being measured.")
		sample(&b, "throng_run_info", []string{"scenario", meta.Scenario, "label", meta.Label, "model", meta.Model, "engine", meta.Engine}, 1)
	}
	family(&b, "throng_phase_info", "gauge", "Phase of the latest interval.")
	sample(&b, "throng_phase_info", []string{"phase", iv.Phase}, 1)
	family(&b, "throng_active_users", "gauge", "Users active at the end of the latest interval.")
	sample(&b, "throng_active_users", nil, float64(iv.ActiveUsers))
	family(&b, "throng_client_cpu_cores", "gauge", "CPU used by the load generator in the latest interval, in cores.")
	sample(&b, "throng_client_cpu_cores", nil, iv.Client.CPUCores)
	family(&b, "throng_client_bound", "gauge", "1 when the load generator was the bottleneck in the latest interval.")
	sample(&b, "throng_client_bound", nil, map[bool]float64{true: 1}[iv.Client.Bound])

	family(&b, "throng_actions_per_second", "gauge", "Actions finished per second in the latest interval, successful or not.")
	for i, a := range acts {
		sample(&b, "throng_actions_per_second", []string{"action", names[i]}, perSecond(a.Count))
	}
	family(&b, "throng_errors_per_second", "gauge", "Failed actions per second in the latest interval, by error class.")
	for i, a := range acts {
		for _, class := range e.classes[names[i]] {
			sample(&b, "throng_errors_per_second", []string{"action", names[i], "class", class}, perSecond(a.Errors[class]))
		}
	}
	family(&b, "throng_dropped_per_second", "gauge", "Arrivals dropped per second in the latest interval (open model).")
	for i, a := range acts {
		sample(&b, "throng_dropped_per_second", []string{"action", names[i]}, perSecond(a.Dropped))
	}
	family(&b, "throng_latency_seconds", "gauge", "Latency quantiles of the latest interval, from its own histogram, from the scheduled start.")
	for i := range acts {
		h := &acts[i].Latency
		if h.N == 0 {
			continue
		}
		for _, q := range quantiles {
			sample(&b, "throng_latency_seconds", []string{"action", names[i], "quantile", q.label}, float64(h.Quantile(q.q))/1e6)
		}
	}
	family(&b, "throng_counter_source_up", "gauge", "1 when the counter source answered for the latest interval.")
	for _, c := range iv.Counters {
		sample(&b, "throng_counter_source_up", []string{"source", c.Name}, map[bool]float64{true: 1}[c.Up])
	}
	family(&b, "throng_counter", "gauge", "Counter values read for the latest interval: rates per second of counters, values of gauges.")
	for _, c := range iv.Counters {
		if !c.Up {
			continue
		}
		for _, k := range c.Keys() {
			sample(&b, "throng_counter", []string{"source", c.Name, "series", k}, c.Values[k])
		}
	}
	e.page = b.Bytes()
}

// ServeHTTP answers GET and HEAD with the latest page.
func (e *Exporter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	e.mu.Lock()
	page := e.page // never changed once swapped in
	e.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(page)))
	if r.Method == http.MethodGet {
		w.Write(page)
	}
}

// family writes the HELP and TYPE lines of a metric.
func family(b *bytes.Buffer, name, typ, help string) {
	help = strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(help)
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// sample writes one sample line; labels are name, value pairs.
func sample(b *bytes.Buffer, name string, labels []string, v float64) {
	b.WriteString(name)
	if len(labels) > 0 {
		b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(labels[i])
			b.WriteString(`="`)
			b.WriteString(labelEscaper.Replace(strings.ToValidUTF8(labels[i+1], "\uFFFD")))
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(promFloat(v))
	b.WriteByte('\n')
}

// labelEscaper escapes a label value as the format requires: backslash,
// double quote and line feed.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func promFloat(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}
