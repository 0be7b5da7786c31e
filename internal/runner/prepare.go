package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/sampler"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/threshold"
)

// Preparer turns a scenario source, settings and a segment into a Job ready
// to run: it decodes the scenario and applies the settings, validates
// everything at once, refuses work that cannot be done, resolves the target
// (starting an embedded server when asked), decodes the family's block,
// compiles the actions and the plan, chooses the engine and gathers the
// counter sources. `throng run` (one scenario or several) and `throng
// agent` prepare through it, and a capacity search prepares many jobs from
// one source with it. A Preparer holds no state of its own and may prepare
// jobs from several goroutines at once.
type Preparer struct {
	// Families are the protocol families known (cli/builtin.go lists
	// them), the default one (web) first.
	Families []driver.Family
	// Version is the program's version: recorded in every result, and
	// given to the families (web's default User-Agent).
	Version string
	// Memory reads the memory this process may still take, to refuse a
	// plan that would not fit; nil reads the machine's (sampler.ReadMemory).
	Memory func() (sampler.Memory, bool)
}

// Source is a scenario's text and where it came from.
type Source struct {
	// File names the scenario in messages (file:line:col) and results: a
	// path, or "presets/NAME.yaml".
	File string
	Text []byte
}

// Request is what a job is prepared from.
type Request struct {
	Source Source
	// Settings replace the file's values, in order: a later setting of the
	// same key wins, a setting of a list adds one item (see Setting).
	Settings []Setting
	// Segment is this process's share of the plan; the zero Segment is
	// the whole plan.
	Segment plan.Segment
	// Target, when set, is where the job's load goes instead of the
	// scenario's own target (which is then neither validated nor used):
	// started by the caller (StartEmbedded, or URLTarget for a server
	// elsewhere), shared by as many jobs as it likes, and closed by the
	// caller after the last of them: Job.Close leaves it running. Nil: the
	// job resolves the scenario's target itself, starting the family's
	// embedded server when it says "embedded", and its Close stops it.
	Target *Target
}

func (r Request) segment() plan.Segment {
	if r.Segment.N == 0 {
		return plan.Whole
	}
	return r.Segment
}

// Loaded is a request's scenario, decoded with the settings applied but
// not validated yet: Prepare reports every problem of it at once.
type Loaded struct {
	// Scenario is never nil.
	Scenario *scenario.Scenario
	req      Request
	problems scenario.Errors   // found while decoding, reported with the validation's
	given    map[string]string // the settings as applied, for the result (key path -> value)
}

// Problems are the problems found while decoding (a key of the wrong
// type, an unknown key), which PrepareLoaded reports with the validation's.
func (l *Loaded) Problems() scenario.Errors { return l.problems }

// Prepare loads a request and prepares its job (Load, then PrepareLoaded).
func (p *Preparer) Prepare(ctx context.Context, req Request) (*Job, error) {
	l, err := p.Load(req)
	if err != nil {
		return nil, err
	}
	return p.PrepareLoaded(ctx, l)
}

