package capacity

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/textfmt"
)

// Status is how a search ended.
type Status int

// The ends of a search. The command maps them to exit codes (0 Found and
// AboveMax, 1 FailsAtMin, 3 the others that leave a bracket, 4
// CouldNotRun).
const (
	// Found: the capacity to the precision asked.
	Found Status = iota
	// FailsAtMin: an SLO fails (or is within its noise of the limit)
	// already at Min.
	FailsAtMin
	// AboveMax: every SLO holds at Max: the capacity is at least Max.
	AboveMax
	// GeneratorLimited: the load generator saturated before the server
	// failed an SLO: the server carries at least the answer's Low, and
	// its capacity is not known.
	GeneratorLimited
	// Budget: steps or time ran out before the precision; the answer is
	// the best bracket so far.
	Budget
	// Imprecise: every load worth trying was tried and the figures'
	// noise at this step length leaves the bracket wider than the
	// precision (longer steps would narrow it).
	Imprecise
	// Unmeasurable: the loads could not be measured (invalid steps,
	// repeated) where the search needed them.
	Unmeasurable
	// CouldNotRun: a step did not run, twice.
	CouldNotRun
)

var statusNames = [...]string{"found", "fails at min", "above max", "generator-limited", "budget spent",
	"imprecise", "unmeasurable", "could not run"}

func (s Status) String() string { return statusNames[s] }

// Answer is what the search found.
type Answer struct {
	Status Status
	// Statement says it in one sentence, with the SLOs.
	Statement string
	// Capacity is the point estimate (NaN when there is none: the SLO
	// fails at Min, the generator was the limit, nothing measured). Low and
	// High bound it with 95 % confidence (see docs/capacity.md for what
	// that covers); High is +Inf when only a lower bound is known, and Low
	// is NaN when no load met the SLOs.
	Capacity, Low, High float64
	// Reach is the relative half-width the interval reached around
	// Capacity (compare with Config.Precision).
	Reach float64
	Unit  string
	// Below and Above index the steps that decided the bracket's ends
	// (the last valid step at each load; for a load overloaded or
	// generator-bound, its last step, invalid); -1 when there is none.
	Below, Above int
	Steps        int
	// Elapsed is the wall time the time budget counted: the steps and
	// the time before each (Step.Before).
	Elapsed time.Duration
	// FirstLimit is the resource that saturated first.
	FirstLimit Limit
	// Knee of throughput against load, and the Universal Scalability Law
	// fitted to it; nil with too few valid steps.
	Knee *Knee
	USL  *USL
	// Costs are per unit of load at the highest load that met the SLOs;
	// nil when none did.
	Costs *Costs
	// Notes are things the reader must know: steps repeated or invalid,
	// loads within noise of the limit, SLOs that did not get worse with
	// the load.
	Notes []string
}

func (a *analysis) conclude(status Status) Answer {
	cfg := a.cfg
	ans := Answer{Status: status, Capacity: math.NaN(), Low: math.NaN(), High: math.Inf(1), Reach: math.Inf(1),
		Unit: cfg.Dimension.Unit, Below: -1, Above: -1, Steps: len(a.steps), Elapsed: a.used}
	lo, hi := a.bracket()
	withheld := false // a capacity the bracket would give, not stated (generatorBound)
	if lo != nil {
		ans.Low, ans.Below = lo.load, lo.valid[len(lo.valid)-1]
		if c := costsAt(&a.steps[ans.Below]); c != nil {
			c.Unit = cfg.Dimension.Unit
			ans.Costs = c
		}
	}
	if hi != nil {
		ans.High, ans.Above = hi.load, hi.steps[len(hi.steps)-1]
		if len(hi.valid) > 0 {
			ans.Above = hi.valid[len(hi.valid)-1]
		}
		if cfg.Dimension.Integer {
			ans.High = hi.load - 1
		}
		if hi.state == stCeiling {
			// The generator's ceiling says nothing of the server's.
			ans.High = math.Inf(1)
		}
	}
	switch status {
	case Found, Budget, Imprecise:
		if hi != nil && hi.state != stCeiling && lo != nil {
			if status != Found && a.generatorBound() {
				withheld = true
			} else {
				ans.Capacity = a.estimate(lo, hi)
				_, ans.Reach = a.precise(lo, hi)
			}
		}
		if status == Found && math.IsNaN(ans.Capacity) {
			// Near at Max, nothing failed: the capacity is about Max.
			ans.Capacity = cfg.Max
		}
	case AboveMax:
		ans.High = math.Inf(1)
	case GeneratorLimited:
		ans.High = math.Inf(1)
	}
	ans.FirstLimit = firstLimit(a, hi)
	if withheld && (ans.FirstLimit.Resource == "" || ans.FirstLimit.Resource == "none measured") {
		ans.FirstLimit = a.generatorLimit()
	}
	ans.Knee, ans.USL = a.curve()
	ans.Notes = a.notes(lo, hi)
	ans.Statement = a.statement(&ans)
	if withheld {
		ans.Statement += fmt.Sprintf("; no capacity is stated: the load generator was the bottleneck in %d of %d steps, and the bracket may rest on them",
			a.generatorSteps(), len(a.steps))
	}
	return ans
}

