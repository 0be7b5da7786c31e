package capacity

import (
	"math"
	"slices"
	"time"

	"github.com/throng-io/throng/internal/threshold"
)

// judge says whether a figure meets a threshold, whether that is
// clear-cut (its 95 % interval lies wholly on one side of the limit), and
// its margin: how far past the limit, as the logarithm of figure over
// limit, positive when it fails. A missing figure fails, clearly. A figure
// compared with == or != is exact: clear, with margin ±1.
func judge(t threshold.Threshold, f Figure) (pass, clear bool, margin float64) {
	if math.IsNaN(f.Value) {
		return false, true, 1
	}
	pass = t.Holds(f.Value)
	h := f.HalfWidth
	switch t.Op {
	case "==", "!=":
		return pass, true, map[bool]float64{true: -1, false: 1}[pass]
	case "<", "<=":
		margin = logRatio(f.Value, t.Value)
		if pass {
			clear = t.Holds(f.Value + h)
		} else {
			clear = !t.Holds(f.Value - h)
		}
	default: // ">", ">=": a floor; falling below it fails
		margin = logRatio(t.Value, f.Value)
		if pass {
			clear = t.Holds(f.Value - h)
		} else {
			clear = !t.Holds(f.Value + h)
		}
	}
	if math.IsNaN(h) && !math.IsInf(f.Value, 0) {
		clear = false // unknown noise: never clear-cut, unless infinite
	}
	return pass, clear, margin
}

// logRatio is ln(a/b), kept finite when either is 0.
func logRatio(a, b float64) float64 {
	const tiny = 1e-9
	return math.Log(math.Max(a, tiny) / math.Max(b, tiny))
}

// worseFor returns the order in which a figure is worse for a threshold:
// higher for an upper limit, lower for a floor.
func worseFor(t threshold.Threshold) func(a, b float64) bool {
	if t.Op == ">" || t.Op == ">=" {
		return func(a, b float64) bool { return a < b }
	}
	return func(a, b float64) bool { return a > b }
}

// state is what the search knows of one load.
type state int

const (
	stPass       state = iota // every SLO clearly met
	stFail                    // an SLO clearly failed
	stOverload                // invalid, but its figure kept rising: the load is not sustained
	stNear                    // an SLO within its noise of the limit, repeats spent
	stCeiling                 // the generator was the bottleneck, repeated
	stUnmeasured              // invalid for another reason, repeats spent
	stBroken                  // the step could not run, twice
	stRepeat                  // not clear-cut or invalid: run again
)

var stateNames = [...]string{"met the SLOs", "failed an SLO", "overloaded (its figures kept rising)",
	"within noise of the limit", "generator-bound", "not measurable", "could not run", "to be repeated"}

func (s state) String() string { return stateNames[s] }

// point is every step at one load, judged together.
type point struct {
	load    float64
	steps   []int // indices in the step list, in order
	valid   []int
	figs    []Figure // combined over the valid steps, per SLO
	pass    bool     // by the combined figures
	margin  float64  // the largest margin over the SLOs (> 0: fails)
	state   state
	why     string        // for stBroken, stUnmeasured, stCeiling: the steps' reason
	longest time.Duration // the longest step run at this load
}

// analysis is the search's view of the steps so far.
type analysis struct {
	cfg    Config
	steps  []Step
	points []*point // by load, ascending
	used   time.Duration
}

