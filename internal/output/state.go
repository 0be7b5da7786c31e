package output

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
)

// Run names the run in every series: its scenario and label (result.Meta),
// and the run-wide facts of throng_run_info.
type Run struct {
	Scenario, Label, Model, Engine string
}

// RunOf takes a run's names from its metadata.
func RunOf(m *result.Meta) Run {
	return Run{Scenario: m.Scenario, Label: m.Label, Model: m.Model, Engine: m.Engine}
}

// key is one series of action figures: a phase and an action.
type key struct{ phase, action string }

// totals are one action's cumulative figures in one phase.
type totals struct {
	count, dropped, bytesIn, bytesOut uint64
	errors                            map[string]uint64 // by class, driver.Skipped included
	latency                           metrics.Hist
}

// counterKey is one server counter: its source (with no PID, see
// sourceLabel) and its series key ("disk_reads_total{dev=vda}").
type counterKey struct{ source, series string }

// State holds a run's figures cumulated from its start: what a Prometheus
// counter or histogram holds. It is safe for concurrent use: Add from the
// output's goroutine, Families from scrapes.
type State struct {
	run Run

	mu         sync.Mutex
	actions    map[key]*totals
	order      []key // first seen first
	intervals  map[string]uint64
	phases     []string
	users      int
	repetition int
	cpuSeconds float64
	bound      uint64
	counters   map[counterKey]float64 // counters integrated, gauges as last read
	cnames     []counterKey
	first      time.Time // start of the first interval added
	last       time.Time // end of the latest interval added
	sources    map[string]string
}

// NewState returns the empty state of run.
func NewState(run Run) *State {
	return &State{run: run, actions: map[key]*totals{}, intervals: map[string]uint64{},
		counters: map[counterKey]float64{}, sources: map[string]string{}}
}

// Add adds one interval: its actions in the phases they count in (their
// scheduled start's: what a phase's summary in the result counts). Counter series ("_total") of the counter sources
// come as rates per second: they are integrated over the interval's
// duration; gauges keep their latest value. Per-CPU series are left out
// (the all-CPU one is kept).
func (s *State) Add(iv *Interval) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.intervals[iv.Phase]; !ok {
		s.phases = append(s.phases, iv.Phase)
	}
	s.intervals[iv.Phase]++
	s.users, s.repetition = iv.Users, iv.Repetition+1
	s.cpuSeconds += iv.ClientCPU * iv.DurationS
	if iv.Bound {
		s.bound++
	}
	if s.first.IsZero() {
		s.first = iv.End.Add(-time.Duration(iv.DurationS * float64(time.Second)))
	}
	s.last = iv.End
	iv.Phases(func(phase string, actions []Action) {
		for i := range actions {
			a := &actions[i]
			k := key{phase, a.Name}
			t := s.actions[k]
			if t == nil {
				t = &totals{errors: map[string]uint64{}}
				s.actions[k] = t
				s.order = append(s.order, k)
			}
			t.count += a.Count
			t.dropped += a.Dropped
			t.bytesIn += a.BytesIn
			t.bytesOut += a.BytesOut
			for c, n := range a.Errors {
				t.errors[c] += n
			}
			t.latency.Merge(&a.Latency)
		}
	})
	for _, c := range iv.Counters {
		if !c.Up {
			continue
		}
		src := s.source(c.Name)
		for series, v := range c.Values {
			if strings.Contains(series, "{cpu=") {
				continue
			}
			k := counterKey{src, series}
			old, seen := s.counters[k]
			if !seen {
				s.cnames = append(s.cnames, k)
			}
			if isCounter(series) {
				s.counters[k] = old + v*iv.DurationS
			} else {
				s.counters[k] = v
			}
		}
	}
}

// Span is the wall-clock start of the first interval added and the end
// of the latest (zero before the first).
func (s *State) Span() (first, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.first, s.last
}

// isCounter reports whether a sampler series is a counter: by the
// sampler's naming rule, counters end in _total (see sampler.Point).
func isCounter(series string) bool {
	name, _, _ := strings.Cut(series, "{")
	return strings.HasSuffix(name, "_total")
}

var pidSource = regexp.MustCompile(`^process (\d+)$`)

