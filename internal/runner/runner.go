// Package runner prepares and runs scenarios. A Preparer (prepare.go)
// turns a scenario source, settings given as key paths (settings.go) and a
// segment into a Job: validated, its target resolved (target.go), its
// driver decoded and its actions, plan and engine compiled. Every command
// that runs load prepares through it: `throng run` with one scenario or
// several, `throng agent`, a capacity search.
//
// Run then runs a job's Config: its repetitions one after the other, each
// with a fresh data set (driver Prepare), the engine, the journal written
// as the run goes, and the final result file. It never loses a result:
// every interval goes to the journal as it is cut (kept in memory,
// bounded, while the journal's file refuses it), the summaries are built
// as the intervals come, and the result file is written at the end — also
// when the run was interrupted (marked partial) — from the journal's
// contents, at the path asked for or, when that fails, in the system's
// temporary directory. Its memory does not grow with the run's length: no
// interval list is kept.
package runner

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/throng-io/throng/internal/compare"
	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/engine"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
)

// Config is everything a run needs: a prepared Job gives it (Job.Config).
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
	// Warn, when set, is told once when the journal's file first refuses a
	// record (a full disk): the run goes on, its records kept in memory.
	Warn func(msg string)
	// Finish, when set, completes the run just before its result file is
	// written (verdicts, threshold outcomes).
	Finish func(run *result.Run)
	// KeepPopulation: the data set was prepared already, for this plan's
	// users or more (a capacity search prepares it once for its largest
	// load): a driver that can (driver.PopulationKeeper) checks it before
	// each repetition instead of writing it again. Others prepare as ever.
	KeepPopulation bool
}

// Record says where a run's record went.
type Record struct {
	Out string // the result file asked for
	// Result is where the result file was written: Out, its fallback in the
	// system's temporary directory, or "" when nowhere; ResultErr says why
	// it is not at Out (nil when it is).
	Result    string
	ResultErr error
	Journal   string
	// JournalState is how much of the journal its file holds at the end;
	// JournalErr is set when the file does not hold all of it.
	JournalState result.JournalState
	JournalErr   error
}

// Run runs every repetition and writes the result. The returned Run
// (summaries and taints, no intervals: they are in the journal and the
// result file) is complete or partial (interrupted through ctx, bounded by
// max_duration); the Record says where the result and the journal went.
// The error is set when a repetition could not start, or when the journal
// could not be created or take its first record (then nothing was run and
// the Run and Record are nil).
func Run(ctx context.Context, cfg Config) (*result.Run, *Record, error) {
	jpath := result.JournalPath(cfg.Out)
	j, err := result.CreateJournal(jpath)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w; nothing was run", jpath, err)
	}
	run := &result.Run{Schema: result.Schema, Meta: cfg.Meta}
	if err := j.Meta(&run.Meta); err != nil {
		j.Close()
		os.Remove(jpath)
		return nil, nil, fmt.Errorf("the journal cannot be written: %w; nothing was run", err)
	}
	warned, warnedMove := false, false
	warn := func() {
		if cfg.Warn == nil {
			return
		}
		st := j.State()
		if st.FirstErr != nil && !warned {
			warned = true
			cfg.Warn(fmt.Sprintf("the journal's file refuses records (%v): the run goes on, keeping them in memory (up to %d MiB) and retrying", st.FirstErr, result.MaxJournalPending>>20))
		}
		if st.MovedFrom != "" && !warnedMove {
			warnedMove = true
			cfg.Warn(fmt.Sprintf("the journal moved to %s: %s refused records and the %d MiB of memory that keeps them was full; the whole journal so far is there", st.Path, st.MovedFrom, result.MaxJournalPending>>20))
		}
	}
	var runErr error
	var starts []int64 // where each repetition's records start in the journal
	for i := 0; i < max(1, cfg.Runs); i++ {
		if ctx.Err() != nil {
			break
		}
		start := j.Offset()
		rep, err := repetition(ctx, cfg, j, i, warn)
		if err != nil {
			runErr = err
			break
		}
		run.Repetitions = append(run.Repetitions, *rep)
		starts = append(starts, start)
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
	j.End(run.Partial, run.Reason)
	rec := &Record{Out: cfg.Out, Journal: jpath}
	// The intervals come back from the journal (its file, then what it
	// keeps in memory), one at a time: for the validity verdicts, each
	// repetition's read from where its records start (so the whole is read
	// a few times, not once per repetition: 4,730 repetitions took minutes),
	// then for the result file, in one pass.
	journal := func() result.Source { return result.JournalSource(j.Contents()) }
	for i := range run.Repetitions {
		rep := &run.Repetitions[i]
		from := func() result.Source { return result.JournalSource(j.ContentsFrom(starts[i])) }
		rep.Validity = result.CheckValidityOf(&run.Meta, rep, result.SourceIntervals(from, i, rep))
	}
	if cfg.Finish != nil {
		cfg.Finish(run)
	}
	rec.Result, rec.ResultErr = result.Save(cfg.Out, run, journal)
	rec.JournalState = j.State()
	rec.Journal = rec.JournalState.Path // moved, when its disk was full
	rec.JournalErr = j.Close()
	return run, rec, runErr
}

