package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/capacity"
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/scenario"
	"github.com/throng-io/throng/internal/textfmt"
	"github.com/throng-io/throng/internal/threshold"
)

// SearchOptions are a capacity search's question as a command gives it:
// the SLOs as text, the dimension by name ("" for the scenario's default),
// the bounds and the budget (zero values take the defaults, see
// NewSearch).
type SearchOptions struct {
	SLOs []string
	// Vary is "users", "rate", "speedup", a scenario variable's name, or
	// "" for the default: rate for an open model, users otherwise.
	Vary string
	// Min and Max bound the load (0: a quarter of the scenario's own value
	// of the dimension, and 64 times it).
	Min, Max     float64
	Precision    float64
	MaxSteps     int
	MaxTime      time.Duration
	StepDuration time.Duration
	// WarmUp is the warm-up step's length (0: the step's); NoWarmUp skips it.
	WarmUp   time.Duration
	NoWarmUp bool
}

// Search is a capacity search (package capacity) whose steps are jobs of
// one scenario, each prepared with the load set by its key path (Key) and
// its steady phase the step's length, and run by Run against one target
// kept up, and warm, from the first step to the last.
type Search struct {
	Preparer *Preparer
	// Request is the scenario with its settings; each step adds two.
	Request Request
	Config  capacity.Config
	// Key is the scenario key path that sets the load: users, open.rate,
	// speedup or vars.NAME.
	Key string
	// Dir is where the steps' result files go while the search runs (the
	// record keeps every step's run; the caller removes Dir).
	Dir string
	// OnStart and OnStep, when set, are told when a step starts and when
	// it is done, with the record of the search so far (Conclude's answer).
	OnStart func(n int, req capacity.Request)
	OnStep  func(n int, rec *capacity.Record)
	// Warn, when set, is told about a step that could not run.
	Warn func(msg string)
	// Distribute, when set, runs each step over agents instead of in this
	// process (throng capacity --agents, with agent.Controller): given the
	// step's request (the scenario, its settings and the step's load and
	// length among them), it returns the run merged from the agents, its
	// intervals in it, or an error when the step could not start (an
	// agent unreachable, or refusing the plan). The step is still prepared
	// here first, so a mistake in it is bad input before any agent runs;
	// its target must be one every agent reaches (not embedded). keep
	// says the agents prepared the step's data set before the first step
	// (DistributePopulation): each checks its share instead of writing it,
	// and one that finds it gone makes the error a *PopulationError.
	Distribute func(ctx context.Context, req Request, keep bool) (*result.Run, error)
	// DistributePopulation, when set with Distribute, has every agent
	// prepare its share of a costly data set once, before the first step,
	// for the request at the search's largest load (a family that keeps
	// one: driver.PopulationKeeper), and returns what each wrote; without
	// it each agent prepares its share at every step.
	DistributePopulation func(ctx context.Context, req Request) ([]driver.Preparation, error)
	// Agents name the agents a distributed search runs on, for the record.
	Agents []string

	// NoSettle skips the wait for a measured server to settle between
	// steps (settler); with no server measured there is none anyway.
	NoSettle bool

	// population is the data set prepared once for the whole search (nil:
	// each step prepares its own), with the checks made so far.
	population *capacity.RecordPopulation
}