// source is a counter source's label value: its name, with a process
// chosen by PID named after the command of that PID instead (a PID changes
// from run to run; a series named after it cannot be followed).
func (s *State) source(name string) string {
	if v, ok := s.sources[name]; ok {
		return v
	}
	v := name
	if m := pidSource.FindStringSubmatch(name); m != nil {
		v = "process"
		if b, err := os.ReadFile("/proc/" + m[1] + "/comm"); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			v = "process " + strings.TrimSpace(string(b))
		}
	}
	s.sources[name] = v
	return v
}

// Kind is a metric family's type.
type Kind int

// The kinds of families.
const (
	Counter Kind = iota
	Gauge
	Histogram
)

// Label is one label of a series.
type Label struct{ Name, Value string }

// Series is one series of a family: a value, or a histogram of
// microseconds (Hist, for a Histogram family).
type Series struct {
	Labels []Label
	Value  float64
	Hist   *metrics.Hist
}

// Family is one metric: its name (with its unit, Prometheus style), help,
// kind and series. Every series of a family has the same label names.
type Family struct {
	Name, Help string
	Kind       Kind
	Unit       string // UCUM for OpenTelemetry: "1", "s", "By", "{action}"
	Series     []Series
}

// Outcomes of an action in throng_actions_total.
const (
	OutcomeOK      = "ok"
	OutcomeError   = "error"
	OutcomeSkipped = "skipped"
)

// Families returns the state as metric families, in a fixed order (see
// docs/outputs.md for the list). It copies what it returns: the caller may
// keep it.
func (s *State) Families() []Family {
	s.mu.Lock()
	defer s.mu.Unlock()
	base := func(phase, action string, more ...Label) []Label {
		l := []Label{{"scenario", s.run.Scenario}, {"label", s.run.Label}, {"phase", phase}, {"action", action}}
		return append(l, more...)
	}
	runLabels := func(more ...Label) []Label {
		return append([]Label{{"scenario", s.run.Scenario}, {"label", s.run.Label}}, more...)
	}
	actions := Family{Name: "throng_actions_total", Kind: Counter, Unit: "{action}",
		Help: "Actions finished, by outcome (ok, error, skipped) and error class."}
	dropped := Family{Name: "throng_dropped_total", Kind: Counter, Unit: "{action}",
		Help: "Arrivals dropped because no user was free (open model)."}
	bin := Family{Name: "throng_received_bytes_total", Kind: Counter, Unit: "By", Help: "Bytes received by the actions."}
	bout := Family{Name: "throng_sent_bytes_total", Kind: Counter, Unit: "By", Help: "Bytes sent by the actions."}
	lat := Family{Name: "throng_latency_seconds", Kind: Histogram, Unit: "s",
		Help: "Latency of the actions, from their scheduled start (no coordinated omission)."}
	for _, k := range s.order {
		t := s.actions[k]
		var errs, skipped uint64
		classes := make([]string, 0, len(t.errors))
		for c, n := range t.errors {
			if c == driver.Skipped.String() {
				skipped += n
				continue
			}
			errs += n
			classes = append(classes, c)
		}
		slices.Sort(classes)
		actions.Series = append(actions.Series, Series{Labels: base(k.phase, k.action, Label{"outcome", OutcomeOK}, Label{"class", ""}),
			Value: float64(t.count - min(t.count, errs+skipped))})
		for _, c := range classes {
			actions.Series = append(actions.Series, Series{Labels: base(k.phase, k.action, Label{"outcome", OutcomeError}, Label{"class", c}),
				Value: float64(t.errors[c])})
		}
		if skipped > 0 {
			actions.Series = append(actions.Series, Series{Labels: base(k.phase, k.action, Label{"outcome", OutcomeSkipped}, Label{"class", ""}),
				Value: float64(skipped)})
		}
		dropped.Series = append(dropped.Series, Series{Labels: base(k.phase, k.action), Value: float64(t.dropped)})
		bin.Series = append(bin.Series, Series{Labels: base(k.phase, k.action), Value: float64(t.bytesIn)})
		bout.Series = append(bout.Series, Series{Labels: base(k.phase, k.action), Value: float64(t.bytesOut)})
		h := &metrics.Hist{}
		h.Merge(&t.latency)
		lat.Series = append(lat.Series, Series{Labels: base(k.phase, k.action), Hist: h})
	}
	intervals := Family{Name: "throng_intervals_total", Kind: Counter, Unit: "{interval}", Help: "Intervals recorded, by phase."}
	for _, p := range s.phases {
		intervals.Series = append(intervals.Series, Series{Labels: runLabels(Label{"phase", p}), Value: float64(s.intervals[p])})
	}
	out := []Family{
		{Name: "throng_run_info", Kind: Gauge, Unit: "1", Help: "The run being measured (value 1).",
			Series: []Series{{Labels: runLabels(Label{"model", s.run.Model}, Label{"engine", s.run.Engine}), Value: 1}}},
		actions, dropped, bin, bout, lat, intervals,
		{Name: "throng_users", Kind: Gauge, Unit: "{user}", Help: "Users active at the end of the latest interval.",
			Series: []Series{{Labels: runLabels(), Value: float64(s.users)}}},
		{Name: "throng_repetition", Kind: Gauge, Unit: "1", Help: "The repetition running (from 1).",
			Series: []Series{{Labels: runLabels(), Value: float64(s.repetition)}}},
		{Name: "throng_client_cpu_seconds_total", Kind: Counter, Unit: "s", Help: "CPU time used by the load generator.",
			Series: []Series{{Labels: runLabels(), Value: s.cpuSeconds}}},
		{Name: "throng_client_bound_intervals_total", Kind: Counter, Unit: "{interval}",
			Help:   "Intervals in which the load generator was the bottleneck (its figures measure the client, not the server).",
			Series: []Series{{Labels: runLabels(), Value: float64(s.bound)}}},
	}
	own := map[string]bool{}
	for _, f := range out {
		own[f.Name] = true
	}
	for _, f := range s.counterFamilies(runLabels) {
		if own[f.Name] { // a counter source's series named like one of throng's
			f.Name = "throng_counter_" + strings.TrimPrefix(f.Name, "throng_")
		}
		out = append(out, f)
	}
	return out
}

