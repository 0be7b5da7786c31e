package result

import (
	"fmt"
	"strings"
)

// MachineSaturated is the machine CPU share above which an interval marks
// the generator's machine as saturated.
const MachineSaturated = 0.95

// ComputeTaints inspects a repetition's intervals and returns the taints a
// reader must see next to its figures, each with its reason in words (see
// Summarizer.Taints, which it uses).
func ComputeTaints(r *Repetition) []Taint {
	s := NewSummarizer(nil, 0)
	for i := range r.Intervals {
		s.Add(&r.Intervals[i])
	}
	return s.Taints(r.Partial, r.Reason)
}

// taints are the phase's taints: client-bound intervals, a saturated load
// machine, dropped arrivals.
func (p *phaseSum) taints(ph string) []Taint {
	var out []Taint
	total := p.sum.Intervals
	if bound := p.sum.BoundIntervals; bound > 0 {
		out = append(out, Taint{Kind: "client_bound", Phase: ph, Intervals: bound, Message: fmt.Sprintf(
			"%d of %d intervals of the %s phase were client-bound (%s): there the figures measure the load generator, not the server. %s",
			bound, total, ph, p.boundWhy, boundAdvice(p.boundWhy))})
	}
	if p.saturated > 0 {
		out = append(out, Taint{Kind: "machine_saturated", Phase: ph, Intervals: p.saturated, Message: fmt.Sprintf(
			"in %d of %d intervals of the %s phase the load machine's CPUs were over %.0f%% busy: if the server runs on the same machine, client and server competed for CPU.",
			p.saturated, total, ph, 100*MachineSaturated)})
	}
	if p.dropped > 0 {
		out = append(out, Taint{Kind: "dropped_arrivals", Phase: ph, Message: fmt.Sprintf(
			"%d arrivals of the %s phase were dropped because they could not start in time (open.max_delay): the system did not keep up with the offered load.",
			p.dropped, ph)})
	}
	return out
}

// boundAdvice says what to do about a client-bound phase, from its reason
// (the engine's words): a generator kept waiting for a CPU by other
// processes needs a machine of its own, not more threads.
func boundAdvice(why string) string {
	if strings.Contains(why, "waited for a CPU") && !strings.Contains(why, "generator CPU") &&
		!strings.Contains(why, "event loop") && !strings.Contains(why, "scheduling lag") {
		return "Other processes on this machine (the server, if it runs here) kept the generator waiting for a CPU: run it on a machine of its own."
	}
	return "Give it more threads or spread the load over more machines."
}

// LostTaint says that intervals of a repetition could not be kept (see
// Journal), and why. The summaries count them all the same.
func LostTaint(l Lost) Taint {
	span := fmt.Sprintf("interval %d", l.First)
	if l.N > 1 {
		span = fmt.Sprintf("%d intervals, from %d to %d,", l.N, l.First, l.Last)
	}
	return Taint{Kind: "intervals_lost", Intervals: l.N, Message: fmt.Sprintf(
		"%s could not be kept: %s. The summaries count them; the interval list, the charts and per-interval comparisons do not.",
		span, l.Why)}
}
