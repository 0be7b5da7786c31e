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
// first repetition's measured phase (steady, or the whole repetition when
// it has none). elapsed is the step's wall time.
//
// The step is invalid (Step.Invalid) when:
//   - the run's validity verdict (result.ValidityOf: the stored one, or
//     computed) fails its "complete" check (Partial), its "generator" or
//     its "schedule" check (GeneratorBound: the generator was the
//     bottleneck, or lagged the open model's arrivals), or its "counters"
//     check while an SLO reads the server's counters (Missing); its
//     "steady" and "p99" checks are replaced by the SLOs' own, below;
//   - an SLO's figure does not exist (Missing): no action of its
//     population finished, its counters were not read;
//   - a percentile SLO had fewer than MinTail samples beyond its
//     percentile in the population it judges, in each phase it judges
//     (FewSamples);
//   - an SLO's figure drifted over its phase by more than its noise, in a
//     way that could change its verdict (Unsteady; see driftMatters);
//   - a loss SLO is asked and the deliveries' latency rose through the
//     phase as a growing backlog does (Unsteady, rising; see backlog.go).
//
// Each SLO's figure is the threshold's, on the worst phase it names; its
// half-width comes from sections of that same phase (see SectionHalfWidth).
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
	verdict := result.ValidityOf(&run.Meta, rep)
	phase := verdict.Phase
	if phase == "" {
		phase = result.MeasuredPhase(rep)
	}
	if run.Partial && !rep.Partial {
		invalid(Partial, false, "the step did not run as planned: %s", strings.TrimSuffix(firstNonEmpty(run.Reason), "."))
	}
	readsCounters := false
	for _, t := range cfg.SLOs {
		readsCounters = readsCounters || counterMetric[t.Metric]
	}
	for _, c := range verdict.Checks {
		if c.Status != result.Fail {
			continue
		}
		switch c.Name {
		case "complete":
			invalid(Partial, false, "%s", c.Message)
		case "generator", "schedule":
			invalid(GeneratorBound, false, "%s%s", c.Message, boundAgents(run))
		case "counters":
			if readsCounters {
				invalid(Missing, false, "%s", c.Message)
			}
		}
	}
	sum := result.Find(rep.Summaries, phase)
	if sum == nil {
		invalid(Partial, false, "the step recorded no interval")
		sum = &result.Summary{}
	}
	ivs := phaseIntervals(rep, phase)
	tot := &sum.Total
	st.Throughput, st.Users, st.Latency = tot.OKPerS, sum.UsersMean, tot.Latency
	st.Concurrency = tot.RatePerS * tot.Latency.MeanMs / 1000
	st.Count, st.Errors, st.Dropped, st.ErrorsByClass = tot.Count, tot.Errors, tot.Dropped, tot.ErrorsByClass
	st.Counters = countersOf(sum, ivs)

	for _, t := range cfg.SLOs {
		outs := t.Evaluate(run)
		worst := worstOutcome(t, outs)
		f := Figure{Value: math.NaN(), HalfWidth: math.NaN()}
		if worst < 0 {
			invalid(Missing, false, "%s: the run has no figure of it", t.Text)
			st.SLOs = append(st.SLOs, f)
			continue
		}
		o := outs[worst]
		f.Value = o.Value
		if math.IsNaN(o.Value) {
			invalid(Missing, false, "%s", o.Message)
			st.SLOs = append(st.SLOs, f)
			continue
		}
		f.HalfWidth = 0 // a count is exact
		if t.Unit != threshold.Count && t.Unit != threshold.Bool {
			var vals []float64
			d := t
			d.Phases = []string{result.All} // each section is a run of the phase's intervals alone
			for _, sr := range sectionRuns(run, phaseIntervals(rep, o.Phase)) {
				vals = append(vals, worstValue(d, d.Evaluate(sr)))
			}
			f.HalfWidth = SectionHalfWidth(vals)
			if slope, sig := Trend(vals); sig {
				change := slope * float64(len(vals)-1)
				if math.Abs(change) > f.HalfWidth {
					if matters, rising := driftMatters(t, f, change); matters {
						invalid(Unsteady, rising, "%s went from %s to %s over the step", t.Metric, num(vals[0]), num(vals[len(vals)-1]))
					}
				}
			}
		}
		if q, ok := percentile(t.Metric); ok {
			need := uint64(math.Ceil(MinTail/(1-q) - 1e-9)) // p90: 100
			for _, out := range outs {
				n := uint64(0)
				if s := result.Find(rep.Summaries, out.Phase); s != nil {
					if a := t.Population(s); a != nil {
						n = a.Timed()
					}
				}
				if n < need {
					invalid(FewSamples, false, "%s needs %d samples in the %s phase; the step had %d", t.Text, need, out.Phase, n)
					break
				}
			}
		}
		st.SLOs = append(st.SLOs, f)
	}
	if judgesLoss(cfg.SLOs) {
		if from, to, growing := growingBacklog(run, ivs); growing {
			invalid(Unsteady, true, "%s", backlogWhy(from, to))
		}
	}
	return st
}

