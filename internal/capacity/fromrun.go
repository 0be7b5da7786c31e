package capacity

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/threshold"
)

// MinTail is how many samples a percentile SLO needs beyond its
// percentile (a p99 needs 100 × 10 = 1,000 actions) for its step to be
// valid.
const MinTail = 10

// maxSections is how many parts of a step its figures' intervals are
// formed from (sectioning).
const maxSections = 10

// FromRun fills the Step of a request from the run that executed it: its
// first repetition's steady phase (the whole run when it has none). It
// judges the step's validity itself for now — generator-bound intervals,
// a partial run, too few samples for a percentile, an SLO figure that
// drifted over the step by more than its noise — until package compare's
// validity verdict takes this over. elapsed is the step's wall time.
func FromRun(cfg Config, req Request, run *result.Run, elapsed time.Duration) Step {
	cfg = cfg.withDefaults()
	st := Step{Request: req, Elapsed: elapsed, Counters: NaNCounters()}
	if cfg.Dimension.Name == Rate.Name {
		st.Offered = req.Load
	}
	invalid := func(k InvalidKind, rising bool, format string, args ...any) {
		st.Invalid = append(st.Invalid, Invalid{Kind: k, Rising: rising, Why: fmt.Sprintf(format, args...)})
	}
	if run == nil || len(run.Repetitions) == 0 {
		invalid(Partial, false, "the step recorded nothing")
		for range cfg.SLOs {
			st.SLOs = append(st.SLOs, Figure{Value: math.NaN(), HalfWidth: math.NaN()})
		}
		return st
	}
	rep := &run.Repetitions[0]
	if run.Partial || rep.Partial {
		invalid(Partial, false, "the step did not run as planned: %s", strings.TrimSuffix(firstNonEmpty(rep.Reason, run.Reason), "."))
	}
	phase := "steady"
	sum := result.Find(rep.Summaries, phase)
	if sum == nil || sum.Intervals == 0 {
		phase = result.All
		sum = result.Find(rep.Summaries, phase)
	}
	var ivs []result.Interval
	for _, iv := range rep.Intervals {
		if phase == result.All || iv.Phase == phase {
			ivs = append(ivs, iv)
		}
	}
	if sum == nil {
		invalid(Partial, false, "the step recorded no interval")
		sum = &result.Summary{}
	}
	if sum.BoundIntervals > 0 {
		why := "the generator was the bottleneck"
		for _, iv := range ivs {
			if iv.Client.Bound {
				why = iv.Client.BoundWhy
				break
			}
		}
		invalid(GeneratorBound, false, "%d of %d intervals client-bound: %s", sum.BoundIntervals, sum.Intervals, why)
	}
	tot := &sum.Total
	st.Throughput, st.Users, st.Latency = tot.OKPerS, sum.UsersMean, tot.Latency
	st.Concurrency = tot.RatePerS * tot.Latency.MeanMs / 1000
	st.Count, st.Errors, st.Dropped, st.ErrorsByClass = tot.Count, tot.Errors, tot.Dropped, tot.ErrorsByClass
	st.Counters = countersOf(sum, ivs)

	sections := sectionRuns(run, ivs)
	for _, t := range cfg.SLOs {
		f := Figure{Value: worstValue(t, t.Evaluate(run)), HalfWidth: 0}
		if t.Unit != threshold.Count && t.Unit != threshold.Bool {
			var vals []float64
			d := t
			d.Phases = nil // each section is one phase: the default
			for _, sr := range sections {
				vals = append(vals, worstValue(d, d.Evaluate(sr)))
			}
			f.HalfWidth = SectionHalfWidth(vals)
			if slope, sig := Trend(vals); sig && math.Abs(slope)*float64(len(vals)-1) > f.HalfWidth {
				rising := slope > 0 == (t.Op == "<" || t.Op == "<=")
				invalid(Unsteady, rising, "%s went from %s to %s over the step", t.Metric, num(vals[0]), num(vals[len(vals)-1]))
			}
		}
		if q, ok := percentile(t.Metric); ok && tot.Timed() > 0 {
			if need := uint64(math.Ceil(MinTail / (1 - q))); tot.Timed() < need {
				invalid(FewSamples, false, "%s needs %d samples; the step had %d", t.Metric, need, tot.Timed())
			}
		}
		st.SLOs = append(st.SLOs, f)
	}
	return st
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return "no reason given"
}

// worstValue is the worst figure of a threshold's outcomes (one per phase
// it names).
func worstValue(t threshold.Threshold, outs []threshold.Outcome) float64 {
	v := math.NaN()
	worse := worseFor(t)
	for _, o := range outs {
		if math.IsNaN(o.Value) {
			return math.NaN()
		}
		if math.IsNaN(v) || worse(o.Value, v) {
			v = o.Value
		}
	}
	return v
}

// sectionRuns cuts the intervals into up to maxSections consecutive
// sections, each made a run of its own so that a threshold judges it as
// it judges the step.
func sectionRuns(run *result.Run, ivs []result.Interval) []*result.Run {
	k := min(len(ivs), maxSections)
	if k < 3 {
		return nil
	}
	var out []*result.Run
	for i := range k {
		part := ivs[i*len(ivs)/k : (i+1)*len(ivs)/k]
		out = append(out, &result.Run{Meta: run.Meta, Repetitions: []result.Repetition{{
			Intervals: part, Summaries: result.Summarize(run.Meta.Actions, len(run.Meta.Events), part)}}})
	}
	return out
}

// percentile returns the quantile of a latency percentile metric ("p99",
// "service_p95", "p99.9").
func percentile(metric string) (float64, bool) {
	m := strings.TrimPrefix(metric, "service_")
	if !strings.HasPrefix(m, "p") {
		return 0, false
	}
	p, err := strconv.ParseFloat(m[1:], 64)
	if err != nil || p <= 0 || p >= 100 {
		return 0, false
	}
	return p / 100, true
}

// countersOf reads a phase's resources: the server's CPU over its
// machine's CPUs, the busiest disk, the memory in use, major faults, and
// the generator's CPU over what it may use. The server's machine is the
// first node_exporter source, else this machine (the rule of the result's
// server rows).
func countersOf(sum *result.Summary, ivs []result.Interval) Counters {
	c := NaNCounters()
	var machine *result.CounterSummary
	for i := range sum.Counters {
		cs := &sum.Counters[i]
		if strings.HasPrefix(cs.Source, "node ") {
			machine = cs
			break
		}
		if cs.Source == "system" && machine == nil {
			machine = cs
		}
	}
	if r := sum.FindRow("server_cores"); r != nil && !math.IsNaN(float64(r.Mean)) {
		c.ServerCores = float64(r.Mean)
		if machine != nil && machine.Mean["cpus"] > 0 {
			c.ServerCPU = c.ServerCores / machine.Mean["cpus"]
		}
	}
	if machine != nil {
		for k, v := range machine.Mean {
			if strings.HasPrefix(k, "disk_io_seconds_total") && !(v <= c.DiskBusy) {
				c.DiskBusy = math.Min(v, 1)
			}
		}
		if total := machine.Mean["memory_total_bytes"]; total > 0 {
			c.Memory = machine.Mean["memory_used_bytes"] / total
		}
		if v, ok := machine.Mean["major_page_faults_total"]; ok {
			c.MajorFaultsPerS = v
		}
	}
	var cpu, capa float64
	for _, iv := range ivs {
		cpu += iv.Client.CPUCores * iv.DurationS
		capa += iv.Client.Capacity * iv.DurationS
	}
	if capa > 0 {
		c.GeneratorCPU = cpu / capa
	}
	return c
}
