// Package capacity finds the highest load a server carries while its SLOs
// hold: a pure search that decides the next step from the steps so far
// (Decide), and the answer it gives at the end (Conclude): the capacity
// with a 95 % confidence interval, the resource that gave out first, the
// knee of the throughput curve, a Universal Scalability Law fit, and the
// costs per unit of load at the capacity. It runs no load: a runner
// executes each Request and hands back its Step (FromRun fills one from a
// result.Run). docs/capacity.md describes the method.
//
// # The search
//
// A warm-up step at Min (its figures unused), then bracketing: the load
// grows by Growth from Min until an SLO clearly fails, the load is
// overloaded (its figures keep rising), or the generator is the
// bottleneck. Then bisection, geometric, between the highest load that
// clearly met every SLO and the lowest that did not. A step is clear-cut
// when each SLO figure's 95 % interval lies on one side of its limit; one
// that is not, or that is invalid, is run again, twice as long, up to
// MaxRepeats times. A load that stays within noise of the limit is
// flanked: the search tries just below and just above it. It stops when
// the bracket pins the capacity to ±Precision (or to one unit of a
// whole-number dimension), or when the budget is spent.
package capacity

import (
	"fmt"
	"math"
	"time"
)

// Decision is the search's answer to "what next?": a step to run, or the
// end and the answer.
type Decision struct {
	Done   bool
	Next   Request
	Answer *Answer
	// Left is the time budget left once Next's predicted wall time is
	// taken from it (Config.MaxTime less the time used and the
	// prediction; never negative): what a runner may spend before Next
	// (waiting for the server to settle) and still run it within the
	// budget. Meaningful only with a time budget (MaxTime > 0).
	Left time.Duration
}

// Decide returns the next step given the steps so far, or the answer. It
// is a pure function of its arguments: the same steps give the same
// decision. cfg must be valid (Config.Validate).
func Decide(cfg Config, steps []Step) Decision {
	cfg = cfg.withDefaults()
	a := analyze(cfg, steps)
	req, status, more := a.next()
	var left time.Duration
	if more {
		left = cfg.MaxTime - a.used - a.predict(req.Duration)
		switch {
		case len(steps) >= cfg.MaxSteps:
			status, more = Budget, false
		case cfg.MaxTime > 0 && left < 0:
			status, more = Budget, false
		}
	}
	if !more {
		ans := a.conclude(status)
		return Decision{Done: true, Answer: &ans}
	}
	return Decision{Next: req, Left: max(left, 0)}
}

// Conclude returns the answer from the steps so far, as if the search
// stopped now: for a search cut short (interrupted, an error), the best
// bracket so far with status Budget when no other end applies.
func Conclude(cfg Config, steps []Step) Answer {
	cfg = cfg.withDefaults()
	a := analyze(cfg, steps)
	_, status, more := a.next()
	if more {
		status = Budget
	}
	return a.conclude(status)
}

// predict estimates the wall time of a step measured for d, from how long
// the steps so far took over their measured length (ramps, pauses).
func (a *analysis) predict(d time.Duration) time.Duration {
	var el, dur time.Duration
	for _, s := range a.steps {
		if s.Elapsed > 0 {
			el += s.Elapsed
			dur += s.Duration
		}
	}
	if el <= 0 || dur <= 0 {
		return d
	}
	return time.Duration(float64(d) * math.Max(1, float64(el)/float64(dur)))
}

