// Package output sends a run's figures, interval by interval, to the
// systems people watch runs with: a Prometheus page to scrape (--prometheus),
// and sinks the run pushes to (--output): CSV rows, Prometheus remote write,
// OpenTelemetry OTLP. Every output gets its own copy of each interval
// through a bounded queue (Fanout): a slow or failing output is dropped and
// counted, never waited for, so outputs cannot slow or stop the run.
//
// The figures an output sends are cumulative from the run's start (State):
// counters of actions by phase, action and outcome, latency histograms,
// server counters integrated from their rates. The metric model (Families)
// is built once and rendered by each output.
package output

import (
	"maps"
	"time"

	"github.com/throng-io/throng/internal/metrics"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/sampler"
)

// Interval is one recorded interval as outputs see it: a deep copy of the
// runner's (which it may reuse), with its repetition, the wall-clock time
// of its end and the action names. It is never changed once made, so the
// outputs share it.
type Interval struct {
	Repetition int       // from 0
	Index      int       // in the repetition
	End        time.Time // wall clock at the interval's end
	StartS     float64   // from the repetition's start
	DurationS  float64
	Phase      string
	Users      int // active at the end
	ClientCPU  float64
	Bound      bool
	// Actions finished in the interval and counted in its phase; Carried
	// finished in it and counted in other phases (an action counts in the
	// phase of its scheduled start: result.Interval).
	Actions  []Action
	Carried  []Carried
	Counters []sampler.SourceValues
}

// Carried is what actions of another phase did in an interval.
type Carried struct {
	Phase   string
	Actions []Action
}

// Action is one action's figures in an interval.
type Action struct {
	Name              string
	Count             uint64            // finished, successful or not
	Errors            map[string]uint64 // by class; driver.Skipped is not an error
	Dropped           uint64
	BytesIn, BytesOut uint64
	Latency           metrics.Hist // µs, from the scheduled start
}

// NewInterval copies iv of repetition rep, which started at repStart; names
// are the run's action names by position (result.Meta.Actions).
func NewInterval(rep int, repStart time.Time, names []string, iv *result.Interval) *Interval {
	out := &Interval{
		Repetition: rep, Index: iv.Index, StartS: iv.StartS, DurationS: iv.DurationS, Phase: iv.Phase,
		Users: iv.ActiveUsers, ClientCPU: iv.Client.CPUCores, Bound: iv.Client.Bound,
		End:     repStart.Add(time.Duration((iv.StartS + iv.DurationS) * float64(time.Second))),
		Actions: copyActions(names, iv.Actions),
	}
	for _, c := range iv.Carried {
		out.Carried = append(out.Carried, Carried{Phase: c.Phase, Actions: copyActions(names, c.Actions)})
	}
	for _, c := range iv.Counters {
		c.Values = maps.Clone(c.Values)
		out.Counters = append(out.Counters, c)
	}
	return out
}

// copyActions copies the actions' figures, naming them by position.
func copyActions(names []string, as []result.ActionInterval) []Action {
	out := make([]Action, len(as))
	for i := range as {
		a := &as[i]
		name := ""
		if i < len(names) {
			name = names[i]
		}
		o := &out[i]
		*o = Action{Name: name, Count: a.Count, Errors: maps.Clone(a.Errors), Dropped: a.Dropped, BytesIn: a.BytesIn, BytesOut: a.BytesOut}
		o.Latency.Merge(&a.Latency)
	}
	return out
}

// Phases calls f with each phase the interval's actions count in and
// those actions: its own phase first, then the carried ones.
func (iv *Interval) Phases(f func(phase string, actions []Action)) {
	f(iv.Phase, iv.Actions)
	for _, c := range iv.Carried {
		f(c.Phase, c.Actions)
	}
}