// generatorBound reports whether any step found the generator the
// bottleneck. A search that ends before its precision (budget spent,
// imprecise) after such a step states no capacity, only its bounds: its
// bracket may lean on steps whose load the generator did not deliver (a
// search of a 400/s server, its generator starved in 4 of 10 steps, once
// stated 447/s).
func (a *analysis) generatorBound() bool { return a.generatorSteps() > 0 }

// generatorSteps counts the steps whose generator was the bottleneck.
func (a *analysis) generatorSteps() int {
	n := 0
	for i := range a.steps {
		if a.steps[i].has(GeneratorBound) {
			n++
		}
	}
	return n
}

// generatorLimit names the generator as the first limit, at the lowest
// load where it was the bottleneck.
func (a *analysis) generatorLimit() Limit {
	best := -1
	for i := range a.steps {
		if a.steps[i].has(GeneratorBound) && (best < 0 || a.steps[i].Load < a.steps[best].Load) {
			best = i
		}
	}
	s := &a.steps[best]
	return Limit{Resource: "generator", Share: s.Counters.GeneratorCPU, Load: s.Load, Step: best, Unit: a.cfg.Dimension.Unit, Detail: generatorWhy(s)}
}

// slos is the SLOs as written, joined.
func (a *analysis) slos() string {
	var s []string
	for _, t := range a.cfg.SLOs {
		s = append(s, t.Text)
	}
	return strings.Join(s, ", ")
}