// next is the search's state machine: the next step, or the status it
// ends with (more false).
func (a *analysis) next() (Request, Status, bool) {
	cfg := a.cfg
	unit := cfg.Dimension.Unit
	ask := func(k Kind, load float64, d time.Duration, format string, args ...any) (Request, Status, bool) {
		return Request{Kind: k, Load: load, Duration: d, Why: fmt.Sprintf(format, args...)}, 0, true
	}
	stop := func(s Status) (Request, Status, bool) { return Request{}, s, false }
	if len(a.steps) == 0 && !cfg.NoWarmUp {
		return ask(WarmUp, cfg.Min, cfg.WarmUp, "warm-up at %s", LoadText(cfg.Min, unit))
	}
	for _, p := range a.points {
		if p.state == stBroken {
			return stop(CouldNotRun)
		}
	}
	if p := a.lastPoint(); p != nil && p.state == stRepeat {
		d := min(2*p.longest, cfg.MaxLength)
		if len(p.valid) > 0 {
			d = min(4*p.longest, cfg.MaxLength) // a flank within noise: make it clear
		}
		last := &a.steps[p.steps[len(p.steps)-1]]
		if !last.Valid() && last.has(GeneratorBound) {
			d = p.longest // a longer step does not help a saturated generator
		}
		why := "its SLO figures were within their noise of the limits"
		if !last.Valid() {
			why = "it was invalid: " + last.Invalid[0].Why
		}
		return ask(Repeat, p.load, d, "again at %s, %s long: %s", LoadText(p.load, unit), d, why)
	}
	lo, hi := a.bracket()
	if lo == nil {
		pm := a.at(cfg.Min)
		if pm == nil {
			return ask(Bracket, cfg.Min, cfg.StepDuration, "first step at --min, %s", LoadText(cfg.Min, unit))
		}
		switch pm.state {
		case stFail, stOverload, stNear:
			return stop(FailsAtMin)
		case stCeiling:
			return stop(GeneratorLimited)
		}
	}
	lower := cfg.Min
	if lo != nil {
		lower = lo.load
	}
	if hi == nil {
		// Nothing failed yet: grow from the highest load measured (one
		// within noise of the limit too: the load that fails is above).
		if lo != nil && lo.load >= cfg.Max {
			return stop(AboveMax)
		}
		top := a.points[len(a.points)-1]
		if top.load >= cfg.Max {
			if top.state == stNear {
				return stop(Found)
			}
			return stop(Unmeasurable)
		}
		g := cfg.Growth
		if top.state == stPass && top.margin < math.Log(0.5) {
			g *= g // every figure under half its limit: far from it
		}
		x := math.Min(a.round(top.load*g, true), cfg.Max)
		return ask(Bracket, x, cfg.StepDuration, "%s %s: ×%g", LoadText(top.load, unit), top.state, g)
	}
	if lo == nil && a.at(cfg.Min) == nil {
		return ask(Bracket, cfg.Min, cfg.StepDuration, "first step at --min, %s", LoadText(cfg.Min, unit))
	}
	end := Found
	if hi.state == stCeiling {
		end = GeneratorLimited
	}
	if ok, _ := a.precise(lo, hi); ok {
		return stop(end)
	}
	// Flank the loads within noise of the limit: just outside the
	// precision around where their figures put the capacity.
	var nears []*point
	for _, p := range a.points {
		if p.load > lower && p.load < hi.load && p.state == stNear {
			nears = append(nears, p)
		}
	}
	if len(nears) > 0 {
		center, slope := a.nearCenter(nears, lo, hi)
		// A flank already run within noise of the limit pushes the next
		// one further out.
		out := func(x, dir float64) float64 {
			for moved := true; moved; {
				moved = false
				for _, p := range a.points {
					if p.state == stNear && a.steps[p.steps[0]].Kind == Flank && math.Abs(math.Log(p.load/x)) < 0.3*cfg.Precision {
						x, moved = p.load*(1+dir*0.5*cfg.Precision), true
					}
				}
			}
			return x
		}
		d := a.flankLength(nears, slope)
		// A side whose end is already about where its flank would be is
		// done.
		if x := a.round(out(center*(1-0.9*cfg.Precision), -1), false); x > lower*(1+0.3*cfg.Precision) && a.at(x) == nil {
			return ask(Flank, x, d, "just below %s, where the SLO figures are within noise of the limits", LoadText(center, unit))
		}
		if x := a.round(out(center*(1+0.9*cfg.Precision), 1), true); x < hi.load*(1-0.3*cfg.Precision) && a.at(x) == nil {
			return ask(Flank, x, d, "just above %s, where the SLO figures are within noise of the limits", LoadText(center, unit))
		}
	}
	if len(nears) > 0 {
		// Whole numbers: a flank rounds onto a load measured already, or
		// onto an end, while loads in the bracket are still unmeasured
		// (19 met the SLO, 21 within noise, 23 failed: 20 and 22 are
		// untried). Try the one nearest the centre; with none left, run a
		// load within noise again, longer.
		if cfg.Dimension.Integer {
			center, slope := a.nearCenter(nears, lo, hi)
			if x, ok := a.gap(lower, hi.load, center); ok {
				return ask(Flank, x, a.flankLength(nears, slope), "%s, not measured yet, between %s and %s where the SLO figures are within noise of the limits",
					LoadText(x, unit), num(lower), LoadText(hi.load, unit))
			}
			if p := a.lengthen(nears, center); p != nil {
				d := min(4*p.longest, cfg.MaxLength)
				return ask(Repeat, p.load, d, "again at %s, %s long: its SLO figures were within their noise of the limits, and no other load is left between %s and %s",
					LoadText(p.load, unit), d, num(lower), LoadText(hi.load, unit))
			}
		}
		// Every flank is measured: what is left between them is within
		// noise of the limit, and bisecting it only finds more of it.
		if end == Found {
			end = Imprecise
		}
		return stop(end)
	}
	// Bisect: the middle of the widest gap between loads measured inside
	// the bracket (the bracket itself when nothing is inside).
	var best float64
	bestRatio := 1.0
	prev := lower
	for _, p := range a.points {
		if p.load <= lower {
			continue
		}
		if p.load > hi.load {
			break
		}
		if x := a.mid(prev, p.load); x > 0 && p.load/prev > bestRatio {
			best, bestRatio = x, p.load/prev
		}
		prev = p.load
	}
	if best == 0 {
		if end == Found {
			end = Imprecise
		}
		return stop(end)
	}
	return ask(Bisect, best, cfg.StepDuration, "between %s and %s", num(lower), LoadText(hi.load, unit))
}