// counterFamilies turns the counter sources' series into families named
// throng_NAME (the sampler's names carry their units), labelled by source
// and by the series' own labels (dev, if, ...); a label a series lacks is
// empty.
func (s *State) counterFamilies(runLabels func(...Label) []Label) []Family {
	type entry struct {
		ck     counterKey
		labels []Label
	}
	byName := map[string][]entry{}
	var names []string
	for _, ck := range s.cnames {
		name, rest, _ := strings.Cut(ck.series, "{")
		name = "throng_" + sanitize(name)
		var ls []Label
		for _, kv := range strings.Split(strings.TrimSuffix(rest, "}"), ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				ls = append(ls, Label{sanitize(k), v})
			}
		}
		if _, ok := byName[name]; !ok {
			names = append(names, name)
		}
		byName[name] = append(byName[name], entry{ck, ls})
	}
	slices.Sort(names)
	var out []Family
	for _, name := range names {
		es := byName[name]
		var lnames []string
		for _, e := range es {
			for _, l := range e.labels {
				if !slices.Contains(lnames, l.Name) && l.Name != "source" && l.Name != "scenario" && l.Name != "label" {
					lnames = append(lnames, l.Name)
				}
			}
		}
		slices.Sort(lnames)
		f := Family{Name: name, Kind: Gauge, Unit: unitOf(name), Help: "Counter source series " + strings.TrimPrefix(name, "throng_") + " (see docs/outputs.md)."}
		if isCounter(name) {
			f.Kind = Counter
		}
		seen := map[string]bool{}
		for _, e := range es {
			ls := runLabels(Label{"source", e.ck.source})
			id := e.ck.source
			for _, ln := range lnames {
				v := ""
				for _, l := range e.labels {
					if l.Name == ln {
						v = l.Value
					}
				}
				ls = append(ls, Label{ln, v})
				id += "\xff" + v
			}
			if seen[id] { // two sources named alike after dropping PIDs
				continue
			}
			seen[id] = true
			f.Series = append(f.Series, Series{Labels: ls, Value: s.counters[e.ck]})
		}
		out = append(out, f)
	}
	return out
}

// unitOf guesses a family's UCUM unit from its name's unit suffix.
func unitOf(name string) string {
	n := strings.TrimSuffix(name, "_total")
	switch {
	case strings.HasSuffix(n, "_seconds"):
		return "s"
	case strings.HasSuffix(n, "_bytes"):
		return "By"
	}
	return "1"
}

// sanitize makes s a valid metric or label name: [a-zA-Z0-9_], not
// starting with a digit.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] >= '0' && b[0] <= '9' {
		return "_" + string(b)
	}
	return string(b)
}

// itoa is strconv.Itoa, for the renderers.
func itoa(i int) string { return strconv.Itoa(i) }