// NewSearch makes the search of a request: it loads the scenario, chooses
// the dimension (opts.Vary, or the scenario's default), parses the SLOs
// (adding "dropped == 0" for open arrivals: a step whose arrivals were
// dropped did not carry its load), fills the bounds from the scenario when
// not given, and validates it all. Bad input is an *Error of kind
// BadInput. The SLOs are also added to the steps' thresholds, so that
// the preparation checks the names they use (actions, events, phases).
func (p *Preparer) NewSearch(req Request, opts SearchOptions) (*Search, error) {
	l, err := p.Load(req)
	if err != nil {
		return nil, err
	}
	s := l.Scenario
	dim, key, current, err := searchDimension(s, opts.Vary)
	if err != nil {
		return nil, badInput(err)
	}
	cfg := capacity.Config{Dimension: dim, Min: opts.Min, Max: opts.Max, Precision: opts.Precision,
		MaxSteps: opts.MaxSteps, MaxTime: opts.MaxTime, StepDuration: opts.StepDuration, WarmUp: opts.WarmUp, NoWarmUp: opts.NoWarmUp}
	if cfg.Min == 0 {
		cfg.Min = current / 4
		if dim.Integer {
			cfg.Min = math.Max(1, math.Floor(cfg.Min))
		}
	}
	if cfg.Max == 0 {
		cfg.Max = 64 * math.Max(current, cfg.Min)
	}
	var errs []error
	if len(opts.SLOs) == 0 {
		errs = append(errs, errors.New("capacity: no SLO: give at least one, like --slo \"p95 < 1s\""))
	}
	slos := append([]string(nil), opts.SLOs...)
	if s.Model == scenario.Open && dim.Name == capacity.Rate.Name {
		slos = append(slos, "dropped == 0")
	}
	for _, text := range slos {
		t, err := threshold.Parse(text)
		if err != nil {
			errs = append(errs, fmt.Errorf("--slo %q: %w", text, err))
			continue
		}
		cfg.SLOs = append(cfg.SLOs, t)
	}
	if len(opts.SLOs) > 0 {
		errs = append(errs, cfg.Validate()...)
	}
	if len(errs) > 0 {
		return nil, badInput(errors.Join(errs...))
	}
	for _, text := range slos {
		req.Settings = append(req.Settings, Setting{Key: "thresholds", Value: text, From: "flag --slo"})
	}
	return &Search{Preparer: p, Request: req, Config: cfg, Key: key}, nil
}

// searchDimension is the dimension named vary (or the scenario's
// default), the key path that sets it, and the scenario's own value of it
// (0 when it has none).
func searchDimension(s *scenario.Scenario, vary string) (capacity.Dimension, string, float64, error) {
	if vary == "" {
		vary = capacity.Users.Name
		if s.Model == scenario.Open {
			vary = capacity.Rate.Name
		}
	}
	switch vary {
	case capacity.Users.Name:
		return capacity.Users, "users", float64(s.Users), nil
	case capacity.Rate.Name:
		if s.Model != scenario.Open {
			return capacity.Dimension{}, "", 0, fmt.Errorf("--vary rate: the scenario %s is not an open model (model: %s): vary users, speedup or a variable", s.File, s.Model)
		}
		return capacity.Rate, "open.rate", s.Open.Rate.PerSecond, nil
	case capacity.Speedup.Name:
		return capacity.Speedup, "speedup", s.Speedup, nil
	}
	text, ok := s.Vars[vary]
	if !ok {
		return capacity.Dimension{}, "", 0, fmt.Errorf("--vary %q: want users, rate, speedup or a variable the scenario declares in vars: (%s)", vary, varNames(s))
	}
	cur, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
	if err != nil {
		return capacity.Dimension{}, "", 0, fmt.Errorf("--vary %s: the variable's value %q is not a number, so no load can be searched in it", vary, text)
	}
	return capacity.Dimension{Name: vary, Unit: vary, Integer: cur == math.Trunc(cur)}, varPrefix + vary, cur, nil
}

func varNames(s *scenario.Scenario) string {
	var names []string
	for k := range s.Vars {
		names = append(names, k)
	}
	if len(names) == 0 {
		return "it declares none"
	}
	return strings.Join(names, ", ")
}

// LoadValue writes a load as the text of its key path's setting.
func (s *Search) LoadValue(load float64) string {
	switch {
	case s.Config.Dimension.Integer:
		return strconv.FormatInt(int64(math.Round(load)), 10)
	case s.Key == "open.rate":
		return strconv.FormatFloat(load, 'f', -1, 64) + "/s"
	}
	return strconv.FormatFloat(load, 'f', -1, 64)
}