// nearCenter is where the loads within noise of the limit put the
// capacity: each moved by its margin over the local slope of the margin
// against the logarithm of the load (from the bracket's ends, or from the
// highest clear pass), averaged; the slope is 0 when unknown, and then
// the center is their geometric mean.
func (a *analysis) nearCenter(nears []*point, lo, hi *point) (center, slope float64) {
	switch {
	case lo != nil && hi != nil && len(hi.valid) > 0 && !math.IsInf(hi.margin, 0):
		slope = (hi.margin - lo.margin) / math.Log(hi.load/lo.load)
	case lo != nil:
		slope = (nears[0].margin - lo.margin) / math.Log(nears[0].load/lo.load)
	}
	sum := 0.0
	for _, p := range nears {
		l := math.Log(p.load)
		if slope > 0 {
			l -= p.margin / slope
		}
		sum += l
	}
	return math.Exp(sum / float64(len(nears))), math.Max(slope, 0)
}

// gap returns the unmeasured whole load strictly between lower and upper
// nearest center (the lower of two as near); ok false when every load
// between them is measured.
func (a *analysis) gap(lower, upper, center float64) (float64, bool) {
	best, ok := 0.0, false
	for x := lower + 1; x < upper; x++ {
		if a.at(x) != nil {
			continue
		}
		if !ok || math.Abs(x-center) < math.Abs(best-center) {
			best, ok = x, true
		}
	}
	return best, ok
}

// lengthen returns the load within noise of the limit, nearest center,
// that may still be run again longer (repeats and length not spent); nil
// when none may.
func (a *analysis) lengthen(nears []*point, center float64) *point {
	var best *point
	for _, p := range nears {
		if len(p.steps) > a.cfg.MaxRepeats || p.longest >= a.cfg.MaxLength {
			continue
		}
		if best == nil || math.Abs(p.load-center) < math.Abs(best.load-center) {
			best = p
		}
	}
	return best
}

// flankLength is how long a flank must run to be clear-cut: it lies
// 0.9·Precision from the capacity, where the SLO margin is the slope times
// that; the step must bring the figure's relative half-width (as seen at
// the loads within noise) under two thirds of it, and a half-width shrinks
// as the square root of the length. Without a slope, twice the step.
func (a *analysis) flankLength(nears []*point, slope float64) time.Duration {
	cfg := a.cfg
	d := 2 * cfg.StepDuration
	hrel := 0.0
	var longest time.Duration
	for _, p := range nears {
		longest = max(longest, p.longest)
		for _, f := range p.figs {
			if f.Value > 0 && f.HalfWidth > 0 {
				hrel = math.Max(hrel, f.HalfWidth/f.Value)
			}
		}
	}
	if slope > 0 && hrel > 0 {
		f := 1.5 * hrel / (slope * 0.9 * cfg.Precision)
		d = time.Duration(float64(max(longest, cfg.StepDuration)) * f * f)
	}
	return min(max(d, cfg.StepDuration), cfg.MaxLength).Round(time.Second)
}

// mid is the geometric middle of two loads, rounded for a whole-number
// dimension; 0 when no load lies strictly between them.
func (a *analysis) mid(x, y float64) float64 {
	m := math.Sqrt(x * y)
	if a.cfg.Dimension.Integer {
		m = math.Round(m)
		if m <= x {
			m = x + 1
		}
		if m >= y {
			return 0
		}
		return m
	}
	if y/x < 1+1e-6 {
		return 0
	}
	return m
}

// round rounds a load to the dimension's resolution, up or down.
func (a *analysis) round(x float64, up bool) float64 {
	if !a.cfg.Dimension.Integer {
		return x
	}
	if up {
		return math.Ceil(x - 1e-9)
	}
	return math.Floor(x + 1e-9)
}
