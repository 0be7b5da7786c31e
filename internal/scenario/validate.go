package scenario

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MinInterval is the shortest recording interval accepted.
const MinInterval = 10 * time.Millisecond

// Bounds of speedup: a million times faster (a year in 30 s) or slower.
const (
	MinSpeedup = 1e-6
	MaxSpeedup = 1e6
)

// MaxNameLength bounds a scenario's name and label, in bytes.
const MaxNameLength = 200

// Validate checks the values that do not depend on the protocol family and
// returns one error per problem, positioned in the file (or naming the flag
// that set the value).
func (s *Scenario) Validate() []error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, s.Errorf(path, format, args...))
	}

	if s.Users < 0 {
		bad("users", "users is %d: it must be at least 1", s.Users)
	} else if s.Users == 0 {
		bad("users", "users is missing or 0: a run needs at least 1 user")
	}
	for _, f := range []struct{ path, v string }{{"name", s.Name}, {"label", s.Label}} {
		if i := strings.IndexFunc(f.v, unicode.IsControl); i >= 0 {
			r, _ := utf8.DecodeRuneInString(f.v[i:])
			bad(f.path, "%s %q has a control character (%U): it is printed in terminals and reports", f.path, f.v, r)
		} else if len(f.v) > MaxNameLength {
			bad(f.path, "%s is %d bytes long: at most %d", f.path, len(f.v), MaxNameLength)
		}
	}
	if s.Seed < 0 {
		bad("seed", "seed must not be negative")
	}
	if !(s.Speedup >= MinSpeedup && s.Speedup <= MaxSpeedup) {
		bad("speedup", "speedup %g is not between %g and %g (1 = real time)", s.Speedup, MinSpeedup, MaxSpeedup)
	}
	if s.Users > MaxUsers {
		bad("users", "users %d is more than throng can count (at most %d)", s.Users, int64(MaxUsers))
	}
	if s.Interval.D() < MinInterval {
		bad("interval", "interval %s is shorter than %s", s.Interval, Duration(MinInterval))
	}
	if s.MaxDuration < 0 {
		bad("max_duration", "max_duration must not be negative")
	}
	if s.Runs < 1 {
		bad("runs", "runs must be at least 1")
	}
	if s.Trim < 0 {
		bad("trim", "trim must not be negative")
	} else if s.Runs >= 1 && s.Runs-2*s.Trim < 1 && !s.failedAt("runs") {
		bad("trim", "trim %d drops %d of %d runs at both ends: nothing would be left", s.Trim, 2*s.Trim, s.Runs)
	}
	if s.Target == "" {
		bad("target", "target is empty: give \"embedded\" or a URL")
	} else if s.Target != "embedded" {
		// A URL without a host names a local or mounted path: only in the
		// schemes the scenario's family declares (AllowLocalTargets).
		if u, err := url.Parse(s.Target); err != nil || u.Scheme == "" || (u.Host == "" && !slices.Contains(s.localSchemes, u.Scheme)) {
			bad("target", "target %q is not \"embedded\" nor a URL like http://127.0.0.1:8080", s.Target)
		} else if port := u.Port(); port != "" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				bad("target", "target %q: port %s is not between 1 and 65535", s.Target, port)
			}
		}
	}

	errs = append(errs, s.validatePhases()...)
	errs = append(errs, s.validateModel()...)
	errs = append(errs, s.validateActions()...)
	errs = append(errs, s.validateGroups()...)
	errs = append(errs, s.validateJourneys()...)

	switch s.Engine.Kind {
	case EngineAuto, EngineIOUring, EngineEpoll, EngineGoroutines:
	default:
		bad("engine.kind", "engine %q is not one of auto, io_uring, epoll, goroutines", s.Engine.Kind)
	}
	if s.Engine.Threads < 0 {
		bad("engine.threads", "threads must not be negative")
	}
	errs = append(errs, s.validateCounters()...)
	errs = append(errs, s.validateLengths()...)
	return s.dropFailed(errs)
}

// dropFailed leaves out the problems found with values that could not be
// decoded: the decoder already said what is wrong there, once.
func (s *Scenario) dropFailed(errs []error) []error {
	if len(s.failed) == 0 {
		return errs
	}
	out := errs[:0]
	for _, err := range errs {
		var e *Error
		if errors.As(err, &e) && s.failedAt(e.Path) {
			continue
		}
		out = append(out, err)
	}
	return out
}

