package capacity

import (
	"fmt"
	"math"
	"time"

	"github.com/throng-io/throng/internal/threshold"
)

// Dimension is the load the search varies.
type Dimension struct {
	// Name is "users", "rate", "speedup", or a scenario variable
	// ("subscribers").
	Name string
	// Unit names the load in results: "users", "per_s", or the variable.
	Unit string
	// Integer: loads are whole numbers (users, subscribers).
	Integer bool
}

// The built-in dimensions.
var (
	Users   = Dimension{Name: "users", Unit: "users", Integer: true}
	Rate    = Dimension{Name: "rate", Unit: "per_s"}
	Speedup = Dimension{Name: "speedup", Unit: "x"}
)

// Config is the question the search answers: the highest load of the
// dimension, between Min and Max, at which every SLO holds, to within
// Precision, within a budget.
type Config struct {
	// SLOs are thresholds in throng's grammar; each must get worse as the
	// load grows (a latency, an error rate, a loss): the search assumes it.
	SLOs      []threshold.Threshold
	Dimension Dimension
	Min, Max  float64
	// Precision is the relative half-width asked of the answer's
	// confidence interval: 0.05 is ±5 %.
	Precision float64
	// MaxSteps and MaxTime are the budget: steps (warm-up and repeats
	// included) and wall time (Step.Before and Step.Elapsed summed: the
	// search's, the waits between steps included). MaxTime 0: no limit.
	MaxSteps int
	MaxTime  time.Duration
	// StepDuration is the measured length of a step; a step that is not
	// clear-cut is repeated at twice its length, up to MaxLength.
	StepDuration time.Duration
	MaxLength    time.Duration
	// WarmUp is the length of the warm-up step at Min; NoWarmUp skips it.
	WarmUp   time.Duration
	NoWarmUp bool
	// Growth multiplies the load while bracketing (default 2).
	Growth float64
	// MaxRepeats bounds how many times one load is run again when its
	// step is not clear-cut or is invalid (default 2).
	MaxRepeats int
}

// Defaults of Config.
const (
	DefaultPrecision  = 0.05
	DefaultMaxSteps   = 16
	DefaultGrowth     = 2.0
	DefaultMaxRepeats = 2
	DefaultStep       = 30 * time.Second
)

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.Precision == 0 {
		c.Precision = DefaultPrecision
	}
	if c.MaxSteps == 0 {
		c.MaxSteps = DefaultMaxSteps
	}
	if c.StepDuration == 0 {
		c.StepDuration = DefaultStep
	}
	if c.MaxLength == 0 {
		c.MaxLength = 4 * c.StepDuration
	}
	if c.WarmUp == 0 {
		c.WarmUp = c.StepDuration
	}
	if c.Growth == 0 {
		c.Growth = DefaultGrowth
	}
	if c.MaxRepeats == 0 {
		c.MaxRepeats = DefaultMaxRepeats
	}
	if c.Dimension.Name == "" {
		c.Dimension = Users
	}
	if c.Dimension.Unit == "" {
		c.Dimension.Unit = c.Dimension.Name
	}
	return c
}

// Validate lists every problem of the configuration, each in words.
func (c Config) Validate() []error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.SLOs) == 0 {
		bad("capacity: no SLO: give at least one, like p95 < 1s")
	}
	for _, t := range c.SLOs {
		if t.Metric == "client_bound" {
			bad("capacity: SLO %q: the generator's state is checked on every step already; it is not an SLO of the server", t.Text)
		}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !finite(c.Min) || !finite(c.Max) || c.Min <= 0:
		bad("capacity: --min must be a positive number and --max a number (got %g and %g)", c.Min, c.Max)
	case c.Max <= c.Min:
		bad("capacity: --max %g must be above --min %g", c.Max, c.Min)
	case c.Dimension.Integer && (c.Min != math.Trunc(c.Min) || c.Max != math.Trunc(c.Max)):
		bad("capacity: %s are whole numbers: --min %g and --max %g", c.Dimension.Name, c.Min, c.Max)
	}
	if !(c.Precision > 0 && c.Precision < 0.5) {
		bad("capacity: --precision %g: want a fraction between 0 and 0.5, like 0.05 for ±5 %%", c.Precision)
	}
	if c.MaxSteps < 2 {
		bad("capacity: a budget of %d steps is too small to bracket anything: want 2 or more", c.MaxSteps)
	}
	if c.MaxTime < 0 || c.StepDuration < 0 || c.MaxLength < c.StepDuration || c.WarmUp < 0 {
		bad("capacity: durations must be positive, and the longest step (%s) at least the step (%s)", c.MaxLength, c.StepDuration)
	}
	if !(c.Growth > 1) || c.Growth > 16 {
		bad("capacity: growth %g: want a factor above 1 and at most 16", c.Growth)
	}
	if c.MaxRepeats < 0 {
		bad("capacity: repeats %d: want 0 or more", c.MaxRepeats)
	}
	return errs
}

func nan() float64 { return math.NaN() }