// repetition runs one repetition and journals it.
func repetition(ctx context.Context, cfg Config, j *result.Journal, index int, warn func()) (*result.Repetition, error) {
	p := cfg.Plan
	pop := Population(p, cfg.Meta.RunID, index)
	if k, ok := cfg.Driver.(driver.PopulationKeeper); ok && cfg.KeepPopulation {
		if err := k.KeepPopulation(ctx, pop); err != nil {
			return nil, &PopulationError{Repetition: index, Err: err}
		}
	} else if err := cfg.Driver.Prepare(ctx, pop); err != nil {
		return nil, fmt.Errorf("preparing the data set of repetition %d: %w", index+1, err)
	}
	rctx, cancel := context.WithTimeoutCause(ctx, p.MaxDuration, engine.ErrMaxDuration)
	defer cancel()
	rep := &result.Repetition{Index: index}
	sum := result.NewSummarizer(cfg.Meta.Actions, len(cfg.Meta.Events))
	out, err := engine.Run(rctx, engine.Config{
		Plan: p, Driver: cfg.Driver, Actions: cfg.Actions, Kind: cfg.Kind, Threads: cfg.Threads,
		Counters: cfg.Counters, DrainMax: p.Scenario.Phases.Drain.D(), AutoProcs: cfg.AutoProcs,
		// The repetition starts when the engine's clock does: every offset
		// of its intervals is from StartedAt (merges place segments by it).
		OnStart: func(at time.Time) {
			rep.StartedAt = at
			if cfg.OnRepetitionStart != nil {
				cfg.OnRepetitionStart(index, at)
			}
			// Journal errors never stop the run: the journal keeps what its
			// file refuses, and the end says where everything went.
			if j.Repetition(index, at) != nil {
				warn()
			}
		},
		OnInterval: func(iv *result.Interval) {
			if j.Interval(index, iv) != nil || j.Moved() {
				warn()
			}
			sum.Add(iv)
			if cfg.OnInterval != nil {
				cfg.OnInterval(index, iv)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	if out.Amended != nil {
		j.Amend(index, out.Amended)
		sum.Replace(out.Amended)
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
	rep.ElapsedS = out.Elapsed.Seconds()
	rep.DrainS = out.Drain.Seconds()
	rep.Partial, rep.Reason, rep.Aborted = out.Partial, out.Reason, out.Aborted
	rep.Summaries = sum.Summaries()
	rep.Taints = sum.Taints(rep.Partial, rep.Reason)
	for _, l := range j.State().LostIn(index) {
		rep.Taints = append(rep.Taints, result.LostTaint(l))
	}
	j.RepetitionEnd(rep)
	return rep, nil
}

// PopulationError is a data set prepared before (Config.KeepPopulation)
// that a repetition's check found gone or changed: the repetition could
// not run.
type PopulationError struct {
	Repetition int // from 0
	Err        error
}

func (e *PopulationError) Error() string {
	return fmt.Sprintf("checking the data set prepared before, for repetition %d: %v", e.Repetition+1, e.Err)
}

func (e *PopulationError) Unwrap() error { return e.Err }

// Population is the data set a plan's repetition index needs prepared:
// the plan's users (this segment's), its seed, the run's id.
func Population(p *plan.Plan, runID string, index int) driver.Population {
	pop := driver.Population{TotalUsers: p.TotalUsers, Seed: p.Seed, Run: runID, Repetition: index,
		Segment: p.Segment.K, Segments: p.Segment.N}
	for _, u := range p.Users {
		pop.Users = append(pop.Users, u.ID)
	}
	return pop
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
