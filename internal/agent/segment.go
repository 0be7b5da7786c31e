package agent

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

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
	return info, &segmentJob{r: r, job: job, meta: meta}, nil
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