func (a *analysis) statement(ans *Answer) string {
	u := a.cfg.Dimension.Unit
	var s string
	switch ans.Status {
	case Found, Budget, Imprecise:
		switch {
		case math.IsNaN(ans.Capacity) && math.IsInf(ans.High, 1) && !math.IsNaN(ans.Low) && ans.Above >= 0:
			// The upper end is the generator's ceiling (conclude).
			s = fmt.Sprintf("capacity not found (%s): the server carries at least %s at %s; above, the load generator was the bottleneck", ans.Status, LoadText(ans.Low, u), a.slos())
		case math.IsNaN(ans.Capacity) && math.IsInf(ans.High, 1) && !math.IsNaN(ans.Low):
			// Nothing failed yet: the search ended while bracketing.
			s = fmt.Sprintf("capacity not found (%s): the server carries at least %s at %s; no higher load was measured", ans.Status, LoadText(ans.Low, u), a.slos())
		case math.IsNaN(ans.Capacity):
			s = fmt.Sprintf("capacity not found (%s): the best bracket is %s to %s at %s", ans.Status, num(ans.Low), LoadText(ans.High, u), a.slos())
		}
		if math.IsNaN(ans.Capacity) {
			break
		}
		s = fmt.Sprintf("capacity: %s (95 %% CI %s–%s) at %s", LoadText(ans.Capacity, u), num(ans.Low), num(ans.High), a.slos())
		switch ans.Status {
		case Budget:
			s += fmt.Sprintf("; the budget ran out before ±%g %% (reached ±%.1f %%)", 100*a.cfg.Precision, 100*ans.Reach)
		case Imprecise:
			s += fmt.Sprintf("; the figures' noise left ±%.1f %%, not ±%g %%: longer steps would narrow it", 100*ans.Reach, 100*a.cfg.Precision)
		}
	case FailsAtMin:
		s = fmt.Sprintf("the SLOs (%s) fail already at --min, %s", a.slos(), LoadText(a.cfg.Min, u))
		if pm := a.at(a.cfg.Min); pm != nil && pm.state == stNear && pm.pass {
			// Met, but within noise: saying "fail" would be wrong.
			s = fmt.Sprintf("the SLOs (%s) are not clearly met at --min, %s: their figures there are within their noise of the limits, so the capacity is about --min or below", a.slos(), LoadText(a.cfg.Min, u))
		}
	case AboveMax:
		s = fmt.Sprintf("capacity: at least %s (--max): every SLO holds there (%s)", LoadText(a.cfg.Max, u), a.slos())
	case GeneratorLimited:
		if math.IsNaN(ans.Low) {
			s = fmt.Sprintf("the load generator was the bottleneck already at %s: nothing about the server's capacity is known", LoadText(a.cfg.Min, u))
		} else {
			s = fmt.Sprintf("the load generator saturated before the server: the server carries at least %s at %s; its capacity is not known (spread the load over more generators)", LoadText(ans.Low, u), a.slos())
		}
	case Unmeasurable:
		s = fmt.Sprintf("capacity not found: the steps could not be measured (%s)", a.lastWhy())
	case CouldNotRun:
		s = fmt.Sprintf("capacity not found: a step could not run (%s)", a.lastWhy())
	}
	if l := ans.FirstLimit; l.Resource != "" && ans.Status != CouldNotRun {
		s += "; first limit: " + l.String()
	}
	return s
}

func (a *analysis) lastWhy() string {
	for i := len(a.steps) - 1; i >= 0; i-- {
		if inv := a.steps[i].Invalid; len(inv) > 0 {
			return inv[0].Why
		}
	}
	return "no reason recorded"
}

// notes lists what a reader must know beside the figure.
func (a *analysis) notes(lo, hi *point) []string {
	var out []string
	u := a.cfg.Dimension.Unit
	for _, p := range a.points {
		switch p.state {
		case stNear:
			out = append(out, fmt.Sprintf("at %s the SLO figures stayed within their noise of the limits after %d steps", LoadText(p.load, u), len(p.steps)))
		case stOverload:
			out = append(out, fmt.Sprintf("at %s the figures kept rising through the step: the load is not sustained (counted as failing)", LoadText(p.load, u)))
		case stCeiling:
			out = append(out, fmt.Sprintf("at %s the load generator was the bottleneck: %s", LoadText(p.load, u), p.why))
		case stUnmeasured:
			out = append(out, fmt.Sprintf("at %s no step was valid: %s", LoadText(p.load, u), p.why))
		}
		if hi != nil && p.load > hi.load && p.state == stPass {
			out = append(out, fmt.Sprintf("%s met the SLOs although %s did not: an SLO that does not get worse with the load, or a noisy server", LoadText(p.load, u), LoadText(hi.load, u)))
		}
	}
	invalid := 0
	for _, s := range a.steps {
		if !s.Valid() {
			invalid++
		}
	}
	if invalid > 0 {
		out = append(out, fmt.Sprintf("%d of %d steps were invalid; no figure comes from them", invalid, len(a.steps)))
	}
	return out
}

// num writes a load or a figure as the reports do: thousands separated
// ("6,200"), about three significant digits under 100, "–" when missing,
// "∞" for no upper bound.
func num(x float64) string {
	if math.IsInf(x, 1) {
		return "∞"
	}
	return textfmt.Num(x)
}

// LoadText writes a load with its unit: "6,200 users", "150/s" (per_s),
// "60×" (x, a speedup), "3,000 subscribers".
func LoadText(x float64, unit string) string {
	switch unit {
	case Rate.Unit:
		return num(x) + "/s"
	case Speedup.Unit:
		return num(x) + "×"
	}
	return num(x) + " " + unit
}