// boundAgents names the agents of a distributed step whose own generator
// was the bottleneck in its first repetition (result.Agent.BoundIntervals):
// "; bound: agent 10.0.0.2:7070 (segment 2/2) in 3 intervals"; "" when
// the step ran in one process or no agent says it was bound.
func boundAgents(run *result.Run) string {
	var names []string
	for _, a := range run.Agents {
		if len(a.BoundIntervals) > 0 && a.BoundIntervals[0] > 0 {
			names = append(names, fmt.Sprintf("agent %s (segment %s) in %d interval%s", a.Name, a.Segment, a.BoundIntervals[0],
				map[bool]string{true: "", false: "s"}[a.BoundIntervals[0] == 1]))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "; bound: " + strings.Join(names, ", ")
}

// counterMetric are the SLO metrics read from the server's counters.
var counterMetric = map[string]bool{"server_cpu": true, "server_cpu_ms_per_action": true}

// phaseIntervals are a repetition's intervals of a phase ("all": every one).
func phaseIntervals(rep *result.Repetition, phase string) []result.Interval {
	var ivs []result.Interval
	for _, iv := range rep.Intervals {
		if phase == result.All || iv.Phase == phase {
			ivs = append(ivs, iv)
		}
	}
	return ivs
}

// worstOutcome is the index of the outcome with the worst figure, a
// missing figure being the worst; -1 when there is none.
func worstOutcome(t threshold.Threshold, outs []threshold.Outcome) int {
	worse := worseFor(t)
	w := -1
	for i, o := range outs {
		switch {
		case math.IsNaN(o.Value):
			return i
		case w < 0 || worse(o.Value, outs[w].Value):
			w = i
		}
	}
	return w
}

// driftMatters says whether a figure f that changed by change over its
// step (change > 0: it rose) could have another verdict in a longer step:
// its projection one step further on, f.Value + change, with its noise,
// is judged. A figure that worsens and fails already is overload (a
// longer step would only fail more): it matters, rising. One that worsens
// while it passes matters when its projection could fail; one that
// improves while it fails, when its projection could pass; one that
// improves while it passes never does. rising says it worsened.
func driftMatters(t threshold.Threshold, f Figure, change float64) (matters, rising bool) {
	rising = (change > 0) == (t.Op == "<" || t.Op == "<=")
	pass := t.Holds(f.Value)
	proj := Figure{Value: f.Value + change, HalfWidth: f.HalfWidth}
	ppass, pclear, _ := judge(t, proj)
	switch {
	case rising && !pass:
		return true, true
	case rising:
		return !(ppass && pclear), true
	case !pass:
		return !(!ppass && pclear), false
	}
	return false, false
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
// ceiling (serverCeiling) and the share of its quota's periods it was
// throttled in, the busiest disk, the memory in use, major faults, the
// busiest network link whose speed is known, and the generator's CPU over
// what it may use. The server's machine is the first node_exporter
// source, else this machine (the rule of the result's server rows).
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
		ceil := serverCeiling(sum, machine)
		c.ServerCeiling, c.ServerCeilingBy = ceil.Cores, ceil.By
		if ceil.Cores > 0 {
			c.ServerCPU = c.ServerCores / ceil.Cores
		}
		c.ServerThrottled = serverThrottled(sum)
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
		// The network: the busier direction of each link whose speed is
		// known (full duplex) over that speed; the busiest link. Loopback
		// and most virtual interfaces have no speed: NaN then.
		for k, speed := range machine.Mean {
			l, ok := strings.CutPrefix(k, "net_speed_bytes{")
			if !ok || !(speed > 0) {
				continue
			}
			l = "{" + l
			u := math.Max(machine.Mean["net_receive_bytes_total"+l], machine.Mean["net_transmit_bytes_total"+l]) / speed
			if !(u <= c.Network) {
				c.Network = u
			}
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
