package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/throng-io/throng/internal/driver"
	"github.com/throng-io/throng/internal/plan"
	"github.com/throng-io/throng/internal/result"
	"github.com/throng-io/throng/internal/runner"
)

// SegmentRunner is the Runner of `throng agent`: it prepares a plan
// request through the runner's Preparer, as `throng run` prepares a
// scenario (the same checks, messages and metadata), checks the target,
// and runs its segment when the controller says start, keeping the
// segment's own journal and result under Dir.
type SegmentRunner struct {
	Prep *runner.Preparer
	Dir  string    // where the segment's journal and result go
	Log  io.Writer // one line when a segment is done
}

// Prepare implements Runner.
func (r *SegmentRunner) Prepare(ctx context.Context, req *PlanRequest) (*ReadyInfo, Job, error) {
	seg, err := req.segment()
	if err != nil {
		return nil, nil, err
	}
	job, err := r.Prep.Prepare(ctx, runner.Request{
		Source:   runner.Source{File: req.File, Text: []byte(req.Source)},
		Settings: req.Settings,
		Segment:  seg,
	})
	if err != nil {
		return nil, nil, err
	}
	if err := job.Preflight(ctx); err != nil {
		job.Close()
		return nil, nil, err
	}
	meta := job.Meta()
	if req.RunID != "" {
		meta.RunID = req.RunID // the controller's, the same in every agent
	}
	info := &ReadyInfo{Host: meta.Host, Engine: meta.Engine, Threads: meta.Threads, SegmentUsers: len(job.Plan.Users)}
	return info, &segmentJob{r: r, job: job, meta: meta, keep: req.KeepPopulation}, nil
}

// segment reads the request's segment and weights.
func (req *PlanRequest) segment() (plan.Segment, error) {
	seg, err := plan.ParseSegment(req.Segment)
	if err != nil {
		return seg, err
	}
	ws, err := plan.ParseWeights(req.Weights)
	if err != nil {
		return seg, err
	}
	return plan.NewSegment(seg.K, seg.N, ws)
}

// segmentJob is a prepared segment on an agent.
type segmentJob struct {
	r    *SegmentRunner
	job  *runner.Job
	meta result.Meta // built before the start, so starting costs nothing
	keep bool        // the data set was prepared earlier: check it
}

func (j *segmentJob) Close() { j.job.Close() }

func (j *segmentJob) Run(ctx context.Context, startAt time.Time, emit func(*Message)) error {
	seg := j.job.Segment
	out := filepath.Join(j.r.Dir, fmt.Sprintf("%s-%s-%s.json", runner.FileName(j.job.Scenario.Name), strings.ReplaceAll(seg.String(), "/", "of"),
		startAt.Format("20060102-150405")))
	if err := sleepUntil(ctx, startAt); err != nil {
		return err
	}
	meta := j.meta
	meta.StartedAt = time.Now()
	emit(&Message{Kind: KindMeta, Meta: &meta})
	cfg := j.job.Config(meta, out)
	cfg.KeepPopulation = j.keep
	cfg.OnRepetitionStart = func(rep int, at time.Time) {
		if rep == 0 {
			// The load starts now: this is the instant the skew is measured at.
			emit(&Message{Kind: KindStarted, StartedAt: at})
		}
		emit(&Message{Kind: KindRepetition, Rep: rep, StartedAt: at})
	}
	cfg.OnInterval = func(rep int, iv *result.Interval) {
		emit(&Message{Kind: KindInterval, Rep: rep, Interval: iv})
	}
	cfg.OnRepetition = func(rep *result.Repetition) {
		end := *rep
		end.Intervals, end.Summaries = nil, nil
		emit(&Message{Kind: KindRepetitionEnd, Rep: rep.Index, RepEnd: &end})
	}
	run, rec, err := runner.Run(ctx, cfg)
	if run == nil {
		return err
	}
	where, _ := rec.Describe()
	if j.r.Log != nil {
		fmt.Fprintf(j.r.Log, "throng agent: segment %s done. %s\n", seg, where)
	}
	emit(&Message{Kind: KindEnd, Partial: run.Partial, Reason: run.Reason})
	return err
}

// sleepUntil waits until t (at once when t is past), unless ctx ends first.
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopped before the start time")
	}
}

// PopulationRunner is a Runner that can prepare a segment's data set
// ahead of its runs (KindPrepare).
type PopulationRunner interface {
	PreparePopulation(ctx context.Context, req *PlanRequest) (*PreparedInfo, error)
}

// PreparePopulation implements PopulationRunner: the plan's segment is
// prepared as for a run, its target checked, and its driver's data set
// written once (the family must keep one: driver.PopulationKeeper).
func (r *SegmentRunner) PreparePopulation(ctx context.Context, req *PlanRequest) (*PreparedInfo, error) {
	seg, err := req.segment()
	if err != nil {
		return nil, err
	}
	job, err := r.Prep.Prepare(ctx, runner.Request{
		Source:   runner.Source{File: req.File, Text: []byte(req.Source)},
		Settings: req.Settings,
		Segment:  seg,
	})
	if err != nil {
		return nil, err
	}
	defer job.Close()
	if _, ok := job.Driver.(driver.PopulationKeeper); !ok {
		return nil, fmt.Errorf("the %s family keeps no data set between runs", job.Scenario.Driver)
	}
	if err := job.Preflight(ctx); err != nil {
		return nil, err
	}
	runID := req.RunID
	if runID == "" {
		runID = job.Meta().RunID
	}
	pop := runner.Population(job.Plan, runID, 0)
	start := time.Now()
	if err := job.Driver.Prepare(ctx, pop); err != nil {
		return nil, fmt.Errorf("preparing the data set of segment %s: %w", seg, err)
	}
	info := &PreparedInfo{Users: len(pop.Users), ElapsedS: time.Since(start).Seconds()}
	if pr, ok := job.Driver.(driver.PreparationReporter); ok {
		lp := pr.LastPreparation()
		info.Items, info.Bytes, info.Method = lp.Items, lp.Bytes, lp.Method
	}
	if r.Log != nil {
		fmt.Fprintf(r.Log, "throng agent: data set of segment %s prepared for %d users: %d items in %s\n", seg, info.Users, info.Items,
			time.Duration(info.ElapsedS*float64(time.Second)).Round(time.Millisecond))
	}
	return info, nil
}

// isPopulationError reports whether a run failed because the data set
// prepared before it was gone or changed.
func isPopulationError(err error) bool {
	var pe *runner.PopulationError
	return errors.As(err, &pe)
}
