package result

import (
	"fmt"
	"strings"
)

// MachineSaturated is the machine CPU share above which an interval marks
// the generator's machine as saturated.
const MachineSaturated = 0.95

// ComputeTaints inspects a repetition's intervals and returns the taints a
// reader must see next to its figures, each with its reason in words.
func ComputeTaints(r *Repetition) []Taint {
	var out []Taint
	type count struct {
		bound, saturated, total int
		why                     string
		dropped                 uint64
	}
	byPhase := map[string]*count{}
	var order []string
	for i := range r.Intervals {
		iv := &r.Intervals[i]
		c := byPhase[iv.Phase]
		if c == nil {
			c = &count{}
			byPhase[iv.Phase] = c
			order = append(order, iv.Phase)
		}
		c.total++
		if iv.Client.Bound {
			c.bound++
			if c.why == "" {
				c.why = iv.Client.BoundWhy
			}
		}
		if iv.Client.MachineBusy > MachineSaturated {
			c.saturated++
		}
		for _, a := range iv.Actions {
			c.dropped += a.Dropped
		}
	}
	for _, ph := range order {
		c := byPhase[ph]
		if c.bound > 0 {
			out = append(out, Taint{Kind: "client_bound", Phase: ph, Intervals: c.bound, Message: fmt.Sprintf(
				"%d of %d intervals of the %s phase were client-bound (%s): there the figures measure the load generator, not the server. %s",
				c.bound, c.total, ph, c.why, boundAdvice(c.why))})
		}
		if c.saturated > 0 {
			out = append(out, Taint{Kind: "machine_saturated", Phase: ph, Intervals: c.saturated, Message: fmt.Sprintf(
				"in %d of %d intervals of the %s phase the load machine's CPUs were over %.0f%% busy: if the server runs on the same machine, client and server competed for CPU.",
				c.saturated, c.total, ph, 100*MachineSaturated)})
		}
		if c.dropped > 0 {
			out = append(out, Taint{Kind: "dropped_arrivals", Phase: ph, Message: fmt.Sprintf(
				"%d arrivals of the %s phase were dropped because they could not start in time (open.max_delay): the system did not keep up with the offered load.",
				c.dropped, ph)})
		}
	}
	if r.Partial {
		out = append(out, Taint{Kind: "partial", Message: "this repetition did not finish as planned: " + r.Reason})
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
