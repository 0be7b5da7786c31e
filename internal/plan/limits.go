package plan

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/throng-io/throng/internal/scenario"
)

// Limits of the schedule a plan can hold. They are those of the engine's
// arithmetic, not of a machine: a plan beyond them cannot run anywhere.
const (
	// MaxRate is the highest arrival rate, per second, all users together:
	// the engine's clock counts nanoseconds, so arrivals closer than 1 ns
	// apart cannot be told apart, let alone started.
	MaxRate = 1e9
	// MaxArrivals bounds the arrivals of a plan: the generator adds up
	// exponential gaps in a float64, which stops advancing past 2^53.
	MaxArrivals = 1 << 50
)

// UserBytes is the memory the plan holds per user of its segment.
const UserBytes = int64(unsafe.Sizeof(User{}))

// Needs is what a plan asks of the machine, estimated from the scenario
// alone, before anything is allocated for its users.
type Needs struct {
	Users    int64   // users of the segment
	Rate     float64 // the highest arrival rate of the whole plan, per second, speedup applied (open models)
	Arrivals float64 // expected arrivals of the whole plan (open models)
	// RatePath is the scenario key that sets the rate ("open.rate", or
	// "actions" for per-user rates), for messages.
	RatePath string
}

// Estimate returns what the plan of segment seg of a valid scenario needs.
func Estimate(s *scenario.Scenario, seg Segment) Needs {
	n := Needs{Users: seg.Share(int64(s.Users))}
	for _, v := range s.Views() {
		if v.Model != scenario.Open || v.Users <= 0 {
			continue
		}
		if v.Open.Rate.PerSecond > 0 {
			// Aggregate arrivals: the rate rises over the ramp-up and falls
			// over the ramp-down, so each counts about half.
			r := v.Open.Rate.PerSecond * s.Speedup
			ramps := (s.RampUpLength() + s.Phases.RampDown.D()).Seconds() / 2
			n.Rate += r
			n.Arrivals += r * (ramps + s.Phases.Steady.D().Seconds())
			n.RatePath = v.Prefix() + "open.rate"
			continue
		}
		perUser := 0.0
		for _, a := range v.Actions {
			perUser += a.Rate.PerSecond * s.Speedup
		}
		r := perUser * float64(v.Users)
		n.Rate += r
		n.Arrivals += r * (s.RampUpLength() + s.Phases.Steady.D() + s.Phases.RampDown.D()).Seconds()
		if n.RatePath == "" {
			n.RatePath = v.Prefix() + "actions"
		}
	}
	return n
}

// ErrImpossible marks a plan that cannot run: its schedule is beyond the
// engine's limits, or it needs more memory than the machine has.
var ErrImpossible = errors.New("impossible plan")

// CheckSchedule refuses a plan whose arrivals are beyond the engine's
// limits (MaxRate, MaxArrivals). The error wraps ErrImpossible and is
// positioned at the key that sets the rate.
func (n Needs) CheckSchedule(s *scenario.Scenario) error {
	switch {
	case math.IsNaN(n.Rate) || n.Rate > MaxRate:
		return impossible(s.Errorf(n.RatePath, "the plan asks for %s arrivals/s (speedup applied) at its peak; the engine schedules at most %s/s (its clock counts nanoseconds): nothing was run",
			Figure(n.Rate), Figure(MaxRate)))
	case n.Arrivals > MaxArrivals:
		return impossible(s.Errorf(n.RatePath, "the plan asks for %s arrivals; the engine counts at most %s: nothing was run",
			Figure(n.Arrivals), Figure(MaxArrivals)))
	}
	return nil
}

// impossible marks err (a positioned scenario error) with ErrImpossible.
func impossible(err error) error { return impossibleError{err} }

type impossibleError struct{ error }

func (e impossibleError) Unwrap() []error { return []error{e.error, ErrImpossible} }

// Figure prints a count or a rate short: 1,500, 2.5e+06 beyond millions.
func Figure(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return fmt.Sprint(x)
	case x < 1e6:
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.3g", x)
}