// PrepareLoaded validates a loaded scenario, refuses work that cannot be
// done, resolves the target (starting an embedded server when asked),
// decodes the family's block, compiles the actions and the plan, chooses
// the engine and gathers the counter sources. Every problem of the
// scenario is reported at once, as one *Error of kind BadInput holding
// scenario.Errors. It stops when ctx ends (kind Stopped). On an error
// nothing it started is left running.
func (p *Preparer) PrepareLoaded(ctx context.Context, l *Loaded) (*Job, error) {
	s, req := l.Scenario, l.req
	fam, err := p.Family(s.Driver)
	if err != nil {
		return nil, badInput(err)
	}
	s.AllowLocalTargets(fam.LocalSchemes)
	errs := append([]error(nil), l.problems...)
	if req.Target == nil {
		errs = append(errs, s.Validate()...)
		if s.Target == "embedded" && fam.Embedded == nil {
			errs = append(errs, s.Errorf("target", "the %s family has no embedded server: give the URL of a server", fam.Name))
		}
	} else {
		errs = append(errs, validateBut(s, "target")...)
		if req.Target.family != "" && req.Target.family != fam.Name {
			errs = append(errs, s.Errorf(s.Driver, "the target is an embedded %s server, not of the %s family", req.Target.family, fam.Name))
		}
	}
	ths, terrs := parseThresholds(s, fam.Events)
	errs = append(errs, terrs...)
	seg := req.segment()
	if len(errs) == 0 {
		if err := p.checkSchedule(s, seg); err != nil {
			return nil, err
		}
	}
	j := &Job{Scenario: s, Segment: seg, Thresholds: ths, Threads: s.Engine.Threads, given: l.given, version: p.Version}
	if len(errs) == 0 {
		if err := p.resolveTarget(j, fam, req.Target); err != nil {
			return nil, err
		}
		if j.Target.Embedded() && s.Engine.Threads == 0 {
			// The embedded server runs in this process: leave it a core.
			j.Threads = max(1, sampler.Cores()-1)
		}
		drv, derrs := fam.Decode(s.DriverConfig, driver.Env{Target: j.Target.t, Version: p.Version})
		errs = append(errs, placeErrors(s, derrs)...)
		j.Driver = drv
		if th, ok := drv.(driver.Thresholder); ok && len(derrs) == 0 {
			if j.Thresholds, err = threshold.WithDefaults(j.Thresholds, th.DefaultThresholds()); err != nil {
				j.Close()
				return nil, &Error{Unable, fmt.Errorf("the %s family: %w", fam.Name, err)}
			}
		}
		if len(derrs) == 0 {
			for _, a := range s.Actions {
				ca, aerrs := drv.Compile(a)
				errs = append(errs, placeErrors(s, aerrs)...)
				j.Actions = append(j.Actions, ca)
			}
			errs = append(errs, checkJourneys(s, drv, j.Thresholds)...)
		}
	}
	if len(errs) > 0 {
		j.Close()
		scenario.SortErrors(errs)
		return nil, badInput(scenario.Errors(errs))
	}
	if j.Plan, err = plan.CompileContext(ctx, s, seg); err != nil {
		j.Close()
		if ctx.Err() != nil {
			return nil, &Error{Stopped, fmt.Errorf("stopped while compiling the plan: %w", err)}
		}
		return nil, badInput(err)
	}
	if j.Kind, err = engine.Choose(s.Engine.Kind, j.Driver, j.Actions, j.Plan); err != nil {
		j.Close()
		return nil, badInput(s.Errorf("engine.kind", "%v", err))
	}
	if err := p.checkEngine(s, j.Plan, j.Kind); err != nil {
		j.Close()
		return nil, err
	}
	if j.Counters, err = counterSources(s, j.Driver); err != nil {
		j.Close()
		return nil, badInput(err)
	}
	return j, nil
}

// validateBut is the scenario's validation without the problems of one
// key (a target given apart from the scenario).
func validateBut(s *scenario.Scenario, path string) []error {
	var out []error
	for _, err := range s.Validate() {
		var se *scenario.Error
		if errors.As(err, &se) && se.Path == path {
			continue
		}
		out = append(out, err)
	}
	return out
}

// placeErrors gives a driver's errors that do not say where they are a
// place: those about the target go to the target key (or where the target
// was given), the others to the driver's block.
func placeErrors(s *scenario.Scenario, errs []error) []error {
	for i, err := range errs {
		var se *scenario.Error
		if errors.As(err, &se) {
			continue
		}
		path, msg := s.Driver, err.Error()
		if rest, ok := strings.CutPrefix(msg, "target "); ok {
			path, msg = "target", rest
		}
		errs[i] = s.Errorf(path, "%s", msg)
	}
	return errs
}

// Family returns the family of that name.
func (p *Preparer) Family(name string) (*driver.Family, error) {
	for i := range p.Families {
		if p.Families[i].Name == name {
			return &p.Families[i], nil
		}
	}
	return nil, fmt.Errorf("no protocol family %q (known: %v)", name, p.Names())
}

// Names lists the families' names, the default one first.
func (p *Preparer) Names() []string {
	names := make([]string, len(p.Families))
	for i, f := range p.Families {
		names[i] = f.Name
	}
	return names
}