// failedAt reports whether the value at path, a block holding it, or a
// value inside it could not be decoded.
func (s *Scenario) failedAt(path string) bool {
	for f := range s.failed {
		if f == path || strings.HasPrefix(f, path+".") || strings.HasPrefix(f, path+"[") ||
			strings.HasPrefix(path, f+".") || strings.HasPrefix(path, f+"[") {
			return true
		}
	}
	return false
}

func (s *Scenario) validateCounters() []error {
	var errs []error
	c := s.Counters
	for i, p := range c.Processes {
		path := fmt.Sprintf("counters.processes[%d]", i)
		if strings.TrimSpace(p) == "" {
			errs = append(errs, s.Errorf(path, "a process is a name, a PID or pidfile:PATH; this one is empty"))
		} else if rest, ok := strings.CutPrefix(p, "pidfile:"); ok && rest == "" {
			errs = append(errs, s.Errorf(path, "pidfile: needs a path"))
		}
	}
	for i, u := range c.NodeExporter {
		path := fmt.Sprintf("counters.node_exporter[%d]", i)
		if pu, err := url.Parse(u); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			errs = append(errs, s.Errorf(path, "%q is not an http:// URL of a node_exporter page", u))
		}
	}
	if c.Timeout < 0 {
		errs = append(errs, s.Errorf("counters.timeout", "timeout must not be negative"))
	}
	return errs
}

func (s *Scenario) validatePhases() []error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, s.Errorf(path, format, args...))
	}
	p := s.Phases
	if p.Steady < 0 {
		bad("phases.steady", "steady must not be negative")
	} else if p.Steady > 0 && p.Steady < s.Interval {
		bad("phases.steady", "steady state %s is shorter than one interval (%s): it would have no sample", p.Steady, s.Interval)
	}
	if p.RampDown < 0 {
		bad("phases.ramp_down", "ramp_down must not be negative")
	}
	if p.Drain < 0 {
		bad("phases.drain", "drain must not be negative")
	}
	r := p.RampUp
	if r.Duration < 0 {
		bad("phases.ramp_up.duration", "duration must not be negative")
	}
	if r.Every < 0 {
		bad("phases.ramp_up.every", "every must not be negative")
	}
	if r.Pause < 0 {
		bad("phases.ramp_up.pause", "pause must not be negative")
	}
	if r.Steps < 0 {
		bad("phases.ramp_up.steps", "steps must not be negative")
	} else if r.Steps > 0 && r.Duration == 0 {
		bad("phases.ramp_up.steps", "steps divide the ramp-up duration: set duration too")
	}
	if r.Group < 0 {
		bad("phases.ramp_up.group", "group must not be negative")
	}
	if r.Duration > 0 && (r.Every > 0 || r.Group > 0 || r.Pause > 0) {
		bad("phases.ramp_up", "give either duration (an even ramp) or every/group/pause (a staged ramp), not both")
	}
	if (r.Group > 0 || r.Pause > 0) && r.Every == 0 {
		bad("phases.ramp_up", "a staged ramp needs every: the time between two new users")
	}
	// A group of at least the users is one group: its pause never comes
	// (a preset scaled down by --users keeps its ramp's shape valid).
	if r.Pause > 0 && r.Group == 0 {
		bad("phases.ramp_up.pause", "pause separates groups: set group, the users of one group, too")
	}
	return errs
}

func (s *Scenario) validateModel() []error {
	var errs []error
	for _, v := range s.Views() {
		errs = append(errs, s.validateModelOf(v)...)
	}
	return errs
}