// sameLoad tells loads apart that differ by more than rounding.
func sameLoad(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

func analyze(cfg Config, steps []Step) *analysis {
	a := &analysis{cfg: cfg, steps: steps}
	for i := range steps {
		s := &steps[i]
		el := s.Elapsed
		if el <= 0 {
			el = s.Duration
		}
		a.used += el + max(s.Before, 0)
		if s.Kind == WarmUp {
			continue
		}
		p := a.at(s.Load)
		if p == nil {
			p = &point{load: s.Load}
			a.points = append(a.points, p)
		}
		p.steps = append(p.steps, i)
		p.longest = max(p.longest, s.Duration)
		if s.Valid() {
			p.valid = append(p.valid, i)
		}
	}
	slices.SortFunc(a.points, func(x, y *point) int {
		if x.load < y.load {
			return -1
		}
		return 1
	})
	for _, p := range a.points {
		a.judgePoint(p)
	}
	return a
}

func (a *analysis) at(load float64) *point {
	for _, p := range a.points {
		if sameLoad(p.load, load) {
			return p
		}
	}
	return nil
}

// judgePoint combines a load's steps into its state.
func (a *analysis) judgePoint(p *point) {
	attempts := len(p.steps)
	spent := attempts > a.cfg.MaxRepeats
	if len(p.valid) > 0 {
		p.pass, p.margin = true, math.Inf(-1)
		clear, clearFail := true, false
		for k, t := range a.cfg.SLOs {
			var figs []Figure
			for _, i := range p.valid {
				if k < len(a.steps[i].SLOs) {
					figs = append(figs, a.steps[i].SLOs[k])
				}
			}
			f := combine(figs, worseFor(t))
			p.figs = append(p.figs, f)
			pass, cl, m := judge(t, f)
			p.margin = math.Max(p.margin, m)
			// One SLO clearly failed: the load fails, whatever the others.
			clearFail = clearFail || !pass && cl
			p.pass = p.pass && pass
			clear = clear && cl
		}
		// A load within noise of the limit is near the capacity: it is not
		// run again (its flanks tell more), unless it is a flank, meant to
		// be an end of the interval: that is run once more, longer.
		flank := a.steps[p.steps[0]].Kind == Flank
		switch {
		case clearFail:
			p.state = stFail
		case clear && p.pass:
			p.state = stPass
		case a.overloaded(p):
			// Within noise, but a step here (a longer one, run again) saw
			// a figure rise through it past the limit: not sustained.
			p.state = stOverload
		case flank && attempts == 1 && p.longest < a.cfg.MaxLength:
			p.state = stRepeat
		default:
			p.state = stNear
		}
		return
	}
	// Every step at this load was invalid: the reasons decide. A figure
	// that rose through the step and fails already would only fail more
	// in a longer one: overloaded at once.
	count := map[InvalidKind]int{}
	rising := 0
	for _, i := range p.steps {
		s := &a.steps[i]
		for _, iv := range s.Invalid {
			count[iv.Kind]++
			// A figure that rose while the generator was the bottleneck
			// measured the generator: it says nothing of overload.
			if iv.Kind == Unsteady && iv.Rising && !s.has(GeneratorBound) {
				rising++
				if !a.passes(s) {
					rising = 2
				}
			}
			p.why = iv.Why
		}
	}
	switch {
	case count[Partial] >= 2:
		p.state = stBroken
	case count[GeneratorBound] > a.cfg.MaxRepeats || count[GeneratorBound] > 0 && spent:
		// Run again first: a generator kept waiting by a neighbour
		// for a moment is not saturated.
		p.state = stCeiling
	case rising >= 2 || rising > 0 && spent:
		p.state = stOverload
	case spent:
		p.state = stUnmeasured
	default:
		p.state = stRepeat
	}
}

// overloaded reports whether an invalid step at a load saw an SLO figure
// rise through it and fail already, its generator not the bottleneck: the
// load is not sustained.
func (a *analysis) overloaded(p *point) bool {
	for _, i := range p.steps {
		s := &a.steps[i]
		for _, iv := range s.Invalid {
			if iv.Kind == Unsteady && iv.Rising && !a.passes(s) && !s.has(GeneratorBound) {
				return true
			}
		}
	}
	return false
}

// passes reports whether a step's own figures meet every SLO.
func (a *analysis) passes(s *Step) bool {
	for k, t := range a.cfg.SLOs {
		if k >= len(s.SLOs) || !t.Holds(s.SLOs[k].Value) {
			return false
		}
	}
	return true
}

// lastLoad is the load of the last step that was not the warm-up.
func (a *analysis) lastPoint() *point {
	for i := len(a.steps) - 1; i >= 0; i-- {
		if a.steps[i].Kind != WarmUp {
			return a.at(a.steps[i].Load)
		}
	}
	return nil
}

// bracket returns the highest load that clearly met every SLO below the
// lowest that clearly failed one (or was overloaded, or generator-bound),
// and that upper load; nil when there is none.
func (a *analysis) bracket() (lo, hi *point) {
	for _, p := range a.points {
		if p.state == stFail || p.state == stOverload || p.state == stCeiling {
			hi = p
			break
		}
	}
	for _, p := range a.points {
		if hi != nil && p.load >= hi.load {
			break
		}
		if p.state == stPass {
			lo = p
		}
	}
	return lo, hi
}

// estimate is the capacity's point estimate inside the bracket [lo, hi]:
// its geometric middle (the precision asked bounds the distance to either
// end). For a whole-number dimension the capacity is a load that meets the
// SLOs, in [lo, hi−1]: the middle rounded down, or a higher load in the
// bracket whose figures met the SLOs (within noise).
func (a *analysis) estimate(lo, hi *point) float64 {
	if lo == nil || hi == nil {
		return math.NaN()
	}
	if !a.cfg.Dimension.Integer {
		return math.Sqrt(lo.load * hi.load)
	}
	x := math.Max(lo.load, math.Floor(math.Sqrt(lo.load*(hi.load-1))))
	for _, p := range a.points {
		if p.load > x && p.load < hi.load && p.state == stNear && p.pass {
			x = p.load
		}
	}
	return x
}

// precise reports whether the interval [lo, hi] (for whole numbers
// [lo, hi−1], the loads that may pass) pins the capacity to within the
// precision asked, or to the dimension's resolution, and the relative
// half-width it reaches: √(top/lo) − 1, its half-width around its
// geometric middle, whatever the point estimate inside it.
func (a *analysis) precise(lo, hi *point) (bool, float64) {
	if lo == nil || hi == nil || lo.load <= 0 {
		return false, math.Inf(1)
	}
	top := hi.load
	if a.cfg.Dimension.Integer {
		top = hi.load - 1 // the capacity is a load that passes
	}
	reach := math.Sqrt(math.Max(top, lo.load)/lo.load) - 1
	if a.cfg.Dimension.Integer && hi.load-lo.load <= 1 {
		return true, reach
	}
	return reach <= a.cfg.Precision, reach
}
