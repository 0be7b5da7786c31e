// Package runner runs a scenario: its repetitions one after the other, each
// with a fresh data set (driver Prepare), the engine, the journal written as
// the run goes, and the final result file. It never loses a result: the
// journal is flushed every interval, and the result file is written even
// when the run was interrupted (marked partial).
package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/throng-io/throng/internal/compare"
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
)

// Config is everything a run needs, prepared by the command line.
type Config struct {
	Plan    *plan.Plan
	Driver  driver.Config
	Actions []driver.Action
	Kind    string // resolved engine kind
	Threads int
	Runs    int
	Trim    int
	// Out is the result file; the journal is result.JournalPath(Out).
	Out  string
	Meta result.Meta
	// OnInterval and OnRepetition, when set, are told about progress. They
	// are called from the run's goroutines, one call at a time.
	OnInterval        func(rep int, iv *result.Interval)
	OnRepetition      func(rep *result.Repetition)
	OnRepetitionStart func(rep int, at time.Time)
	// Counters, when set, are read beside the load at every interval.
	Counters engine.Counters
	// AutoProcs: see engine.Config.AutoProcs.
	AutoProcs bool
	// Finish, when set, completes the run just before its result file is
	// written (verdicts, threshold outcomes).
	Finish func(run *result.Run)
}

// Run runs every repetition and writes the result. The returned Run is
// complete or partial (interrupted through ctx, bounded by max_duration);
// the error is set when the results could not be written, or a repetition
// could not start; whatever was recorded is in the journal.
func Run(ctx context.Context, cfg Config) (*result.Run, error) {
	jpath := result.JournalPath(cfg.Out)
	j, err := result.CreateJournal(jpath)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", jpath, err)
	}
	run := &result.Run{Schema: result.Schema, Meta: cfg.Meta}
	if err := j.Meta(&run.Meta); err != nil {
		j.Close()
		return nil, fmt.Errorf("%s: %w", jpath, err)
	}
	var runErr error
	for i := 0; i < max(1, cfg.Runs); i++ {
		if ctx.Err() != nil {
			break
		}
		rep, err := repetition(ctx, cfg, j, i)
		if err != nil {
			runErr = err
			break
		}
		run.Repetitions = append(run.Repetitions, *rep)
		if cfg.OnRepetition != nil {
			cfg.OnRepetition(rep)
		}
		if rep.Partial {
			break
		}
	}
	last := len(run.Repetitions) - 1
	switch {
	case runErr != nil:
		run.Partial, run.Reason = true, runErr.Error()
	case last >= 0 && run.Repetitions[last].Partial && cfg.Runs <= 1:
		run.Partial, run.Reason = true, run.Repetitions[last].Reason
	case len(run.Repetitions) < max(1, cfg.Runs) || run.Repetitions[last].Partial:
		run.Partial = true
		run.Reason = fmt.Sprintf("%d of %d repetitions finished", countFull(run.Repetitions), max(1, cfg.Runs))
		if n := len(run.Repetitions); n > 0 && run.Repetitions[n-1].Partial {
			run.Reason += "; the last stopped early: " + run.Repetitions[n-1].Reason
		}
	}
	if len(run.Repetitions) > 1 {
		run.Aggregate = compare.Aggregate(fullOnly(run.Repetitions), cfg.Trim, cfg.Plan.CountBound)
	}
	if cfg.Finish != nil {
		cfg.Finish(run)
	}
	jerr := errors.Join(j.End(run.Partial, run.Reason), j.Close())
	if err := result.WriteFile(cfg.Out, run); err != nil {
		return run, fmt.Errorf("the result file %s could not be written (%v); everything recorded is in the journal %s", cfg.Out, err, jpath)
	}
	if jerr != nil {
		return run, fmt.Errorf("the journal %s could not be completed: %w (the result file %s is complete)", jpath, jerr, cfg.Out)
	}
	return run, runErr
}

// repetition runs one repetition and journals it.
func repetition(ctx context.Context, cfg Config, j *result.Journal, index int) (*result.Repetition, error) {
	p := cfg.Plan
	pop := driver.Population{TotalUsers: p.TotalUsers, Seed: p.Seed}
	for _, u := range p.Users {
		pop.Users = append(pop.Users, u.ID)
	}
	if err := cfg.Driver.Prepare(ctx, pop); err != nil {
		return nil, fmt.Errorf("preparing the data set of repetition %d: %w", index+1, err)
	}
	rctx, cancel := context.WithTimeoutCause(ctx, p.MaxDuration, engine.ErrMaxDuration)
	defer cancel()
	rep := &result.Repetition{Index: index, StartedAt: time.Now()}
	if cfg.OnRepetitionStart != nil {
		cfg.OnRepetitionStart(index, rep.StartedAt)
	}
	if err := j.Repetition(index, rep.StartedAt); err != nil {
		return nil, err
	}
	out, err := engine.Run(rctx, engine.Config{
		Plan: p, Driver: cfg.Driver, Actions: cfg.Actions, Kind: cfg.Kind, Threads: cfg.Threads,
		Counters: cfg.Counters, DrainMax: p.Scenario.Phases.Drain.D(), AutoProcs: cfg.AutoProcs,
		OnInterval: func(iv *result.Interval) {
			j.Interval(index, iv)
			if cfg.OnInterval != nil {
				cfg.OnInterval(index, iv)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if pr, ok := cfg.Driver.(driver.PreparationReporter); ok {
		if lp := pr.LastPreparation(); lp.Items > 0 || lp.Checked > 0 {
			rep.Preparation = &result.Preparation{Users: lp.Users, Items: lp.Items, Bytes: lp.Bytes,
				ElapsedS: lp.Elapsed.Seconds(), Method: lp.Method,
				Checked: lp.Checked, Repaired: lp.Repaired, RepairedFiles: lp.RepairedNames}
			if lp.Elapsed > 0 {
				rep.Preparation.MBps = float64(lp.Bytes) / 1e6 / lp.Elapsed.Seconds()
			}
		}
	}
	rep.Intervals = out.Intervals
	rep.ElapsedS = out.Elapsed.Seconds()
	rep.DrainS = out.Drain.Seconds()
	rep.Partial, rep.Reason, rep.Aborted = out.Partial, out.Reason, out.Aborted
	rep.Summaries = result.Summarize(cfg.Meta.Actions, len(cfg.Meta.Events), rep.Intervals)
	rep.Taints = result.ComputeTaints(rep)
	return rep, j.RepetitionEnd(rep)
}

func countFull(reps []result.Repetition) int {
	n := 0
	for _, r := range reps {
		if !r.Partial {
			n++
		}
	}
	return n
}

// fullOnly keeps the repetitions that finished: a cut one is not comparable.
func fullOnly(reps []result.Repetition) []result.Repetition {
	var out []result.Repetition
	for _, r := range reps {
		if !r.Partial {
			out = append(out, r)
		}
	}
	return out
}