// validateModelOf checks one group's model (or the scenario's, without groups).
func (s *Scenario) validateModelOf(v GroupView) []error {
	var errs []error
	p := v.prefix
	bad := func(path, format string, args ...any) {
		errs = append(errs, s.Errorf(path, format, args...))
	}
	c, o := v.Closed, v.Open
	switch v.Model {
	case Closed:
		if c.Iterations < 0 {
			bad(p+"closed.iterations", "iterations must not be negative")
		}
		if c.Total < 0 {
			bad(p+"closed.total", "total must not be negative")
		}
		if c.Iterations > 0 && c.Total > 0 {
			bad(p+"closed.total", "total (actions shared by the users) and iterations (actions per user) exclude each other: keep one")
		}
		// The end is missing only when none of the three keys that give it
		// was written with a value that could not be decoded: that one
		// has its own message.
		if c.Iterations == 0 && c.Total == 0 && s.Phases.Steady == 0 &&
			!s.failedAt(p+"closed.iterations") && !s.failedAt(p+"closed.total") {
			bad("phases.steady", "a closed run needs an end: set phases.steady (a duration), closed.iterations (a count per user) or closed.total (a count shared by the users)")
		}
		if s.Has(p + "open") {
			bad(p+"open", "open settings are given but model is closed")
		}
		for _, a := range v.Actions {
			if a.Rate.PerSecond != 0 || s.Has(a.path+".rate") {
				bad(a.path+".rate", "a per-user rate belongs to the open model; set model: open, or use closed.pacing to start each iteration on a schedule")
			}
		}
	case Open:
		if s.Has(p + "closed") {
			bad(p+"closed", "closed settings are given but model is open")
		}
		if s.Phases.Steady == 0 {
			bad("phases.steady", "an open run needs a steady state duration (phases.steady)")
		}
		if s.Has(p+"open.rate") && o.Rate.PerSecond <= 0 {
			bad(p+"open.rate", "a rate of %s never starts anything: give a rate above 0", o.Rate)
		}
		if o.Rate.PerSecond > 0 {
			for _, a := range v.Actions {
				if s.Has(a.path + ".rate") {
					bad(a.path+".rate", "give either open.rate (arrivals shared by all users) or per-action rates, not both")
				}
			}
			if r := v.RampUp; r.Every > 0 {
				bad("phases.ramp_up", "an aggregate rate ramps with duration, not a staged every/group/pause ramp")
			}
		} else if !s.Has(p+"open.rate") && !s.HasJourneys() { // journeys: validateJourneys asks for open.rate
			for _, a := range v.Actions {
				if a.Rate.PerSecond <= 0 {
					if s.Has(a.path + ".rate") {
						bad(a.path+".rate", "a rate of %s never starts anything: give a rate above 0", a.Rate)
					} else {
						bad(a.path+".rate", "action %q has no rate: in the open model give open.rate or a rate per action (like 12/8h)", a.Name)
					}
				}
			}
		}
		switch o.Arrivals {
		case Poisson, Uniform:
		default:
			bad(p+"open.arrivals", "arrivals %q is not poisson or uniform", o.Arrivals)
		}
		if o.MaxDelay < 0 {
			bad(p+"open.max_delay", "max_delay must not be negative")
		}
	default:
		bad(p+"model", "model %q is not closed or open", v.Model)
	}
	if c.Think < 0 {
		bad(p+"closed.think", "think must not be negative")
	}
	if c.Pacing < 0 {
		bad(p+"closed.pacing", "pacing must not be negative")
	}
	if c.Pacing > 0 && c.Think > 0 {
		bad(p+"closed.pacing", "pacing (when each iteration starts) and think (a pause after each action) exclude each other: keep one")
	}
	switch c.ThinkDistribution {
	case Fixed:
	case Exponential:
		if c.Think == 0 {
			bad(p+"closed.think", "an exponential think time needs a mean: set think")
		}
	default:
		bad(p+"closed.think_distribution", "think_distribution %q is not fixed or exponential", c.ThinkDistribution)
	}
	return errs
}

func (s *Scenario) validateActions() []error {
	var errs []error
	// No actions: unless actions or journeys (which make actions) were
	// written with a value that could not be decoded, said once already.
	if len(s.Actions) == 0 && !s.Grouped() && !s.failedAt("actions") && !s.failedAt("journeys") {
		errs = append(errs, s.Errorf("actions", "there are no actions: a user must have something to do"))
		return errs
	}
	names := map[string]string{}
	for _, a := range s.Actions {
		if other, dup := names[a.Name]; dup {
			errs = append(errs, s.Errorf(a.path+".name", "action name %q is already used by %s", a.Name, other))
		}
		names[a.Name] = a.path
		if a.Weight < 0 {
			errs = append(errs, s.Errorf(a.path+".weight", "weight must not be negative"))
		}
	}
	for _, v := range s.Views() {
		total := 0.0
		for _, a := range v.Actions {
			total += max(a.Weight, 0)
		}
		perUser := v.Model == Open && v.Open.Rate.PerSecond == 0
		if total == 0 && !perUser && len(v.Actions) > 0 {
			path := v.prefix + "actions"
			errs = append(errs, s.Errorf(path, "every action has weight 0: nothing would ever be picked"))
		}
	}
	return errs
}