// Run runs the search to its end and returns its record. The target is
// resolved once: the request's, or the scenario's own (an embedded server
// started now, and stopped at the end), so the server stays warm between
// steps. The first step is checked against the target first (Preflight):
// a target that does not answer is an *Error of kind Unable, nothing run.
// A step that could not be prepared or run is recorded as such (the
// search runs it again, and gives up with status could-not-run); one whose
// settings are bad input ends the search with that error. When ctx ends,
// the record is the search so far (Conclude) and the error ctx's.
//
// The time budget (Config.MaxTime) bounds the whole search: each step's
// Before (the time since the step before: the data set's preparation, the
// idle measurement, the wait for the server to settle) counts with its
// Elapsed; a wait is cut to what is left of the budget beside the next
// step's predicted time, and when the budget runs out there the search
// ends with the best bracket (status Budget) and a note saying why. The
// record's ElapsedS is the search's wall time.
func (s *Search) Run(ctx context.Context) (*capacity.Record, error) {
	start := time.Now()
	cfg := s.Config
	req := s.Request
	if req.Target == nil && s.Distribute == nil {
		l, err := s.Preparer.Load(req)
		if err != nil {
			return nil, err
		}
		if l.Scenario.Target == "embedded" {
			t, err := s.Preparer.StartEmbedded(l.Scenario.Driver, "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			defer t.Close()
			req.Target = t
		}
	}
	if s.Distribute == nil || s.DistributePopulation != nil {
		pop, err := s.preparePopulation(ctx, req)
		if err != nil {
			return nil, err
		}
		s.population = pop
	}
	var st *settler
	if s.Distribute == nil && !s.NoSettle {
		l, err := s.Preparer.Load(req)
		if err != nil {
			return nil, err
		}
		if st, err = newSettler(l.Scenario.Counters.Processes); err != nil {
			return nil, badInput(err)
		}
		if st != nil {
			// A server not running yet idles at 0: the floor decides.
			_ = st.measureIdle(ctx, settleIdle)
		}
	}
	var steps []capacity.Step
	var runs []*result.Run
	var settles []*capacity.RecordSettle // the wait before each step
	record := func(ans capacity.Answer) *capacity.Record {
		rec := capacity.NewRecord(cfg, steps, runs, ans)
		if req.Target != nil {
			rec.Target = req.Target.String()
		}
		rec.Agents = s.Agents
		if s.population != nil {
			pop := *s.population
			rec.Population = &pop
		}
		// The search's wall time: the preparation, every wait and step,
		// and a last wait the budget cut short.
		rec.ElapsedS = time.Since(start).Seconds()
		for i, w := range settles {
			if w == nil || i >= len(rec.Steps) {
				continue
			}
			rec.Steps[i].Settle = w
			if w.TimedOut {
				rec.Notes = append(rec.Notes, fmt.Sprintf("step %d: %s", i+1, w.Why))
			}
		}
		return &rec
	}
	// mark is where the wall time the steps account for (Step.Before and
	// Elapsed) ends: the time since, before the next step, is its Before.
	mark := start
	// outOfTime ends the search with the best bracket so far (status
	// Budget: Decide asked for one more step), saying why.
	outOfTime := func(why string) (*capacity.Record, error) {
		if s.Warn != nil {
			s.Warn(why)
		}
		rec := record(capacity.Conclude(cfg, steps))
		rec.Notes = append(rec.Notes, why)
		return rec, nil
	}
	for n := 1; ; n++ {
		d := capacity.Decide(cfg, steps)
		if d.Done {
			return record(*d.Answer), nil
		}
		// What is left of the time budget once the next step is run, the
		// time since the last step (preparing, settling) taken.
		left := func() time.Duration { return d.Left - time.Since(mark) }
		var wait *capacity.RecordSettle
		if st != nil && n > 1 {
			limit, cut := settleLimit(d.Next.Duration), false
			if cfg.MaxTime > 0 && left() < limit {
				limit, cut = max(left(), 0), true
			}
			if cut && limit < settleWindow {
				// A wait lasts a window at least: it could not end in time.
				return outOfTime(fmt.Sprintf("before step %d: the time budget (%s) ran out: %s of it was left beside the step, less than the %s a wait for the server to settle takes",
					n, cfg.MaxTime, limit.Round(time.Millisecond), settleWindow))
			}
			w := st.wait(ctx, limit)
			wait = &w
			if w.TimedOut && cut && ctx.Err() == nil {
				return outOfTime(fmt.Sprintf("before step %d: the time budget (%s) ran out while waiting for the server to settle: after %s it used %.3f cores over the last second, not under %.3f (idle %.3f)",
					n, cfg.MaxTime, time.Duration(w.ElapsedS*float64(time.Second)).Round(time.Millisecond), float64(w.CPU), w.Threshold, w.IdleCPU))
			}
			if w.TimedOut && s.Warn != nil {
				s.Warn(fmt.Sprintf("before step %d: %s", n, w.Why))
			}
		}
		if cfg.MaxTime > 0 && left() < 0 && ctx.Err() == nil {
			return outOfTime(fmt.Sprintf("before step %d: the time budget (%s) ran out before it: %s since the last step (preparing, settling) left too little for it",
				n, cfg.MaxTime, time.Since(mark).Round(time.Millisecond)))
		}
		if s.OnStart != nil {
			s.OnStart(n, d.Next)
		}
		before := time.Since(mark)
		step, run, err := s.step(ctx, req, n, d.Next)
		mark = time.Now()
		step.Before = before
		if err != nil {
			return record(capacity.Conclude(cfg, steps)), err
		}
		if ctx.Err() != nil {
			return record(capacity.Conclude(cfg, steps)), ctx.Err()
		}
		steps, runs, settles = append(steps, step), append(runs, run), append(settles, wait)
		if s.OnStep != nil {
			s.OnStep(n, record(capacity.Conclude(cfg, steps)))
		}
	}
}

// preparePopulation prepares the data set once for the whole search when
// the scenario's family keeps a costly one (driver.PopulationKeeper:
// mail, files): a job at the search's largest load (Config.Max), its
// target checked (Preflight: a target that does not answer is an *Error
// of kind Unable, nothing run), then its driver's Prepare, once. Each
// step then checks it instead of writing it again (Config.KeepPopulation);
// a step that finds it gone or changed could not run. nil, nil when the
// family has no such data set.
func (s *Search) preparePopulation(ctx context.Context, req Request) (*capacity.RecordPopulation, error) {
	at := func(load float64) (*Job, error) {
		r := req
		r.Settings = append(append([]Setting(nil), req.Settings...),
			Setting{Key: s.Key, Value: s.LoadValue(load), From: "the capacity search"})
		return s.Preparer.Prepare(ctx, r)
	}
	// The family's ability is asked of a job at the smallest load: a
	// plan of the largest is compiled only for a family that keeps one.
	job, err := at(s.Config.Min)
	if err != nil {
		return nil, err
	}
	_, keeps := job.Driver.(driver.PopulationKeeper)
	job.Close()
	if !keeps {
		return nil, nil
	}
	load := s.Config.Max
	if job, err = at(load); err != nil {
		return nil, err
	}
	defer job.Close()
	unit := s.Config.Dimension.Unit
	if s.Distribute != nil {
		return s.preparePopulationOverAgents(ctx, req, load)
	}
	if err := job.Preflight(ctx); err != nil {
		return nil, err
	}
	pop := Population(job.Plan, job.Meta().RunID, 0)
	start := time.Now()
	if err := job.Driver.Prepare(ctx, pop); err != nil {
		return nil, &Error{Unable, fmt.Errorf("preparing the data set once for the largest load, %s: %w; nothing was run", capacity.LoadText(load, unit), err)}
	}
	rp := &capacity.RecordPopulation{Load: load, Users: len(pop.Users), ElapsedS: time.Since(start).Seconds()}
	what := ""
	if pr, ok := job.Driver.(driver.PreparationReporter); ok {
		lp := pr.LastPreparation()
		rp.Items, rp.Bytes, rp.Method = lp.Items, lp.Bytes, lp.Method
		what = fmt.Sprintf(": %d items, %s, by %s", lp.Items, textfmt.Bytes(float64(lp.Bytes)), lp.Method)
	}
	who := ""
	if unit != capacity.Users.Unit {
		who = fmt.Sprintf(" (%d users)", rp.Users)
	}
	rp.Why = fmt.Sprintf("the data set prepared once, for the largest load, %s%s, in %s%s; each step checks it instead of writing it again",
		capacity.LoadText(load, unit), who, time.Duration(rp.ElapsedS*float64(time.Second)).Round(time.Millisecond), what)
	return rp, nil
}

// preparePopulationOverAgents has every agent prepare its share of the
// data set for load (DistributePopulation), and records what they wrote,
// summed.
func (s *Search) preparePopulationOverAgents(ctx context.Context, req Request, load float64) (*capacity.RecordPopulation, error) {
	unit := s.Config.Dimension.Unit
	r := req
	r.Settings = append(append([]Setting(nil), req.Settings...),
		Setting{Key: s.Key, Value: s.LoadValue(load), From: "the capacity search"})
	start := time.Now()
	preps, err := s.DistributePopulation(ctx, r)
	if err != nil {
		return nil, &Error{Unable, fmt.Errorf("preparing the data set once for the largest load, %s, over the agents: %w; nothing was run", capacity.LoadText(load, unit), err)}
	}
	rp := &capacity.RecordPopulation{Load: load, ElapsedS: time.Since(start).Seconds()}
	var methods []string
	for _, p := range preps {
		rp.Users += p.Users
		rp.Items += p.Items
		rp.Bytes += p.Bytes
		if p.Method != "" && !slices.Contains(methods, p.Method) {
			methods = append(methods, p.Method)
		}
	}
	rp.Method = strings.Join(methods, "; ")
	who := ""
	if unit != capacity.Users.Unit {
		who = fmt.Sprintf(" (%d users)", rp.Users)
	}
	rp.Why = fmt.Sprintf("the data set prepared once, for the largest load, %s%s, by each of the %d agents for its share, one after the other, in %s: %d items, %s, by %s; each step checks it instead of writing it again",
		capacity.LoadText(load, unit), who, len(preps), time.Duration(rp.ElapsedS*float64(time.Second)).Round(time.Millisecond),
		rp.Items, textfmt.Bytes(float64(rp.Bytes)), rp.Method)
	return rp, nil
}

// step prepares and runs the n-th step and reads its result back (with
// its intervals: the SLOs' intervals are made from them).
func (s *Search) step(ctx context.Context, req Request, n int, cr capacity.Request) (capacity.Step, *result.Run, error) {
	start := time.Now()
	req.Settings = append(append([]Setting(nil), req.Settings...),
		Setting{Key: s.Key, Value: s.LoadValue(cr.Load), From: "the capacity search"},
		Setting{Key: "phases.steady", Value: cr.Duration.String(), From: "the capacity search"})
	failed := func(err error) (capacity.Step, *result.Run, error) {
		if s.Warn != nil {
			s.Warn(fmt.Sprintf("step %d (%s) could not run: %v", n, capacity.LoadText(cr.Load, s.Config.Dimension.Unit), err))
		}
		return capacity.FromRun(s.Config, cr, nil, time.Since(start)), nil, nil
	}
	job, err := s.Preparer.Prepare(ctx, req)
	var re *Error
	switch {
	case err == nil:
	case errors.As(err, &re) && re.Kind == Unable && n > 1:
		return failed(err)
	default:
		return capacity.Step{}, nil, err
	}
	defer job.Close()
	if s.Distribute != nil {
		// Each agent checks the target as it prepares its segment.
		keep := s.population != nil
		if keep {
			s.population.Checks++
		}
		run, err := s.Distribute(ctx, req, keep)
		if pe := (*PopulationError)(nil); errors.As(err, &pe) && keep {
			s.population.Failed++
			return failed(err)
		}
		if err != nil && n == 1 && ctx.Err() == nil {
			return capacity.Step{}, nil, &Error{Unable, fmt.Errorf("%w; nothing was run", err)}
		}
		if err != nil {
			return failed(err)
		}
		job.Finish(run)
		return capacity.FromRun(s.Config, cr, run, time.Since(start)), run, nil
	}
	if err := job.Preflight(ctx); err != nil {
		if n == 1 {
			return capacity.Step{}, nil, err
		}
		return failed(err)
	}
	out := filepath.Join(s.Dir, fmt.Sprintf("step-%02d.json", n))
	rc := job.Config(job.Meta(), out)
	if s.population != nil {
		rc.KeepPopulation = true
		s.population.Checks++
	}
	run, rec, err := Run(ctx, rc)
	if rec != nil {
		defer os.Remove(rec.Journal)
	}
	if pe := (*PopulationError)(nil); errors.As(err, &pe) {
		s.population.Failed++
	}
	if err != nil || run == nil {
		if err == nil {
			err = errors.New("nothing was recorded")
		}
		return failed(err)
	}
	if rec.Result != "" {
		if full, err := result.ReadFile(rec.Result); err == nil {
			run = full
		}
		os.Remove(rec.Result)
	}
	return capacity.FromRun(s.Config, cr, run, time.Since(start)), run, nil
}