// validateLengths keeps every duration, and the times derived from them,
// within MaxLength, so the timeline's arithmetic cannot overflow.
func (s *Scenario) validateLengths() []error {
	var errs []error
	long := func(path string, d Duration) bool {
		if d > MaxLength {
			errs = append(errs, s.Errorf(path, "%s is longer than throng can time (at most %s, 100 years)", d, MaxLength))
			return true
		}
		return false
	}
	p := s.Phases
	for _, x := range []struct {
		path string
		d    Duration
	}{
		{"interval", s.Interval}, {"max_duration", s.MaxDuration}, {"phases.steady", p.Steady},
		{"phases.ramp_down", p.RampDown}, {"phases.drain", p.Drain}, {"phases.ramp_up.duration", p.RampUp.Duration},
		{"phases.ramp_up.every", p.RampUp.Every}, {"phases.ramp_up.pause", p.RampUp.Pause}, {"counters.timeout", s.Counters.Timeout},
	} {
		long(x.path, x.d)
	}
	if len(errs) > 0 {
		return errs
	}
	for _, v := range s.Views() {
		if long(v.prefix+"open.max_delay", v.Open.MaxDelay) || long(v.prefix+"closed.think", v.Closed.Think) || long(v.prefix+"closed.pacing", v.Closed.Pacing) {
			continue
		}
		if v.prefix != "" && long(v.prefix+"start", v.Start) {
			continue
		}
		if finite(s.Speedup) && s.Speedup > 0 && float64(v.Closed.Think)/s.Speedup > float64(MaxLength) {
			errs = append(errs, s.Errorf(v.prefix+"closed.think", "think %s at speedup %g lasts longer than throng can time (at most %s, 100 years)", v.Closed.Think, s.Speedup, MaxLength))
		}
		if finite(s.Speedup) && s.Speedup > 0 && float64(v.Closed.Pacing)/s.Speedup > float64(MaxLength) {
			errs = append(errs, s.Errorf(v.prefix+"closed.pacing", "pacing %s at speedup %g lasts longer than throng can time (at most %s, 100 years)", v.Closed.Pacing, s.Speedup, MaxLength))
		}
		for _, a := range v.Actions {
			if !finite(a.Weight) {
				errs = append(errs, s.Errorf(a.path+".weight", "weight must be a number, not %v", a.Weight))
			}
			if !finite(a.Rate.PerSecond) {
				errs = append(errs, s.Errorf(a.path+".rate", "rate %s is not a finite number of events per second", a.Rate))
			}
		}
		if !finite(v.Open.Rate.PerSecond) {
			errs = append(errs, s.Errorf(v.prefix+"open.rate", "rate %s is not a finite number of events per second", v.Open.Rate))
		}
		if v.prefix != "" && v.Users > MaxUsers {
			errs = append(errs, s.Errorf(v.prefix+"users", "users %d is more than throng can count (at most %d)", v.Users, int64(MaxUsers)))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	// The planned length, in floating point so it cannot overflow: the
	// longest ramp-up (a staged one grows with the users), steady state
	// and ramp-down.
	ramp := 0.0
	for _, v := range s.Views() {
		r := v.RampUp
		l := float64(r.Duration)
		if r.Duration == 0 && r.Every > 0 && v.Users > 0 {
			group := r.Group
			if group <= 0 || group > v.Users {
				group = v.Users
			}
			groups := float64((v.Users + group - 1) / group)
			l = float64(v.Users)*float64(r.Every) + (groups-1)*float64(r.Pause)
		}
		ramp = max(ramp, float64(v.Start)+l)
	}
	if total := ramp + float64(p.Steady) + float64(p.RampDown); total > float64(MaxLength) {
		errs = append(errs, s.Errorf("phases", "ramp-up, steady state and ramp-down last %s together, longer than throng can time (at most %s, 100 years)",
			textDuration(total), MaxLength))
	}
	return errs
}

// textDuration prints a float64 of nanoseconds, however large.
func textDuration(ns float64) string {
	if ns < float64(math.MaxInt64) {
		return time.Duration(ns).String()
	}
	return fmt.Sprintf("%.3g h", ns/float64(time.Hour))
}
